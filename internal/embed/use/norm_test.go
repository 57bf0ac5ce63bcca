package use

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestLayerNormKernelAgrees checks the assembly layer norm against the
// plain-Go loop on rows of the model's widths, with an offset mean (where
// the float64 sums matter) and rows of equal values: every output within
// a float32 rounding or two (the sums are in another order).
func TestLayerNormKernelAgrees(t *testing.T) {
	if !haveSIMD {
		t.Skip("no assembly layer norm in this build or on this CPU")
	}
	rng := rand.New(rand.NewPCG(3, 3))
	for _, d := range []int{8, 320, 512, 1536} {
		for _, offset := range []float32{0, 30, -1000} {
			const n = 5
			in := make([]float32, n*d)
			for i := range in {
				in[i] = float32(rng.NormFloat64())*3 + offset
			}
			copy(in[d:2*d], slices.Repeat([]float32{offset}, d)) // variance 0
			g, b := make([]float32, d), make([]float32, d)
			for i := range g {
				g[i], b[i] = float32(rng.NormFloat64()), float32(rng.NormFloat64())
			}
			want, got := make([]float32, n*d), make([]float32, n*d)
			simd = false
			layerNorm(want, in, n, g, b)
			simd = true
			layerNorm(got, in, n, g, b)
			same := 0
			for i := range got {
				if got[i] == want[i] {
					same++
				}
				if diff := math.Abs(float64(got[i] - want[i])); diff > 4e-7*math.Abs(float64(want[i]))+1e-6 {
					t.Fatalf("d=%d offset=%g: y[%d] = %g, want %g (plain Go)", d, offset, i, got[i], want[i])
				}
			}
			if same < len(got)*9/10 {
				t.Errorf("d=%d offset=%g: only %d of %d outputs equal plain Go's", d, offset, same, len(got))
			}
		}
	}
	simd = haveSIMD
}

// TestReluKernel checks the assembly relu on every length up to past a
// 32-float block: negatives become zero, the rest (NaN included) stay.
func TestReluKernel(t *testing.T) {
	if !haveSIMD {
		t.Skip("no assembly relu in this build or on this CPU")
	}
	defer func() { simd = haveSIMD }()
	rng := rand.New(rand.NewPCG(5, 5))
	for n := 0; n <= 70; n++ {
		x := make([]float32, n+8)
		for i := range x {
			x[i] = float32(rng.NormFloat64())
		}
		if n > 3 {
			x[n/2] = float32(math.NaN())
		}
		want := slices.Clone(x[:n])
		for i, v := range want {
			if v < 0 {
				want[i] = 0
			}
		}
		guard := slices.Clone(x[n:])
		simd = true
		relu(x[:n])
		for i, v := range x[:n] {
			if v != want[i] && !(math.IsNaN(float64(v)) && math.IsNaN(float64(want[i]))) {
				t.Fatalf("n=%d: x[%d] = %g, want %g", n, i, v, want[i])
			}
		}
		if !slices.Equal(x[n:], guard) {
			t.Fatalf("n=%d: wrote past the slice", n)
		}
	}
}
