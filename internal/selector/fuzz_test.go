package selector

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/contextd/contextd/internal/budget"
	"github.com/contextd/contextd/internal/resource"
)

var (
	tokenizerOnce sync.Once
	tokenizer     *budget.Tokenizer
)

func realTokenizer(tb testing.TB) *budget.Tokenizer {
	tb.Helper()
	tokenizerOnce.Do(func() {
		var err error
		if tokenizer, err = budget.NewTokenizer(budget.EncodingCL100K); err != nil {
			tb.Fatal(err)
		}
	})
	return tokenizer
}

// scenario builds a random but reproducible Select input from a seed: a mix
// of text and blob contents, sizes from empty to a few KB, failing and empty
// reads, binary MIME types, duplicate keys and declared sizes.
func scenario(seed uint64, n int) ([]Candidate, *fakeReads) {
	r := rand.New(rand.NewPCG(seed, 0x5eed))
	mimes := []string{"", "text/plain", "text/markdown", "application/json", "image/png", "image/svg+xml", "application/pdf", "application/octet-stream", "application/x-custom"}
	f := &fakeReads{contents: map[resource.Key][]Content{}, errs: map[resource.Key]error{}}
	var ranked []Candidate
	for range n {
		c := Candidate{
			Server:   fmt.Sprintf("s%d", r.IntN(3)),
			URI:      fmt.Sprintf("res://%d", r.IntN(2*n)),
			MIMEType: mimes[r.IntN(len(mimes))],
			Score:    r.Float64(),
		}
		if r.IntN(3) == 0 {
			c.Priority = r.Float64()
			c.LastModified = time.Date(2026, time.Month(1+r.IntN(12)), 1, 0, 0, 0, 0, time.UTC).Format(time.RFC3339)
		}
		var contents []Content
		switch r.IntN(10) {
		case 0:
			f.errs[c.Key()] = fmt.Errorf("read %s: server said no", c.URI)
		case 1:
			// empty read result
		default:
			for range 1 + r.IntN(3) {
				if r.IntN(25) == 0 {
					contents = append(contents, Content{URI: c.URI, MIMEType: "image/png", IsBlob: true, Error: "blob is not valid base64"})
					continue
				}
				if r.IntN(4) == 0 {
					b := make([]byte, r.IntN(600))
					for i := range b {
						b[i] = byte(r.UintN(256))
					}
					contents = append(contents, Content{URI: c.URI, MIMEType: "image/png", Blob: b, IsBlob: true})
					continue
				}
				contents = append(contents, Content{URI: c.URI, MIMEType: c.MIMEType, Text: randomText(r, r.IntN(4000))})
			}
		}
		if _, dup := f.contents[c.Key()]; !dup {
			f.contents[c.Key()] = contents
		}
		if r.IntN(2) == 0 {
			size := 0
			for _, ct := range f.contents[c.Key()] {
				size += len(ct.Text) + len(ct.Blob)
			}
			c.Size = int64(size)
		}
		ranked = append(ranked, c)
	}
	return ranked, f
}

// sameOrPrefix reports whether got is read returned as is, or a text cut short.
func sameOrPrefix(read, got Content) bool {
	if read.IsBlob != got.IsBlob || read.URI != got.URI || read.MIMEType != got.MIMEType {
		return false
	}
	if read.IsBlob {
		return bytes.Equal(read.Blob, got.Blob)
	}
	return strings.HasPrefix(read.Text, got.Text)
}

func randomText(r *rand.Rand, n int) string {
	words := []string{"the", "budget", "token", "résumé", "日本語", "😀", "func", "{", "}", "\t", "<|endoftext|>", "x"}
	var b strings.Builder
	for b.Len() < n {
		b.WriteString(words[r.IntN(len(words))])
		if r.IntN(8) == 0 {
			b.WriteByte('\n')
		} else {
			b.WriteByte(' ')
		}
	}
	return b.String()
}

// FuzzSelect is the packing property test: whatever the candidates and
// budget, the result respects the budget on an independent recount, lists
// every candidate once in rank order, reads only what it may return, never
// reads a resource twice, returns only prefixes of what was read, and is
// deterministic.
func FuzzSelect(f *testing.F) {
	f.Add(uint64(1), uint16(100), uint8(10), uint8(0))
	f.Add(uint64(2), uint16(1), uint8(5), uint8(1))
	f.Add(uint64(3), uint16(4999), uint8(40), uint8(2))
	f.Add(uint64(4), uint16(33), uint8(20), uint8(7))
	f.Add(uint64(5), uint16(700), uint8(30), uint8(12))
	// With a query: values, sections, outlines, pointers.
	f.Add(uint64(6), uint16(300), uint8(30), uint8(16|2))
	f.Add(uint64(7), uint16(2000), uint8(35), uint8(16|2|1))
	f.Add(uint64(8), uint16(60), uint8(20), uint8(16))
	f.Add(uint64(9), uint16(900), uint8(39), uint8(16|4|2))
	tk := realTokenizer(f)
	f.Fuzz(func(t *testing.T, seed uint64, budgetIn uint16, n uint8, flags uint8) {
		req := Request{
			TokenBudget:   1 + int(budgetIn)%5000,
			IncludeBinary: flags&1 != 0,
			MaxItems:      int(flags>>2) % 4,
		}
		if flags&16 != 0 { // the engine's way: a query, values, estimates
			r := rand.New(rand.NewPCG(seed, 7))
			req.Query = randomText(r, 4)
			req.ValueFloor = float64(seed%3) / 4
			req.Now = time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)
			req.Estimator = budget.NewEstimator()
		}
		var count budget.Counter = wordCounter{}
		if flags&2 != 0 {
			count = tk
		}
		ranked, reads := scenario(seed, int(n)%40)
		res, err := Select(t.Context(), req, ranked, reads.read, count)
		if err != nil {
			t.Fatalf("Select: %v", err)
		}
		checkInvariants(t, req, ranked, res, count)

		readKeys := map[string]bool{}
		for _, c := range reads.calls {
			if readKeys[c] {
				t.Errorf("%s read twice", c)
			}
			readKeys[c] = true
		}
		if len(reads.calls) != res.Reads {
			t.Errorf("Reads = %d, ReadFunc called %d times", res.Reads, len(reads.calls))
		}
		for _, it := range res.Items {
			orig := reads.contents[it.Key()]
			j := 0
			if it.Form == FormSections || it.Form == FormOutline {
				for _, c := range it.Contents {
					if it.Form == FormSections && c.StartLine > 0 && !slices.ContainsFunc(orig, func(o Content) bool { return linesHold(o.Text, c) }) {
						t.Fatalf("item rank %d: lines %d-%d of no content read hold %q", it.Rank, c.StartLine, c.EndLine, c.Text)
					}
				}
				continue
			}
			for _, c := range it.Contents {
				for j < len(orig) && !sameOrPrefix(orig[j], c.Content) {
					j++
				}
				if j == len(orig) {
					t.Fatalf("item rank %d: content %q is not (a prefix of) a content read, in order", it.Rank, c.Text)
				}
				if c.Truncated != (c.Text != orig[j].Text) {
					t.Errorf("item rank %d: Truncated = %v but text %d of %d bytes", it.Rank, c.Truncated, len(c.Text), len(orig[j].Text))
				}
				j++
			}
		}

		if req.Estimator != nil {
			req.Estimator = budget.NewEstimator() // what it learned is an input too
		}
		again, err := Select(t.Context(), req, ranked, (&fakeReads{contents: reads.contents, errs: reads.errs}).read, count)
		if err != nil {
			t.Fatalf("Select again: %v", err)
		}
		if diff := cmp.Diff(res, again); diff != "" {
			t.Errorf("Select is not deterministic (-first +second):\n%s", diff)
		}
	})
}

// BenchmarkSelect packs 50 ranked candidates of about 2 KB of Markdown each
// with the real tokenizer: a tight budget (a few items and a trim, most not
// read) and one that fits everything (all 50 read and counted); and a
// 64 KiB task.
func BenchmarkSelect(b *testing.B) {
	tk := realTokenizer(b)
	r := rand.New(rand.NewPCG(42, 42))
	f := &fakeReads{contents: map[resource.Key][]Content{}}
	var ranked []Candidate
	for i := range 50 {
		c := Candidate{Server: "s", URI: fmt.Sprintf("file:///doc%02d.md", i), MIMEType: "text/markdown", Score: 1 - float64(i)*0.005}
		var sb strings.Builder
		for sb.Len() < 2048 {
			fmt.Fprintf(&sb, "## Section %d\n\n%s\n\n", r.IntN(100), randomText(r, 200))
		}
		f.contents[c.Key()] = []Content{{URI: c.URI, MIMEType: c.MIMEType, Text: sb.String()}}
		ranked = append(ranked, c)
	}
	// A task at the 64 KiB a query may hold, of camelCase words that split
	// into many terms: its analysis should cost once per Select, not once
	// per candidate or section.
	long := "token budget section " + strings.Repeat("aB", (64<<10-21)/2)
	for _, tc := range []struct {
		tokens int
		query  string
	}{{4_000, ""}, {100_000, ""}, {500, "token budget section"}, {2_000, "token budget section"}, {8_000, "token budget section"}, {8_000, long}} {
		name := fmt.Sprintf("50x2KB/budget=%d", tc.tokens)
		switch {
		case tc.query == long:
			name += "/64KiB-query"
		case tc.query != "":
			name += "/query"
		}
		b.Run(name, func(b *testing.B) {
			req := Request{TokenBudget: tc.tokens, Query: tc.query, ValueFloor: 0.9}
			var res Result
			for b.Loop() {
				f.calls = f.calls[:0]
				var err error
				if res, err = Select(b.Context(), req, ranked, f.read, tk); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(res.Reads), "reads/op")
			b.ReportMetric(float64(res.TotalTokens), "tokens/op")
		})
	}
}

// linesHold reports whether c's text is lines StartLine..EndLine of text:
// all of them, the last one possibly cut short.
func linesHold(text string, c ItemContent) bool {
	lines := strings.SplitAfter(text, "\n")
	if c.StartLine < 1 || c.EndLine < c.StartLine || c.EndLine > len(lines) {
		return false
	}
	all := strings.Join(lines[c.StartLine-1:c.EndLine], "")
	head := strings.Join(lines[c.StartLine-1:c.EndLine-1], "")
	return strings.HasPrefix(all, c.Text) && strings.HasPrefix(c.Text, head) && len(c.Text) > len(head)
}
