package use

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestSoftmaxKernelAgrees checks the assembly softmax against the plain-Go
// one on rows of every length up to past two blocks, at several scales
// (attention's scores run to a few tens), with rows holding values far
// below the largest (exp under float32's normal range) and rows of equal
// values: each probability within a few float32 roundings, the sum 1.
func TestSoftmaxKernelAgrees(t *testing.T) {
	if !haveSIMD {
		t.Skip("no assembly softmax in this build or on this CPU")
	}
	rng := rand.New(rand.NewPCG(7, 7))
	for n := 1; n <= 40; n++ {
		for _, scale := range []float32{0, 1, 8, 40, 200} {
			x := make([]float32, n)
			for i := range x {
				x[i] = float32(rng.NormFloat64()) * scale
			}
			if n > 3 {
				x[rng.IntN(n)] = -1e4 // exp underflows
			}
			want := append([]float32(nil), x...)
			softmaxGo(want)
			// Guards around the row catch a read or write past it.
			buf := make([]float32, n+16)
			for i := range buf {
				buf[i] = 12345
			}
			got := buf[8 : 8+n]
			copy(got, x)
			softmaxAVX(&got[0], n)
			for i := range 8 {
				if buf[i] != 12345 || buf[8+n+i] != 12345 {
					t.Fatalf("n=%d: wrote outside the row: %v", n, buf)
				}
			}
			var sum float64
			for i := range got {
				sum += float64(got[i])
				if d := math.Abs(float64(got[i] - want[i])); d > 6e-7*float64(want[i])+1e-37 {
					t.Fatalf("n=%d scale=%g: p[%d] = %g, want %g (plain Go)", n, scale, i, got[i], want[i])
				}
			}
			if math.Abs(sum-1) > 2e-6 {
				t.Fatalf("n=%d scale=%g: probabilities sum to %g", n, scale, sum)
			}
		}
	}
	for _, n := range []int{128, 129, 200} {
		x := make([]float32, n)
		for i := range x {
			x[i] = float32(rng.NormFloat64()) * 10
		}
		want := append([]float32(nil), x...)
		softmaxGo(want)
		softmaxAVX(&x[0], n)
		for i := range x {
			if d := math.Abs(float64(x[i] - want[i])); d > 6e-7*float64(want[i])+1e-37 {
				t.Fatalf("n=%d: p[%d] = %g, want %g (plain Go)", n, i, x[i], want[i])
			}
		}
	}
}

// TestSoftmaxKernelNaN checks that a NaN or an infinity anywhere in a row
// makes the whole row NaN, as in plain Go, so the embedding reports it.
func TestSoftmaxKernelNaN(t *testing.T) {
	if !haveSIMD {
		t.Skip("no assembly softmax in this build or on this CPU")
	}
	for _, bad := range []float32{float32(math.NaN()), float32(math.Inf(1))} {
		for _, n := range []int{1, 5, 8, 13, 16} {
			for at := range n {
				x := make([]float32, n)
				for i := range x {
					x[i] = float32(i) / 3
				}
				x[at] = bad
				softmaxAVX(&x[0], n)
				for i, v := range x {
					if !math.IsNaN(float64(v)) {
						t.Fatalf("%v at %d of %d: p[%d] = %g, want NaN", bad, at, n, i, v)
					}
				}
			}
		}
	}
}

func BenchmarkSoftmax(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 1))
	x := make([]float32, 128)
	for i := range x {
		x[i] = float32(rng.NormFloat64()) * 4
	}
	row := make([]float32, len(x))
	for _, k := range []struct {
		name string
		f    func([]float32)
	}{{"go", softmaxGo}, {"simd", func(r []float32) { softmaxAVX(&r[0], len(r)) }}} {
		if k.name == "simd" && !haveSIMD {
			continue
		}
		b.Run(k.name, func(b *testing.B) {
			for b.Loop() {
				copy(row, x)
				k.f(row)
			}
		})
	}
}
