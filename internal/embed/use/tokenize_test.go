package use

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// toyTokenizer builds a tokenizer over the reserved pieces plus pieces,
// given as piece → score in order.
func toyTokenizer(t *testing.T, pieces ...any) *tokenizer {
	t.Helper()
	ps := []string{"\ufffd", "<s>", "</s>", "extra_token_id_1", "extra_token_id_2", "extra_token_id_3"}
	scores := make([]float64, len(ps))
	for i := 0; i < len(pieces); i += 2 {
		ps = append(ps, pieces[i].(string))
		scores = append(scores, pieces[i+1].(float64))
	}
	tok, err := newTokenizer(ps, scores)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func toyPieces(tok *tokenizer, text string) []string {
	var s tokScratch
	var out []string
	for _, id := range tok.encode(&s, text) {
		out = append(out, tok.pieces[id])
	}
	return out
}

// TestTokenizerQuirks checks the reference's behaviours that a textbook
// Viterbi segmentation would not have, on toy vocabularies. The expected
// pieces are what the reference's Tokenizer (new EmbeddingsModel({vocabulary,
// model: null}).tokenizer) returns for the same vocabularies.
func TestTokenizerQuirks(t *testing.T) {
	tests := []struct {
		name   string
		pieces []any
		text   string
		want   []string
	}{
		{
			name:   "best path",
			pieces: []any{"▁", -1.0, "▁ab", -1.5, "a", -1.0, "b", -1.0},
			text:   "ab",
			want:   []string{"▁ab"},
		},
		{
			// ▁a+b and ▁+ab both score -2: the candidate that starts later
			// (b, at 2) replaces the earlier (ab, at 1).
			name:   "ties go to the later start",
			pieces: []any{"▁", -1.0, "▁a", -1.0, "ab", -1.0, "b", -1.0},
			text:   "ab",
			want:   []string{"▁a", "b"},
		},
		{
			// "▁" is not a piece, so position 1 is reached by an unknown
			// symbol with score 0. "qr" (score 0) then reaches position 3
			// with total 0, which counts as "no path yet", so "r" (-2)
			// replaces it; position 2 was never reached and backtracks as
			// unknown, and the two unknowns collapse.
			name:   "a total of 0 counts as no path",
			pieces: []any{"qr", 0.0, "r", -2.0},
			text:   "qr",
			want:   []string{"\ufffd", "r"},
		},
		{
			// The backtrack steps back by UTF-16 length: "😀" is one
			// code point but two code units, so "x" is skipped.
			name:   "backtrack by UTF-16 length",
			pieces: []any{"▁", -1.0, "x", -1.0, "😀", -1.0},
			text:   "x😀",
			want:   []string{"▁", "😀"},
		},
		{
			name:   "a duplicate piece keeps its last id and score",
			pieces: []any{"▁", -1.0, "d", -9.0, "▁d", -3.0, "d", -0.5},
			text:   "d",
			want:   []string{"▁", "d"},
		},
		{
			name:   "unknown runs collapse",
			pieces: []any{"▁", -1.0, "x", -1.0},
			text:   "§¶•x†‡",
			want:   []string{"▁", "\ufffd", "x", "\ufffd"},
		},
		{
			name:   "only U+0020 becomes ▁",
			pieces: []any{"▁", -1.0, "x", -1.0},
			text:   "x x\tx\nx",
			want:   []string{"▁", "x", "▁", "x", "\ufffd", "x", "\ufffd", "x"},
		},
		{
			name:   "NFKC first: U+00A0, fullwidth letters, ligatures",
			pieces: []any{"▁", -1.0, "x", -1.0, "f", -1.0, "i", -1.0, "fi", -1.0},
			text:   "\u00a0ｘ\ufb01",
			want:   []string{"▁", "▁", "x", "fi"},
		},
		{
			// No piece ends at the "f" of "fi", so that position keeps
			// the initial score 0, the best there is: the unknown "i"
			// from it (0 + 0) beats "fi" (-1 + the path to "f").
			name:   "an unreached position scores 0",
			pieces: []any{"▁", -1.0, "x", -1.0, "fi", -1.0},
			text:   "xfi",
			want:   []string{"▁", "x", "\ufffd"},
		},
		{
			name:   "empty",
			pieces: []any{"▁", -1.0},
			text:   "",
			want:   nil,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tok := toyTokenizer(t, tt.pieces...)
			if diff := cmp.Diff(tt.want, toyPieces(tok, tt.text)); diff != "" {
				t.Errorf("pieces of %q (-want +got):\n%s", tt.text, diff)
			}
		})
	}
}

// TestTokenize checks segmentations by the real vocabulary against what
// the Node reference returned for them.
func TestTokenize(t *testing.T) {
	e := &Embedder{}
	tests := []struct {
		text string
		want []string
	}{
		{"hello world", []string{"▁hell", "o", "▁world"}},
		{"a:b", []string{"▁a", ":", "b"}}, // ":" has a null (0) score
		{"://", []string{"▁", "://"}},
		{"Don't stop", []string{"▁Don", "'", "t", "▁stop"}},
		{"x\ty", []string{"▁x", "\ufffd", "y"}},
		{"😀", []string{"▁", "\ufffd"}},
		{"ab😀😀cd", []string{"▁ab", "\ufffd", "c", "d"}},
		{"\u00a0x", []string{"▁", "▁x"}},
		{" ", []string{"▁", "▁"}},
		{"", []string{}},
	}
	for _, tt := range tests {
		got, err := e.Tokenize(tt.text)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("Tokenize(%q) (-want +got):\n%s", tt.text, diff)
		}
	}
}

func TestTokenizeLong(t *testing.T) {
	m := testModel(t)
	var s tokScratch
	ids := m.tok.encode(&s, strings.Repeat("the quick brown fox ", 100))
	if len(ids) <= 400 {
		t.Errorf("%d ids for 400 words: the tokenizer should not truncate", len(ids))
	}
	for _, id := range ids {
		if id < 0 || int(id) >= len(m.tok.pieces) {
			t.Fatalf("id %d out of range", id)
		}
	}
}

func TestNFKC(t *testing.T) {
	// Expected values from Node 20's String.prototype.normalize("NFKC").
	tests := []struct{ in, want string }{
		{"plain ASCII", "plain ASCII"},
		{"e\u0301", "\u00e9"},
		{"a\u0301\u0323", "\u1ea1\u0301"},  // reordered by combining class, then composed
		{"\u1100\u1161\u11a8", "\uac01"},   // conjoining jamo → syllable
		{"\uac00\u11a8", "\uac01"},         // LV syllable + T
		{"\ufb01", "fi"},                   // compatibility ligature
		{"\u0301e", "\u0301e"},             // a leading mark composes with nothing
		{"\u0b47\u0b3e", "\u0b4b"},         // two starters compose
		{"a\u0305\u0301", "a\u0305\u0301"}, // blocked by a mark of the same class
		{"\u0344", "\u0308\u0301"},         // non-starter decomposition
		{"\u212b", "\u00c5"},               // singleton
		{"\u2126", "\u03a9"},               // singleton
		{"\u0958", "\u0915\u093c"},         // excluded from composition
		{"\u1e9b\u0323", "\u1e69"},         // long s with dot: compatibility, then recomposed
		{"x\u0316\u0301\u0300", "x\u0316\u0301\u0300"},
		{"\u00bd", "1\u20442"},
		{"\u3000a", " a"},
		{"\xff", "\ufffd"}, // invalid UTF-8 reads as U+FFFD
	}
	for _, tt := range tests {
		if got := string(appendNFKC(nil, tt.in)); got != tt.want {
			t.Errorf("NFKC(%+q) = %+q, want %+q", tt.in, got, tt.want)
		}
	}
	// appendNFKC appends.
	if got := appendNFKC([]rune("ab"), "e\u0301"); !slices.Equal(got, []rune("ab\u00e9")) {
		t.Errorf("appendNFKC appended %q", string(got))
	}
}
