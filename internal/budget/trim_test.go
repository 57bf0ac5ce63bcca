package budget

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"
)

// Fake counters with obvious answers. All are monotone: a longer prefix never
// costs fewer tokens, so TrimToBudget must find exactly the longest fit.
type (
	wordCounter struct{} // whitespace-separated words
	runeCounter struct{} // one token per rune
	byteCounter struct{} // one token per byte
)

func (wordCounter) Count(s string) int { return len(strings.Fields(s)) }
func (runeCounter) Count(s string) int { return utf8.RuneCountInString(s) }
func (byteCounter) Count(s string) int { return len(s) }

// countingCounter records how many Count calls a trim makes and how many
// bytes they read.
type countingCounter struct {
	Counter
	calls, bytes int
}

func (c *countingCounter) Count(s string) int {
	c.calls++
	c.bytes += len(s)
	return c.Counter.Count(s)
}

// bruteTrim is the specification of TrimToBudget written as a linear scan
// over every cut, counting each candidate prefix.
func bruteTrim(c Counter, text string, max int) (string, int) {
	if max <= 0 {
		return "", 0
	}
	best := -1
	firstMiss := len(text)
	for k := 1; k <= len(text); k++ {
		if k == len(text) || text[k-1] == '\n' {
			if c.Count(text[:k]) <= max {
				best = k
			} else if firstMiss == len(text) && best < 0 {
				firstMiss = k
			}
		}
	}
	if best < 0 {
		// Word ends inside the first line.
		for k := 1; k < firstMiss; k++ {
			if (wordCuts{text}).isCut(k) && c.Count(text[:k]) <= max {
				best = k
			}
		}
	}
	if best < 0 {
		for k := 1; k < firstMiss; k++ {
			if (runeCuts{text}).isCut(k) && c.Count(text[:k]) <= max {
				best = k
			}
		}
	}
	if best < 0 {
		return "", 0
	}
	return text[:best], c.Count(text[:best])
}

// nextCut returns the cut of the same kind TrimToBudget used for text[:k]
// that follows k, or -1. For k == 0 (nothing fit) it is the first cut of the
// finest kind.
func nextCut(text string, k int) int {
	lines := lineCuts{text}
	if k > 0 && lines.prev(k) == k {
		return lines.next(k)
	}
	firstLine := lines.next(0)
	var next int
	if words := (wordCuts{text}); k > 0 && words.isCut(k) {
		next = words.next(k)
	} else {
		next = runeCuts{text}.next(k)
	}
	if next >= firstLine {
		return -1 // the fallbacks only look inside the first line
	}
	return next
}

func TestTrimToBudget(t *testing.T) {
	tests := []struct {
		name    string
		c       Counter
		text    string
		max     int
		want    string
		wantTok int
	}{
		{"fits whole", wordCounter{}, "a b\nc d\n", 10, "a b\nc d\n", 4},
		{"fits whole, no final newline", wordCounter{}, "a b\nc", 3, "a b\nc", 3},
		{"exactly the whole", wordCounter{}, "a b\nc d\n", 4, "a b\nc d\n", 4},
		{"cut after a line", wordCounter{}, "a b\nc d\ne f\n", 5, "a b\nc d\n", 4},
		{"cut after a line, exact", wordCounter{}, "a b\nc d\ne f\n", 4, "a b\nc d\n", 4},
		{"partial last line is not a line boundary", wordCounter{}, "a b\nc d e", 4, "a b\n", 2},
		{"blank lines are lines", wordCounter{}, "\n\na b c", 2, "\n\n", 0},
		{"first line too long: word boundary", wordCounter{}, "one two three four\nfive", 2, "one two", 2},
		{"one long line: word boundary", wordCounter{}, "alpha beta gamma", 2, "alpha beta", 2},
		{"leading spaces stay", wordCounter{}, "   alpha beta gamma", 1, "   alpha", 1},
		{"max 1", wordCounter{}, "a b\n", 1, "a", 1},
		{"max 0", wordCounter{}, "a b\n", 0, "", 0},
		{"max negative", wordCounter{}, "a b\n", -5, "", 0},
		{"max huge", wordCounter{}, "a b\n", math.MaxInt, "a b\n", 2},
		{"empty text", wordCounter{}, "", 10, "", 0},
		{"first word too long: rune boundary", runeCounter{}, "héllo wörld", 3, "hél", 3},
		{"CJK without spaces", runeCounter{}, "日本語テキスト", 2, "日本", 2},
		{"word fits before rune fallback", runeCounter{}, "日本 語テキスト", 3, "日本", 2},
		{"never split a rune", byteCounter{}, "😀😀", 5, "😀", 4},
		{"no whole rune fits", byteCounter{}, "😀", 3, "", 0},
		{"line boundary with multibyte", runeCounter{}, "ü\nö\nä", 4, "ü\nö\n", 4},
		{"invalid UTF-8 is cut between bytes", byteCounter{}, "\xff\xfe\xfd", 2, "\xff\xfe", 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, gotTok := TrimToBudget(tt.c, tt.text, tt.max)
			if got != tt.want || gotTok != tt.wantTok {
				t.Errorf("TrimToBudget(%q, %d) = %q, %d; want %q, %d", tt.text, tt.max, got, gotTok, tt.want, tt.wantTok)
			}
			// The specification, as a slow scan, must agree.
			if want, wantTok := bruteTrim(tt.c, tt.text, tt.max); got != want || gotTok != wantTok {
				t.Errorf("TrimToBudget(%q, %d) = %q, %d; bruteTrim = %q, %d", tt.text, tt.max, got, gotTok, want, wantTok)
			}
		})
	}
}

func TestTrimToBudgetTokenizer(t *testing.T) {
	texts := []string{
		"Hello, world!\nSecond line here.\nThird.\n",
		"# Title\n\nSome prose that goes on for a while, with punctuation; and more.\n\n```go\nfunc f() {}\n```\n",
		"one very long first line without any newline at all but with plenty of words in it",
		"日本語のテキストを改行なしで長く書いた文章です。さらに続きます。",
		"😀👍🏽🎉 emoji first, then words\nand a second line",
		"<|endoftext|>\n<|endoftext|> more <|endofprompt|>\n",
		"a\n\n\n\nb\n\n\n\nc",
	}
	for _, enc := range []string{EncodingCL100K, EncodingO200K} {
		tk := mustTokenizer(t, enc)
		for _, text := range texts {
			whole := tk.Count(text)
			for max := 0; max <= whole+1; max++ {
				got, gotTok := TrimToBudget(tk, text, max)
				want, wantTok := bruteTrim(tk, text, max)
				if got != want || gotTok != wantTok {
					t.Errorf("%s TrimToBudget(%q, %d) = %q, %d; bruteTrim = %q, %d", enc, text, max, got, gotTok, want, wantTok)
				}
			}
		}
	}
}

// testTrimToBudgetProbes checks the cost claim in the doc comment: a 1 MB
// text is trimmed with a handful of counts, not one per line.
func testTrimToBudgetProbes(t *testing.T) {
	tk := mustTokenizer(t, EncodingCL100K)
	text := markdown(rand.New(rand.NewPCG(7, 7)), 1<<20)
	if testing.Short() {
		text = text[:1<<17]
	}
	whole := tk.Count(text)
	for _, max := range []int{1, 100, 4_000, whole / 2, whole - 10, whole} {
		t.Run(fmt.Sprint(max), func(t *testing.T) {
			cc := &countingCounter{Counter: tk}
			out, n := TrimToBudget(cc, text, max)
			if n > max || n != tk.Count(out) || !strings.HasPrefix(text, out) {
				t.Fatalf("TrimToBudget(1MB, %d) = %d bytes, %d tokens (Count %d)", max, len(out), n, tk.Count(out))
			}
			if limit := 12 + 2*int(math.Log2(float64(len(text)))); cc.calls > limit {
				t.Errorf("TrimToBudget(1MB, %d) made %d Count calls, want <= %d", max, cc.calls, limit)
			}
			t.Logf("max=%d: %d bytes out, %d calls reading %.1f× the output", max, len(out), cc.calls, float64(cc.bytes)/float64(len(out)+1))
		})
	}
}

func FuzzTrimToBudget(f *testing.F) {
	f.Add("a b\nc d\ne f\n", 3, uint8(0))
	f.Add("héllo wörld\nsecond", 2, uint8(1))
	f.Add("😀😀😀", 5, uint8(2))
	f.Add("<|endoftext|> x\ny", 4, uint8(3))
	f.Add("\xff\xfe\n\xc3", 1, uint8(3))
	f.Add("日本語のテキスト\n", 3, uint8(4))
	tk := mustTokenizer(f, EncodingCL100K)
	o := mustTokenizer(f, EncodingO200K)
	counters := []Counter{wordCounter{}, runeCounter{}, byteCounter{}, tk, o}
	f.Fuzz(func(t *testing.T, text string, max int, which uint8) {
		if len(text) > 4096 {
			return // tiktoken-go is quadratic in piece length; keep runs fast
		}
		c := counters[int(which)%len(counters)]
		out, n := TrimToBudget(c, text, max)
		if !strings.HasPrefix(text, out) {
			t.Fatalf("TrimToBudget(%q, %d) = %q, not a prefix", text, max, out)
		}
		if n != c.Count(out) {
			t.Fatalf("TrimToBudget(%q, %d) tokens = %d, Count(out) = %d", text, max, n, c.Count(out))
		}
		if n > max && out != "" {
			t.Fatalf("TrimToBudget(%q, %d) = %q with %d tokens, over budget", text, max, out, n)
		}
		if max <= 0 && out != "" {
			t.Fatalf("TrimToBudget(%q, %d) = %q, want \"\"", text, max, out)
		}
		if utf8.ValidString(text) && !utf8.ValidString(out) {
			t.Fatalf("TrimToBudget(%q, %d) = %q, split a rune", text, max, out)
		}
		if len(text) > 256 {
			return
		}
		if _, real := c.(*Tokenizer); !real {
			// Small enough to check against the specification itself. The
			// fakes are monotone, so the longest fit is found exactly.
			if want, wantTok := bruteTrim(c, text, max); out != want || n != wantTok {
				t.Fatalf("TrimToBudget(%q, %d) = %q, %d; bruteTrim = %q, %d", text, max, out, n, want, wantTok)
			}
			return
		}
		// BPE counts are not monotone ("0^^^" is 3 tokens in o200k_base,
		// "0^^^^" is 2), so the longest fit may hide behind a cut that does
		// not fit. What TrimToBudget promises instead: the next cut of the
		// same kind does not fit.
		if next := nextCut(text, len(out)); next >= 0 && c.Count(text[:next]) <= max {
			t.Fatalf("TrimToBudget(%q, %d) = %q, but the next cut %q fits (%d tokens)", text, max, out, text[:next], c.Count(text[:next]))
		}
	})
}

func BenchmarkTrimToBudget(b *testing.B) {
	tk := mustTokenizer(b, EncodingCL100K)
	text := markdown(rand.New(rand.NewPCG(42, 42)), 1<<20)
	whole := tk.Count(text)
	for _, max := range []int{4_000, whole / 2, whole - 10} {
		b.Run(fmt.Sprintf("1MB/max=%d", max), func(b *testing.B) {
			cc := &countingCounter{Counter: tk}
			for b.Loop() {
				TrimToBudget(cc, text, max)
			}
			b.ReportMetric(float64(cc.calls)/float64(b.N), "counts/op")
		})
	}
}

func ExampleTrimToBudget() {
	tk, err := NewTokenizer(EncodingCL100K)
	if err != nil {
		panic(err)
	}
	text := "First line.\nSecond line.\nThird line.\n"
	out, n := TrimToBudget(tk, text, 7)
	fmt.Printf("%q %d\n", out, n)
	// Output: "First line.\nSecond line.\n" 6
}

// sizedCounter is one token per byte, with a declared bound, and remembers
// the longest text it was asked to count.
type sizedCounter struct{ longest int }

func (c *sizedCounter) Count(s string) int { c.longest = max(c.longest, len(s)); return len(s) }
func (*sizedCounter) MaxTokenBytes() int   { return 4 }

func TestTrimToBudgetNeverCountsPastTheBound(t *testing.T) {
	c := &sizedCounter{}
	// One 1.5 MB line: without the bound, the only line cut is the whole text.
	text := strings.Repeat("word ", 300_000)
	out, n := TrimToBudget(c, text, 100)
	if n > 100 || len(out) != 99 || !strings.HasPrefix(text, out) {
		t.Errorf("TrimToBudget = %d bytes, %d tokens; want 20 whole words (99 bytes) within 100", len(out), n)
	}
	if c.longest > 100*4 {
		t.Errorf("counted a %d-byte text; nothing past 100 tokens × 4 bytes can fit", c.longest)
	}
}

func TestMaxTokenBytesBoundsRealTokens(t *testing.T) {
	for _, enc := range []string{EncodingCL100K, EncodingO200K} {
		tk, err := NewTokenizer(enc)
		if err != nil {
			t.Fatal(err)
		}
		L := tk.MaxTokenBytes()
		if L < 16 || L > 4096 {
			t.Fatalf("%s: MaxTokenBytes = %d, implausible", enc, L)
		}
		// The bound holds on text made of long repeated tokens.
		for _, s := range []string{strings.Repeat(" ", 10_000), strings.Repeat("=", 10_000), strings.Repeat("-", 5000)} {
			if got := tk.Count(s); got < (len(s)+L-1)/L {
				t.Errorf("%s: %q×%d counts %d tokens, fewer than len/MaxTokenBytes = %d", enc, s[:1], len(s), got, len(s)/L)
			}
		}
		if Fits(tk, 10*L+1, 10) || !Fits(tk, 10*L, 10) {
			t.Errorf("%s: Fits disagrees with MaxTokenBytes %d", enc, L)
		}
	}
}
