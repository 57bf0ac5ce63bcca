//go:build linux

package engine_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/contextd/contextd/internal/cputime"
	"github.com/contextd/contextd/internal/embed/use"
	"github.com/contextd/contextd/internal/engine"
	"github.com/contextd/contextd/internal/index/indextest"
	"github.com/contextd/contextd/internal/lexical"
	"github.com/contextd/contextd/internal/mcp/mcptest"
	ctxsync "github.com/contextd/contextd/internal/sync"
)

// queryOnlyUSE embeds queries with USE-lite and documents (descriptors
// and passages) with indextest.RandomEmbedder's hash-seeded 512-d vectors:
// a catalogue of 100,000 is built in seconds instead of an hour, while
// every query pays the real encoder's cost. Rankings are meaningless;
// costs are not (the same dimension, the same scans). The index sends
// documents through EmbedBatch, and a query's clauses too (in one batch
// with the query): queries holds those texts, which EmbedBatch gives to
// USE-lite.
type queryOnlyUSE struct {
	q       *use.Embedder
	docs    indextest.RandomEmbedder
	queries map[string]bool
}

func (e queryOnlyUSE) Name() string { return "bench-use-queries-random-docs" }
func (e queryOnlyUSE) Dim() int     { return use.Dim }
func (e queryOnlyUSE) Embed(ctx context.Context, text string) ([]float32, error) {
	return e.q.Embed(ctx, text)
}
func (e queryOnlyUSE) EmbedBatch(ctx context.Context, texts []string) ([][]float32, error) {
	nq := 0
	for _, t := range texts {
		if e.queries[t] {
			nq++
		}
	}
	switch nq {
	case 0:
	case len(texts):
		return e.q.EmbedBatch(ctx, texts)
	default:
		return nil, fmt.Errorf("bench embedder: a batch of %d texts mixes %d queries with documents", len(texts), nq)
	}
	out := make([][]float32, len(texts))
	for i, t := range texts {
		out[i], _ = e.docs.Embed(ctx, t)
	}
	return out, nil
}

// queryTexts is every text a Search of queries embeds: each query and its
// clauses.
func queryTexts(queries []string) map[string]bool {
	out := map[string]bool{}
	for _, q := range queries {
		out[q] = true
		for _, c := range lexical.Clauses(q) {
			out[c] = true
		}
	}
	return out
}

// scaleQueries are agent tasks of 4 to about 100 tokens, used in turn.
var scaleQueries = []string{
	"find the invoice payment report",
	"weather forecast for the meeting calendar event",
	"which database table schema holds the user account and order history",
	"deploy the build to the server after the test commit on the release branch passes",
	"I need to prepare a quarterly report: gather every invoice and payment from the accounts database, " +
		"chart the monthly totals against the product price list, attach the stock levels for each product, " +
		"then email the report and the chart to the finance contact and post a message in the team chat " +
		"with a link to the document page, and open an issue in the project tracker for any order whose " +
		"payment is missing or late so that someone follows it up before the next meeting on the calendar",
}

// BenchmarkScaleSearch is Search (what Assemble ranks with: dense and
// BM25F top lists over every descriptor, fused, with each clause of a
// compound task) over n descriptors mirrored from an in-memory go-sdk
// server, with and without every resource's text indexed (one passage
// each). Every op embeds its query with USE-lite (the query cache is off);
// descriptors and passages have stand-in vectors (queryOnlyUSE). It
// reports the p50 and p95 of the ops' wall time, the p50 of their CPU
// time, the p50 of both for the 100-token task alone, and the heap and
// resident set after
// the build; the resident set includes the in-process MCP server holding
// the n resources and the benchmark's own data. 100,000 runs only with
// CONTEXTD_SCALE=1.
func BenchmarkScaleSearch(b *testing.B) {
	sizes := []int{10_000}
	if os.Getenv("CONTEXTD_SCALE") == "1" {
		sizes = append(sizes, 100_000)
	}
	q, err := use.New()
	if err != nil {
		b.Fatal(err)
	}
	emb := queryOnlyUSE{q: q, docs: indextest.RandomEmbedder{Dims: use.Dim}, queries: queryTexts(scaleQueries)}
	for _, n := range sizes {
		for _, contents := range []bool{false, true} {
			b.Run(fmt.Sprintf("%d/contents=%v", n, contents), func(b *testing.B) {
				eng, built := scaleEngine(b, emb, n, contents)
				var lat, cpus, longLat, longCPU []time.Duration
				i := 0
				cpu := cputime.Used()
				for b.Loop() {
					t0, c0 := time.Now(), cputime.Used()
					req := engine.SearchRequest{Query: scaleQueries[i%len(scaleQueries)], Limit: 10}
					if hits, err := eng.Search(b.Context(), req); err != nil || len(hits) != 10 {
						b.Fatal(len(hits), err)
					}
					lat = append(lat, time.Since(t0))
					cpus = append(cpus, cputime.Used()-c0)
					if i%len(scaleQueries) == len(scaleQueries)-1 {
						longLat = append(longLat, lat[len(lat)-1])
						longCPU = append(longCPU, cpus[len(cpus)-1])
					}
					i++
				}
				b.ReportMetric(float64((cputime.Used()-cpu).Microseconds())/1000/float64(b.N), "cpu-ms/op")
				slices.Sort(lat)
				b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
				b.ReportMetric(float64(lat[len(lat)*95/100].Microseconds())/1000, "p95-ms")
				// CPU per op, which other processes' load inflates far less
				// than wall time: on an idle machine an op's wall time is at
				// least half its CPU time (2 cores).
				slices.Sort(cpus)
				b.ReportMetric(float64(cpus[len(cpus)/2].Microseconds())/1000, "p50-cpu-ms")
				// The same for the 100-token task alone (one op in five).
				if len(longLat) > 0 {
					slices.Sort(longLat)
					slices.Sort(longCPU)
					b.ReportMetric(float64(longLat[len(longLat)/2].Microseconds())/1000, "long-p50-ms")
					b.ReportMetric(float64(longCPU[len(longCPU)/2].Microseconds())/1000, "long-p50-cpu-ms")
				}
				b.ReportMetric(built.Seconds(), "build-s")
				reportMem(b)
			})
		}
	}
}

// longTask is scaleQueries' 100-token multi-step agent task.
var longTask = scaleQueries[len(scaleQueries)-1]

// BenchmarkLongQuery is Search of the 100-token multi-step task alone
// (longTask: the whole task and its clauses, each embedded with USE-lite,
// the query cache off) over n synthetic descriptors, with and without a
// passage per resource, as BenchmarkScaleSearch builds them. One Search
// before the timed ops builds the index's rows. It reports the median
// op's wall time (p50-ms) and CPU time (p50-cpu-ms, every thread of the
// process) and the mean CPU time per op. 100,000 runs only with
// CONTEXTD_SCALE=1.
func BenchmarkLongQuery(b *testing.B) {
	sizes := []int{2_000, 10_000}
	if os.Getenv("CONTEXTD_SCALE") == "1" {
		sizes = append(sizes, 100_000)
	}
	q, err := use.New()
	if err != nil {
		b.Fatal(err)
	}
	emb := queryOnlyUSE{q: q, docs: indextest.RandomEmbedder{Dims: use.Dim}, queries: queryTexts([]string{longTask})}
	for _, n := range sizes {
		for _, contents := range []bool{false, true} {
			b.Run(fmt.Sprintf("%d/contents=%v", n, contents), func(b *testing.B) {
				eng, _ := scaleEngine(b, emb, n, contents)
				req := engine.SearchRequest{Query: longTask, Limit: 10}
				if hits, err := eng.Search(b.Context(), req); err != nil || len(hits) != 10 {
					b.Fatal(len(hits), err)
				}
				var lat, cpus []time.Duration
				cpu := cputime.Used()
				for b.Loop() {
					t0, c0 := time.Now(), cputime.Used()
					if hits, err := eng.Search(b.Context(), req); err != nil || len(hits) != 10 {
						b.Fatal(len(hits), err)
					}
					lat = append(lat, time.Since(t0))
					cpus = append(cpus, cputime.Used()-c0)
				}
				b.ReportMetric(float64((cputime.Used()-cpu).Microseconds())/1000/float64(b.N), "cpu-ms/op")
				slices.Sort(lat)
				slices.Sort(cpus)
				b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
				b.ReportMetric(float64(cpus[len(cpus)/2].Microseconds())/1000, "p50-cpu-ms")
			})
		}
	}
}

// scaleEngine returns an engine over n synthetic descriptors (fixed seed)
// mirrored from an in-memory go-sdk server, with a 40-word text indexed
// for every resource when contents is set, and how long it took to build.
// The query cache is off, so that every Search embeds its texts.
func scaleEngine(b *testing.B, emb queryOnlyUSE, n int, contents bool) (*engine.Engine, time.Duration) {
	b.Helper()
	r := rand.New(rand.NewPCG(42, 42))
	phrase := func(k int) string {
		ws := make([]string, k)
		for i := range ws {
			ws[i] = benchWords[r.IntN(len(benchWords))]
		}
		return strings.Join(ws, " ")
	}
	srv := mcptest.NewServer(nil, &mcpsdk.ServerOptions{PageSize: 1000})
	for i := range n {
		var body string
		if contents {
			body = phrase(40)
		}
		srv.AddResource(&mcpsdk.Resource{URI: fmt.Sprintf("doc://%d/%s", i, strings.ReplaceAll(phrase(2), " ", "-")),
			Name: phrase(2), Description: phrase(12), MIMEType: "text/plain"},
			func(_ context.Context, req *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
				return &mcpsdk.ReadResourceResult{Contents: []*mcpsdk.ResourceContents{{URI: req.Params.URI, Text: body}}}, nil
			})
	}
	limit := -1
	if contents {
		limit = n
	}
	start := time.Now()
	eng := newEngineOpts(b, "", map[string]*mcpsdk.Server{"s": srv}, engine.Options{Embedder: emb, QueryCache: -1,
		Mirror: func(o *ctxsync.Options) { o.ContentMaxResources = limit }})
	built := time.Since(start)
	if got := eng.Servers()[0]; got.Resources != n || got.Contents != max(limit, 0) {
		b.Fatalf("mirrored %d descriptors and %d contents, want %d and %d", got.Resources, got.Contents, n, max(limit, 0))
	}
	return eng, built
}

var benchWords = strings.Fields(`read write file directory search query database table schema user account
	invoice payment calendar event meeting weather forecast map route image photo video audio
	document page note task project issue commit branch build test deploy server client cache
	log metric alert email message chat contact order product price stock report chart`)

// reportMem reports the live heap after a collection and the process's
// resident set and its peak, in MiB.
func reportMem(b *testing.B) {
	b.Helper()
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	b.ReportMetric(float64(ms.HeapAlloc)/(1<<20), "heap-MiB")
	if p := os.Getenv("CONTEXTD_HEAP_PROFILE"); p != "" {
		// The live heap while the engine is still open (-memprofile is
		// written after it closed).
		if f, err := os.Create(p); err == nil {
			pprof.WriteHeapProfile(f)
			f.Close()
		}
	}
	st, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return
	}
	for _, l := range strings.Split(string(st), "\n") {
		k, v, _ := strings.Cut(l, ":")
		if kb, err := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB")); err == nil {
			switch k {
			case "VmRSS":
				b.ReportMetric(float64(kb)/1024, "rss-MiB")
			case "VmHWM":
				b.ReportMetric(float64(kb)/1024, "peak-rss-MiB")
			}
		}
	}
}
