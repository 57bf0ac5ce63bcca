package engine

import (
	"cmp"
	"context"
	"errors"
	"math"
	"runtime"
	"slices"

	"golang.org/x/sync/errgroup"

	"github.com/contextd/contextd/internal/embed/remote"
	"github.com/contextd/contextd/internal/index"
	"github.com/contextd/contextd/internal/lexical"
	"github.com/contextd/contextd/internal/rank"
	"github.com/contextd/contextd/internal/redact"
	"github.com/contextd/contextd/internal/resource"
)

// pool is how deep each retrieval list goes before fusion.
const pool = 100

// Diversification of compound queries (Ranking.Diversify): the first
// diversifyK results are chosen from the first diversifyDepth by xQuAD
// (rank.Diversify) with temperature diversifyTau, in units of the fused
// score (a convex score of at most 1 plus Clauses times a clause's). They
// were set on MetaTool's dev split, with two-need requests made by joining
// two dev queries (eval/README.md).
const (
	diversifyK     = 10
	diversifyDepth = 20
	diversifyTau   = 0.1
)

// maxClauses caps how many clauses of a compound query are ranked on their
// own (each costs a query embedding and a dense scan); later ones count only
// as part of the whole query.
const maxClauses = 8

// Fusion names how the dense and lexical lists are combined.
type Fusion int

// Fusions.
const (
	// FusionConvex is a convex combination of normalised scores
	// (rank.Convex, Bruch et al. 2023) with α = Dense/(Dense+Lexical).
	FusionConvex Fusion = iota
	// FusionRRF is weighted reciprocal rank fusion (rank.FuseWeighted,
	// Cormack et al. 2009) with the weights Dense and Lexical.
	FusionRRF
)

// A Ranking says how descriptors are ranked. The dense list ranks by cosine
// similarity of embeddings, the lexical list by BM25F; each is cut at 100.
type Ranking struct {
	// Dense and Lexical weigh the two lists; a zero weight leaves that
	// list out, and both zero is invalid.
	Dense, Lexical float64
	// Passages weighs a third list, of the descriptors whose indexed text
	// holds a passage sharing words with the query, by that passage's BM25
	// (index.PassageLexical): it finds the answer deep in a long text. It
	// judges only texts of two or more passages; every other descriptor
	// takes the mean of its two other normalised scores in its place
	// (rank.List.Known), and a query no passage matches is ranked by the
	// other two lists alone.
	Passages float64
	Fusion   Fusion
	K        float64 // RRF's k; zero means 60, the paper's value
	// Clauses is the weight, for a compound query (lexical.Clauses), of a
	// descriptor's best score over the clauses ranked on their own, added
	// to its score for the whole query, so that each need of "the stock
	// price of Apple and the latest news about it" finds its resources.
	// Zero ranks the whole query only.
	Clauses float64
	// Diversify is xQuAD's λ in [0, 1] (rank.Diversify) for a compound
	// query: how much the head of the ranking is re-ordered so that each
	// clause is served, rather than the clause the whole query leans to
	// filling it. Zero keeps the fused order. A result moved up takes the
	// score of the best result after it, so scores stay non-increasing and
	// Assemble's value order and value floor keep the diversified order. It
	// applies to FusionConvex only: its temperature is in units of the
	// convex score.
	Diversify float64
}

// DefaultRanking is the daemon's ranking when Options.Ranking is zero: the
// one the eval measured best on MetaTool's dev split with the default
// embedder (see eval/README.md), with the passage list weighed 0.15, chosen
// on the Go docs' and the answers dataset's dev splits: Go docs nDCG@10
// 0.767 without it, 0.781 at 0.15, 0.764 at 0.2, 0.759 at 0.3 (recall@10
// 0.757, 0.766, 0.749, 0.738); answer-bearing at 500 / 2,000 / 8,000
// tokens 0.247 / 0.481 / 0.654 without it, 0.346 / 0.605 / 0.741 at 0.15,
// 0.370 / 0.605 / 0.753 at 0.2, 0.420 / 0.642 / 0.765 at 0.3. MetaTool's
// texts are one passage each, so its ranking is unchanged.
var DefaultRanking = Ranking{Dense: 0.9, Lexical: 0.1, Passages: 0.15, Fusion: FusionConvex, Clauses: 0.3, Diversify: 0.4}

func (r Ranking) valid() bool {
	finite := func(x float64) bool { return !math.IsInf(x, 0) && !math.IsNaN(x) }
	return finite(r.Dense) && finite(r.Lexical) && finite(r.Passages) && finite(r.K) && finite(r.Clauses) &&
		r.Dense >= 0 && r.Lexical >= 0 && r.Passages >= 0 && r.Dense+r.Lexical > 0 && r.K >= 0 && r.Clauses >= 0 &&
		r.Diversify >= 0 && r.Diversify <= 1 &&
		(r.Fusion == FusionConvex || r.Fusion == FusionRRF)
}

// A Ranked is a descriptor with its fused score and 1-based rank.
type Ranked struct {
	resource.Descriptor
	Score float64
	Rank  int
}

// rank ranks the descriptors that pass filt for the query and returns at
// most n, best first.
func (e *Engine) rank(ctx context.Context, query string, filt Filter, n int, how Ranking) ([]Ranked, error) {
	f := index.Filter{Servers: e.scope(filt.Servers)}
	if !slices.ContainsFunc(f.Servers, func(s string) bool { return e.ix.Len(s) > 0 }) {
		if err := e.unavailable(f.Servers); err != nil {
			return nil, err
		}
	}
	var clauses []string
	if how.Clauses > 0 || how.Diversify > 0 {
		clauses = lexical.Clauses(query)
		clauses = clauses[:min(len(clauses), maxClauses)]
	}
	texts := append([]string{query}, clauses...)
	got := make([]retrieved, len(texts))
	// The lexical lists need no vectors: they are retrieved while the texts
	// are embedded, in the time the encoder leaves a core idle (its groups
	// rarely end together).
	lexical := make(chan struct{})
	go func() {
		defer close(lexical)
		for i, q := range texts {
			got[i].lex, got[i].pass = e.lexicalLists(q, listDepth(filt), f, how)
			got[i].lexical = true
		}
	}()
	// The dense lists of the query and its clauses in one pass over the
	// vectors.
	if how.Dense > 0 {
		dense, err := e.ix.DenseEach(ctx, texts, listDepth(filt), f)
		if err != nil {
			<-lexical
			return nil, e.queryEmbedError(err)
		}
		for i := range got {
			got[i].dense = dense[i]
		}
	}
	<-lexical
	lists := make([][]rank.Fused, len(texts))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(runtime.GOMAXPROCS(0))
	for i, q := range texts {
		g.Go(func() error {
			var err error
			lists[i], err = e.fuse(gctx, q, got[i], f, filt, how)
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	fused := combineClauses(lists[0], lists[1:], how.Clauses)
	if how.Diversify > 0 && how.Fusion == FusionConvex {
		fused = rank.Diversify(fused, lists[1:], how.Diversify, diversifyTau, diversifyK, diversifyDepth)
	}
	out := make([]Ranked, 0, min(n, len(fused)))
	for _, h := range fused {
		if len(out) == n {
			break
		}
		k, ok := resource.ParseKey(h.ID)
		if !ok {
			continue
		}
		d, ok := e.ix.Get(k)
		if !ok { // deleted since retrieval
			continue
		}
		out = append(out, Ranked{Descriptor: d, Score: h.Score, Rank: len(out) + 1})
	}
	return e.withTemplates(ctx, query, filt, out, n, how), nil
}

// listDepth is how deep lists retrieves each list: pool, or all (0) with
// a filter that narrows.
func listDepth(filt Filter) int {
	if filt.narrows() {
		return 0
	}
	return pool
}

// retrieved holds what rank retrieved of one text's lists before fusing
// them: its dense list (Index.DenseEach at listDepth; nil: not retrieved)
// and, when lexical is set, its lexical lists (lexicalLists).
type retrieved struct {
	dense, lex, pass []index.Hit
	lexical          bool
}

// lexicalLists retrieves a text's BM25F lists, over descriptors and over
// passages, each at most depth deep, for the lists how weighs.
func (e *Engine) lexicalLists(text string, depth int, f index.Filter, how Ranking) (lex, pass []index.Hit) {
	if how.Lexical > 0 {
		lex = e.ix.Lexical(text, depth, f)
	}
	if how.Passages > 0 {
		pass = e.ix.PassageLexical(text, depth, f)
	}
	return lex, pass
}

// lists retrieves the listed descriptors' dense and lexical lists for one
// query text, each at most pool deep, except those got already holds. With
// a MIME or URI filter every descriptor in scope is scored, then filtered,
// so a narrow filter cannot come back empty while matches exist.
func (e *Engine) lists(ctx context.Context, text string, got retrieved, f index.Filter, filt Filter, how Ranking) (_, lex, pass []index.Hit, err error) {
	depth := listDepth(filt)
	dense := got.dense
	if how.Dense > 0 && dense == nil {
		if dense, err = e.ix.Dense(ctx, text, depth, f); err != nil {
			return nil, nil, nil, e.queryEmbedError(err)
		}
	}
	lex, pass = got.lex, got.pass
	if !got.lexical {
		lex, pass = e.lexicalLists(text, depth, f, how)
	}
	if filt.narrows() {
		keep := func(hs []index.Hit) []index.Hit {
			out := hs[:0]
			for _, h := range hs {
				if d, ok := e.ix.Get(h.Key); ok && filt.match(d) {
					out = append(out, h)
				}
			}
			return out[:min(len(out), pool)]
		}
		dense, lex, pass = keep(dense), keep(lex), keep(pass)
	}
	return dense, lex, pass, nil
}

// fuse retrieves (lists) and fuses the dense and lexical lists for one
// query, those got does not already hold.
func (e *Engine) fuse(ctx context.Context, query string, got retrieved, f index.Filter, filt Filter, how Ranking) ([]rank.Fused, error) {
	dense, lex, pass, err := e.lists(ctx, query, got, f, filt, how)
	if err != nil {
		return nil, err
	}
	if how.Fusion == FusionRRF {
		return rank.FuseWeighted(how.K, []float64{how.Dense, how.Lexical, how.Passages}, ids(dense), ids(lex), ids(pass)), nil
	}
	wp := how.Passages
	if len(pass) == 0 {
		wp = 0
	}
	total := how.Dense + how.Lexical + wp
	// Only a text of two or more passages is in the passage list; for any
	// other item the list has no say, and it keeps its score from the
	// other two.
	hasPassages := func(id string) bool {
		k, ok := resource.ParseKey(id)
		return ok && e.ix.HasPassages(k)
	}
	return rank.ConvexN([]float64{how.Dense / total, how.Lexical / total, wp / total},
		rank.List{Items: scored(dense), Floor: -1, Cut: len(dense) == pool},
		rank.List{Items: scored(lex), Floor: 0, Cut: len(lex) == pool},
		rank.List{Items: scored(pass), Floor: 0, Cut: len(pass) == pool, Known: hasPassages}), nil
}

// combineClauses adds to each item's score for the whole query weight ×
// its best score over the clauses. An item missing from a list scores that
// list's lowest score. Ties keep the whole query's order.
func combineClauses(whole []rank.Fused, clauses [][]rank.Fused, weight float64) []rank.Fused {
	if len(clauses) == 0 || weight == 0 {
		return whole
	}
	floor := func(l []rank.Fused) float64 {
		if len(l) == 0 {
			return 0
		}
		return l[len(l)-1].Score
	}
	type acc struct {
		id                 string
		whole, best, score float64
		order              int
	}
	var accs []acc
	at := make(map[string]int, 2*len(whole))
	get := func(id string) int {
		i, ok := at[id]
		if !ok {
			i = len(accs)
			accs = append(accs, acc{id: id, whole: floor(whole), best: math.Inf(-1), order: len(whole) + i})
			at[id] = i
		}
		return i
	}
	for i, h := range whole {
		a := &accs[get(h.ID)]
		a.whole, a.order = h.Score, i
	}
	for _, l := range clauses {
		for _, h := range l {
			get(h.ID)
		}
	}
	scores := make([]float64, len(accs))
	for _, l := range clauses {
		lo := floor(l)
		for i := range scores {
			scores[i] = lo
		}
		for _, h := range l {
			scores[at[h.ID]] = h.Score
		}
		for i, s := range scores {
			accs[i].best = max(accs[i].best, s)
		}
	}
	for i := range accs {
		accs[i].score = accs[i].whole + weight*accs[i].best
	}
	slices.SortFunc(accs, func(x, y acc) int {
		if c := cmp.Compare(y.score, x.score); c != 0 {
			return c
		}
		return cmp.Compare(x.order, y.order)
	})
	out := make([]rank.Fused, len(accs))
	for i, a := range accs {
		out[i] = rank.Fused{ID: a.id, Score: a.score}
	}
	return out
}

func scored(hits []index.Hit) []rank.Scored {
	out := make([]rank.Scored, len(hits))
	for i, h := range hits {
		out[i] = rank.Scored{ID: h.Key.String(), Score: h.Score}
	}
	return out
}

func ids(hits []index.Hit) []string {
	out := make([]string, len(hits))
	for i, h := range hits {
		out[i] = h.Key.String()
	}
	return out
}

// queryEmbedError is what a caller is told when its query could not be
// embedded: what kind of failure, not what the embedding service said,
// which is logged. A service may quote its input back, the caller's query,
// and the masking of its credentials there would tell the caller which of
// its words is one (or, left unmasked, show one the service volunteers).
// The error wraps err, for errors.Is.
func (e *Engine) queryEmbedError(err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, index.ErrClosed) {
		return err
	}
	e.log.Warn("embedding the query failed", "err", err)
	kind := "the embedder failed"
	switch {
	case errors.Is(err, remote.ErrUnauthorized):
		kind = "the embedder refused its API key (check embedder.api_key)"
	case errors.Is(err, remote.ErrNotFound):
		kind = "the embedder does not serve its URL or model (check embedder.url and embedder.model)"
	case errors.Is(err, remote.ErrRejected):
		kind = "the embedder rejected the request"
	case errors.Is(err, remote.ErrUnavailable):
		kind = "the embedder is unavailable"
	case errors.Is(err, remote.ErrBadResponse):
		kind = "the embedder's answer was malformed"
	}
	return redact.Withheld(err, "embedding the query failed: "+kind+" (its message is in the log)")
}
