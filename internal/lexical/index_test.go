package lexical

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// bm25f is the scoring formula written out independently of the index, for
// one query term in one document: fields are parallel slices.
func bm25f(k1, b float64, w, tf, dl, avgdl []float64, N, df float64) float64 {
	var pseudo float64
	for f := range w {
		if tf[f] == 0 {
			continue
		}
		pseudo += w[f] * tf[f] / ((1 - b) + b*dl[f]/avgdl[f])
	}
	idf := math.Log(1 + (N-df+0.5)/(df+0.5))
	return idf * pseudo * (k1 + 1) / (pseudo + k1)
}

// threeDocs is the corpus of the hand-computed tests. All its words are
// unchanged by Tokenize, so term counts can be read off the strings.
var threeDocs = []Doc{
	{ID: "d1", Name: "alpha beta", Description: "alpha gamma delta"},
	{ID: "d2", Name: "gamma", Description: "beta beta kappa"},
	{ID: "d3", Name: "delta kappa", Description: "omega"},
}

var approx = cmpopts.EquateApprox(1e-12, 0)

func TestSearchBM25FHandComputed(t *testing.T) {
	const k1, b = 1.2, 0.75
	x := New(&Options{Weights: FieldWeights{Name: 3, Description: 1}})
	x.Upsert(threeDocs...)

	// Counted by hand from threeDocs; fields are (Name, Description).
	w := []float64{3, 1}
	avg := []float64{(2 + 1 + 2) / 3.0, (3 + 3 + 1) / 3.0}
	const N = 3
	// alpha: d1 (name 1, desc 1). beta: d1 (name 1), d2 (desc 2).
	d1 := bm25f(k1, b, w, []float64{1, 1}, []float64{2, 3}, avg, N, 1) +
		bm25f(k1, b, w, []float64{1, 0}, []float64{2, 3}, avg, N, 2)
	d2 := bm25f(k1, b, w, []float64{0, 2}, []float64{1, 3}, avg, N, 2)

	got := x.Search("alpha beta", 0, nil)
	want := []Hit{{"d1", d1}, {"d2", d2}}
	if diff := cmp.Diff(want, got, approx); diff != "" {
		t.Errorf("Search(alpha beta) mismatch (-want +got):\n%s", diff)
	}

	// A term in every document has a small but positive idf (Lucene's +1).
	// kappa: d2 (desc 1), d3 (name 1); gamma: d1 (desc 1), d2 (name 1);
	// delta: d1 (desc 1), d3 (name 1). So every doc matches.
	got = x.Search("kappa gamma delta", 0, nil)
	want = []Hit{
		{"d1", bm25f(k1, b, w, []float64{0, 1}, []float64{2, 3}, avg, N, 2) + // gamma
			bm25f(k1, b, w, []float64{0, 1}, []float64{2, 3}, avg, N, 2)}, // delta
		{"d2", bm25f(k1, b, w, []float64{0, 1}, []float64{1, 3}, avg, N, 2) + // kappa
			bm25f(k1, b, w, []float64{1, 0}, []float64{1, 3}, avg, N, 2)}, // gamma
		{"d3", bm25f(k1, b, w, []float64{1, 0}, []float64{2, 1}, avg, N, 2) + // kappa
			bm25f(k1, b, w, []float64{1, 0}, []float64{2, 1}, avg, N, 2)}, // delta
	}
	slices.SortFunc(want, compareHits)
	if diff := cmp.Diff(want, got, approx); diff != "" {
		t.Errorf("Search(kappa gamma delta) mismatch (-want +got):\n%s", diff)
	}
}

// With one field of weight 1, BM25F is classic BM25.
func TestSearchSingleFieldIsClassicBM25(t *testing.T) {
	const k1, b = 2.0, 0.5
	x := New(&Options{K1: k1, B: b, Weights: FieldWeights{Description: 1}})
	x.Upsert(threeDocs...)

	// Classic BM25 (Robertson & Zaragoza 2009, with Lucene's idf).
	bm25 := func(tf, dl, avgdl, N, df float64) float64 {
		idf := math.Log(1 + (N-df+0.5)/(df+0.5))
		return idf * tf * (k1 + 1) / (tf + k1*(1-b+b*dl/avgdl))
	}
	avg := 7 / 3.0
	got := x.Search("beta omega", 0, nil)
	want := []Hit{
		{"d2", bm25(2, 3, avg, 3, 1)},
		{"d3", bm25(1, 1, avg, 3, 1)},
	}
	slices.SortFunc(want, compareHits)
	if diff := cmp.Diff(want, got, approx); diff != "" {
		t.Errorf("Search mismatch (-want +got):\n%s", diff)
	}
}

func TestSearchFieldWeightsChangeOrder(t *testing.T) {
	docs := []Doc{
		{ID: "in-name", Name: "parser", Description: "utility for text"},
		{ID: "in-description", Name: "utility", Description: "parser for text"},
	}
	ids := func(hits []Hit) []string {
		var out []string
		for _, h := range hits {
			out = append(out, h.ID)
		}
		return out
	}
	tests := []struct {
		name string
		opts *Options
		want []string
	}{
		{"defaults favour name", nil, []string{"in-name", "in-description"}},
		{"description weighted up", &Options{Weights: FieldWeights{Name: 0.5, Description: 3}}, []string{"in-description", "in-name"}},
		{"name not indexed", &Options{Weights: FieldWeights{Description: 1}}, []string{"in-description"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			x := New(tt.opts)
			x.Upsert(docs...)
			if diff := cmp.Diff(tt.want, ids(x.Search("parsers", 0, nil))); diff != "" {
				t.Errorf("order mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestSearchContentField checks that a resource's own text is searched, at
// a tenth of the description's weight by default, and that a zero Content
// weight leaves it out.
func TestSearchContentField(t *testing.T) {
	docs := []Doc{
		{ID: "in-content", Name: "notes", Description: "meeting notes", Content: "the quarterly budget was approved"},
		{ID: "in-description", Name: "plan", Description: "budget plan for the year"},
		{ID: "unrelated", Name: "todo", Description: "things to do", Content: "buy milk"},
	}
	ids := func(hits []Hit) []string {
		var out []string
		for _, h := range hits {
			out = append(out, h.ID)
		}
		return out
	}
	x := New(nil)
	x.Upsert(docs...)
	if diff := cmp.Diff([]string{"in-description", "in-content"}, ids(x.Search("budget", 0, nil))); diff != "" {
		t.Errorf("default weights (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"in-content"}, ids(x.Search("quarterly approved", 0, nil))); diff != "" {
		t.Errorf("content-only words (-want +got):\n%s", diff)
	}
	w := DefaultWeights()
	w.Content = 0
	x = New(&Options{Weights: w})
	x.Upsert(docs...)
	if got := ids(x.Search("quarterly approved", 0, nil)); len(got) != 0 {
		t.Errorf("content weight 0 still matched content: %v", got)
	}
}

// corpus returns n deterministic descriptors.
func corpus(n int, seed uint64) []Doc {
	r := rand.New(rand.NewPCG(seed, seed))
	words := []string{"alpha", "beta", "gamma", "delta", "server", "client", "config", "user",
		"profile", "token", "budget", "index", "query", "schema", "report", "file", "docs"}
	pick := func(k int) string {
		var s string
		for i := range k {
			if i > 0 {
				s += " "
			}
			s += words[r.IntN(len(words))]
		}
		return s
	}
	docs := make([]Doc, n)
	for i := range docs {
		docs[i] = Doc{
			ID:          fmt.Sprintf("doc%03d", i),
			Name:        pick(1 + r.IntN(2)),
			Title:       pick(r.IntN(4)),
			Description: pick(r.IntN(12)),
			URI:         "file:///" + pick(2) + ".md",
			MIMEType:    []string{"text/markdown", "application/json", ""}[r.IntN(3)],
		}
	}
	return docs
}

const statsQuery = "user profile server config docs alpha"

// TestUpsertDeleteKeepStatsExact checks that after any sequence of updates
// the scores equal those of an index built from scratch from the final set
// of documents, bit for bit.
func TestUpsertDeleteKeepStatsExact(t *testing.T) {
	docs := corpus(40, 1)
	fresh := func(docs []Doc) []Hit {
		x := New(nil)
		x.Upsert(docs...)
		return x.Search(statsQuery, 0, nil)
	}
	without := func(docs []Doc, id string) []Doc {
		return slices.DeleteFunc(slices.Clone(docs), func(d Doc) bool { return d.ID == id })
	}
	replaced := slices.Clone(docs)
	replaced[7] = Doc{ID: docs[7].ID, Name: "entirely different", Description: "user user user"}

	tests := []struct {
		name    string
		update  func(x *Index)
		want    []Doc
		wantLen int
	}{
		{"delete", func(x *Index) { x.Delete("doc003") }, without(docs, "doc003"), 39},
		{"delete unknown", func(x *Index) { x.Delete("nope") }, docs, 40},
		{"delete twice", func(x *Index) { x.Delete("doc003", "doc003") }, without(docs, "doc003"), 39},
		{"delete then re-add", func(x *Index) { x.Delete("doc003"); x.Upsert(docs[3]) }, docs, 40},
		{"upsert replaces", func(x *Index) { x.Upsert(replaced[7]) }, replaced, 40},
		{"upsert same doc twice in one call", func(x *Index) { x.Upsert(docs[7], replaced[7]) }, replaced, 40},
		{"upsert unchanged", func(x *Index) { x.Upsert(docs...) }, docs, 40},
		{"delete all", func(x *Index) {
			for _, d := range docs {
				x.Delete(d.ID)
			}
		}, nil, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			x := New(nil)
			x.Upsert(docs...)
			tt.update(x)
			if got := x.Len(); got != tt.wantLen {
				t.Errorf("Len() = %d, want %d", got, tt.wantLen)
			}
			if diff := cmp.Diff(fresh(tt.want), x.Search(statsQuery, 0, nil)); diff != "" {
				t.Errorf("scores differ from a fresh index (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSearch(t *testing.T) {
	x := New(nil)
	x.Upsert(
		Doc{ID: "b", Name: "token budget"},
		Doc{ID: "a", Name: "token budget"}, // same text: tie broken by ID
		Doc{ID: "c", Description: "a token"},
		Doc{ID: "d", Name: "unrelated"},
	)
	ids := func(hits []Hit) []string {
		var out []string
		for _, h := range hits {
			out = append(out, h.ID)
		}
		return out
	}
	tests := []struct {
		name  string
		query string
		n     int
		keep  func(string) bool
		want  []string
	}{
		{"all", "token budget", 0, nil, []string{"a", "b", "c"}},
		{"negative n means all", "token budget", -1, nil, []string{"a", "b", "c"}},
		{"top 1", "token budget", 1, nil, []string{"a"}},
		{"n beyond hits", "token budget", 10, nil, []string{"a", "b", "c"}},
		{"keep filters before top n", "token budget", 2, func(id string) bool { return id != "a" }, []string{"b", "c"}},
		{"keep rejects all", "token", 0, func(string) bool { return false }, nil},
		{"no match", "kubernetes", 0, nil, nil},
		{"empty query", "", 0, nil, nil},
		{"punctuation query", "?!", 0, nil, nil},
		{"stop words only", "what is the", 0, nil, nil},
		{"repeated query term counts once", "token token token", 0, nil, []string{"a", "b", "c"}},
		{"identifier query matches words", "tokenBudget", 1, nil, []string{"a"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := x.Search(tt.query, tt.n, tt.keep)
			if diff := cmp.Diff(tt.want, ids(got)); diff != "" {
				t.Errorf("Search(%q, %d) mismatch (-want +got):\n%s", tt.query, tt.n, diff)
			}
			for _, h := range got {
				if !(h.Score > 0) {
					t.Errorf("hit %v has non-positive score", h)
				}
			}
		})
	}
	if a, b := x.Search("token budget", 0, nil), x.Search("token token budget", 0, nil); !cmp.Equal(a, b) {
		t.Errorf("repeating a query term changed scores: %v vs %v", a, b)
	}
}

func TestSearchEmptyIndex(t *testing.T) {
	x := New(nil)
	if got := x.Search("anything", 10, nil); got != nil {
		t.Errorf("Search on empty index = %v, want nil", got)
	}
	x.Upsert(Doc{ID: "a", Name: "anything"})
	x.Delete("a")
	if got := x.Search("anything", 10, nil); got != nil {
		t.Errorf("Search after deleting everything = %v, want nil", got)
	}
	if x.Len() != 0 {
		t.Errorf("Len() = %d, want 0", x.Len())
	}
}

func TestSearchKeepMayUseIndex(t *testing.T) {
	x := New(nil)
	x.Upsert(Doc{ID: "a", Name: "token"}, Doc{ID: "b", Name: "token"})
	got := x.Search("token", 0, func(id string) bool { return x.Len() > 0 && id == "b" })
	if len(got) != 1 || got[0].ID != "b" {
		t.Errorf("Search = %v, want only b", got)
	}
}

func TestSearchURIAndMIME(t *testing.T) {
	x := New(nil)
	x.Upsert(
		Doc{ID: "arch", Name: "a", URI: "file:///docs/architecture%20notes.md", MIMEType: "text/markdown"},
		Doc{ID: "schema", Name: "b", URI: "db://tables/users", MIMEType: "application/json"},
	)
	for query, want := range map[string]string{
		"architecture": "arch", "notes": "arch", "markdown": "arch", "json": "schema", "users table": "schema",
	} {
		got := x.Search(query, 0, nil)
		if len(got) != 1 || got[0].ID != want {
			t.Errorf("Search(%q) = %v, want only %q", query, got, want)
		}
	}
}

func TestSelectorMatchesFullSort(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	for range 200 {
		hits := make([]Hit, r.IntN(50))
		for i := range hits {
			// Few distinct scores and IDs, so ties are common.
			hits[i] = Hit{ID: fmt.Sprint(r.IntN(20)), Score: float64(r.IntN(5))}
		}
		want := slices.Clone(hits)
		slices.SortFunc(want, compareHits)
		n := r.IntN(len(hits) + 2)
		if n > 0 && n < len(want) {
			want = want[:n]
		}
		sel := newSelector(n, len(hits))
		for _, h := range hits {
			sel.push(h)
		}
		if diff := cmp.Diff(want, sel.result(), cmpopts.EquateEmpty()); diff != "" {
			t.Fatalf("best(n=%d) mismatch (-want +got):\n%s", n, diff)
		}
	}
}

func TestNewPanicsOnInvalidOptions(t *testing.T) {
	for _, opts := range []*Options{
		{B: 1.5},
		{B: math.NaN()},
		{K1: math.Inf(1)},
		{Weights: FieldWeights{Name: -1}},
		{Weights: FieldWeights{Title: math.NaN()}},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("New(%+v) did not panic", *opts)
				}
			}()
			New(opts)
		}()
	}
}

// TestConcurrentUse is meant for -race: writers and readers at once.
func TestConcurrentUse(t *testing.T) {
	docs := corpus(200, 3)
	x := New(nil)
	x.Upsert(docs[:100]...)
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := w; i < len(docs); i += 4 {
				x.Upsert(docs[i])
				if i%3 == 0 {
					x.Delete(docs[i].ID)
				}
			}
		})
		wg.Go(func() {
			for range 100 {
				hits := x.Search(statsQuery, 5, func(id string) bool { return id != "doc000" })
				if !slices.IsSortedFunc(hits, compareHits) {
					t.Errorf("hits not sorted: %v", hits)
					return
				}
				_ = x.Len()
			}
		})
	}
	wg.Wait()
	checkInvariants(t, x)
	var want []Doc
	for i, d := range docs {
		if i%3 != 0 {
			want = append(want, d)
		}
	}
	y := New(nil)
	y.Upsert(want...)
	if diff := cmp.Diff(y.Search(statsQuery, 0, nil), x.Search(statsQuery, 0, nil)); diff != "" {
		t.Errorf("after concurrent updates, scores differ from a fresh index (-want +got):\n%s", diff)
	}
}

// FuzzIndex checks that arbitrary documents and queries never panic and
// always give positive, sorted, distinct hits.
func FuzzIndex(f *testing.F) {
	f.Add("getUserProfile", "Returns the profile", "file:///u/p.json", "user profile")
	f.Add("日本語", "テキスト", "", "日本")
	f.Add("", "", "%zz", "the")
	f.Fuzz(func(t *testing.T, name, desc, uri, query string) {
		x := New(nil)
		x.Upsert(Doc{ID: "1", Name: name, Description: desc, URI: uri}, Doc{ID: "2", Title: query})
		hits := x.Search(query, 0, nil)
		if !slices.IsSortedFunc(hits, compareHits) {
			t.Fatalf("hits not sorted: %v", hits)
		}
		seen := map[string]bool{}
		for _, h := range hits {
			if !(h.Score > 0) || math.IsInf(h.Score, 0) || seen[h.ID] {
				t.Fatalf("bad hits %v", hits)
			}
			seen[h.ID] = true
		}
		x.Delete("1", "2")
		if got := x.Search(query, 0, nil); got != nil || x.Len() != 0 {
			t.Fatalf("after deleting everything: Len %d, hits %v", x.Len(), got)
		}
	})
}

// checkInvariants verifies the index's internal bookkeeping.
func checkInvariants(t *testing.T, x *Index) {
	t.Helper()
	x.mu.RLock()
	defer x.mu.RUnlock()
	var total [numFields]int64
	refs := 0
	for id, s := range x.ids {
		sl := x.slots[s]
		if sl.id != id {
			t.Fatalf("slot %d holds %q, want %q", s, sl.id, id)
		}
		for i, term := range sl.terms {
			e := x.postings[term][sl.pos[i]]
			if e.slot != s || e.ti != uint32(i) {
				t.Fatalf("doc %q term %q: posting %+v does not point back", id, term, e)
			}
		}
		refs += len(sl.terms)
		for f, n := range x.lens[s] {
			total[f] += int64(n)
		}
	}
	for _, post := range x.postings {
		refs -= len(post)
	}
	if refs != 0 {
		t.Fatalf("postings and documents disagree by %d entries", refs)
	}
	if total != x.totalLen {
		t.Fatalf("totalLen = %v, want %v", x.totalLen, total)
	}
	if len(x.ids)+len(x.free) != len(x.slots) {
		t.Fatalf("%d live + %d free != %d slots", len(x.ids), len(x.free), len(x.slots))
	}
}

func TestRandomUpdates(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 9))
	a, b := corpus(100, 5), corpus(100, 6) // two versions of each ID
	live := map[string]Doc{}
	x := New(nil)
	for range 3000 {
		i := r.IntN(len(a))
		switch r.IntN(3) {
		case 0:
			x.Upsert(a[i])
			live[a[i].ID] = a[i]
		case 1:
			x.Upsert(b[i])
			live[b[i].ID] = b[i]
		case 2:
			x.Delete(a[i].ID)
			delete(live, a[i].ID)
		}
	}
	checkInvariants(t, x)
	var docs []Doc
	for _, d := range live {
		docs = append(docs, d)
	}
	y := New(nil)
	y.Upsert(docs...)
	if diff := cmp.Diff(y.Search(statsQuery, 0, nil), x.Search(statsQuery, 0, nil)); diff != "" {
		t.Errorf("scores differ from a fresh index (-want +got):\n%s", diff)
	}
}

// TestContentTermsAreCapped checks MaxContentTerms: a text of unique tokens
// adds at most that many terms, the first ones in text order, while the
// descriptor's own fields are indexed in full.
func TestContentTermsAreCapped(t *testing.T) {
	var b strings.Builder
	for i := range MaxContentTerms + 500 {
		fmt.Fprintf(&b, "tok%dx ", i)
	}
	x := New(&Options{Weights: FieldWeights{Name: 1, Content: 1}})
	x.Upsert(Doc{ID: "d", Name: "unusualname", Content: b.String()})
	if got := len(x.slots[x.ids["d"]].terms); got > MaxContentTerms+1 {
		t.Errorf("%d distinct terms indexed, want at most %d (content) + 1 (name)", got, MaxContentTerms+1)
	}
	for q, want := range map[string]int{"tok0x": 1, fmt.Sprintf("tok%dx", MaxContentTerms-1): 1, fmt.Sprintf("tok%dx", MaxContentTerms+10): 0, "unusualname": 1} {
		if got := len(x.Search(q, 0, nil)); got != want {
			t.Errorf("Search(%q) = %d hits, want %d", q, got, want)
		}
	}
}

// TestContentTermCapScalesWithLength checks ContentTerms: a long text may
// add a term per ContentTermBytes, so its late terms are searchable, and
// no more.
func TestContentTermCapScalesWithLength(t *testing.T) {
	var b strings.Builder
	for i := 0; b.Len() < 1<<20; i++ {
		fmt.Fprintf(&b, "tok%dx ", i) // about 10 bytes per distinct term
	}
	text := b.String()
	x := New(&Options{Weights: FieldWeights{Name: 1, Content: 1}})
	x.Upsert(Doc{ID: "d", Name: "n", Content: text})
	limit := ContentTerms(len(text))
	if limit <= MaxContentTerms || limit != len(text)/ContentTermBytes {
		t.Fatalf("ContentTerms(%d) = %d, want %d", len(text), limit, len(text)/ContentTermBytes)
	}
	if got := len(x.slots[x.ids["d"]].terms); got != limit+1 {
		t.Errorf("%d distinct terms indexed, want %d (content) + 1 (name)", got, limit+1)
	}
	for q, want := range map[string]int{fmt.Sprintf("tok%dx", limit-1): 1, fmt.Sprintf("tok%dx", limit): 0} {
		if got := len(x.Search(q, 0, nil)); got != want {
			t.Errorf("Search(%q) = %d hits, want %d", q, got, want)
		}
	}
}

// Search's top n must be the first n of the full ranking, ties (documents
// scoring alike) broken by ID, for every n, with and without a filter.
func TestSearchTopNIsPrefixOfAll(t *testing.T) {
	x := New(nil)
	var docs []Doc
	for i := range 300 {
		d := Doc{ID: fmt.Sprintf("d%03d", (i*37)%300), Name: "invoice payment", Description: "monthly ledger"}
		if i%3 == 0 {
			d.Description = fmt.Sprintf("invoice %d", i%7) // some differ, many tie
		}
		docs = append(docs, d)
	}
	x.Upsert(docs...)
	keepAll := func(string) bool { return true }
	for _, q := range []string{"invoice", "invoice ledger", "payment 3"} {
		all := x.Search(q, 0, nil)
		if len(all) < 100 {
			t.Fatalf("%q: only %d hits", q, len(all))
		}
		for _, n := range []int{1, 2, 10, 99, 100, 150, len(all) - 1, len(all), len(all) + 5} {
			want := all[:min(n, len(all))]
			if got := x.Search(q, n, nil); !slices.Equal(got, want) {
				t.Fatalf("%q n=%d: %v, want %v", q, n, got, want)
			}
			if got := x.Search(q, n, keepAll); !slices.Equal(got, want) {
				t.Fatalf("%q n=%d with a filter: %v, want %v", q, n, got, want)
			}
		}
	}
}

// TestDescriptorTermsAreCapped checks MaxDescriptorTerms: descriptor fields
// of unique words add at most that many terms, in field order (the name's
// first), while the content field keeps its own allowance.
func TestDescriptorTermsAreCapped(t *testing.T) {
	words := func(prefix string, n int) string {
		var b strings.Builder
		for i := range n {
			fmt.Fprintf(&b, "%s%dx ", prefix, i)
		}
		return b.String()
	}
	x := New(nil)
	x.Upsert(Doc{ID: "d", Name: "unusualname", Description: words("desc", 2*MaxDescriptorTerms),
		URI: "x://h/" + words("path", 100), Content: words("body", 100)})
	if got := len(x.slots[x.ids["d"]].terms); got != MaxDescriptorTerms+100 {
		t.Errorf("%d distinct terms indexed, want %d (descriptor) + 100 (content)", got, MaxDescriptorTerms+100)
	}
	for q, want := range map[string]int{"unusualname": 1, "desc0x": 1, fmt.Sprintf("desc%dx", MaxDescriptorTerms-2): 1,
		fmt.Sprintf("desc%dx", MaxDescriptorTerms): 0, "path5x": 0, "body99x": 1} {
		if got := len(x.Search(q, 0, nil)); got != want {
			t.Errorf("Search(%q) = %d hits, want %d", q, got, want)
		}
	}
}

// TestLongTermsAreCut checks MaxTermBytes: a word longer than it is stored
// cut, and a query naming the whole word still finds it.
func TestLongTermsAreCut(t *testing.T) {
	long := strings.Repeat("abcdefgh", 64) + "é" // 514 bytes
	x := New(nil)
	x.Upsert(Doc{ID: "d", Name: long}, Doc{ID: "e", Name: "short"})
	terms := x.slots[x.ids["d"]].terms
	if len(terms) != 1 || len(terms[0]) != MaxTermBytes {
		t.Fatalf("terms of a %d-byte name: %d of lengths %v, want one of %d bytes", len(long), len(terms), lens(terms), MaxTermBytes)
	}
	if hits := x.Search("find "+long, 0, nil); len(hits) != 1 || hits[0].ID != "d" {
		t.Errorf("a query naming the whole word: %v, want d", hits)
	}
	// A cut never splits a character.
	odd := strings.Repeat("a", MaxTermBytes-1) + "ééé"
	if toks := Tokenize(odd); len(toks) != 1 || len(toks[0]) != MaxTermBytes-1 {
		t.Errorf("Tokenize of %d bytes ending in é: lengths %v, want %d", len(odd), lens(toks), MaxTermBytes-1)
	}
}

func lens(ss []string) []int {
	out := make([]int, len(ss))
	for i, s := range ss {
		out[i] = len(s)
	}
	return out
}

// TestGroupBytesBoundEachGroup checks Options.GroupBytes: documents of
// unique words fill their group's room and then keep only their first
// MinGroupTerms terms; another group is untouched; deleting gives the room
// back.
func TestGroupBytesBoundEachGroup(t *testing.T) {
	const room = 200_000
	x := New(&Options{GroupBytes: room})
	next := 0
	doc := func(id, group string) Doc {
		var b strings.Builder
		for range 200 {
			fmt.Fprintf(&b, "w%07d ", next)
			next++
		}
		return Doc{ID: id, Group: group, Name: fmt.Sprintf("name%s", id), Description: b.String()}
	}
	var evil []string
	for i := range 50 {
		d := doc(fmt.Sprintf("e%d", i), "evil")
		x.Upsert(d)
		evil = append(evil, d.ID)
	}
	used := x.GroupBytes("evil")
	// Past the room only MinGroupTerms terms a document, at most 8+64+80
	// bytes each, may go over.
	if used > room+50*MinGroupTerms*(postingBytes+termBytes+8) || used < room/2 {
		t.Errorf("group holds %d bytes, want about %d", used, room)
	}
	last := x.slots[x.ids["e49"]].terms
	if len(last) != MinGroupTerms || last[0] != "namee49" {
		t.Errorf("a document past the room keeps %d terms (%v), want its first %d", len(last), last, MinGroupTerms)
	}
	if hits := x.Search("namee49", 0, nil); len(hits) != 1 {
		t.Errorf("a document past the room is not found by its name: %v", hits)
	}
	// Another group's documents are indexed whole.
	good := doc("g", "good")
	x.Upsert(good)
	if got := len(x.slots[x.ids["g"]].terms); got != 201 {
		t.Errorf("a document of another group keeps %d terms, want 201", got)
	}
	if hits := x.Search(fmt.Sprintf("w%07d", next-1), 0, nil); len(hits) != 1 || hits[0].ID != "g" {
		t.Errorf("another group's last word: %v, want g", hits)
	}
	x.Delete(evil...)
	if got := x.GroupBytes("evil"); got != 0 {
		t.Errorf("after deleting every document the group holds %d bytes, want 0", got)
	}
	// The room is back: a new document is indexed whole.
	x.Upsert(doc("e50", "evil"))
	if got := len(x.slots[x.ids["e50"]].terms); got != 201 {
		t.Errorf("after the deletes a document keeps %d terms, want 201", got)
	}
}

// A full group's documents of content alone (the passage index's) keep no
// terms: the floor is for descriptor terms.
func TestAFullGroupsContentGetsNoFloor(t *testing.T) {
	x := New(&Options{GroupBytes: 10_000, Weights: FieldWeights{Content: 1}})
	for i := range 200 {
		x.Upsert(Doc{ID: fmt.Sprint(i), Group: "g", Content: fmt.Sprintf("a%d b%d c%d d%d e%d", i, i, i, i, i)})
	}
	if got := x.GroupBytes("g"); got > 10_000 {
		t.Errorf("group holds %d bytes, want at most 10,000", got)
	}
	if got := len(x.slots[x.ids["199"]].terms); got != 0 {
		t.Errorf("the last document keeps %d terms, want 0", got)
	}
}

// A term's map entry stays charged to some group while any document holds
// it: after churn, each group is charged what a fresh index holding the
// same documents would charge it.
func TestGroupChargesFollowTheTermsHolders(t *testing.T) {
	a := Doc{ID: "a", Group: "A", Name: "sharedterm onlyina"}
	b := Doc{ID: "b", Group: "B", Name: "sharedterm onlyinb"}
	x := New(&Options{GroupBytes: 1 << 20})
	x.Upsert(a, b)
	x.Delete("a")
	fresh := New(&Options{GroupBytes: 1 << 20})
	fresh.Upsert(b)
	if got, want := x.GroupBytes("B"), fresh.GroupBytes("B"); got != want {
		t.Errorf("after the first holder of a shared term left, B is charged %d bytes, want %d (as if it held the term alone)", got, want)
	}
	x.Delete("b")
	if got := x.GroupBytes("B"); got != 0 {
		t.Errorf("after every document left, B is charged %d bytes, want 0", got)
	}
}

// Under random upserts and deletes in three groups, with room for all,
// the groups together are charged exactly what a fresh index holding the
// same documents charges (which group holds a shared term's entry may
// differ).
func TestGroupChargesSurviveRandomUpdates(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	a, b := corpus(100, 5), corpus(100, 6)
	group := func(d Doc) Doc { d.Group = fmt.Sprint(d.ID[len(d.ID)-1] % 3); return d }
	live := map[string]Doc{}
	x := New(&Options{GroupBytes: 1 << 40})
	for range 3000 {
		i := r.IntN(len(a))
		switch r.IntN(3) {
		case 0:
			x.Upsert(group(a[i]))
			live[a[i].ID] = group(a[i])
		case 1:
			x.Upsert(group(b[i]))
			live[b[i].ID] = group(b[i])
		case 2:
			x.Delete(a[i].ID)
			delete(live, a[i].ID)
		}
	}
	y := New(&Options{GroupBytes: 1 << 40})
	for _, d := range live {
		y.Upsert(d)
	}
	sum := func(x *Index) int64 { return x.GroupBytes("0") + x.GroupBytes("1") + x.GroupBytes("2") }
	if got, want := sum(x), sum(y); got != want {
		t.Errorf("after 3,000 random updates the groups are charged %d bytes, a fresh index %d", got, want)
	}
}

// A posting list gives its capacity back as documents leave: sharing
// terms across 64 documents and then removing 63 must not leave lists of
// 64 postings charged as one.
func TestPostingListsShrinkAsDocumentsLeave(t *testing.T) {
	x := New(&Options{GroupBytes: 1 << 30})
	var ids []string
	for i := range 64 {
		id := fmt.Sprint(i)
		x.Upsert(Doc{ID: id, Group: "g", Name: "alpha beta gamma delta"})
		ids = append(ids, id)
	}
	x.Delete(ids[1:]...)
	for _, term := range []string{"alpha", "beta", "gamma", "delta"} {
		if l := x.postings[term]; len(l) != 1 || cap(l) > 4 {
			t.Errorf("%q: %d postings in a list of capacity %d, want 1 in at most 4", term, len(l), cap(l))
		}
	}
}
