//go:build linux

package index_test

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/contextd/contextd/internal/cputime"
	"github.com/contextd/contextd/internal/index"
	"github.com/contextd/contextd/internal/index/indextest"
	"github.com/contextd/contextd/internal/resource"
)

// scaleSizes are the catalogue sizes of the scale benchmarks: 10,000
// always, 100,000 only with CONTEXTD_SCALE=1 (a cold build at 100,000 takes
// minutes on 2 cores and writes 100,000 files).
func scaleSizes(b *testing.B) []int {
	b.Helper()
	if os.Getenv("CONTEXTD_SCALE") == "1" {
		return []int{10_000, 100_000}
	}
	return []int{10_000}
}

var scaleWords = strings.Fields(`read write file directory search query database table schema user account
	invoice payment calendar event meeting weather forecast map route image photo video audio
	document page note task project issue commit branch build test deploy server client cache
	log metric alert email message chat contact order product price stock report chart`)

// scaleDescs returns n descriptors of a synthetic catalogue (fixed seed):
// a two-word name, a twelve-word description, a URI, a MIME type and a
// size, the shape of a real server's listing.
func scaleDescs(server string, n int) []resource.Descriptor {
	r := rand.New(rand.NewPCG(42, 42))
	phrase := func(k int) string {
		ws := make([]string, k)
		for i := range ws {
			ws[i] = scaleWords[r.IntN(len(scaleWords))]
		}
		return strings.Join(ws, " ")
	}
	ds := make([]resource.Descriptor, n)
	for i := range ds {
		name := phrase(2)
		ds[i] = resource.Descriptor{Server: server, URI: fmt.Sprintf("doc://%d/%s", i, strings.ReplaceAll(name, " ", "-")),
			Name: name, Description: phrase(12), MIMEType: "text/plain", Size: int64(200 + r.IntN(4000))}
	}
	return ds
}

// memStats reports the heap in use after a collection and the process's
// resident set (VmRSS) and its peak (VmHWM), in MiB, as benchmark metrics.
// The peak covers everything the process did before, so run one
// benchmark per process (-bench with an anchored name) to read it.
func memStats(b *testing.B) {
	b.Helper()
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	b.ReportMetric(float64(ms.HeapAlloc)/(1<<20), "heap-MiB")
	if st, err := os.ReadFile("/proc/self/status"); err == nil {
		for _, l := range strings.Split(string(st), "\n") {
			k, v, ok := strings.Cut(l, ":")
			if !ok || (k != "VmRSS" && k != "VmHWM") {
				continue
			}
			kb, err := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
			if err != nil {
				continue
			}
			metric := "rss-MiB"
			if k == "VmHWM" {
				metric = "peak-rss-MiB"
			}
			b.ReportMetric(float64(kb)/1024, metric)
		}
	}
}

// BenchmarkScaleColdBuild opens an empty persistent index in a new
// data_dir and indexes n descriptors into it, as a first sync does: one
// op is the whole build. Vectors come from indextest.RandomEmbedder (512-d,
// hash-seeded, microseconds per text), NOT USE-lite: this measures the
// index's own cost (storing, the lexical index, persistence); USE-lite
// adds its embedding time per descriptor (internal/embed/use's
// BenchmarkEmbedBatch). Run the 100,000 case with -benchtime=1x.
func BenchmarkScaleColdBuild(b *testing.B) {
	for _, n := range scaleSizes(b) {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			ds := scaleDescs("s", n)
			root := b.TempDir()
			i := 0
			var last *index.Index // kept open for memStats
			cpu := cputime.Used()
			for b.Loop() {
				b.StopTimer()
				if last != nil {
					last.Close()
					last = nil
					if err := os.RemoveAll(filepath.Join(root, fmt.Sprint(i-1))); err != nil {
						b.Fatal(err)
					}
				}
				dir := filepath.Join(root, fmt.Sprint(i))
				i++
				b.StartTimer()
				ix, err := index.Open(b.Context(), index.Options{Dir: dir, Embedder: indextest.RandomEmbedder{Dims: 512}})
				if err != nil {
					b.Fatal(err)
				}
				if d, err := ix.Replace(b.Context(), "s", ds); err != nil || d.Embedded != n {
					b.Fatal(d, err)
				}
				last = ix
			}
			b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N)/1000, "s/build")
			b.ReportMetric((cputime.Used()-cpu).Seconds()/float64(b.N), "cpu-s/build") // includes the untimed removals
			memStats(b)
			last.Close()
		})
	}
}

// BenchmarkScaleRestart measures a restart to serving: open a persistent
// index of n descriptors that an earlier run built and closed (so it loads
// from the snapshot Close wrote, and reads the document files written in
// the last seconds before it) and answer one dense and one lexical query
// from it. The query's vector comes from the same stand-in embedder
// (microseconds); USE-lite adds a query's embedding, a few milliseconds.
func BenchmarkScaleRestart(b *testing.B) {
	benchRestart(b, false)
}

// BenchmarkScaleRestartFromFiles is BenchmarkScaleRestart without the
// snapshot: every document is read from its file, as on the first start
// over a data_dir an older contextd wrote, or after a crash before any
// snapshot was written.
func BenchmarkScaleRestartFromFiles(b *testing.B) {
	benchRestart(b, true)
}

// With CONTEXTD_SCALE_DIR set, the index is built in (or, when a run
// before built it, reused from) $CONTEXTD_SCALE_DIR/<n>, so that a second
// run's peak resident set is the restart's alone.
func benchRestart(b *testing.B, noSnapshot bool) {
	const snapshotFile = "snapshot" // the index's snapshot (internal/index/snapshot.go)
	for _, n := range scaleSizes(b) {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			dir := b.TempDir()
			built := false
			if d := os.Getenv("CONTEXTD_SCALE_DIR"); d != "" {
				dir = filepath.Join(d, fmt.Sprint(n))
				_, err := os.Stat(filepath.Join(dir, snapshotFile))
				built = err == nil
			}
			emb := indextest.RandomEmbedder{Dims: 512}
			if !built {
				ix, err := index.Open(b.Context(), index.Options{Dir: dir, Embedder: emb})
				if err != nil {
					b.Fatal(err)
				}
				if _, err := ix.Replace(b.Context(), "s", scaleDescs("s", n)); err != nil {
					b.Fatal(err)
				}
				ix.Close()
			}
			var last *index.Index
			var cpu time.Duration
			for b.Loop() {
				b.StopTimer()
				if last != nil {
					last.Close()
					last = nil
				}
				if noSnapshot {
					if err := os.Remove(filepath.Join(dir, snapshotFile)); err != nil {
						b.Fatal(err)
					}
				}
				c0 := cputime.Used()
				b.StartTimer()
				ix, err := index.Open(b.Context(), index.Options{Dir: dir, Embedder: emb})
				if err != nil {
					b.Fatal(err)
				}
				if ix.Len("s") != n {
					b.Fatalf("loaded %d descriptors, want %d", ix.Len("s"), n)
				}
				if hits, err := ix.Dense(b.Context(), "invoice payment report", 100, index.Filter{}); err != nil || len(hits) != 100 {
					b.Fatal(len(hits), err)
				}
				if hits := ix.Lexical("invoice payment report", 100, index.Filter{}); len(hits) == 0 {
					b.Fatal("no lexical hits")
				}
				cpu += cputime.Used() - c0
				last = ix
			}
			b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N)/1000, "s/restart")
			b.ReportMetric(cpu.Seconds()/float64(b.N), "cpu-s/restart")
			memStats(b)
			last.Close()
		})
	}
}
