package index_test

import (
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/contextd/contextd/internal/cputime"
	"github.com/contextd/contextd/internal/index"
	"github.com/contextd/contextd/internal/index/indextest"
	"github.com/contextd/contextd/internal/resource"
)

// BenchmarkDense ranks 10,000 descriptors (and 100,000 with
// CONTEXTD_SCALE=1) for the engine's pool of 100, without and with every
// descriptor's passage indexed (random vectors: the worst case for the
// mixed ranking, which then scores every descriptor). The query's vector
// is cached, so an op is the scan alone. first-ms (and first-cpu-ms) is
// the first query's time, which also builds the rows the scans share and
// their int8 copies. cpu-ms/op is the process's CPU time per op (every
// thread), which other processes' load inflates less than wall time.
func BenchmarkDense(b *testing.B) {
	sizes := []int{10_000}
	if os.Getenv("CONTEXTD_SCALE") == "1" {
		sizes = append(sizes, 100_000)
	}
	for _, size := range sizes {
		for _, contents := range []bool{false, true} {
			b.Run(fmt.Sprintf("%d/contents=%v", size, contents), func(b *testing.B) { benchDense(b, size, contents) })
		}
	}
}

func benchDense(b *testing.B, size int, contents bool) {
	ix, err := index.Open(b.Context(), index.Options{Embedder: indextest.RandomEmbedder{Dims: 512}})
	if err != nil {
		b.Fatal(err)
	}
	defer ix.Close()
	var ds []resource.Descriptor
	for i := range size {
		ds = append(ds, resource.Descriptor{Server: "s", URI: fmt.Sprintf("doc://%d", i), Name: fmt.Sprint(i), Description: fmt.Sprintf("descriptor %d", i)})
	}
	if _, err := ix.Replace(b.Context(), "s", ds); err != nil {
		b.Fatal(err)
	}
	if contents {
		var cs []index.Content
		for _, d := range ds {
			cs = append(cs, index.Content{Key: d.Key(), Stamp: index.ContentStamp(d), Text: "text of " + d.Name})
		}
		if _, err := ix.SetContents(b.Context(), cs...); err != nil {
			b.Fatal(err)
		}
	}
	dense := func() {
		if hits, err := ix.Dense(b.Context(), "find the invoice", 100, index.Filter{}); err != nil || len(hits) != 100 {
			b.Fatal(len(hits), err)
		}
	}
	t0, c0 := time.Now(), cputime.Used()
	dense()
	first, firstCPU := time.Since(t0), cputime.Used()-c0
	c0 = cputime.Used()
	for b.Loop() {
		dense()
	}
	b.ReportMetric(float64((cputime.Used()-c0).Microseconds())/1000/float64(b.N), "cpu-ms/op")
	b.ReportMetric(float64(first.Microseconds())/1000, "first-ms")
	b.ReportMetric(float64(firstCPU.Microseconds())/1000, "first-cpu-ms")
}

// longDoc returns about size bytes of Markdown: sections of a few
// paragraphs of words drawn with a fixed seed, so passages cut as in real
// documents.
func longDoc(size int, seed uint64) string {
	words := strings.Fields(`read write file directory search query database table schema user account
		invoice payment calendar event meeting weather forecast map route image photo video audio
		document page note task project issue commit branch build test deploy server client cache`)
	r := rand.New(rand.NewPCG(seed, 1))
	var b strings.Builder
	for i := 0; b.Len() < size; i++ {
		fmt.Fprintf(&b, "## Section %d\n\n", i)
		for range 1 + r.IntN(4) {
			for range 20 + r.IntN(80) {
				b.WriteString(words[r.IntN(len(words))])
				b.WriteByte(' ')
			}
			b.WriteString("\n\n")
		}
	}
	return cutBytes(b.String(), size)
}

func cutBytes(s string, n int) string { return s[:min(len(s), n)] }

// BenchmarkSetContents indexes one 1 MiB Markdown text (a new version each
// iteration, so nothing is skipped as unchanged): SetContents (the lexical
// field of the whole text and the first passage's vector), then
// EmbedPassages for the rest (up to MaxPassages). The stand-in embedder
// costs microseconds, so this is the index's own cost; a real encoder adds
// its time per passage (internal/embed/use's benchmarks).
func BenchmarkSetContents(b *testing.B) {
	ix, err := index.Open(b.Context(), index.Options{Embedder: indextest.RandomEmbedder{Dims: 512}})
	if err != nil {
		b.Fatal(err)
	}
	defer ix.Close()
	d := resource.Descriptor{Server: "s", URI: "doc://manual", Name: "manual"}
	if _, err := ix.Replace(b.Context(), "s", []resource.Descriptor{d}); err != nil {
		b.Fatal(err)
	}
	texts := []string{longDoc(index.MaxContentBytes, 1), longDoc(index.MaxContentBytes, 2)}
	passages := 0
	b.SetBytes(index.MaxContentBytes)
	i := 0
	for b.Loop() {
		if _, err := ix.SetContents(b.Context(), index.Content{Key: d.Key(), Stamp: index.ContentStamp(d), Text: texts[i%2]}); err != nil {
			b.Fatal(err)
		}
		n, err := ix.EmbedPassages(b.Context(), "", 0)
		if err != nil {
			b.Fatal(err)
		}
		passages = n + 1
		i++
	}
	b.ReportMetric(float64(passages), "passages/op")
}

// BenchmarkDensePassages ranks 2,000 descriptors whose texts have 16
// embedded passages each (random vectors), for the engine's pool of 100:
// 32,000 passages, DefaultContentPassages' worth, so the mixed score's
// scan takes 34,000 dot products. It also reports the heap each passage
// vector costs once stored (512 dimensions).
func BenchmarkDensePassages(b *testing.B) {
	const n, per = 2_000, 16
	ix, err := index.Open(b.Context(), index.Options{Embedder: indextest.RandomEmbedder{Dims: 512}})
	if err != nil {
		b.Fatal(err)
	}
	defer ix.Close()
	var ds []resource.Descriptor
	for i := range n {
		ds = append(ds, resource.Descriptor{Server: "s", URI: fmt.Sprintf("doc://%d", i), Name: fmt.Sprint(i), Description: fmt.Sprintf("descriptor %d", i)})
	}
	if _, err := ix.Replace(b.Context(), "s", ds); err != nil {
		b.Fatal(err)
	}
	var cs []index.Content
	for i, d := range ds {
		var t strings.Builder
		for j := range per { // sections of 1.1 KiB: one passage each
			fmt.Fprintf(&t, "# Part %d of %d\n\n%s\n\n", j, i, strings.Repeat("lorem ipsum ", 95))
		}
		cs = append(cs, index.Content{Key: d.Key(), Stamp: index.ContentStamp(d), Text: t.String()})
	}
	if _, err := ix.SetContents(b.Context(), cs...); err != nil {
		b.Fatal(err)
	}
	before := heap()
	deep, err := ix.EmbedPassages(b.Context(), "", 0)
	if err != nil {
		b.Fatal(err)
	}
	if deep != n*(per-1) {
		b.Fatalf("%d passages embedded, want %d", deep, n*(per-1))
	}
	perPassage := float64(heap()-before) / float64(deep)
	for b.Loop() {
		if hits, err := ix.Dense(b.Context(), "find the invoice", 100, index.Filter{}); err != nil || len(hits) != 100 {
			b.Fatal(len(hits), err)
		}
	}
	b.ReportMetric(perPassage, "heapB/passage") // after b.Loop, which clears metrics
}

func heap() int64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc)
}

// BenchmarkDenseEach ranks n descriptors (random vectors) for one query,
// and for a task and its eight clauses at once as the engine does for a
// compound task, with the query vectors cached: the scan alone. cpu-ms/op
// is the process's CPU time per op on all threads.
func BenchmarkDenseEach(b *testing.B) {
	for _, bc := range []struct{ size, queries int }{{1_000, 1}, {1_000, 9}, {2_000, 1}, {2_000, 9}, {10_000, 9}} {
		size := bc.size
		b.Run(fmt.Sprintf("%d/queries=%d", size, bc.queries), func(b *testing.B) {
			ix, err := index.Open(b.Context(), index.Options{Embedder: indextest.RandomEmbedder{Dims: 512}})
			if err != nil {
				b.Fatal(err)
			}
			defer ix.Close()
			var ds []resource.Descriptor
			for i := range size {
				ds = append(ds, resource.Descriptor{Server: "s", URI: fmt.Sprintf("doc://%d", i), Name: fmt.Sprint(i), Description: fmt.Sprintf("descriptor %d", i)})
			}
			if _, err := ix.Replace(b.Context(), "s", ds); err != nil {
				b.Fatal(err)
			}
			queries := make([]string, bc.queries)
			for i := range queries {
				queries[i] = fmt.Sprintf("clause %d of the task", i)
			}
			each := func() {
				lists, err := ix.DenseEach(b.Context(), queries, 100, index.Filter{})
				if err != nil || len(lists) != len(queries) || len(lists[0]) != 100 {
					b.Fatal(len(lists), err)
				}
			}
			each()
			c0 := cputime.Used()
			for b.Loop() {
				each()
			}
			b.ReportMetric(float64((cputime.Used()-c0).Microseconds())/1000/float64(b.N), "cpu-ms/op")
		})
	}
}
