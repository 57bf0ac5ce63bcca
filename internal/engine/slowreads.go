package engine

import (
	"context"
	"errors"
	"sync"
	"time"
)

// slowReads bounds the requests that wait on reads once they have read
// for longer than the slow-read timeout: per server, and in all. A request
// reads one candidate at a time, and waits on each read while it holds its
// admission turn: a server answering every read after 25 s (with bytes
// enough to pass as merely large), hanging every other read, or answering
// each just under the slow-read timeout, held as many turns as there were
// callers, and callers of other servers were refused busy; several such
// servers, each with places of its own, did the same together. With the
// bound, at most a few requests wait on reads past that time; the rest
// stop reading there and answer without what they had not read. A
// request's reads quicker than that in all take no place. Safe for
// concurrent use.
type slowReads struct {
	mu  sync.Mutex
	n   map[string]int // server → reads holding a place
	all int            // reads holding a place, all servers
}

// errNoSlowReadPlace ends a read that ran past its request's slow-read
// time when the places it needed were all taken.
var errNoSlowReadPlace = errors.New("no slow-read place")

// slowReadPlaces returns how many reads of one server, and of all
// servers, may run past their request's slow-read time at once: a
// quarter and a half of max_concurrent_requests, at least 1 (2 and 4 by
// default). The other half of the turns is left to requests that read
// quickly.
func (e *Engine) slowReadPlaces() (perServer, all int) {
	n := e.set().limits.MaxConcurrent
	if n <= 0 {
		n = 8
	}
	return max(1, n/4), max(1, n/2)
}

// take takes a place for a read of server, if one is free.
func (s *slowReads) take(server string, perServer, all int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.n[server] >= perServer || s.all >= all {
		return false
	}
	if s.n == nil {
		s.n = map[string]int{}
	}
	s.n[server]++
	s.all++
	return true
}

// give gives back a place taken for server.
func (s *slowReads) give(server string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.n[server]--; s.n[server] <= 0 {
		delete(s.n, server)
	}
	s.all--
}

// slowPlace is one read's claim on a place: taken, if at all, when its
// request's slow-read time runs out, given back by done.
type slowPlace struct {
	s      *slowReads
	server string
	timer  *time.Timer

	mu    sync.Mutex
	ended bool
	held  bool
	cut   *time.Timer // ends the read grace after no place was free
}

// watch arranges for a read of server, bounded by timeout, to take a place
// once it has run for after (its request's slow-read time left), or, when
// none is free then, to be ended (cut with errNoSlowReadPlace) grace
// later: a quick server still answers. A read whose timeout is no longer
// than after needs none. When after is not positive the place is taken at
// once, and with none free watch returns nil: the caller gives the read
// grace itself.
func (s *slowReads) watch(server string, timeout, after, grace time.Duration, perServer, all int, cut context.CancelCauseFunc) *slowPlace {
	p := &slowPlace{s: s, server: server}
	switch {
	case timeout <= after:
		return p
	case after <= 0:
		if !s.take(server, perServer, all) {
			return nil
		}
		p.held = true
		return p
	}
	p.timer = time.AfterFunc(after, func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		if p.ended {
			return
		}
		p.held = s.take(server, perServer, all)
		if !p.held {
			p.cut = time.AfterFunc(grace, func() { cut(errNoSlowReadPlace) })
		}
	})
	return p
}

// done gives back the read's place, if it took one, and reports whether
// the read needed one and found none.
func (p *slowPlace) done() (denied bool) {
	if p.timer != nil {
		p.timer.Stop()
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.ended = true
	if p.cut != nil {
		p.cut.Stop()
	}
	if p.held {
		p.held = false
		p.s.give(p.server)
	}
	return p.cut != nil
}

// minReadGrace is the least a read past its request's slow-read time gets
// without a place: enough for the cache.
const minReadGrace = 20 * time.Millisecond

// readTimeWeight is the weight of a new answer in a server's typical read
// time (an exponentially weighted moving average).
const readTimeWeight = 0.25

// noteReadTime adds a read the server answered in took to its typical
// read time.
func (e *Engine) noteReadTime(server string, took time.Duration) {
	e.slowMu.Lock()
	defer e.slowMu.Unlock()
	if t, ok := e.readTimes[server]; ok {
		took = t + time.Duration(readTimeWeight*float64(took-t))
	}
	e.readTimes[server] = took
}

// readGrace is what a read of server past its request's slow-read time
// gets without a place: twice the server's typical read time, at least a
// tenth and at most half of the slow-read timeout (a tenth while nothing
// is known of it).
func (e *Engine) readGrace(server string) time.Duration {
	e.slowMu.Lock()
	t := e.readTimes[server]
	e.slowMu.Unlock()
	return min(max(2*t, e.slowTO/10), e.slowTO/2)
}
