package harness

import (
	"cmp"
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/contextd/contextd/eval/beir"
	"github.com/contextd/contextd/internal/budget"
	"github.com/contextd/contextd/internal/config"
	"github.com/contextd/contextd/internal/engine"
	"github.com/contextd/contextd/internal/selector"
)

// BudgetRow is one assembler at one token budget, summed over a split's
// queries (the budget benchmark).
type BudgetRow struct {
	Assembler string
	Budget    int // tokens
	Queries   int
	// RelevantShare is the share of all returned tokens that come from
	// resources the qrels judge relevant (score > 0).
	RelevantShare float64
	// ReadsPerAnswer is the mean number of resources/read calls.
	ReadsPerAnswer float64
	// OverBudget counts answers whose tokens exceed the budget (must be 0).
	OverBudget int
	// RelevantRecall is the mean, over queries, of the share of the
	// resources judged relevant that the answer returns something of: what
	// a floor on value costs in coverage.
	RelevantRecall float64
}

// Assemblers compared by RunBudget, in report order.
const (
	AssemblerContextd = "contextd"        // engine.Assemble, the daemon's answer
	AssemblerReadAll  = "read-all+trim"   // read every candidate, concatenate in rank order, trim
	AssemblerGreedy   = "greedy-in-order" // read in rank order; whole while it fits, then cut one and stop
)

// RunBudget answers every query of the split at each budget with contextd's
// Assemble and with two baselines over the same ranked candidates (the
// engine's top engine.DefaultCandidates): reading every candidate and then
// trimming their concatenation, and greedy packing in rank order. Tokens
// are counted with cl100k_base. The corpus needs `content` (or its `text`
// is the body).
//
// Each of floors adds a row "contextd floor=F" that assembles with that
// engine.AssembleRequest.ValueFloor (for choosing the default on dev).
func RunBudget(ctx context.Context, opts Options, budgets []int, floors ...float64) ([]BudgetRow, error) {
	progress := func(format string, args ...any) {
		if opts.Progress != nil {
			fmt.Fprintf(opts.Progress, "eval: "+format+"\n", args...)
		}
	}
	ds, err := beir.Load(opts.Dataset, opts.Split)
	if err != nil {
		return nil, err
	}
	name := filepath.Base(filepath.Clean(opts.Dataset))
	servers, ids, _, err := serve(ds, name)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", opts.Dataset, err)
	}
	body := map[string]string{}
	for _, d := range ds.Corpus {
		body[d.ID] = cmp.Or(d.Content, d.Text)
	}
	tok, err := budget.NewTokenizer(config.DefaultTokenizer)
	if err != nil {
		return nil, err
	}
	emb, err := newEmbedder(embDefault)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() { cancel(); wg.Wait() }()
	progress("%s/%s: %d documents, %d queries, budgets %v", name, opts.Split, len(ds.Corpus), len(ds.Queries), budgets)
	progress("indexing %d descriptors and their contents with %s", len(ds.Corpus), emb.Name())
	start := time.Now()
	eng, err := startEngine(ctx, &wg, servers, emb, true)
	if err != nil {
		return nil, err
	}
	defer eng.Close()
	progress("indexed in %v", time.Since(start).Round(time.Millisecond))

	type acc struct {
		relevant, total, reads, over int
		recall                       float64
	}
	nRelevant := func(judged map[string]int) int {
		n := 0
		for _, g := range judged {
			if g > 0 {
				n++
			}
		}
		return max(n, 1)
	}
	sums := map[string]*acc{}
	key := func(a string, b int) string { return fmt.Sprintf("%s@%d", a, b) }
	for qi, q := range ds.Queries {
		judged := ds.Qrels[q.ID]
		ranked, err := eng.Search(ctx, engine.SearchRequest{Query: q.Text, Limit: engine.DefaultCandidates})
		if err != nil {
			return nil, fmt.Errorf("query %s: %w", q.ID, err)
		}
		order := make([]string, len(ranked))
		for i, r := range ranked {
			order[i] = ids[r.Key()]
		}
		for _, b := range budgets {
			for fi := -1; fi < len(floors); fi++ {
				req := engine.AssembleRequest{Query: q.Text, TokenBudget: b}
				name := AssemblerContextd
				if fi >= 0 {
					req.ValueFloor = &floors[fi]
					name = fmt.Sprintf("%s floor=%.2f", AssemblerContextd, floors[fi])
				}
				res, err := eng.Assemble(ctx, req)
				if err != nil {
					return nil, fmt.Errorf("query %s: %w", q.ID, err)
				}
				c := cmp.Or(sums[key(name, b)], &acc{})
				sums[key(name, b)] = c
				for _, it := range res.Items {
					c.total += it.Tokens
					// A pointer is a descriptor, not content: it costs its
					// tokens but counts as neither relevant content nor a
					// relevant resource returned.
					if it.Form != selector.FormPointer && judged[ids[it.Key()]] > 0 {
						c.relevant += it.Tokens
						c.recall += 1 / float64(nRelevant(judged))
					}
				}
				c.reads += res.Reads
				if res.TotalTokens > b {
					c.over++
				}
			}

			// (a) read every candidate, then trim the concatenation.
			a := cmp.Or(sums[key(AssemblerReadAll, b)], &acc{})
			sums[key(AssemblerReadAll, b)] = a
			left, n := b, 0
			for _, id := range order {
				text := body[id]
				if left <= 0 {
					break
				}
				out, t := budget.TrimToBudget(tok, text, left)
				left -= t
				n += t
				if judged[id] > 0 {
					a.relevant += t
					if t > 0 {
						a.recall += 1 / float64(nRelevant(judged))
					}
				}
				if out != text {
					break
				}
			}
			a.total += n
			a.reads += len(order)
			if n > b {
				a.over++
			}

			// (b) greedy in rank order: whole while it fits, cut one, stop.
			g := cmp.Or(sums[key(AssemblerGreedy, b)], &acc{})
			sums[key(AssemblerGreedy, b)] = g
			left, n = b, 0
			for _, id := range order {
				if left <= 0 {
					break
				}
				g.reads++
				out, t := budget.TrimToBudget(tok, body[id], left)
				left -= t
				n += t
				if judged[id] > 0 {
					g.relevant += t
					if t > 0 {
						g.recall += 1 / float64(nRelevant(judged))
					}
				}
				if out != body[id] {
					break
				}
			}
			g.total += n
			if n > b {
				g.over++
			}
		}
		if (qi+1)%50 == 0 {
			progress("%d/%d queries", qi+1, len(ds.Queries))
		}
	}
	var rows []BudgetRow
	names := []string{AssemblerContextd}
	for _, f := range floors {
		names = append(names, fmt.Sprintf("%s floor=%.2f", AssemblerContextd, f))
	}
	names = append(names, AssemblerReadAll, AssemblerGreedy)
	for _, b := range budgets {
		for _, a := range names {
			s := sums[key(a, b)]
			row := BudgetRow{Assembler: a, Budget: b, Queries: len(ds.Queries), OverBudget: s.over}
			if s.total > 0 {
				row.RelevantShare = float64(s.relevant) / float64(s.total)
			}
			if len(ds.Queries) > 0 {
				row.ReadsPerAnswer = float64(s.reads) / float64(len(ds.Queries))
				row.RelevantRecall = s.recall / float64(len(ds.Queries))
			}
			rows = append(rows, row)
		}
	}
	return rows, nil
}

// BudgetTable renders rows as a Markdown table.
func BudgetTable(rows []BudgetRow) string {
	var b strings.Builder
	b.WriteString("| budget | assembler | relevant share of tokens | reads per answer | over budget | relevant resources returned |\n|--:|---|--:|--:|--:|--:|\n")
	for _, r := range slices.Clone(rows) {
		fmt.Fprintf(&b, "| %d | %s | %.3f | %.2f | %d | %.3f |\n", r.Budget, r.Assembler, r.RelevantShare, r.ReadsPerAnswer, r.OverBudget, r.RelevantRecall)
	}
	return b.String()
}
