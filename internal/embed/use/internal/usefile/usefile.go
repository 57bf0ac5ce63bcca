// Package usefile reads and writes the data file that package use embeds:
// the SentencePiece vocabulary of Universal Sentence Encoder lite and the
// weights of its TF.js graph, laid out as the Go forward pass reads them.
//
// # Format
//
// All integers are little-endian. A file is, in order:
//
//	magic     8 bytes  "cduse01\n"
//	npieces   uint32
//	pieces    npieces × (uvarint byte length, UTF-8 bytes, float64 score as IEEE 754 bits)
//	ntensors  uint32
//	tensors   ntensors × (uvarint name length, name, uint8 dtype, uint8 rank,
//	                      rank × uint32 dims, data)
//
// and nothing after. dtype is [F32] (4 bytes per element) or [F16] (IEEE 754
// binary16, 2 bytes per element); data holds the elements in row-major order.
// Scores are float64 because the reference tokenizer adds them as JavaScript
// numbers: the Viterbi search must see the same values to pick the same
// pieces.
package usefile

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
)

// Magic is the first 8 bytes of every file. The digits are the format
// version; a new layout gets a new magic, not a flag.
const Magic = "cduse01\n"

// A DType is how a tensor's elements are stored.
type DType uint8

const (
	// F32 stores IEEE 754 binary32, exactly as the TF.js shards do.
	F32 DType = 1
	// F16 stores IEEE 754 binary16, rounded to nearest even from float32.
	// Decoding widens to float32 exactly.
	F16 DType = 2
)

func (d DType) String() string {
	switch d {
	case F32:
		return "float32"
	case F16:
		return "float16"
	}
	return fmt.Sprintf("DType(%d)", uint8(d))
}

func (d DType) size() int {
	switch d {
	case F32:
		return 4
	case F16:
		return 2
	}
	return 0
}

// Limits that keep a corrupt header from requesting absurd allocations.
const (
	maxPieces   = 1 << 20
	maxPieceLen = 1 << 10
	maxTensors  = 1 << 10
	maxNameLen  = 1 << 10
	maxRank     = 4
	maxElements = 1 << 26
)

// A Tensor is a named array of float32 values with a shape.
type Tensor struct {
	Name  string
	Shape []int
	// DType is how Data is (or was) stored in the file. Data itself is
	// always float32: decoding F16 widens each element exactly.
	DType DType
	Data  []float32
	// Raw is the tensor's bytes as stored, little-endian in DType: a
	// substring of the decoded data, so it costs no memory of its own.
	Raw string
}

// A File is the decoded content of a data file.
type File struct {
	Pieces  []string  // vocabulary, in id order
	Scores  []float64 // Scores[i] is the log-probability score of Pieces[i]
	Tensors []Tensor
}

// Tensor returns the tensor called name, or nil.
func (f *File) Tensor(name string) *Tensor {
	for i := range f.Tensors {
		if f.Tensors[i].Name == name {
			return &f.Tensors[i]
		}
	}
	return nil
}

// Encode writes f to w, each tensor in its DType.
func Encode(w io.Writer, f *File) error {
	if len(f.Pieces) != len(f.Scores) {
		return fmt.Errorf("usefile: %d pieces, %d scores", len(f.Pieces), len(f.Scores))
	}
	bw := bufio.NewWriter(w)
	bw.WriteString(Magic)
	var b [binary.MaxVarintLen64]byte
	put32 := func(v uint32) { bw.Write(binary.LittleEndian.AppendUint32(b[:0], v)) }
	putStr := func(s string) {
		bw.Write(binary.AppendUvarint(b[:0], uint64(len(s))))
		bw.WriteString(s)
	}
	put32(uint32(len(f.Pieces)))
	for i, p := range f.Pieces {
		if len(p) > maxPieceLen {
			return fmt.Errorf("usefile: piece %d is %d bytes long", i, len(p))
		}
		putStr(p)
		bw.Write(binary.LittleEndian.AppendUint64(b[:0], math.Float64bits(f.Scores[i])))
	}
	put32(uint32(len(f.Tensors)))
	for _, t := range f.Tensors {
		if t.DType.size() == 0 {
			return fmt.Errorf("usefile: tensor %q: unknown dtype %d", t.Name, t.DType)
		}
		if len(t.Shape) > maxRank || len(t.Name) > maxNameLen {
			return fmt.Errorf("usefile: tensor %q: rank %d", t.Name, len(t.Shape))
		}
		if n := elements(t.Shape); n != len(t.Data) {
			return fmt.Errorf("usefile: tensor %q: shape %v holds %d elements, data has %d", t.Name, t.Shape, n, len(t.Data))
		}
		putStr(t.Name)
		bw.WriteByte(byte(t.DType))
		bw.WriteByte(byte(len(t.Shape)))
		for _, d := range t.Shape {
			put32(uint32(d))
		}
		for _, x := range t.Data {
			if t.DType == F16 {
				bw.Write(binary.LittleEndian.AppendUint16(b[:0], F32ToF16(x)))
			} else {
				bw.Write(binary.LittleEndian.AppendUint32(b[:0], math.Float32bits(x)))
			}
		}
	}
	return bw.Flush()
}

// Decode parses a data file. The returned tensors own their data: nothing
// refers back to the input.
func Decode(data string) (*File, error) {
	d := decoder{s: data}
	if magic := d.bytes(len(Magic)); magic != Magic {
		return nil, fmt.Errorf("usefile: bad magic %q", magic)
	}
	f := new(File)
	n := d.u32()
	if n > maxPieces {
		return nil, fmt.Errorf("usefile: %d pieces", n)
	}
	f.Pieces = make([]string, 0, n)
	f.Scores = make([]float64, 0, n)
	for range n {
		p := d.str(maxPieceLen)
		f.Pieces = append(f.Pieces, p)
		f.Scores = append(f.Scores, math.Float64frombits(d.u64()))
	}
	nt := d.u32()
	if nt > maxTensors {
		return nil, fmt.Errorf("usefile: %d tensors", nt)
	}
	for range nt {
		var t Tensor
		t.Name = d.str(maxNameLen)
		t.DType = DType(d.u8())
		rank := int(d.u8())
		if d.err != nil {
			break
		}
		if t.DType.size() == 0 || rank > maxRank {
			return nil, fmt.Errorf("usefile: tensor %q: dtype %d, rank %d", t.Name, t.DType, rank)
		}
		t.Shape = make([]int, rank)
		for i := range t.Shape {
			t.Shape[i] = int(d.u32())
		}
		ne := elements(t.Shape)
		if ne < 0 || ne > maxElements {
			return nil, fmt.Errorf("usefile: tensor %q: shape %v", t.Name, t.Shape)
		}
		raw := d.bytes(ne * t.DType.size())
		if d.err != nil {
			break
		}
		t.Raw = raw
		t.Data = make([]float32, ne)
		if t.DType == F16 {
			for i := range t.Data {
				t.Data[i] = F16ToF32(uint16(raw[2*i]) | uint16(raw[2*i+1])<<8)
			}
		} else {
			for i := range t.Data {
				r := raw[4*i : 4*i+4]
				t.Data[i] = math.Float32frombits(uint32(r[0]) | uint32(r[1])<<8 | uint32(r[2])<<16 | uint32(r[3])<<24)
			}
		}
		f.Tensors = append(f.Tensors, t)
	}
	if d.err != nil {
		return nil, fmt.Errorf("usefile: %w", d.err)
	}
	if len(d.s) != 0 {
		return nil, fmt.Errorf("usefile: %d bytes after the last tensor", len(d.s))
	}
	return f, nil
}

// elements is the product of shape, or -1 if a dimension is negative or the
// product overflows maxElements.
func elements(shape []int) int {
	n := 1
	for _, d := range shape {
		if d < 0 || (d > 0 && n > maxElements/d) {
			return -1
		}
		n *= d
	}
	return n
}

var errShort = errors.New("unexpected end of data")

// A decoder reads from s; after the first error every read returns zero
// values and err stays set.
type decoder struct {
	s   string
	err error
}

func (d *decoder) bytes(n int) string {
	if d.err != nil {
		return ""
	}
	if n < 0 || n > len(d.s) {
		d.err = errShort
		return ""
	}
	b := d.s[:n]
	d.s = d.s[n:]
	return b
}

func (d *decoder) u8() uint8 {
	b := d.bytes(1)
	if b == "" {
		return 0
	}
	return b[0]
}

func (d *decoder) u32() uint32 {
	b := d.bytes(4)
	if b == "" {
		return 0
	}
	return binary.LittleEndian.Uint32([]byte(b))
}

func (d *decoder) u64() uint64 {
	b := d.bytes(8)
	if b == "" {
		return 0
	}
	return binary.LittleEndian.Uint64([]byte(b))
}

func (d *decoder) str(limit int) string {
	if d.err != nil {
		return ""
	}
	n, k := uvarint(d.s)
	if k <= 0 || n > uint64(limit) {
		d.err = fmt.Errorf("bad string length at %d bytes from the end", len(d.s))
		return ""
	}
	d.s = d.s[k:]
	return d.bytes(int(n))
}

// uvarint is binary.Uvarint for a string, without copying it.
func uvarint(s string) (uint64, int) {
	var x uint64
	var shift uint
	for i := 0; i < len(s) && i < binary.MaxVarintLen64; i++ {
		b := s[i]
		if b < 0x80 {
			return x | uint64(b)<<shift, i + 1
		}
		x |= uint64(b&0x7f) << shift
		shift += 7
	}
	return 0, 0
}

// F32ToF16 rounds f to the nearest IEEE 754 binary16 value (ties to even).
// Values beyond the binary16 range become ±Inf; NaN stays NaN.
func F32ToF16(f float32) uint16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	exp := int(b>>23&0xff) - 127 + 15
	mant := b & 0x7fffff
	switch {
	case b&0x7fffffff > 0x7f800000: // NaN
		return sign | 0x7e00
	case b&0x7fffffff == 0x7f800000: // Inf
		return sign | 0x7c00
	case exp >= 0x1f: // overflow
		return sign | 0x7c00
	case exp <= 0: // subnormal or zero in binary16
		if exp < -10 {
			return sign
		}
		mant |= 0x800000 // implicit leading 1
		shift := uint(14 - exp)
		h := mant >> shift
		rem := mant & (1<<shift - 1)
		half := uint32(1) << (shift - 1)
		if rem > half || (rem == half && h&1 == 1) {
			h++ // may carry into the smallest normal: still correct
		}
		return sign | uint16(h)
	}
	h := uint32(exp)<<10 | mant>>13
	rem := mant & 0x1fff
	if rem > 0x1000 || (rem == 0x1000 && h&1 == 1) {
		h++ // may carry into the exponent, up to Inf: still correct
	}
	return sign | uint16(h)
}

// F16ToF32 widens an IEEE 754 binary16 value to float32 exactly.
func F16ToF32(h uint16) float32 {
	sign := uint32(h&0x8000) << 16
	exp := uint32(h>>10) & 0x1f
	mant := uint32(h & 0x3ff)
	switch {
	case exp == 0x1f: // Inf or NaN
		return math.Float32frombits(sign | 0x7f800000 | mant<<13)
	case exp != 0:
		return math.Float32frombits(sign | (exp+127-15)<<23 | mant<<13)
	case mant == 0:
		return math.Float32frombits(sign)
	}
	// Subnormal: normalise.
	e := uint32(127 - 15 + 1)
	for mant&0x400 == 0 {
		mant <<= 1
		e--
	}
	return math.Float32frombits(sign | e<<23 | (mant&0x3ff)<<13)
}
