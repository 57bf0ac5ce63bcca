package mcp

import (
	"sync"
	"time"
)

// warnLimit keeps a warning that a server can trigger once per line or
// event it sends (a non-JSON line on stdout, an event that is not
// JSON-RPC) to one a second: a server printing garbage as fast as it can
// would otherwise have the daemon log each line (13,000 lines and 1.6 MB
// of log a second, most of a core). The zero value is ready to use.
type warnLimit struct {
	mu      sync.Mutex
	next    time.Time
	skipped int
}

// allow reports whether to log now, and how many warnings were not logged
// since the last one that was.
func (w *warnLimit) allow() (ok bool, notLogged int) {
	if w == nil {
		return true, 0
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	now := time.Now()
	if now.Before(w.next) {
		w.skipped++
		return false, 0
	}
	w.next = now.Add(time.Second)
	n := w.skipped
	w.skipped = 0
	return true, n
}
