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
