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
	"github.com/contextd/contextd/eval/internal/answers"
	"github.com/contextd/contextd/internal/budget"
	"github.com/contextd/contextd/internal/config"
	"github.com/contextd/contextd/internal/engine"
)

// Assemblers compared by RunAnswers besides contextd.
const (
	// AssemblerGreedyWhole packs whole resources in rank order, skipping
	// any that does not fit in what is left (greedy packing in rank order).
	AssemblerGreedyWhole = "greedy-whole"
	// AssemblerHeadCut returns the top-ranked resources whole while they
	// fit and cuts the first that does not to its head, then stops (the
	// budget benchmark's greedy-in-order).
	AssemblerHeadCut = "head-cut"
)

// baselineDepth is how many ranked candidates the baselines may read: more
// than any budget here lets them use.
const baselineDepth = 50

// AnswerRow is one assembler at one token budget over a split's queries.
type AnswerRow struct {
	Assembler string
	Budget    int // tokens
	Queries   int
	// AnswerBearing is the share of queries whose returned text holds one
	// of the query's answer strings, byte for byte.
	AnswerBearing float64
	// ByKind is AnswerBearing per query kind ("deep", "similar", …).
	ByKind map[string]float64
	// ByServer is AnswerBearing per server of the answer's document.
	ByServer map[string]float64
	// Tokens is the mean number of tokens returned per answer.
	Tokens float64
	// ReadsPerAnswer is the mean number of resources/read calls.
	ReadsPerAnswer float64
	// OverBudget counts answers whose tokens exceed the budget (must be 0).
	OverBudget int
}

// An AnswerCase is one query answered by one assembler at one budget, for
// looking at what was returned.
type AnswerCase struct {
	QueryID, Query, Kind, Want string // Want: the document holding the answer
	Assembler                  string
	Budget                     int
	Bearing                    bool
	// WantRank is the answer document's 1-based rank in the engine's
	// ranking (0: not in the first 50).
	WantRank int
	// Ranked is the engine's first ten, "corpus-id score" each, best
	// first: what the answer document competed with (empty for the
	// baselines).
	Ranked   []string `json:",omitempty"`
	Tokens   int
	Returned []string // "corpus-id (form, tokens)", in order
	// Text is what contextd returned, its contents in order, for reading
	// (empty for the baselines).
	Text string `json:",omitempty"`
	// Reasons are contextd's reasons, each item's then each omitted
	// candidate's, "corpus-id: reason" (empty for the baselines).
	Reasons []string `json:",omitempty"`
}

// RunAnswers answers every query of the split that answers.jsonl answers,
// at each budget, with contextd's Assemble and with two baselines over the
// same ranking (greedy whole packing in rank order, and head-cut), and
// reports how often the returned text holds the answer. Tokens are counted
// with cl100k_base.
func RunAnswers(ctx context.Context, opts Options, budgets []int) ([]AnswerRow, []AnswerCase, error) {
	progress := func(format string, args ...any) {
		if opts.Progress != nil {
			fmt.Fprintf(opts.Progress, "eval: "+format+"\n", args...)
		}
	}
	ds, err := beir.Load(opts.Dataset, opts.Split)
	if err != nil {
		return nil, nil, err
	}
	list, err := answers.LoadAnswers(opts.Dataset, opts.Split)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", opts.Dataset, err)
	}
	byQuery := make(map[string]answers.Answer, len(list))
	for _, a := range list {
		byQuery[a.ID] = a
	}
	name := filepath.Base(filepath.Clean(opts.Dataset))
	servers, ids, _, err := serve(ds, name)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", opts.Dataset, err)
	}
	body := map[string]string{}
	server := map[string]string{}
	for _, d := range ds.Corpus {
		body[d.ID] = cmp.Or(d.Content, d.Text)
		server[d.ID] = d.Server
	}
	tok, err := budget.NewTokenizer(config.DefaultTokenizer)
	if err != nil {
		return nil, nil, err
	}
	emb, err := newEmbedder(embDefault)
	if err != nil {
		return nil, nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() { cancel(); wg.Wait() }()
	progress("%s/%s: %d documents, %d answered queries, budgets %v", name, opts.Split, len(ds.Corpus), len(byQuery), budgets)
	start := time.Now()
	eng, err := startEngineIn(ctx, &wg, servers, emb, true, opts.DataDir)
	if err != nil {
		return nil, nil, err
	}
	defer eng.Close()
	progress("indexed in %v", time.Since(start).Round(time.Millisecond))

	type acc struct {
		bearing, tokens, reads, over int
		kind, kindN, srv, srvN       map[string]int
	}
	sums := map[string]*acc{}
	get := func(a string, b int) *acc {
		k := fmt.Sprintf("%s@%d", a, b)
		if sums[k] == nil {
			sums[k] = &acc{kind: map[string]int{}, kindN: map[string]int{}, srv: map[string]int{}, srvN: map[string]int{}}
		}
		return sums[k]
	}
	var (
		cases    []AnswerCase
		wantRank int      // of the query being answered
		top      []string // its first ten, for the cases
	)
	var reasons []string // of the contextd answer being recorded
	record := func(q beir.Query, a answers.Answer, asm string, b int, text string, tokens, reads int, returned []string) {
		bearing := a.Found(text)
		s := get(asm, b)
		s.tokens += tokens
		s.reads += reads
		if tokens > b {
			s.over++
		}
		s.kindN[a.Kind]++
		s.srvN[server[a.CorpusID]]++
		if bearing {
			s.bearing++
			s.kind[a.Kind]++
			s.srv[server[a.CorpusID]]++
		}
		c := AnswerCase{QueryID: q.ID, Query: q.Text, Kind: a.Kind, Want: a.CorpusID, Assembler: asm, Budget: b,
			Bearing: bearing, WantRank: wantRank, Tokens: tokens, Returned: returned}
		if asm == AssemblerContextd {
			c.Text, c.Reasons, c.Ranked = text, reasons, top
		}
		cases = append(cases, c)
	}
	n := 0
	for _, q := range ds.Queries {
		a, ok := byQuery[q.ID]
		if !ok {
			continue
		}
		n++
		ranked, err := eng.Search(ctx, engine.SearchRequest{Query: q.Text, Limit: baselineDepth})
		if err != nil {
			return nil, nil, fmt.Errorf("query %s: %w", q.ID, err)
		}
		order := make([]string, len(ranked))
		wantRank, top = 0, nil
		for i, r := range ranked {
			order[i] = ids[r.Key()]
			if order[i] == a.CorpusID {
				wantRank = i + 1
			}
			if i < 10 {
				top = append(top, fmt.Sprintf("%s %.4f", order[i], r.Score))
			}
		}
		for _, b := range budgets {
			res, err := eng.Assemble(ctx, engine.AssembleRequest{Query: q.Text, TokenBudget: b})
			if err != nil {
				return nil, nil, fmt.Errorf("query %s: %w", q.ID, err)
			}
			var text strings.Builder
			var returned []string
			for _, it := range res.Items {
				for _, c := range it.Contents {
					text.WriteString(c.Text)
					text.WriteString("\n")
				}
				returned = append(returned, fmt.Sprintf("%s (%s, %d)", ids[it.Key()], it.Form, it.Tokens))
			}
			reasons = nil
			for _, it := range res.Items {
				reasons = append(reasons, fmt.Sprintf("%s: %s", ids[it.Key()], it.Reason))
			}
			for _, o := range res.Omitted {
				reasons = append(reasons, fmt.Sprintf("%s: %s (%s)", ids[o.Key()], o.Reason, o.Detail))
			}
			record(q, a, AssemblerContextd, b, text.String(), res.TotalTokens, res.Reads, returned)

			text.Reset()
			returned = nil
			left, reads := b, 0
			for _, id := range order {
				if left <= 0 {
					break
				}
				reads++
				if !budget.Fits(tok, len(body[id]), left) {
					continue
				}
				if t := tok.Count(body[id]); t <= left {
					text.WriteString(body[id] + "\n")
					left -= t
					returned = append(returned, fmt.Sprintf("%s (whole, %d)", id, t))
				}
			}
			record(q, a, AssemblerGreedyWhole, b, text.String(), b-left, reads, returned)

			text.Reset()
			returned = nil
			left, reads = b, 0
			for _, id := range order {
				if left <= 0 {
					break
				}
				reads++
				out, t := budget.TrimToBudget(tok, body[id], left)
				left -= t
				text.WriteString(out + "\n")
				form := "whole"
				if out != body[id] {
					form = "head"
				}
				returned = append(returned, fmt.Sprintf("%s (%s, %d)", id, form, t))
				if out != body[id] {
					break
				}
			}
			record(q, a, AssemblerHeadCut, b, text.String(), b-left, reads, returned)
		}
		if n%20 == 0 {
			progress("%d/%d queries", n, len(byQuery))
		}
	}
	var rows []AnswerRow
	for _, b := range budgets {
		for _, asm := range []string{AssemblerContextd, AssemblerGreedyWhole, AssemblerHeadCut} {
			s := get(asm, b)
			row := AnswerRow{Assembler: asm, Budget: b, Queries: n, OverBudget: s.over, ByKind: map[string]float64{}, ByServer: map[string]float64{}}
			if n > 0 {
				row.AnswerBearing = float64(s.bearing) / float64(n)
				row.Tokens = float64(s.tokens) / float64(n)
				row.ReadsPerAnswer = float64(s.reads) / float64(n)
			}
			for k, m := range s.kindN {
				row.ByKind[k] = float64(s.kind[k]) / float64(m)
			}
			for k, m := range s.srvN {
				row.ByServer[k] = float64(s.srv[k]) / float64(m)
			}
			rows = append(rows, row)
		}
	}
	return rows, cases, nil
}

// AnswerTable renders rows as a Markdown table.
func AnswerTable(rows []AnswerRow) string {
	var kinds, servers []string
	for _, r := range rows {
		for k := range r.ByKind {
			if !slices.Contains(kinds, k) {
				kinds = append(kinds, k)
			}
		}
		for k := range r.ByServer {
			if !slices.Contains(servers, k) {
				servers = append(servers, k)
			}
		}
	}
	slices.Sort(kinds)
	slices.Sort(servers)
	var b strings.Builder
	b.WriteString("| budget | assembler | answer-bearing |")
	for _, k := range kinds {
		fmt.Fprintf(&b, " %s |", cmp.Or(k, "(no kind)"))
	}
	for _, s := range servers {
		fmt.Fprintf(&b, " %s |", cmp.Or(s, "(no server)"))
	}
	b.WriteString(" tokens used | reads per answer | over budget |\n|--:|---|--:|")
	b.WriteString(strings.Repeat("--:|", len(kinds)+len(servers)))
	b.WriteString("--:|--:|--:|\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "| %d | %s | %.3f |", r.Budget, r.Assembler, r.AnswerBearing)
		for _, k := range kinds {
			fmt.Fprintf(&b, " %.3f |", r.ByKind[k])
		}
		for _, s := range servers {
			fmt.Fprintf(&b, " %.3f |", r.ByServer[s])
		}
		fmt.Fprintf(&b, " %.0f | %.2f | %d |\n", r.Tokens, r.ReadsPerAnswer, r.OverBudget)
	}
	return b.String()
}
