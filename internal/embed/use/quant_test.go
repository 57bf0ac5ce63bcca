package use

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// qKernels returns the integer kernels this build and CPU can run.
func qKernels() []qKernel {
	ks := []qKernel{qGo}
	if bestQKernel >= qAVX2 {
		ks = append(ks, qAVX2)
	}
	if bestQKernel >= qVNNI {
		ks = append(ks, qVNNI)
	}
	return ks
}

func (k qKernel) String() string {
	return [...]string{"go", "avx2", "vnni"}[k]
}

// withQKernel runs f with qkern set to k, and restores it.
func withQKernel(k qKernel, f func()) {
	old := qkern
	qkern = k
	defer func() { qkern = old }()
	f()
}

// qgemmWant is qgemm's definition computed independently: each block's
// sum in int64 (checked to fit in int32), then the float32 operations.
func qgemmWant(t *testing.T, x []int16, sx []float32, rows int, w []int16, sw []float32, cols, k int, bias []float32, r, c int) float32 {
	var acc float32
	for b0 := 0; b0 < k; b0 += qBlock {
		var s int64
		for i := b0; i < min(k, b0+qBlock); i++ {
			s += int64(x[r*k+i]) * int64(w[c*k+i])
		}
		if s != int64(int32(s)) {
			t.Fatalf("a block's sum %d does not fit in int32", s)
		}
		acc += float32(s)
	}
	s := sx[r] * sw[c]
	return float32(acc*s) + bias[c]
}

// TestQgemmKernelsAgree checks every integer kernel against the
// definition, to the bit, on awkward shapes, on values at ±qMax (the
// largest block sums) and with padding in dst that must stay untouched.
func TestQgemmKernelsAgree(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, k := range []int{1, 7, 16, 32, 48, 240, 256, 272, 512, 768, 1536} {
		for _, sh := range [][2]int{{1, 4}, {2, 4}, {3, 4}, {4, 8}, {5, 12}, {7, 4}, {1, 5}, {3, 7}, {50, 16}} {
			for _, fill := range []string{"random", "max", "min", "alternating"} {
				rows, cols := sh[0], sh[1]
				x, w := make([]int16, rows*k), make([]int16, cols*k)
				for i := range x {
					switch fill {
					case "random":
						x[i] = int16(rng.IntN(2*qMax+1) - qMax)
					case "max", "alternating":
						x[i] = qMax
					case "min":
						x[i] = -qMax
					}
				}
				for i := range w {
					switch fill {
					case "random":
						w[i] = int16(rng.IntN(2*qMax+1) - qMax)
					case "max", "min":
						w[i] = qMax
					case "alternating":
						w[i] = int16(qMax * (1 - 2*(i/qBlock%2)))
					}
				}
				sx, sw, bias := make([]float32, rows), make([]float32, cols), make([]float32, cols)
				for i := range sx {
					sx[i] = rng.Float32() * 1e-3
				}
				for i := range sw {
					sw[i] = rng.Float32() * 1e-3
					bias[i] = rng.Float32()*2 - 1
				}
				ds := cols + 3
				nan := float32(math.NaN())
				for _, kern := range qKernels() {
					dst := make([]float32, (rows-1)*ds+cols)
					for i := range dst {
						dst[i] = nan
					}
					withQKernel(kern, func() { qgemm(dst, ds, x, sx, rows, w, sw, cols, k, bias) })
					name := fmt.Sprintf("%v k=%d %dx%d %s", kern, k, rows, cols, fill)
					for i, v := range dst {
						r, c := i/ds, i%ds
						if c >= cols {
							if !math.IsNaN(float64(v)) {
								t.Fatalf("%s: wrote padding dst[%d]", name, i)
							}
							continue
						}
						if want := qgemmWant(t, x, sx, rows, w, sw, cols, k, bias, r, c); math.Float32bits(v) != math.Float32bits(want) {
							t.Fatalf("%s: [%d][%d] = %v, want %v", name, r, c, v, want)
						}
					}
				}
			}
		}
	}
	t.Logf("kernels checked: %v", qKernels())
}

// TestQuantizeRow checks the quantization of a row on every kernel: the
// largest magnitude maps to ±qMax, rounding is to the nearest, ties to
// even, a row of zeros gets scale 0, and a NaN or an infinity gets NaN.
func TestQuantizeRow(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	for _, kern := range qKernels() {
		withQKernel(kern, func() {
			for _, n := range []int{1, 8, 9, 256, 1536} {
				x := make([]float32, n)
				for i := range x {
					x[i] = float32(rng.NormFloat64())
				}
				x[rng.IntN(n)] = -4 // the largest magnitude
				q := make([]int16, n)
				s := quantizeRow(q, x)
				if s != 4/float32(qMax) {
					t.Fatalf("%v n=%d: scale %v, want %v", kern, n, s, 4/float32(qMax))
				}
				inv := qMax / float32(4)
				for i, v := range x {
					want := int16(math.RoundToEven(float64(v * inv)))
					if q[i] != want {
						t.Fatalf("%v n=%d: q[%d] = %d for %v, want %d", kern, n, i, q[i], v, want)
					}
					if v == -4 && q[i] != -qMax {
						t.Fatalf("%v: the largest magnitude became %d", kern, q[i])
					}
				}
				// Ties: with max 2895, inv is 1 and x.5 rounds to even.
				ties := make([]float32, 8)
				copy(ties, []float32{2895, 0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 3.5})
				qt := make([]int16, 8)
				quantizeRow(qt, ties)
				if !slices.Equal(qt, []int16{2895, 0, 2, 2, 0, -2, -2, 4}) {
					t.Fatalf("%v: ties rounded to %v", kern, qt)
				}
				clear(x)
				if s := quantizeRow(q, x); s != 0 || slices.ContainsFunc(q, func(v int16) bool { return v != 0 }) {
					t.Fatalf("%v n=%d: zeros gave scale %v, %v", kern, n, s, q)
				}
				for _, bad := range []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1))} {
					x[n-1] = bad
					if s := quantizeRow(q, x); s == s {
						t.Fatalf("%v n=%d: %v gave scale %v, want NaN", kern, n, bad, s)
					}
				}
			}
		})
	}
}

// TestIntKernelsSameVectors checks that every integer kernel gives every
// fidelity text and the task the same vector, to the bit, in Embed and in
// EmbedBatch; and that the integer vectors stay within 1e-5 of cosine of
// the float kernel's.
func TestIntKernelsSameVectors(t *testing.T) {
	m := testModel(t)
	e := &Embedder{m: m}
	texts := append(slices.Clone(fidelityTexts), benchTask...)
	old := intKernel
	defer func() { intKernel = old }()
	var want [][]float32
	for _, kern := range qKernels() {
		intKernel = true
		withQKernel(kern, func() {
			got, err := e.EmbedBatch(t.Context(), texts)
			if err != nil {
				t.Fatal(err)
			}
			one, err := e.Embed(t.Context(), benchLongQuery)
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, one)
			if want == nil {
				want = got
				return
			}
			for i := range got {
				if !slices.Equal(got[i], want[i]) {
					t.Errorf("%v: text %d differs from the Go kernel's", kern, i)
				}
			}
		})
	}
	intKernel = false
	float, err := e.EmbedBatch(t.Context(), texts)
	if err != nil {
		t.Fatal(err)
	}
	same := 0
	for i := range float {
		if c := cos32(float[i], want[i]); c < 1-1e-5 {
			t.Errorf("text %d: cosine %v between the integer and float kernels", i, c)
		}
		if slices.Equal(float[i], want[i]) {
			same++
		}
	}
	// Integer products give other roundings: if every vector is the
	// float kernel's, the integer path did not run.
	if same == len(float) {
		t.Error("the integer kernels gave the float kernel's vectors: integer products did not run")
	}
}

// cos32 returns the cosine of a and b.
func cos32(a, b []float32) float64 {
	var ab, aa, bb float64
	for i := range a {
		ab += float64(a[i]) * float64(b[i])
		aa += float64(a[i]) * float64(a[i])
		bb += float64(b[i]) * float64(b[i])
	}
	return ab / math.Sqrt(aa*bb)
}

// TestLinearNonFinite checks that a dense layer whose input holds a NaN or
// an infinity runs on the float kernel when integer products are on: the
// same bits as with them off (quantizing such a row has no meaning).
func TestLinearNonFinite(t *testing.T) {
	m := testModel(t)
	l := &m.layers[1]
	const rows = 5
	for _, bad := range []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1))} {
		x := make([]float32, rows*modelDim)
		for i := range x {
			x[i] = float32(i%13)/13 - 0.5
		}
		x[3*modelDim+7] = bad
		run := func(integer bool) []float32 {
			old := intKernel
			intKernel = integer
			defer func() { intKernel = old }()
			out := make([]float32, rows*ffnDim)
			linear(&splitter{par: 2}, out, x, rows, modelDim, l.ffn1W, l.ffn1B)
			return out
		}
		want, got := run(false), run(true)
		for i := range want {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				t.Fatalf("input %v: out[%d] = %v with integer products on, %v off", bad, i, got[i], want[i])
			}
		}
	}
}
