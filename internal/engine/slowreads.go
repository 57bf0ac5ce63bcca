package engine

import (
	"context"
	"errors"
	"sync"
	"time"
)

// slowReads bounds, per server, the reads that have run for longer than
// the slow-read timeout at once. A request reads one candidate at a time,
// and waits on each read while it holds its admission turn: a server
// answering every read after 25 s (with bytes enough to pass as merely
// large), or hanging every other read, held as many turns as there were
// callers, and callers of other servers were refused busy. With the
// bound, at most a few requests wait on one server's slow reads; the rest
// stop reading it after the slow-read timeout and answer without it.
// Reads quicker than that take no place. Safe for concurrent use.
type slowReads struct {
	mu sync.Mutex
	n  map[string]int // server → reads holding a place
}

// errNoSlowReadPlace ends a read that ran past the slow-read timeout when
// its server's places were all taken.
var errNoSlowReadPlace = errors.New("no slow-read place for the server")

// slowReadsPerServer is how many reads of one server may run past the
// slow-read timeout at once: a quarter of max_concurrent_requests, at
// least 1 (2 by default).
func (e *Engine) slowReadsPerServer() int {
	n := e.set().limits.MaxConcurrent
	if n <= 0 {
		n = 8
	}
	return max(1, n/4)
}

// slowPlace is one read's claim on a place: taken, if at all, when the
// read has run for the slow-read timeout, given back by done.
type slowPlace struct {
	s      *slowReads
	server string
	timer  *time.Timer // nil: the read needs no place

	mu    sync.Mutex
	ended bool
	held  bool
}

// watch arranges for a read of server, bounded by timeout, to take a place
// once it has run for after, or to be ended (cut with errNoSlowReadPlace)
// when all max places are taken. A read whose timeout is no longer than
// after needs none.
func (s *slowReads) watch(server string, timeout, after time.Duration, max int, cut context.CancelCauseFunc) *slowPlace {
	p := &slowPlace{s: s, server: server}
	if timeout <= after {
		return p
	}
	p.timer = time.AfterFunc(after, func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		if p.ended {
			return
		}
		s.mu.Lock()
		if s.n[server] < max {
			if s.n == nil {
				s.n = map[string]int{}
			}
			s.n[server]++
			p.held = true
		}
		s.mu.Unlock()
		if !p.held {
			cut(errNoSlowReadPlace)
		}
	})
	return p
}

// done gives back the read's place, if it took one.
func (p *slowPlace) done() {
	if p.timer == nil {
		return
	}
	p.timer.Stop()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.ended = true
	if p.held {
		p.s.mu.Lock()
		if p.s.n[p.server]--; p.s.n[p.server] <= 0 {
			delete(p.s.n, p.server)
		}
		p.s.mu.Unlock()
	}
}
