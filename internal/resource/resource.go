// Package resource holds the vocabulary shared by contextd's stages: the MCP
// resource descriptor, template and content item (MCP specification
// 2025-11-25, "Resources"), and the (server, URI) key that identifies a
// resource across servers.
//
// URIs are opaque: they are kept byte for byte as the server wrote them and
// never parsed to touch the local disk.
package resource

import "strings"

// A Key identifies a resource: the same URI on two servers is two resources.
type Key struct {
	Server string // configured server name
	URI    string // exactly as the server listed it
}

// String returns "server\x00uri", the form used as a document ID in indexes.
// The NUL byte cannot occur in a configured server name.
func (k Key) String() string { return k.Server + "\x00" + k.URI }

// ParseKey inverts Key.String.
func ParseKey(s string) (Key, bool) {
	server, uri, ok := strings.Cut(s, "\x00")
	return Key{Server: server, URI: uri}, ok
}

// A Descriptor is one entry of a resources/list result, attributed to the
// server that listed it.
type Descriptor struct {
	Server      string
	URI         string
	Name        string
	Title       string
	Description string
	MIMEType    string // "" = unknown; never guessed from the URI
	Size        int64  // bytes, as declared by the server; 0 = unknown

	// Annotations (MCP 2025-11-25 "Annotations"); zero values mean absent.
	Audience     []string // "user", "assistant"
	Priority     float64  // 0..1
	LastModified string   // ISO 8601, as sent
}

// Key returns the descriptor's identity.
func (d Descriptor) Key() Key { return Key{Server: d.Server, URI: d.URI} }

// TextBytes returns the bytes of the descriptor's text fields: URI, name,
// title, description and MIME type.
func (d Descriptor) TextBytes() int {
	return len(d.URI) + len(d.Name) + len(d.Title) + len(d.Description) + len(d.MIMEType)
}

// A Template is one entry of a resources/templates/list result: an RFC 6570
// URI template the server can read.
type Template struct {
	Server      string
	URITemplate string
	Name        string
	Title       string
	Description string
	MIMEType    string
}

// A Content is one item of a resources/read result. Exactly one of Text or
// Blob is meaningful, as IsBlob says.
type Content struct {
	URI      string // the item's own URI (may differ from the URI read)
	MIMEType string // "" = unknown; never guessed
	Text     string
	Blob     []byte // base64-decoded bytes of a blob item
	IsBlob   bool
	// Error, when not empty, says why this item is unusable (a blob that is
	// not base64); the other items of the same read are unaffected.
	Error string
}
