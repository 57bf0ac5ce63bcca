package use

import (
	"fmt"
	"unicode/utf16"
)

// separator replaces every space, and starts every non-empty text, as in
// SentencePiece: "▁" (U+2581 LOWER ONE EIGHTH BLOCK).
const separator = '\u2581'

// reservedPieces is how many ids at the start of the vocabulary are not
// pieces the tokenizer can produce: 0 "\ufffd" (unknown), 1 "<s>",
// 2 "</s>" and three extra_token_id_N. Id 0 is still produced, for runs of
// symbols no piece covers.
const reservedPieces = 6

// unknownID is the id of the unknown piece.
const unknownID = 0

// A tokenizer is a port of the reference tokenizer in
// @energetic-ai/embeddings 0.2.0 (lib/tokenizer.ts and lib/trie.ts, itself
// from @tensorflow-models/universal-sentence-encoder; Apache License 2.0,
// see data/NOTICE.md): a Viterbi search for the segmentation of the text
// into vocabulary pieces with the highest sum of scores. It is immutable.
//
// The port keeps the reference's quirks, because the model was run on its
// output:
//   - only U+0020 becomes "▁"; tabs, newlines and other spaces stay as
//     they are (and are unknown unless NFKC maps them to U+0020, as it
//     does U+00A0 and U+3000);
//   - a symbol that begins no piece is one unknown piece with score 0,
//     and a run of unknown pieces collapses to one id 0;
//   - a score of 0 at a position counts as "no path yet", so the next
//     candidate replaces it whatever its score; ties go to the candidate
//     that starts later;
//   - the backtrack steps back by the piece's length in UTF-16 code units,
//     where the search counted code points (the same for every piece of this
//     vocabulary, and for the unknown piece "\ufffd").
type tokenizer struct {
	pieces   []string
	scores   []float64
	utf16Len []int32 // of each piece
	// nodes[0] is the root of the trie of pieces; children maps
	// (node index << 21 | rune) to a child's node index.
	nodes    []trieNode
	children map[uint64]int32
}

type trieNode struct {
	end   bool // a piece ends here
	id    int32
	score float64
}

func newTokenizer(pieces []string, scores []float64) (*tokenizer, error) {
	if len(pieces) <= reservedPieces || len(pieces) != len(scores) || pieces[unknownID] != "\ufffd" {
		return nil, fmt.Errorf("vocabulary: %d pieces, %d scores", len(pieces), len(scores))
	}
	t := &tokenizer{
		pieces:   pieces,
		scores:   scores,
		utf16Len: make([]int32, len(pieces)),
		nodes:    make([]trieNode, 1, 4*len(pieces)),
		children: make(map[uint64]int32, 4*len(pieces)),
	}
	for i, p := range pieces {
		t.utf16Len[i] = int32(len(utf16.Encode([]rune(p))))
		if i < reservedPieces {
			continue
		}
		// Insert p. A piece that occurs twice ("”5" occurs three times)
		// keeps the id and score of its last occurrence, as the
		// reference's trie does.
		node := int32(0)
		for _, r := range p {
			k := uint64(node)<<21 | uint64(r)
			c, ok := t.children[k]
			if !ok {
				c = int32(len(t.nodes))
				t.nodes = append(t.nodes, trieNode{})
				t.children[k] = c
			}
			node = c
		}
		if node != 0 {
			t.nodes[node] = trieNode{end: true, id: int32(i), score: scores[i]}
		}
	}
	return t, nil
}

// child returns the child of node for r, or -1.
func (t *tokenizer) child(node int32, r rune) int32 {
	if c, ok := t.children[uint64(node)<<21|uint64(r)]; ok {
		return c
	}
	return -1
}

// tokScratch holds the buffers of one tokenization.
type tokScratch struct {
	symbols []rune
	best    []float64
	words   []int32
	ids     []int32
}

// symbols sets s.symbols to the text as the reference tokenizer sees it:
// NFKC-normalised, every U+0020 replaced by "▁", and "▁" in front if the
// result is not empty.
func (s *tokScratch) setSymbols(text string) {
	sym := append(s.symbols[:0], separator)
	sym = appendNFKC(sym, text)
	if len(sym) == 1 {
		sym = sym[:0]
	}
	for i, r := range sym {
		if r == ' ' {
			sym[i] = separator
		}
	}
	s.symbols = sym
}

// encode appends the ids of text's pieces to s.ids and returns them.
func (t *tokenizer) encode(s *tokScratch, text string) []int32 {
	s.setSymbols(text)
	sym := s.symbols
	n := len(sym)
	if cap(s.best) < n+1 {
		s.best = make([]float64, n+1)
		s.words = make([]int32, n+1)
	}
	best, words := s.best[:n+1], s.words[:n+1]
	clear(best)
	clear(words)

	// The reference builds the whole lattice and then visits, for each end
	// position in order, the pieces ending there by increasing start.
	// Visiting starts in order and relaxing their end positions visits
	// every end's candidates in the same order, and best[start] is final
	// when start is visited, so the results are identical.
	for i := range n {
		found := false
		node := t.child(0, sym[i])
		for k := i; k < n && node >= 0; k++ {
			if nd := &t.nodes[node]; nd.end {
				found = true
				relax(best, words, k+1, nd.score+best[i], nd.id)
			}
			if k+1 < n {
				node = t.child(node, sym[k+1])
			}
		}
		if !found {
			relax(best, words, i+1, 0+best[i], unknownID)
		}
	}

	// Backtrack from the end, collapsing runs of unknown pieces.
	ids := s.ids[:0]
	prevUnknown := false
	for i := n; i > 0; {
		id := words[i]
		if !(prevUnknown && id == unknownID) {
			ids = append(ids, id)
		}
		prevUnknown = id == unknownID
		i -= int(t.utf16Len[id])
	}
	for i, j := 0, len(ids)-1; i < j; i, j = i+1, j-1 {
		ids[i], ids[j] = ids[j], ids[i]
	}
	s.ids = ids
	return ids
}

// relax offers the candidate (score, id) for the path ending at end, with
// the reference's rule: best[end] === 0 || score >= best[end].
func relax(best []float64, words []int32, end int, score float64, id int32) {
	if best[end] == 0 || score >= best[end] {
		best[end] = score
		words[end] = id
	}
}

// Tokenize returns the vocabulary pieces of text, as the reference
// tokenizer segments it, all of them (the model reads the first
// [MaxTokens]). An unknown run of symbols is returned as "\ufffd".
func (e *Embedder) Tokenize(text string) ([]string, error) {
	m, err := e.model()
	if err != nil {
		return nil, err
	}
	var s tokScratch
	ids := m.tok.encode(&s, text)
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = m.tok.pieces[id]
	}
	return out, nil
}
