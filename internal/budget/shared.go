package budget

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
// a zero or negative side are ignored.
func (e *Estimator) SetShared(ev []Evidence) {
	m := make(map[estimateKey]*observed, len(ev))
	for _, x := range ev {
		if x.Bytes <= 0 || x.Tokens <= 0 {
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
