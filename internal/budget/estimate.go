package budget

import (
	"math"
	"strings"
	"sync"
)

// A ContentClass groups MIME types whose text has a similar number of bytes
// per token.
type ContentClass int

// Content classes, with the bytes per cl100k_base token measured on this
// repository's material (eval/datasets/godoc Markdown 3.96, the Go sources
// of internal/ 3.37, package-lock.json 2.38, random bytes in base64 1.05
// raw bytes per token).
const (
	Prose      ContentClass = iota // text/plain, text/markdown, text/html, and unknown types: 4.0
	Code                           // source code (text/x-*, JavaScript, …): 3.4
	Structured                     // JSON, YAML, XML, CSV: 2.4
	Binary                         // blobs, counted as their base64: 1.05 raw bytes per token
)

// priorBytesPerToken is each class's starting ratio.
var priorBytesPerToken = [...]float64{Prose: 4.0, Code: 3.4, Structured: 2.4, Binary: 1.05}

func (c ContentClass) String() string {
	return [...]string{"prose", "code", "structured", "binary"}[c]
}

// ClassOf returns the content class of a MIME type (parameters and case
// ignored). Binary types are the image/, audio/, video/ and font/ types
// (but SVG) and the common archive and document formats; unknown types
// count as prose.
func ClassOf(mimeType string) ContentClass {
	t, _, _ := strings.Cut(mimeType, ";")
	t = strings.ToLower(strings.TrimSpace(t))
	major, sub, _ := strings.Cut(t, "/")
	switch {
	case t == "image/svg+xml", strings.HasSuffix(sub, "+xml"), strings.HasSuffix(sub, "+json"),
		sub == "json", sub == "xml", sub == "yaml", sub == "x-yaml", sub == "csv", sub == "toml",
		sub == "ld+json", sub == "x-ndjson", sub == "jsonl":
		return Structured
	case major == "image", major == "audio", major == "video", major == "font",
		t == "application/octet-stream", t == "application/pdf", t == "application/zip",
		t == "application/gzip", t == "application/x-gzip", t == "application/x-tar", t == "application/wasm",
		t == "application/x-7z-compressed", t == "application/vnd.rar":
		return Binary
	case strings.HasPrefix(t, "text/x-") && t != "text/x-markdown",
		sub == "javascript", sub == "x-javascript", sub == "typescript", sub == "x-sh", sub == "sql",
		sub == "x-python", sub == "css":
		return Code
	}
	return Prose
}

// An Estimator predicts the token cost of a resource from its descriptor's
// size in bytes and MIME type, before reading it. It
// learns each server's bytes-per-token ratio, per content class, from the
// exact counts it is shown with [Estimator.Observe], starting from the
// class's measured ratio. It is safe for concurrent use; the zero value is
// not usable, call [NewEstimator].
type Estimator struct {
	mu     sync.Mutex
	ratios map[estimateKey]*observed
	shared map[estimateKey]*observed // other replicas' (SetShared)
}

type estimateKey struct {
	server string
	class  ContentClass
}

// observed sums what a server's texts of one class cost.
type observed struct{ bytes, tokens float64 }

// Learning constants.
const (
	// priorBytes is how many bytes of evidence the prior ratio is worth:
	// a server's own counts outweigh it after a few kilobytes.
	priorBytes = 4096
	// decayBytes bounds the evidence kept: past it, old observations are
	// halved, so the ratio follows a server whose content changes.
	decayBytes = 1 << 20
)

// NewEstimator returns an Estimator that knows only the priors.
func NewEstimator() *Estimator {
	return &Estimator{ratios: map[estimateKey]*observed{}}
}

// BytesPerToken returns the ratio used for server's resources of the MIME
// type: bytes of content (raw bytes for blobs) per token, > 0.
func (e *Estimator) BytesPerToken(server, mimeType string) float64 {
	class := ClassOf(mimeType)
	prior := priorBytesPerToken[class]
	e.mu.Lock()
	defer e.mu.Unlock()
	k := estimateKey{server, class}
	o, sh := e.ratios[k], e.shared[k]
	if o == nil && sh == nil {
		return prior
	}
	var b, t float64
	for _, x := range []*observed{o, sh} {
		if x != nil {
			b, t = b+x.bytes, t+x.tokens
		}
	}
	return (priorBytes + b) / (priorBytes/prior + t)
}

// Estimate returns the estimated tokens of a resource of size bytes (the
// descriptor's size: raw bytes, before any base64 encoding) with the MIME
// type on server, rounded up; ok is false when the size is unknown
// (size <= 0).
func (e *Estimator) Estimate(server, mimeType string, size int64) (tokens int, ok bool) {
	if size <= 0 {
		return 0, false
	}
	t := math.Ceil(float64(size) / e.BytesPerToken(server, mimeType))
	return int(min(t, math.MaxInt32)), true
}

// Observe records that bytes bytes of server's content of the MIME type
// cost tokens tokens exactly (for a blob: its raw bytes and the tokens of
// its base64). Observations with a zero or negative side are ignored.
func (e *Estimator) Observe(server, mimeType string, bytes, tokens int) {
	if bytes <= 0 || tokens <= 0 {
		return
	}
	k := estimateKey{server, ClassOf(mimeType)}
	e.mu.Lock()
	defer e.mu.Unlock()
	o := e.ratios[k]
	if o == nil {
		o = &observed{}
		e.ratios[k] = o
	}
	o.bytes += float64(bytes)
	o.tokens += float64(tokens)
	for o.bytes > decayBytes {
		o.bytes /= 2
		o.tokens /= 2
	}
}
