package harness

import (
	"cmp"
	"math"
	"slices"
	"strings"
	"unicode"

	"github.com/contextd/contextd/internal/lexical"
)

// okapi is textbook BM25 ("Okapi at TREC-3", Robertson et al. 1994) as the
// widely used Python package rank_bm25 implements BM25Okapi: k1 = 1.5,
// b = 0.75, idf = ln((N − df + 0.5)/(df + 0.5)) with negative idfs raised
// to 0.25 × the mean idf. Text is split into words at camelCase boundaries
// and at every character that is not a letter or digit, lowercased, and
// English stop words are dropped; nothing is stemmed. It reproduces the
// baseline DESIGN.md quotes (nDCG@10 0.502 on MetaTool single-tool queries):
// 0.491 on the test split. Plain white-space splitting, which leaves
// punctuation on words, gives 0.311; letters-and-digits words 0.384; with
// camelCase splitting 0.415.
type okapi struct {
	ids   []string
	tf    []map[string]int
	lens  []int
	avg   float64
	idf   map[string]float64
	k1, b float64
}

func okapiTokens(s string) []string {
	var b strings.Builder
	prev := rune(0)
	for _, r := range s {
		if unicode.IsUpper(r) && unicode.IsLower(prev) {
			b.WriteByte(' ')
		}
		b.WriteRune(r)
		prev = r
	}
	var out []string
	for _, w := range strings.FieldsFunc(strings.ToLower(b.String()), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
		if !lexical.IsStopWord(w) {
			out = append(out, w)
		}
	}
	return out
}

func newOkapi(ids, texts []string) *okapi {
	o := &okapi{ids: ids, idf: map[string]float64{}, k1: 1.5, b: 0.75}
	df := map[string]int{}
	total := 0
	for _, t := range texts {
		toks := okapiTokens(t)
		tf := map[string]int{}
		for _, w := range toks {
			tf[w]++
		}
		for w := range tf {
			df[w]++
		}
		o.tf = append(o.tf, tf)
		o.lens = append(o.lens, len(toks))
		total += len(toks)
	}
	n := float64(len(texts))
	o.avg = float64(total) / max(n, 1)
	var sum float64
	var negative []string
	for w, d := range df {
		idf := math.Log((n - float64(d) + 0.5) / (float64(d) + 0.5))
		o.idf[w] = idf
		sum += idf
		if idf < 0 {
			negative = append(negative, w)
		}
	}
	eps := 0.25 * sum / max(float64(len(df)), 1)
	for _, w := range negative {
		o.idf[w] = eps
	}
	return o
}

// search returns the ids of the best n documents (every document is scored,
// as rank_bm25's get_top_n does; ties keep corpus order).
func (o *okapi) search(query string, n int) []string {
	q := okapiTokens(query)
	type scored struct {
		i int
		s float64
	}
	all := make([]scored, len(o.ids))
	for i, tf := range o.tf {
		var s float64
		for _, w := range q {
			f := float64(tf[w])
			s += o.idf[w] * f * (o.k1 + 1) / (f + o.k1*(1-o.b+o.b*float64(o.lens[i])/o.avg))
		}
		all[i] = scored{i, s}
	}
	slices.SortStableFunc(all, func(a, b scored) int { return cmp.Compare(b.s, a.s) })
	out := make([]string, 0, n)
	for _, x := range all[:min(n, len(all))] {
		out = append(out, o.ids[x.i])
	}
	return out
}
