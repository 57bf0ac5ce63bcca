package engine

import (
	"cmp"
	"context"
	"maps"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/contextd/contextd/internal/index"
	"github.com/contextd/contextd/internal/lexical"
	"github.com/contextd/contextd/internal/redact"
	"github.com/contextd/contextd/internal/resource"
	ctxsync "github.com/contextd/contextd/internal/sync"
	"github.com/contextd/contextd/internal/template"
)

// Bounds on template expansion per query.
const (
	// MaxExpansions caps the resources one query adds from templates.
	MaxExpansions = 4
	// maxProposals caps the ways to fill a template that one query
	// considers (over every template in scope), best first; each may cost
	// completion calls.
	maxProposals = 8
	// proposalsPerTemplate caps the proposals taken from one template.
	proposalsPerTemplate = 2
	// MaxCompletionCalls caps the completion/complete requests one query
	// sends.
	MaxCompletionCalls = 8
	// CompletionTimeout bounds the confirmation of a query's expansions:
	// every completion call runs concurrently under this one deadline, so
	// a slow or hung server delays a query by at most this much. A call
	// that fails or runs out drops only its own expansion.
	CompletionTimeout = 300 * time.Millisecond
)

// An expansion is a resource built from a template for values in the query.
type expansion struct {
	desc      resource.Descriptor
	denseText string // the template's embedded text: one vector per template, cached by the index
}

// withTemplates adds to ranked (the listed descriptors, ranked by how) the
// resources that the servers' resource templates yield for values found in
// the query (package template), ranked alongside the listed ones, and
// returns at most n, best first. The listed ones keep their order (a
// diversified ranking's too); each expansion goes before the first listed
// one whose score is lower than its own.
//
// A proposal is used only if every value is confirmed by the server's
// completion/complete (the server's exact value, its spelling of it, or
// its single suggestion for the value as a prefix) when the server
// declares completions, or, when it does not, only if every value's shape
// alone makes it one (no plain words; see template.Proposal.Weak). An
// expansion whose URI the server lists is dropped: the listed resource
// wins. Each expansion is a descriptor with the expanded URI and the
// template's name, title, description and MIME type, scored as the listed
// ones are (see scoreExpansions) with how, the ranking of the request, so
// its score is on the listed ones' scale (RRF's, convex's).
func (e *Engine) withTemplates(ctx context.Context, query string, filt Filter, ranked []Ranked, n int, how Ranking) []Ranked {
	type prop struct {
		server string
		tp     *template.Template
		p      template.Proposal
		order  int
	}
	var q *template.Query
	var props []prop
	// One server set throughout: a reload meanwhile must not pair one
	// set's mirrors with another's settings and credentials.
	set := e.set()
	scope := set.names
	if len(filt.Servers) > 0 {
		scope = e.scope(filt.Servers)
	}
	for _, server := range scope {
		m, ok := set.mirrors[server]
		srv, configured := set.cfg.Server(server)
		if !ok || !configured || srv.NoTemplateExpansion {
			continue
		}
		for _, tp := range e.parsedTemplates(server, m) {
			if q == nil {
				if q = template.ParseQuery(query); len(q.Values) == 0 {
					return ranked
				}
			}
			for _, p := range tp.Propose(q, proposalsPerTemplate) {
				props = append(props, prop{server: server, tp: tp, p: p, order: len(props)})
			}
		}
	}
	if len(props) == 0 {
		return ranked
	}
	slices.SortStableFunc(props, func(a, b prop) int { return cmp.Compare(b.p.Score, a.p.Score) })
	// What the redactor's rules for text mask in the task as a whole: a
	// value taken from its context ("Bearer X", "password": "X") holds no
	// credential alone. (Configured secrets are Holds' to find: the
	// word-like ones, which String masks too, are no reason to refuse.)
	// Compared as the text reads (redact.Skeleton), so that a respelled
	// second copy of a credential elsewhere in the task does not make up
	// for the one masked.
	read := redact.Skeleton(query)
	masked := redact.New().String(read)
	kept := props[:0]
	for _, pr := range props {
		if len(kept) == maxProposals {
			break
		}
		if e.mayExpand(set, read, masked, pr.server, pr.tp, pr.p.Values, filt) {
			kept = append(kept, pr)
		}
	}
	props = kept

	// Confirm: plan the completion calls in order, within the cap, then run
	// every proposal's calls concurrently under one deadline.
	confirmed := make([]map[string]string, len(props))
	calls := 0
	cctx, cancel := context.WithTimeout(ctx, CompletionTimeout)
	defer cancel()
	var wg sync.WaitGroup
	for i, pr := range props {
		if !set.mirrors[pr.server].OffersCompletions() {
			if len(pr.p.Weak) == 0 {
				confirmed[i] = pr.p.Values
			}
			continue
		}
		if calls+len(pr.p.Values) > MaxCompletionCalls {
			continue
		}
		calls += len(pr.p.Values)
		wg.Go(func() { confirmed[i] = e.confirm(cctx, set.mirrors[pr.server], pr.server, pr.tp, pr.p.Values) })
	}
	wg.Wait()

	seen := map[resource.Key]bool{}
	for _, r := range ranked {
		seen[r.Key()] = true
	}
	var exps []expansion
	for i, pr := range props {
		if confirmed[i] == nil || len(exps) == MaxExpansions {
			continue
		}
		uri, err := pr.tp.Expand(confirmed[i])
		if err != nil {
			e.log.Debug("template expansion rejected", "server", pr.server, "err", err)
			continue
		}
		// As for the task's values (see mayExpand): the values are the
		// caller's words, echoed by the server's completion, and an
		// expansion dropped for holding a server's secret, or a piece of
		// one, would tell the caller its guess was one.
		if slices.ContainsFunc(slices.Collect(maps.Values(confirmed[i])), set.mayNotCarry) {
			e.log.Debug("template expansion dropped: the server's completion spelled a credential", "server", pr.server, "template", pr.tp.URITemplate)
			continue
		}
		t := pr.tp.Template
		d := resource.Descriptor{Server: pr.server, URI: uri, Name: t.Name, Title: t.Title, Description: t.Description, MIMEType: t.MIMEType}
		if seen[d.Key()] || !filt.match(d) {
			continue
		}
		seen[d.Key()] = true
		if _, listed := e.ix.Get(d.Key()); listed {
			continue // the listed descriptor is ranked on its own
		}
		text := index.EmbeddingText(resource.Descriptor{Name: t.Name, Title: t.Title, Description: t.Description, URI: t.URITemplate})
		exps = append(exps, expansion{desc: d, denseText: text})
	}
	if len(exps) == 0 {
		return ranked
	}
	scores, err := e.scoreExpansions(ctx, query, filt, exps, how)
	if err != nil {
		e.log.Debug("scoring template expansions failed", "err", err)
		return ranked
	}
	xs := make([]Ranked, len(exps))
	for i, x := range exps {
		xs[i] = Ranked{Descriptor: x.desc, Score: scores[i]}
	}
	slices.SortStableFunc(xs, func(a, b Ranked) int { return cmp.Compare(b.Score, a.Score) })
	// Merge without re-ordering the listed ones (their order is the
	// diversified one): an expansion goes before the first listed
	// descriptor it beats; on a tie the listed one stays first.
	out := make([]Ranked, 0, len(ranked)+len(xs))
	j := 0
	for _, r := range ranked {
		for j < len(xs) && xs[j].Score > r.Score {
			out, j = append(out, xs[j]), j+1
		}
		out = append(out, r)
	}
	out = append(out, xs[j:]...)
	out = out[:min(len(out), n)]
	for i := range out {
		out[i].Rank = i + 1
	}
	return out
}

// parsedCache keeps each mirror's templates parsed, for as long as its
// template list stays the same: parsing 1,000 templates took a fifth of a
// query's time, at every query.
type parsedCache struct {
	mu sync.Mutex
	m  map[*ctxsync.Mirror]parsedList
}

type parsedList struct {
	server string
	gen    uint64 // the mirror's TemplateGen when parsed
	tps    []*template.Template
}

// parsedTemplates returns the templates of server's mirror m that parse,
// parsed; the result is shared and must not be modified.
func (e *Engine) parsedTemplates(server string, m *ctxsync.Mirror) []*template.Template {
	e.parsed.mu.Lock()
	pl, ok := e.parsed.m[m]
	e.parsed.mu.Unlock()
	if ok && pl.gen == m.TemplateGen() {
		return pl.tps
	}
	ts, gen := m.TemplateList()
	pl = parsedList{server: server, gen: gen}
	for _, t := range ts {
		tp, err := template.Parse(t)
		if err != nil {
			e.log.Debug("template not usable", "server", server, "err", err)
			continue
		}
		pl.tps = append(pl.tps, tp)
	}
	e.parsed.mu.Lock()
	defer e.parsed.mu.Unlock()
	if e.parsed.m == nil {
		e.parsed.m = map[*ctxsync.Mirror]parsedList{}
	}
	// Mirrors a reload took out are forgotten.
	for old, l := range e.parsed.m {
		if cur, ok := e.mirror(l.server); !ok || cur != old {
			delete(e.parsed.m, old)
		}
	}
	e.parsed.m[m] = pl
	return pl.tps
}

// mayExpand reports whether a proposal's values may be sent to server: in
// its completion calls and in the URI read. A task is the caller's text
// and may quote what must not go to an upstream: no value may hold the
// daemon's token, a URL's user info, or a bearer or secret-named value
// (see serverSet.callers; another server's secret is no reason, nor a
// piece of one, or which values expand would tell a caller which of its
// guesses is one),
// nor be one where it stands in the task (read is the task as it reads,
// masked the same as the redactor shows it: "Authorization: Bearer X"
// there masks the value X);
// and the expansion must pass the request's filter (its URI prefixes), so
// that a server outside them is not asked.
func (e *Engine) mayExpand(set *serverSet, read, masked, server string, tp *template.Template, values map[string]string, filt Filter) bool {
	for name, v := range values {
		// Fewer of v in the masked task than in the task: the redactor
		// masked it where it stands.
		if k := redact.Skeleton(v); set.mayNotCarry(v) || strings.Count(masked, k) < strings.Count(read, k) {
			// The value itself is not logged: it holds a credential.
			e.log.Debug("template value not sent: it holds a credential", "server", server, "template", tp.URITemplate, "variable", name)
			return false
		}
	}
	// Values Expand refuses (an empty segment, a drive, a root the
	// template lacks) are not sent in completions either; Expand checks
	// the confirmed values again.
	uri, err := tp.Expand(values)
	if err != nil {
		return false
	}
	if len(filt.URIPrefixes) == 0 && len(filt.MIMETypes) == 0 {
		return true
	}
	t := tp.Template
	return filt.match(resource.Descriptor{Server: server, URI: uri, Name: t.Name, Title: t.Title, Description: t.Description, MIMEType: t.MIMEType})
}

// confirm asks server's completion (through its mirror m) for each value of a proposal, in the
// template's variable order, each with the values confirmed before it as
// context, and returns the confirmed values (the server's spelling), or nil
// when one is not confirmed or a call fails.
func (e *Engine) confirm(ctx context.Context, m *ctxsync.Mirror, server string, tp *template.Template, values map[string]string) map[string]string {
	out := make(map[string]string, len(values))
	for _, v := range tp.Vars {
		val, ok := values[v.Name]
		if !ok {
			continue
		}
		var resolved map[string]string
		if len(out) > 0 {
			resolved = out
		}
		c, err := m.Complete(ctx, tp.URITemplate, v.Name, val, resolved)
		if err != nil {
			e.log.Debug("completion failed; template expansion dropped", "server", server, "template", tp.URITemplate, "variable", v.Name, "err", err)
			return nil
		}
		got, ok := confirmedValue(val, c.Values, c.HasMore)
		if !ok || !template.Fits(v, got) {
			return nil
		}
		out[v.Name] = got
	}
	return out
}

// confirmedValue returns the server's value for val among its completions:
// val itself, the same text in other case (the server's spelling), or the
// single suggestion that starts with val ("ali" → "alice") when the server
// has no more.
func confirmedValue(val string, completions []string, hasMore bool) (string, bool) {
	if slices.Contains(completions, val) {
		return val, true
	}
	for _, c := range completions {
		if strings.EqualFold(c, val) {
			return c, true
		}
	}
	if len(completions) == 1 && !hasMore && len(completions[0]) > len(val) &&
		strings.HasPrefix(strings.ToLower(completions[0]), strings.ToLower(val)) {
		return completions[0], true
	}
	return "", false
}

// scoreExpansions scores expansions on the scale of the listed descriptors'
// fused scores under how: for the query (and, with Ranking.Clauses, each
// clause) it retrieves the listed descriptors' dense and lexical lists
// again, as fuse does (rank keeps only their fusion; this runs only for a
// query that yields expansions), and each expansion's own dense and
// lexical scores (index.Score: as if it were indexed), then fuses them the
// same way: for convex fusion, each list's score normalised by the list's
// best (the expansion's own when it beats them, without re-normalising the
// listed ones); for RRF, the rank the expansion would take in each list.
// Clauses combine as in combineClauses.
func (e *Engine) scoreExpansions(ctx context.Context, query string, filt Filter, exps []expansion, how Ranking) ([]float64, error) {
	texts := []string{query}
	if how.Clauses > 0 {
		cl := lexical.Clauses(query)
		texts = append(texts, cl[:min(len(cl), maxClauses)]...)
	}
	f := index.Filter{Servers: e.scope(filt.Servers)}
	per := make([][]float64, len(texts)) // per[text][expansion]
	for ti, text := range texts {
		dense, lex, pass, err := e.lists(ctx, text, retrieved{}, f, filt, how)
		if err != nil {
			return nil, err
		}
		// An expansion has no indexed text, so the passage list has no say
		// in its score, as in fuse for a descriptor without passages.
		wp := how.Passages
		if len(pass) == 0 {
			wp = 0
		}
		total := how.Dense + how.Lexical + wp
		per[ti] = make([]float64, len(exps))
		for xi, x := range exps {
			ds, ls, err := e.ix.Score(ctx, text, x.desc, x.denseText)
			if err != nil {
				return nil, err
			}
			if how.Fusion == FusionRRF {
				k := how.K
				if k <= 0 {
					k = 60
				}
				if r := rankIn(dense, ds, how.Dense > 0); r > 0 {
					per[ti][xi] += how.Dense / (k + float64(r))
				}
				if r := rankIn(lex, ls, how.Lexical > 0 && ls > 0); r > 0 {
					per[ti][xi] += how.Lexical / (k + float64(r))
				}
				continue
			}
			per[ti][xi] = how.Dense/total*normalised(dense, ds, -1, how.Dense > 0) + how.Lexical/total*normalised(lex, ls, 0, how.Lexical > 0)
			if wp > 0 { // no text: the passage list has no say (rank.List.Known)
				per[ti][xi] *= total / (how.Dense + how.Lexical)
			}
		}
	}
	out := make([]float64, len(exps))
	for xi := range exps {
		out[xi] = per[0][xi]
		if len(texts) > 1 {
			best := math.Inf(-1)
			for _, p := range per[1:] {
				best = max(best, p[xi])
			}
			out[xi] += how.Clauses * best
		}
	}
	return out, nil
}

// normalised is rank.Convex's normalisation of score s against a list
// whose lowest possible score is floor, as if s had been in the list: the
// list's best is max(best, s), so the result is in [0, 1]. A list that is
// off, or has no information, contributes 0.
func normalised(l []index.Hit, s, floor float64, on bool) float64 {
	if !on {
		return 0
	}
	top := s
	if len(l) > 0 {
		top = max(top, l[0].Score)
	}
	span := top - floor
	if !(span > 0) || math.IsInf(span, 0) {
		return 0
	}
	return (s - floor) / span
}

// rankIn returns the 1-based rank score s would take in list l (best
// first), or 0 when it would fall off a list cut at pool.
func rankIn(l []index.Hit, s float64, on bool) int {
	if !on {
		return 0
	}
	r := 1 + slices.IndexFunc(l, func(h index.Hit) bool { return h.Score < s })
	if r == 0 { // no listed score is lower
		r = len(l) + 1
		if len(l) >= pool {
			return 0
		}
	}
	return r
}
