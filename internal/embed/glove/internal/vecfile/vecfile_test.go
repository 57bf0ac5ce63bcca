package vecfile

import (
	"bytes"
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// synthetic returns n entries of dimension dim with increasing, gapped
// ranks, including a zero vector (entry 3) and a non-ASCII word (entry 5);
// n must be at least 6.
func synthetic(n, dim int) []Entry {
	rng := rand.New(rand.NewPCG(1, 2))
	entries := make([]Entry, n)
	rank := uint32(0)
	for i := range entries {
		rank += 1 + uint32(rng.IntN(3))
		v := make([]float64, dim)
		for d := range v {
			v[d] = rng.NormFloat64() * (0.1 + float64(i%5))
		}
		entries[i] = Entry{Word: "w" + strings.Repeat("x", i%4) + string(rune('a'+i%26)) + string(rune('0'+i/26)), Rank: rank, Vector: v}
	}
	entries[3].Vector = make([]float64, dim)
	entries[5].Word = "naïve"
	return entries
}

func encode(t *testing.T, dim, vocab int, entries []Entry) string {
	t.Helper()
	var buf bytes.Buffer
	if err := Encode(&buf, dim, vocab, entries); err != nil {
		t.Fatalf("Encode: %v", err)
	}
	return buf.String()
}

func TestRoundTrip(t *testing.T) {
	const dim, vocab = 7, 1000
	entries := synthetic(60, dim)
	tab, err := Decode(encode(t, dim, vocab, entries))
	if err != nil {
		t.Fatalf("Decode: %v", err)
	}
	if tab.Dim != dim || tab.Vocab != vocab {
		t.Errorf("Dim, Vocab = %d, %d; want %d, %d", tab.Dim, tab.Vocab, dim, vocab)
	}
	var words []string
	var ranks []uint32
	for _, e := range entries {
		words = append(words, e.Word)
		ranks = append(ranks, e.Rank)
	}
	if diff := cmp.Diff(words, tab.Words); diff != "" {
		t.Errorf("Words mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(ranks, tab.Ranks); diff != "" {
		t.Errorf("Ranks mismatch (-want +got):\n%s", diff)
	}
	for i, e := range entries {
		if j, ok := tab.Lookup(e.Word); !ok || j != i {
			t.Errorf("Lookup(%q) = %d, %v; want %d, true", e.Word, j, ok, i)
		}
		got := tab.Vector(i)
		scale := float64(tab.Scale(i))
		for d, x := range e.Vector {
			// Rounding to the nearest code is off by at most half a step;
			// the slack covers float32 arithmetic in Vector.
			if err := math.Abs(float64(got[d]) - x); err > scale/2*(1+1e-6)+1e-12 {
				t.Errorf("word %d component %d: got %v, want %v ± %v", i, d, got[d], x, scale/2)
			}
		}
	}
	if _, ok := tab.Lookup("absent"); ok {
		t.Error("Lookup(absent) found a word")
	}
}

func TestQuantize(t *testing.T) {
	scale, codes := Quantize([]float64{0.5, -1.27, 0.01, 0})
	if want := float32(0.01); scale != want {
		t.Errorf("scale = %v, want %v", scale, want)
	}
	if diff := cmp.Diff([]int8{50, -127, 1, 0}, codes); diff != "" {
		t.Errorf("codes mismatch (-want +got):\n%s", diff)
	}
	scale, codes = Quantize([]float64{0, 0})
	if scale != 0 || codes[0] != 0 || codes[1] != 0 {
		t.Errorf("Quantize(zero) = %v, %v; want 0, [0 0]", scale, codes)
	}
}

func TestEncodeRejects(t *testing.T) {
	v := []float64{1, 2}
	tests := []struct {
		name    string
		dim     int
		vocab   int
		entries []Entry
	}{
		{"zero dim", 0, 10, nil},
		{"empty word", 2, 10, []Entry{{Word: "", Rank: 1, Vector: v}}},
		{"duplicate word", 2, 10, []Entry{{Word: "a", Rank: 1, Vector: v}, {Word: "a", Rank: 2, Vector: v}}},
		{"rank zero", 2, 10, []Entry{{Word: "a", Rank: 0, Vector: v}}},
		{"rank not increasing", 2, 10, []Entry{{Word: "a", Rank: 2, Vector: v}, {Word: "b", Rank: 2, Vector: v}}},
		{"wrong length", 2, 10, []Entry{{Word: "a", Rank: 1, Vector: []float64{1}}}},
		{"NaN", 2, 10, []Entry{{Word: "a", Rank: 1, Vector: []float64{1, math.NaN()}}}},
		{"Inf", 2, 10, []Entry{{Word: "a", Rank: 1, Vector: []float64{math.Inf(-1), 1}}}},
		{"vocab below rank", 2, 1, []Entry{{Word: "a", Rank: 2, Vector: v}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := Encode(&buf, tt.dim, tt.vocab, tt.entries); err == nil {
				t.Error("Encode succeeded, want error")
			}
		})
	}
}

func TestDecodeRejects(t *testing.T) {
	valid := encode(t, 3, 100, synthetic(8, 3))
	if _, err := Decode(valid); err != nil {
		t.Fatalf("Decode(valid): %v", err)
	}
	// Every proper prefix is truncated somewhere.
	for n := range len(valid) {
		if _, err := Decode(valid[:n]); !errors.Is(err, ErrFormat) {
			t.Errorf("Decode(first %d of %d bytes) error = %v, want ErrFormat", n, len(valid), err)
		}
	}
	bad := map[string]string{
		"trailing byte": valid + "x",
		"bad magic":     "x" + valid[1:],
		"zero dim":      Magic + "\x00\x00\x00\x00" + valid[len(Magic)+4:],
		"huge count":    valid[:len(Magic)+4] + "\xff\xff\xff\x7f" + valid[len(Magic)+8:],
	}
	for name, data := range bad {
		if _, err := Decode(data); !errors.Is(err, ErrFormat) {
			t.Errorf("Decode(%s) error = %v, want ErrFormat", name, err)
		}
	}
}

func FuzzDecode(f *testing.F) {
	var buf bytes.Buffer
	if err := Encode(&buf, 3, 100, synthetic(8, 3)); err != nil {
		f.Fatal(err)
	}
	f.Add(buf.String())
	f.Add(Magic)
	f.Fuzz(func(t *testing.T, data string) {
		tab, err := Decode(data)
		if err != nil {
			if !errors.Is(err, ErrFormat) {
				t.Fatalf("error %v does not wrap ErrFormat", err)
			}
			return
		}
		for i, w := range tab.Words {
			if j, ok := tab.Lookup(w); !ok || j != i {
				t.Fatalf("Lookup(%q) = %d, %v; want %d", w, j, ok, i)
			}
			if v := tab.Vector(i); len(v) != tab.Dim {
				t.Fatalf("len(Vector(%d)) = %d, want %d", i, len(v), tab.Dim)
			}
			if i > 0 && tab.Ranks[i] <= tab.Ranks[i-1] || int(tab.Ranks[i]) > tab.Vocab {
				t.Fatalf("rank %d out of order or above vocab %d: %v", i, tab.Vocab, tab.Ranks)
			}
		}
	})
}
