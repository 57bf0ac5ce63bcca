package engine

import (
	"cmp"
	"slices"
	"strings"
	"sync"

	"github.com/contextd/contextd/internal/resource"
)

// passOvers is what one Assemble's reads say of its servers, shared by its
// reader (which passes a server over without reading) and its refill
// (which replaces what was passed over, and asks for probes).
//
// A server whose reads in the request mostly bring nothing is passed over:
// its later candidates fail at once, without a read, and other servers'
// replace them. A passed-over server gets a probe now and then, one read
// of its best candidate left, while that ranks above what would replace
// it: one that brings something forgives what came before, and the server
// is read again. An honest server whose three best pages answer 403 would
// otherwise give its places to a weaker server.
//
// Probes stop, and one read that comes to nothing (with no more that
// brought something) passes a server over, once the request's reads that
// came to nothing reach a quarter of max_reads: each hostile server then
// costs two reads (its one answer, its first failure), not four, and
// twenty of them no longer use up max_reads.
type passOvers struct {
	mu         sync.Mutex
	lastResort bool                  // every candidate is read, passed over or not
	limit      int                   // reads coming to nothing past which probes stop
	nothing    int                   // the request's reads that came to nothing
	passing    map[string]bool       // servers passed over
	probes     map[resource.Key]bool // candidates read though their server is passed over
	missed     map[string]int        // probes of a server that brought nothing
	failures   map[string]int        // a server's reads that came to nothing
	recovered  map[string]bool       // servers a probe brought something from, for the refill
	stalled    map[string]bool       // servers whose reads the request no longer makes (slow, late)
	brought    map[string]int        // a server's reads that brought something
}

func newPassOvers(maxReads int) *passOvers {
	return &passOvers{
		limit:     max(maxReads/4, 2*passOverAfter),
		passing:   map[string]bool{},
		probes:    map[resource.Key]bool{},
		missed:    map[string]int{},
		failures:  map[string]int{},
		recovered: map[string]bool{},
		stalled:   map[string]bool{},
		brought:   map[string]int{},
	}
}

// passOverAfter is how many of a server's reads in a request must bring
// nothing (and more than twice as many as brought something) before its
// later candidates are passed over, while the request's reads that came to
// nothing are under passOvers.limit.
const passOverAfter = 3

// skip reports whether a read of k, from a server whose reads in the
// request brought nothing n times and something some times, is passed
// over, and records that its server is.
func (p *passOvers) skip(k resource.Key, nothing, some int) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.lastResort || p.probes[k] {
		return false
	}
	if nothing >= passOverAfter && nothing > 2*some || p.nothing >= p.limit && nothing >= 1 && nothing >= some {
		p.passing[k.Server] = true
		return true
	}
	return false
}

// answered records a read of k that came to nothing, or not. It reports
// whether it was a probe that brought something: the server's reads before
// are then forgiven.
func (p *passOvers) answered(k resource.Key, nothing bool) (recovered bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if nothing {
		p.nothing++
		p.failures[k.Server]++
		if p.probes[k] {
			p.missed[k.Server]++
		}
		return false
	}
	p.brought[k.Server]++
	if !p.probes[k] {
		return false
	}
	delete(p.passing, k.Server)
	delete(p.missed, k.Server)
	p.recovered[k.Server] = true
	return true
}

// cameToNothing records that k, if a probe, came to nothing without a
// read (a binary type, for the user only, a pointer): it counts as a
// probe that brought nothing, or the server would be probed every round.
func (p *passOvers) cameToNothing(k resource.Key) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.probes[k] {
		delete(p.probes, k)
		p.missed[k.Server]++
	}
}

// probeSkip returns how many of server's next candidates its probe skips:
// as many as its reads came to nothing, two at most.
func (p *passOvers) probeSkip(server string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return min(p.failures[server], 2)
}

// lastResortOrder sorts servers for a last resort: those whose probes
// missed least, then whose reads came to nothing least, first.
func (p *passOvers) lastResortOrder(servers []string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	slices.SortFunc(servers, func(a, b string) int {
		return cmp.Or(cmp.Compare(p.missed[a], p.missed[b]), cmp.Compare(p.failures[a], p.failures[b]), strings.Compare(a, b))
	})
}

// condemned reports whether server, failing, gets no more probes: two
// of them brought nothing, or one did once the request's reads that came
// to nothing reached the limit, or the request makes no more reads of it.
func (p *passOvers) condemned(server string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stalled[server] || p.missed[server] >= 2 || p.missed[server] >= 1 && p.nothing >= p.limit
}

// stall records that the request makes no more reads of server (its
// reads took its share of read time): a candidate of it fails unread, so
// it is neither probed nor read as a last resort. Probes of a server
// answering each read late with an error failed unread round after
// round, never counted as probes, and took every place of the request.
func (p *passOvers) stall(server string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stalled[server] = true
}

// isStalled reports whether the request makes no more reads of server.
func (p *passOvers) isStalled(server string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stalled[server]
}

// probe marks k as a probe: it is read though its server is passed over.
func (p *passOvers) probe(k resource.Key) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.probes[k] = true
}

// passedOver returns the servers passed over.
func (p *passOvers) passedOver() map[string]bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make(map[string]bool, len(p.passing))
	for s := range p.passing {
		out[s] = true
	}
	return out
}

// takeRecovered returns the servers a probe brought something from since
// it was last called.
func (p *passOvers) takeRecovered() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []string
	for s := range p.recovered {
		out = append(out, s)
	}
	clear(p.recovered)
	return out
}

func (p *passOvers) setLastResort(v bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.lastResort = v
}

func (p *passOvers) isLastResort() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.lastResort
}

// onProbation reports whether as many of server's reads in the request
// came to nothing as brought something, one at least (forgiven or not):
// what it brought sets the value floor only if it bears out its
// descriptor (selector.Candidate.Probation). A server failing every other
// read and answering the rest with a login page naming one word of the
// task had every honest page under the floor; one whose best page
// answers 403 and the rest their text is not on probation.
func (p *passOvers) onProbation(server string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.failures[server] >= max(1, p.brought[server])
}

// failuresOf returns how many of server's reads in the request came to
// nothing.
func (p *passOvers) failuresOf(server string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.failures[server]
}
