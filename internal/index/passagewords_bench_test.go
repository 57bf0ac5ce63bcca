package index

import (
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/contextd/contextd/internal/resource"
)

// BenchmarkPassageWords indexes every passage of the Go standard library's
// net/http sources (about 2.5 MB of text, from this machine's GOROOT) and
// ranks texts by their best passage for a question. It reports the heap
// the passage index holds per MB of text indexed (heap-B/text-MB) and the
// cost of one PassageLexical (ns/op).
func BenchmarkPassageWords(b *testing.B) {
	root := filepath.Join(runtime.GOROOT(), "src", "net", "http")
	var texts []string
	var bytes int
	filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") {
			return nil
		}
		if t, err := os.ReadFile(path); err == nil {
			texts = append(texts, string(t))
			bytes += len(t)
		}
		return nil
	})
	if bytes < 1<<20 {
		b.Skipf("found %d bytes of Go source under %s, want at least 1 MiB", bytes, root)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	ix := &Index{words: newPassageWords()}
	for i, t := range texts {
		ix.words.set(resource.Key{Server: "go", URI: "file:///" + strconv.Itoa(i)}, t)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	b.ResetTimer()
	for b.Loop() {
		if len(ix.PassageLexical("how many idle keep-alive connections per host does the transport keep", 100, Filter{})) == 0 {
			b.Fatal("no passage matched")
		}
	}
	b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/(float64(bytes)/1e6), "heap-B/text-MB")
	runtime.KeepAlive(ix)
}
