// Package vecfile reads and writes the compact word-vector table that
// package glove embeds: words in frequency order, their frequency ranks, and
// one int8-quantised vector per word with a float32 scale.
//
// # Format
//
// All integers are little-endian. A file is, in order:
//
//	magic    8 bytes  "cdwvec1\n"
//	dim      uint32   vector length
//	count    uint32   number of words
//	vocab    uint32   size of the source vocabulary the ranks refer to
//	words    count × (uvarint byte length, UTF-8 bytes)
//	ranks    count × uvarint (rank[0], then rank[i]-rank[i-1]; ranks are 1-based and strictly increasing)
//	scales   count × float32 (IEEE 754 bits)
//	codes    count × dim int8
//
// and nothing after. Vector i is approximately scales[i] × codes[i*dim:(i+1)*dim].
// The layout keeps the codes contiguous at the end so that [Decode] can use
// them in place, without copying, when the file is embedded in the binary.
package vecfile

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
)

// Magic is the first 8 bytes of every file. The trailing digit is the format
// version; a new layout gets a new magic, not a flag.
const Magic = "cdwvec1\n"

// MaxDim bounds the vector length so that a corrupt header cannot request
// absurd allocations.
const MaxDim = 4096

// An Entry is one word as given to [Encode].
type Entry struct {
	Word   string
	Rank   uint32    // 1-based frequency rank in the source vocabulary
	Vector []float64 // len == dim
}

// Quantize maps v to int8 codes with a per-vector scale chosen so that the
// largest |v[i]| maps to ±127: v[i] ≈ scale × codes[i]. It rounds to nearest
// using the float32 scale it returns, so decoding with that scale is exact to
// within scale/2 per component. An all-zero (or empty) v gets scale 0 and
// all-zero codes.
func Quantize(v []float64) (scale float32, codes []int8) {
	codes = make([]int8, len(v))
	var maxAbs float64
	for _, x := range v {
		maxAbs = max(maxAbs, math.Abs(x))
	}
	scale = float32(maxAbs / 127)
	if scale == 0 || math.IsInf(float64(scale), 0) || math.IsNaN(float64(scale)) {
		return 0, codes
	}
	s := float64(scale)
	for i, x := range v {
		q := math.Round(x / s)
		codes[i] = int8(max(-127, min(127, q)))
	}
	return scale, codes
}

// Encode writes entries in the documented format. Entries must be in
// strictly increasing rank order, have distinct non-empty words, finite
// components and len(Vector) == dim. vocab is the size of the source
// vocabulary and must be at least the last rank.
func Encode(w io.Writer, dim, vocab int, entries []Entry) error {
	if dim <= 0 || dim > MaxDim {
		return fmt.Errorf("vecfile: dim %d out of range [1, %d]", dim, MaxDim)
	}
	if len(entries) > math.MaxUint32 || vocab > math.MaxUint32 {
		return errors.New("vecfile: too many entries")
	}
	seen := make(map[string]bool, len(entries))
	var prev uint32
	for i, e := range entries {
		switch {
		case e.Word == "":
			return fmt.Errorf("vecfile: entry %d: empty word", i)
		case seen[e.Word]:
			return fmt.Errorf("vecfile: entry %d: duplicate word %q", i, e.Word)
		case e.Rank <= prev:
			return fmt.Errorf("vecfile: entry %d (%q): rank %d not above previous rank %d", i, e.Word, e.Rank, prev)
		case len(e.Vector) != dim:
			return fmt.Errorf("vecfile: entry %d (%q): vector length %d, want %d", i, e.Word, len(e.Vector), dim)
		}
		for _, x := range e.Vector {
			if math.IsNaN(x) || math.IsInf(x, 0) {
				return fmt.Errorf("vecfile: entry %d (%q): non-finite component", i, e.Word)
			}
		}
		seen[e.Word] = true
		prev = e.Rank
	}
	if int(prev) > vocab {
		return fmt.Errorf("vecfile: vocab %d is below the last rank %d", vocab, prev)
	}

	bw := bufio.NewWriter(w)
	bw.WriteString(Magic)
	var u32 [4]byte
	for _, v := range []int{dim, len(entries), vocab} {
		binary.LittleEndian.PutUint32(u32[:], uint32(v))
		bw.Write(u32[:])
	}
	var uv [binary.MaxVarintLen64]byte
	for _, e := range entries {
		bw.Write(binary.AppendUvarint(uv[:0], uint64(len(e.Word))))
		bw.WriteString(e.Word)
	}
	prev = 0
	for _, e := range entries {
		bw.Write(binary.AppendUvarint(uv[:0], uint64(e.Rank-prev)))
		prev = e.Rank
	}
	codes := make([][]int8, len(entries))
	for i, e := range entries {
		var scale float32
		scale, codes[i] = Quantize(e.Vector)
		binary.LittleEndian.PutUint32(u32[:], math.Float32bits(scale))
		bw.Write(u32[:])
	}
	for _, c := range codes {
		for _, x := range c {
			bw.WriteByte(byte(x))
		}
	}
	// bufio.Writer keeps the first write error and returns it here.
	return bw.Flush()
}

// A Table is a decoded file. It is immutable and safe for concurrent use.
type Table struct {
	Dim   int
	Vocab int      // size of the source vocabulary that Ranks refer to
	Words []string // in rank order; substrings of the decoded data
	Ranks []uint32 // Ranks[i] is the 1-based frequency rank of Words[i]

	scales []float32
	codes  string // len(Words) × Dim int8 codes, a substring of the decoded data
	index  map[string]int32
}

// ErrFormat is returned (wrapped) by [Decode] for data that is not a
// well-formed file.
var ErrFormat = errors.New("vecfile: malformed data")

// Decode parses data, which must hold exactly one file. Words and codes
// refer into data rather than copying it, so a caller that decodes an
// embedded string pays only for the index, the ranks and the scales.
func Decode(data string) (*Table, error) {
	r := reader{data: data}
	if magic := r.next(len(Magic)); magic != Magic {
		return nil, fmt.Errorf("%w: bad magic %q", ErrFormat, magic)
	}
	dim, count, vocab := r.u32(), r.u32(), r.u32()
	if r.err != nil {
		return nil, r.err
	}
	if dim == 0 || dim > MaxDim {
		return nil, fmt.Errorf("%w: dim %d out of range", ErrFormat, dim)
	}
	// Every word takes at least 2 bytes, a rank 1, a scale 4 and its codes
	// dim, so this bounds count by the data actually present before
	// allocating for it.
	if uint64(count)*(7+uint64(dim)) > uint64(len(r.data)) {
		return nil, fmt.Errorf("%w: %d words of dim %d do not fit in %d bytes", ErrFormat, count, dim, len(data))
	}
	t := &Table{
		Dim:    int(dim),
		Vocab:  int(vocab),
		Words:  make([]string, count),
		Ranks:  make([]uint32, count),
		scales: make([]float32, count),
		index:  make(map[string]int32, count),
	}
	for i := range t.Words {
		n := r.uvarint()
		if n == 0 || n > uint64(len(r.data)) {
			return nil, fmt.Errorf("%w: word %d: bad length %d", ErrFormat, i, n)
		}
		w := r.next(int(n))
		if r.err != nil {
			return nil, r.err
		}
		if _, dup := t.index[w]; dup {
			return nil, fmt.Errorf("%w: duplicate word %q", ErrFormat, w)
		}
		t.Words[i] = w
		t.index[w] = int32(i)
	}
	var rank uint64
	for i := range t.Ranks {
		d := r.uvarint()
		rank += d
		if d == 0 || rank > uint64(vocab) {
			return nil, fmt.Errorf("%w: word %d: rank %d (step %d) not in (previous, %d]", ErrFormat, i, rank, d, vocab)
		}
		t.Ranks[i] = uint32(rank)
	}
	for i := range t.scales {
		s := math.Float32frombits(r.u32())
		if math.IsNaN(float64(s)) || math.IsInf(float64(s), 0) || s < 0 {
			return nil, fmt.Errorf("%w: word %d: bad scale %v", ErrFormat, i, s)
		}
		t.scales[i] = s
	}
	t.codes = r.next(int(count) * int(dim))
	if r.err != nil {
		return nil, r.err
	}
	if len(r.data) != 0 {
		return nil, fmt.Errorf("%w: %d trailing bytes", ErrFormat, len(r.data))
	}
	return t, nil
}

// Lookup returns the index of word in t.Words.
func (t *Table) Lookup(word string) (int, bool) {
	i, ok := t.index[word]
	return int(i), ok
}

// Scale returns the quantisation scale of word i.
func (t *Table) Scale(i int) float32 { return t.scales[i] }

// Codes returns the int8 codes of word i, as a string of Dim bytes to be
// read as int8(codes[j]); it does not copy.
func (t *Table) Codes(i int) string { return t.codes[i*t.Dim : (i+1)*t.Dim] }

// Vector returns the dequantised vector of word i in a new slice.
func (t *Table) Vector(i int) []float32 {
	v := make([]float32, t.Dim)
	s, c := t.scales[i], t.Codes(i)
	for j := range v {
		v[j] = s * float32(int8(c[j]))
	}
	return v
}

// reader consumes data from the front and remembers the first error.
type reader struct {
	data string
	err  error
}

func (r *reader) next(n int) string {
	if r.err != nil {
		return ""
	}
	if n > len(r.data) {
		r.err = fmt.Errorf("%w: truncated: need %d bytes, have %d", ErrFormat, n, len(r.data))
		r.data = ""
		return ""
	}
	s := r.data[:n]
	r.data = r.data[n:]
	return s
}

func (r *reader) u32() uint32 {
	b := r.next(4)
	if len(b) < 4 {
		return 0
	}
	return binary.LittleEndian.Uint32([]byte(b))
}

func (r *reader) uvarint() uint64 {
	if r.err != nil {
		return 0
	}
	// binary.Uvarint wants a []byte; converting at most 10 bytes is cheap
	// and does not escape.
	head := r.data[:min(len(r.data), binary.MaxVarintLen64)]
	v, n := binary.Uvarint([]byte(head))
	if n <= 0 {
		r.err = fmt.Errorf("%w: bad uvarint", ErrFormat)
		r.data = ""
		return 0
	}
	r.data = r.data[n:]
	return v
}
