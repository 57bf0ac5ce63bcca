package budget

import "math"

// Evidence is what an Estimator learned of one server's content class: the
// bytes observed and the tokens they cost.
type Evidence struct {
	Server        string
	Class         ContentClass
	Bytes, Tokens float64
}

// Learned returns the evidence this estimator observed itself (not what
// SetShared gave it).
func (e *Estimator) Learned() []Evidence {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := make([]Evidence, 0, len(e.ratios))
	for k, o := range e.ratios {
		out = append(out, Evidence{Server: k.server, Class: k.class, Bytes: o.bytes, Tokens: o.tokens})
	}
	return out
}

// SetShared replaces the evidence other replicas learned (each its own,
// summed): BytesPerToken weighs it beside this estimator's own
// observations, each side bounded as Observe bounds its own. Entries with
// a side that is zero, negative, infinite or NaN are ignored (the store
// holds whatever a replica wrote).
func (e *Estimator) SetShared(ev []Evidence) {
	m := make(map[estimateKey]*observed, len(ev))
	for _, x := range ev {
		if !positive(x.Bytes) || !positive(x.Tokens) {
			continue
		}
		k := estimateKey{x.Server, x.Class}
		o := m[k]
		if o == nil {
			o = &observed{}
			m[k] = o
		}
		o.bytes += x.Bytes
		o.tokens += x.Tokens
		for o.bytes > decayBytes {
			o.bytes /= 2
			o.tokens /= 2
		}
	}
	e.mu.Lock()
	e.shared = m
	e.mu.Unlock()
}

// positive reports whether f is finite and above zero.
func positive(f float64) bool { return f > 0 && !math.IsInf(f, 1) }
