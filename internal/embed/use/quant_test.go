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

// qgemmWant returns qgemm's result computed exactly (the dot product in
// int64, the rest in float64) and a bound on a kernel's rounding error:
// each lane's sum of qGroup products is exact, so a kernel's error is
// float32 rounding of its k/64 lane sums per lane, of the lanes' sum, the
// scales and the bias.
func qgemmWant(x []int16, sx []float32, w []int16, sw []float32, k int, bias []float32, r, c int) (want, tol float64) {
	var dot, abs int64
	for i := range k {
		p := int64(x[r*k+i]) * int64(w[c*k+i])
		dot += p
		abs += max(p, -p)
	}
	s := float64(sx[r]) * float64(sw[c])
	want = float64(dot)*s + float64(bias[c])
	tol = float64(k/64+8) * 0x1p-24 * (float64(abs)*s + math.Abs(float64(bias[c])))
	return want, tol
}

// laneWeights fills a weight row of k elements: each lane's qGroup
// weights (see quant.go) either random within ±qMax/qGroup, or, with
// probability extreme, two at ±qMax and one at ±(qGroupAbs−2·qMax), the
// most the lane bound allows; signs random, or all sign when sign is not
// 0. Elements past the last 64 are random within ±qMax/qGroup.
func laneWeights(rng *rand.Rand, w []int16, extreme float64, sign int) {
	pick := func() int {
		if sign != 0 {
			return sign
		}
		return 1 - 2*rng.IntN(2)
	}
	for i := range w {
		w[i] = int16(pick() * rng.IntN(qMax/qGroup+1))
	}
	for b := 0; b+64 <= len(w); b += 64 {
		for j := range 8 {
			if rng.Float64() >= extreme {
				continue
			}
			var idx []int
			for u := range 4 {
				idx = append(idx, b+16*u+2*j, b+16*u+2*j+1)
			}
			rng.Shuffle(len(idx), func(a, b int) { idx[a], idx[b] = idx[b], idx[a] })
			for n, i := range idx {
				w[i] = int16(pick() * []int{qMax, qMax, qGroupAbs - 2*qMax, 0, 0, 0, 0, 0}[n])
			}
		}
	}
}

// TestQgemmKernelsAgree checks every integer kernel against the exact
// result, within float32 rounding, on awkward shapes, on lanes at the
// bound (inputs at ±qMax, weights summing to qGroupAbs: the largest lane
// sum, 2³¹−2), alternating in sign every 64 inputs (so that an
// overflowed lane would not cancel out), and with padding in dst that
// must stay untouched.
func TestQgemmKernelsAgree(t *testing.T) {
	if int64(qMax)*qGroupAbs > math.MaxInt32 || int64(qMax)*(qGroupAbs+1) <= math.MaxInt32 || 2*qMax > qGroupAbs {
		t.Fatalf("qGroupAbs %d is not the largest lane bound that fits in int32", qGroupAbs)
	}
	rng := rand.New(rand.NewPCG(7, 8))
	for _, k := range []int{1, 7, 16, 32, 48, 64, 128, 192, 240, 256, 272, 512, 768, 1536} {
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
				for c := range cols {
					row := w[c*k : (c+1)*k]
					switch fill {
					case "random":
						laneWeights(rng, row, 0.3, 0)
					case "max", "min":
						laneWeights(rng, row, 1, 1)
					case "alternating":
						laneWeights(rng, row, 1, 1)
						for i := range row {
							if i/64%2 == 1 {
								row[i] = -row[i]
							}
						}
					}
					if k%64 == 0 && laneAbsMax(row, func(v int16) float64 { return math.Abs(float64(v)) }) > qGroupAbs {
						t.Fatal("laneWeights broke the lane bound")
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
						if want, tol := qgemmWant(x, sx, w, sw, k, bias, r, c); !(math.Abs(float64(v)-want) <= tol) {
							t.Fatalf("%s: [%d][%d] = %v, want %v ± %.3g", name, r, c, v, want, tol)
						}
					}
				}
			}
		}
	}
	t.Logf("kernels checked: %v", qKernels())
}

// TestQuantizeWeights checks the weight rows' quantization on the model's
// matrices and on rows whose lane bound binds: every value within ±qMax,
// every lane within qGroupAbs, each value rounded to the nearest level,
// and the scale the smallest that does both (to the slack rounding
// needs): a row reaches qMax or its fullest lane comes within 2·qGroup of
// the bound.
func TestQuantizeWeights(t *testing.T) {
	m := testModel(t)
	rng := rand.New(rand.NewPCG(11, 12))
	flat := make([]float32, 4*512)
	for i := range flat {
		flat[i] = float32(1 - 2*(i%3%2)) // all one magnitude: the lane bound binds
	}
	spiky := make([]float32, 4*512)
	for i := range spiky {
		spiky[i] = float32(rng.NormFloat64()) * 1e-3
	}
	spiky[5], spiky[600] = 3, -2 // one large weight a row: qMax binds
	zero := make([]float32, 2*256)
	cases := []struct {
		name    string
		w       []float32
		out, in int
	}{
		{"flat", flat, 4, 512}, {"spiky", spiky, 4, 512}, {"zero", zero, 2, 256},
		{"l0.qkv", m.layers[0].qkvW.f32, 3 * embedDim, embedDim},
		{"l1.ffn1", m.layers[1].ffn1W.f32, ffnDim, modelDim},
		{"l1.ffn2", m.layers[1].ffn2W.f32, modelDim, ffnDim},
	}
	abs := func(v int16) float64 { return math.Abs(float64(v)) }
	for _, c := range cases {
		qm, ok := quantizeWeights(c.w, c.out, c.in)
		if !ok {
			t.Fatalf("%s: not quantized", c.name)
		}
		for o := range c.out {
			q, row, s := qm.q[o*c.in:(o+1)*c.in], c.w[o*c.in:(o+1)*c.in], qm.scale[o]
			if s == 0 {
				if slices.ContainsFunc(row, func(v float32) bool { return v != 0 }) || slices.ContainsFunc(q, func(v int16) bool { return v != 0 }) {
					t.Fatalf("%s row %d: scale 0 for a row that is not zeros", c.name, o)
				}
				continue
			}
			lane := laneAbsMax(q, abs)
			if qAbsMax(q) > qMax || lane > qGroupAbs {
				t.Fatalf("%s row %d: largest %d, fullest lane %v", c.name, o, qAbsMax(q), lane)
			}
			if qAbsMax(q) < qMax && lane < qGroupAbs-2*qGroup {
				t.Fatalf("%s row %d: scale %v leaves levels unused (largest %d, fullest lane %v)", c.name, o, s, qAbsMax(q), lane)
			}
			for i, v := range row {
				if want := math.RoundToEven(float64(v) / float64(s)); float64(q[i]) != want {
					t.Fatalf("%s row %d: q[%d] = %d, want %v", c.name, o, i, q[i], want)
				}
			}
		}
	}
	if _, ok := quantizeWeights(flat[:4*500], 4, 500); ok {
		t.Error("rows of 500 (not a multiple of 64) were quantized")
	}
	bad := slices.Clone(spiky)
	bad[77] = float32(math.Inf(-1))
	if _, ok := quantizeWeights(bad, 4, 512); ok {
		t.Error("a row with an infinity was quantized")
	}
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
				// Ties: with max qMax, inv is 1 and x.5 rounds to even.
				ties := make([]float32, 8)
				copy(ties, []float32{qMax, 0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 3.5})
				qt := make([]int16, 8)
				quantizeRow(qt, ties)
				if !slices.Equal(qt, []int16{qMax, 0, 2, 2, 0, -2, -2, 4}) {
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

// TestIntKernelsCloseToFloat checks that every integer kernel gives
// every fidelity text and the task, in Embed and in EmbedBatch, a vector
// within 1 − 1e-7 of cosine of the float kernel's (the median on these
// texts is about 1e-8, the quantization's error), and that the integer
// path did run (its vectors are not the float kernel's bits). The
// plain-Go kernel, slow under the race detector, embeds the task only
// (TestFidelity runs it on the fidelity texts).
func TestIntKernelsCloseToFloat(t *testing.T) {
	m := testModel(t)
	e := &Embedder{m: m}
	all := append(slices.Clone(fidelityTexts), benchTask...)
	embed := func(texts []string) [][]float32 {
		got, err := e.EmbedBatch(t.Context(), texts)
		if err != nil {
			t.Fatal(err)
		}
		one, err := e.Embed(t.Context(), benchLongQuery)
		if err != nil {
			t.Fatal(err)
		}
		return append(got, one)
	}
	old := intKernel
	defer func() { intKernel = old }()
	intKernel = false
	floatAll := embed(all)
	for _, kern := range qKernels() {
		texts, float := all, floatAll
		if kern == qGo {
			texts = benchTask
			float = slices.Concat(floatAll[len(fidelityTexts):len(all)], floatAll[len(all):])
		}
		intKernel = true
		withQKernel(kern, func() {
			got := embed(texts)
			same, worst := 0, 0.0
			for i := range got {
				d := 1 - cos32(float[i], got[i])
				worst = max(worst, d)
				if d > 1e-7 {
					t.Errorf("%v: text %d: 1 − cosine %.2g to the float kernel's vector", kern, i, d)
				}
				if slices.Equal(float[i], got[i]) {
					same++
				}
			}
			if same == len(got) {
				t.Errorf("%v: every vector is the float kernel's: integer products did not run", kern)
			}
			t.Logf("%v: %d texts, largest 1 − cosine to the float kernel %.2g", kern, len(got), worst)
		})
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
