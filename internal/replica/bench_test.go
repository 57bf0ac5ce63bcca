package replica_test

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/contextd/contextd/internal/cputime"
	"github.com/contextd/contextd/internal/index"
	"github.com/contextd/contextd/internal/index/indextest"
	"github.com/contextd/contextd/internal/replica"
	"github.com/contextd/contextd/internal/resource"
	"github.com/contextd/contextd/internal/store/pgstore"
	"github.com/contextd/contextd/internal/store/pgstore/pgtest"
)

// BenchmarkColdStart measures a replica's start from the store: streaming
// every descriptor with its vector into a new in-memory index (no
// embedding). $CONTEXTD_BENCH_DESCRIPTORS descriptors (default 100,000)
// of 100 upstream servers, 512-dimensional vectors (USE-lite's size, from
// indextest.RandomEmbedder), descriptors only (no indexed text).
func BenchmarkColdStart(b *testing.B) {
	n := 100_000
	if v, err := strconv.Atoi(os.Getenv("CONTEXTD_BENCH_DESCRIPTORS")); err == nil && v > 0 {
		n = v
	}
	ctx := context.Background()
	url := pgtest.URL(b)
	st, err := pgstore.Open(ctx, url)
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	emb := indextest.RandomEmbedder{Dims: 512}
	id := pgstore.EmbedderID(emb.Name(), emb.Dim())
	const servers = 100
	start := time.Now()
	for s := range servers {
		server := fmt.Sprintf("srv%03d", s)
		tok, _, err := st.Acquire(ctx, server, "bench", time.Hour)
		if err != nil {
			b.Fatal(err)
		}
		var recs []index.Record
		for i := range n / servers {
			d := resource.Descriptor{Server: server, URI: fmt.Sprintf("doc://%s/%d", server, i), Name: fmt.Sprintf("doc %d", i),
				Description: fmt.Sprintf("reference page %d of %s: what it covers, in a sentence or two of about this length", i, server),
				MIMEType:    "text/markdown", Size: int64(1000 + i)}
			v, _ := emb.Embed(ctx, index.EmbeddingText(d))
			recs = append(recs, index.Record{Desc: d, Hash: fmt.Sprintf("%064x", i), Vec: v})
			if len(recs) == 500 {
				if err := st.Apply(ctx, pgstore.Write{Server: server, Holder: "bench", Token: tok, Embedder: id, Put: recs}); err != nil {
					b.Fatal(err)
				}
				recs = recs[:0]
			}
		}
		if err := st.Apply(ctx, pgstore.Write{Server: server, Holder: "bench", Token: tok, Embedder: id, Put: recs}); err != nil {
			b.Fatal(err)
		}
	}
	b.Logf("stored %d descriptors in %v", n, time.Since(start).Round(time.Millisecond))
	b.Run(fmt.Sprintf("descriptors=%d", n), func(b *testing.B) {
		var ms runtime.MemStats
		for b.Loop() {
			ix, err := index.Open(ctx, index.Options{Embedder: emb})
			if err != nil {
				b.Fatal(err)
			}
			r := replica.New(replica.Options{Store: st, Embedder: id})
			r.Attach(ix)
			got, err := r.Load(ctx)
			if err != nil || got != n {
				b.Fatalf("loaded %d, %v; want %d", got, err, n)
			}
			runtime.GC()
			runtime.ReadMemStats(&ms)
			ix.Close()
		}
		b.ReportMetric(float64(ms.HeapAlloc)/float64(n), "heap-bytes/descriptor")
		b.ReportMetric(float64(n)/(b.Elapsed().Seconds()/float64(b.N)), "descriptors/s")
	})
}

// BenchmarkQuery ranks 10,000 descriptors (512-dimensional random vectors,
// the dense and the lexical list, the engine's pool of 100) in an index
// built by embedding (embedded mode) and in one installed from another's
// records (a replica, as Load and the change log install them), so their
// latencies compare.
func BenchmarkQuery(b *testing.B) {
	ctx := context.Background()
	emb := indextest.RandomEmbedder{Dims: 512}
	src, err := index.Open(ctx, index.Options{Embedder: emb, QueryCache: -1})
	if err != nil {
		b.Fatal(err)
	}
	var descs []resource.Descriptor
	for i := range 10_000 {
		descs = append(descs, resource.Descriptor{Server: fmt.Sprintf("srv%02d", i%20), URI: fmt.Sprintf("doc://%d", i), Name: fmt.Sprintf("doc %d", i),
			Description: fmt.Sprintf("reference page %d about topic%d and its configuration", i, i%97)})
	}
	if _, err := src.Upsert(ctx, descs...); err != nil {
		b.Fatal(err)
	}
	var recs []index.Record
	for _, d := range descs {
		r, _ := src.Export(ctx, d.Key())
		recs = append(recs, r)
	}
	rep, err := index.Open(ctx, index.Options{Embedder: emb, QueryCache: -1})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := rep.Apply(ctx, recs...); err != nil {
		b.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		ix   *index.Index
	}{{"embedded", src}, {"replica", rep}} {
		b.Run(tc.name, func(b *testing.B) {
			i := 0
			cpu0 := cputime.Used()
			defer func() {
				// CPU time: on a shared machine wall time measures the
				// neighbours.
				b.ReportMetric(float64((cputime.Used()-cpu0).Nanoseconds())/float64(b.N), "cpu-ns/op")
			}()
			for b.Loop() {
				q := fmt.Sprintf("configuration of topic%d", i%97)
				i++
				if _, err := tc.ix.Dense(ctx, q, 100, index.Filter{}); err != nil {
					b.Fatal(err)
				}
				tc.ix.Lexical(q, 100, index.Filter{})
			}
		})
	}
}
