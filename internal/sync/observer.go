package sync

// Upstream request names an Observer sees (the MCP methods).
const (
	MethodList      = "resources/list"
	MethodTemplates = "resources/templates/list"
	MethodRead      = "resources/read"
)

// An Observer is told what a mirror does upstream, for metrics. Its methods
// are called on the mirror's goroutines (and on the goroutines of callers
// of Read), concurrently, and must return quickly: a counter increment, not
// I/O.
type Observer interface {
	// Synced is called after each full sync attempt that was not cut short
	// by the mirror stopping; ok is false when a list walk or storing it
	// failed.
	Synced(server string, ok bool)
	// Called is called after each upstream request: method is MethodList
	// or MethodTemplates (one per list walk, however many pages it took) or
	// MethodRead (for a request, or the content pass); err is its error.
	Called(server, method string, err error)
	// Cached is called for each Read: hit when it was answered from the
	// read cache, without a request.
	Cached(server string, hit bool)
}

// noObserver is the Observer used when Options.Observer is nil.
type noObserver struct{}

func (noObserver) Synced(string, bool)          {}
func (noObserver) Called(string, string, error) {}
func (noObserver) Cached(string, bool)          {}
