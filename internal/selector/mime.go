package selector

import "strings"

// binaryMIME reports whether a descriptor's MIME type says, without reading,
// that the resource is binary. Unknown ("") and unlisted types are not: when
// in doubt, read and let the content's own text/blob form decide.
func binaryMIME(mimeType string) bool {
	t, _, _ := strings.Cut(mimeType, ";")
	t = strings.ToLower(strings.TrimSpace(t))
	major, _, _ := strings.Cut(t, "/")
	switch major {
	case "image":
		// SVG is XML text.
		return t != "image/svg+xml"
	case "audio", "video", "font":
		return true
	}
	switch t {
	case "application/octet-stream", "application/pdf", "application/zip",
		"application/gzip", "application/x-gzip", "application/x-tar",
		"application/x-7z-compressed", "application/vnd.rar", "application/wasm":
		return true
	}
	return false
}

// cuttableMIME reports whether a text of this MIME type may be cut into
// sections: text of any kind, JSON, XML, YAML, TOML, JavaScript and the
// like, and unknown (""). Other types (application/x-custom, vendor types)
// are kept intact: whole or not at all.
func cuttableMIME(mimeType string) bool {
	t, _, _ := strings.Cut(mimeType, ";")
	t = strings.ToLower(strings.TrimSpace(t))
	major, sub, _ := strings.Cut(t, "/")
	switch {
	case t == "", major == "text":
		return true
	case major != "application" && t != "image/svg+xml":
		return false
	}
	switch sub {
	case "json", "xml", "yaml", "x-yaml", "toml", "javascript", "x-javascript", "typescript",
		"x-typescript", "x-sh", "sql", "x-python", "x-ruby", "x-php", "x-ndjson", "jsonl", "graphql":
		return true
	}
	return strings.HasSuffix(sub, "+json") || strings.HasSuffix(sub, "+xml") || strings.HasSuffix(sub, "+yaml") || t == "image/svg+xml"
}
