package usefile

import (
	"bytes"
	"math"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestRoundTrip(t *testing.T) {
	in := &File{
		Pieces: []string{"\ufffd", "<s>", "▁the", "ing"},
		Scores: []float64{0, 0, -3.56637144089, -5.24907493591},
		Tensors: []Tensor{
			{Name: "a", Shape: []int{2, 3}, DType: F32, Data: []float32{1, -2, 3.25, 1e-30, float32(math.Pi), 0}},
			{Name: "b", Shape: []int{4}, DType: F16, Data: []float32{1, -0.5, 65504, 0.099975586}},
			{Name: "scalar", Shape: []int{}, DType: F32, Data: []float32{7}},
		},
	}
	var buf bytes.Buffer
	if err := Encode(&buf, in); err != nil {
		t.Fatal(err)
	}
	out, err := Decode(buf.String())
	if err != nil {
		t.Fatal(err)
	}
	// Raw holds the stored bytes: float16 1, -0.5, 65504, 0.099975586.
	if raw := out.Tensor("b").Raw; raw != "\x00\x3c\x00\xb8\xff\x7b\x66\x2e" {
		t.Errorf("Raw of the float16 tensor: %q", raw)
	}
	if raw := out.Tensor("scalar").Raw; raw != "\x00\x00\xe0\x40" {
		t.Errorf("Raw of the float32 scalar 7: %q", raw)
	}
	for i := range out.Tensors {
		out.Tensors[i].Raw = ""
	}
	if diff := cmp.Diff(in, out); diff != "" {
		t.Errorf("round trip mismatch (-want +got):\n%s", diff)
	}
	if out.Tensor("b") == nil || out.Tensor("nope") != nil {
		t.Error("Tensor lookup by name")
	}
	// Every truncation is an error, never a panic.
	for n := range buf.Len() {
		if _, err := Decode(buf.String()[:n]); err == nil {
			t.Fatalf("Decode of the first %d of %d bytes: no error", n, buf.Len())
		}
	}
	if _, err := Decode(buf.String() + "x"); err == nil {
		t.Error("Decode with a trailing byte: no error")
	}
}

func TestDecodeRejectsHugeShapes(t *testing.T) {
	var buf bytes.Buffer
	buf.WriteString(Magic)
	buf.Write([]byte{0, 0, 0, 0, 1, 0, 0, 0}) // no pieces, one tensor
	buf.Write([]byte{1, 'x', byte(F32), 2})
	buf.Write([]byte{0xff, 0xff, 0xff, 0x7f, 0xff, 0xff, 0xff, 0x7f})
	_, err := Decode(buf.String())
	if err == nil || !strings.Contains(err.Error(), "shape") {
		t.Errorf("Decode = %v, want a shape error", err)
	}
}

func TestF16(t *testing.T) {
	// Every binary16 value widens exactly and narrows back to itself.
	for h := range 1 << 16 {
		f := F16ToF32(uint16(h))
		if math.IsNaN(float64(f)) {
			if g := F32ToF16(f); g&0x7c00 != 0x7c00 || g&0x3ff == 0 {
				t.Fatalf("NaN %#04x -> %#04x", h, g)
			}
			continue
		}
		if g := F32ToF16(f); g != uint16(h) {
			t.Fatalf("F32ToF16(F16ToF32(%#04x) = %g) = %#04x", h, f, g)
		}
	}
	tests := []struct {
		in   float32
		want uint16
	}{
		{1, 0x3c00},
		{-2, 0xc000},
		{65504, 0x7bff},
		{65520, 0x7c00},                 // halfway to the next step rounds to even: Inf
		{1e9, 0x7c00},                   // overflow
		{5.960464477539063e-08, 0x0001}, // smallest subnormal
		{2.980232238769531e-08, 0x0000}, // half of it: ties to even (0)
		{4.470348358154297e-08, 0x0001}, // 0.75 of it rounds up
		{1 + 1.0/2048, 0x3c00},          // tie between 1 and 1+2^-10 goes to even
		{1 + 3.0/2048, 0x3c02},          // tie goes to even (up)
		{float32(math.Inf(-1)), 0xfc00},
	}
	for _, tt := range tests {
		if got := F32ToF16(tt.in); got != tt.want {
			t.Errorf("F32ToF16(%g) = %#04x, want %#04x", tt.in, got, tt.want)
		}
	}
}
