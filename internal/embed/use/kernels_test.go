package use

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/contextd/contextd/internal/embed/use/internal/usefile"
)

// A kernelPath is a choice of kernels: for the dense layers' float
// products plain Go, the assembly kernel on float32 weights, or the
// assembly kernel reading float16 weights; or integer products (intKernel)
// on one of the integer kernels. Attention's products are float on the
// simd and f16 choice.
type kernelPath struct {
	name      string
	simd, f16 bool
	integer   bool
	q         qKernel
}

// kernelPaths returns the kernel paths this build and CPU can run: plain
// Go always, the assembly ones where there are.
func kernelPaths() []kernelPath {
	paths := []kernelPath{{name: "go"}}
	if haveSIMD {
		paths = append(paths, kernelPath{name: "simd", simd: true})
	}
	if haveF16 {
		paths = append(paths, kernelPath{name: "simd-f16", simd: true, f16: true})
	}
	for _, k := range qKernels() {
		paths = append(paths, kernelPath{name: "int-" + k.String(), simd: haveSIMD, f16: haveF16, integer: true, q: k})
	}
	return paths
}

// withKernel runs f as a subtest on path, and restores the kernels.
func withKernel(t *testing.T, path kernelPath, f func(t *testing.T)) {
	t.Helper()
	t.Run(path.name, func(t *testing.T) {
		oldSIMD, oldF16, oldInt, oldQ := simd, simdF16, intKernel, qkern
		simd, simdF16, intKernel, qkern = path.simd, path.f16, path.integer, path.q
		defer func() { simd, simdF16, intKernel, qkern = oldSIMD, oldF16, oldInt, oldQ }()
		f(t)
	})
}

// gemmCase is a product with awkward sizes and with padding between rows,
// which holds NaN so that a kernel reading or writing outside a row shows.
type gemmCase struct {
	rows, cols, k   int
	xs, ws, ds      int
	x, w, bias, dst []float32
}

func newGemmCase(rng *rand.Rand, rows, cols, k int, withBias bool) *gemmCase {
	c := &gemmCase{rows: rows, cols: cols, k: k}
	c.xs, c.ws, c.ds = k+rng.IntN(9), k+rng.IntN(9), cols+rng.IntN(5)
	nan := float32(math.NaN())
	fill := func(n, stride, width int) []float32 {
		s := make([]float32, max(0, (n-1)*stride+width))
		for i := range s {
			if i%stride < width {
				s[i] = rng.Float32()*2 - 1
			} else {
				s[i] = nan
			}
		}
		return s
	}
	c.x = fill(rows, c.xs, k)
	c.w = fill(cols, c.ws, k)
	if withBias {
		c.bias = fill(1, cols, cols)
	}
	c.dst = make([]float32, max(0, (rows-1)*c.ds+cols))
	for i := range c.dst {
		c.dst[i] = nan
	}
	return c
}

func (c *gemmCase) run(f func(dst []float32, ds int, x []float32, xs, rows int, w []float32, ws, cols, k int, bias []float32)) []float32 {
	dst := append([]float32(nil), c.dst...)
	f(dst, c.ds, c.x, c.xs, c.rows, c.w, c.ws, c.cols, c.k, c.bias)
	return dst
}

// check compares got with the float64 product: each result within the
// rounding bound of a float32 sum of k+1 terms, (k+2)·2⁻²⁴·Σ|terms|, and
// the padding of dst untouched.
func (c *gemmCase) check(t *testing.T, name string, got []float32) {
	t.Helper()
	const u = 1.0 / (1 << 24)
	bad := 0
	for i, v := range got {
		r, col := i/c.ds, i%c.ds
		if col >= c.cols {
			if !math.IsNaN(float64(v)) {
				t.Errorf("%s: wrote padding dst[%d] (row %d, column %d)", name, i, r, col)
				bad++
			}
			continue
		}
		var want, mag float64
		if c.bias != nil {
			want, mag = float64(c.bias[col]), math.Abs(float64(c.bias[col]))
		}
		for j := range c.k {
			p := float64(c.x[r*c.xs+j]) * float64(c.w[col*c.ws+j])
			want += p
			mag += math.Abs(p)
		}
		if d := math.Abs(float64(v) - want); !(d <= float64(c.k+2)*u*mag) {
			t.Errorf("%s: dst[%d][%d] = %v, want %v (error %.2g, bound %.2g)", name, r, col, v, want, d, float64(c.k+2)*u*mag)
			bad++
		}
		if bad > 5 {
			t.FailNow()
		}
	}
}

// TestGemmKernelsAgree runs both kernels on products of awkward sizes and
// checks each against the float64 product and against the other.
func TestGemmKernelsAgree(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	ks := []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 100, 127, 128, 255, 256, 512, 1536}
	shapes := [][2]int{{1, 1}, {1, 4}, {1, 5}, {2, 3}, {3, 4}, {3, 8}, {4, 7}, {5, 2}, {7, 9}, {13, 12}, {50, 17}}
	for _, k := range ks {
		for _, sh := range shapes {
			for _, withBias := range []bool{true, false} {
				c := newGemmCase(rng, sh[0], sh[1], k, withBias)
				name := fmt.Sprintf("k=%d %dx%d bias=%v", k, sh[0], sh[1], withBias)
				g := c.run(gemmGo)
				c.check(t, name+" go", g)
				if !haveSIMD {
					continue
				}
				s := c.run(gemmSIMD)
				c.check(t, name+" simd", s)
				for i := range s {
					if d := math.Abs(float64(s[i] - g[i])); d > 1e-5*float64(max(k, 1)) {
						t.Errorf("%s: element %d: simd %v, go %v", name, i, s[i], g[i])
					}
				}
			}
		}
	}
	if !haveSIMD {
		t.Log("no assembly kernel in this build or on this CPU: checked the Go kernel only")
	}
}

// TestGemmRowIndependent checks, on each kernel, that a result is the
// same bits whether its row and column are computed alone or inside a
// larger product, at every position of the kernels' blocks: what makes
// EmbedBatch return exactly what Embed does.
func TestGemmRowIndependent(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, path := range kernelPaths() {
		withKernel(t, path, func(t *testing.T) {
			for _, k := range []int{1, 7, 8, 9, 64, 257} {
				c := newGemmCase(rng, 11, 10, k, true)
				all := c.run(gemm)
				for r := range c.rows {
					for col := range c.cols {
						var one [1]float32
						gemm(one[:], 1, c.x[r*c.xs:], c.xs, 1, c.w[col*c.ws:], c.ws, 1, k, c.bias[col:])
						if got := all[r*c.ds+col]; math.Float32bits(got) != math.Float32bits(one[0]) {
							t.Fatalf("k=%d: [%d][%d] is %v in the product, %v alone", k, r, col, got, one[0])
						}
					}
				}
			}
		})
	}
}

// TestGemmShortSlice checks that a product whose slices are too short for
// its shape panics instead of reaching past them.
func TestGemmShortSlice(t *testing.T) {
	for _, path := range kernelPaths() {
		withKernel(t, path, func(t *testing.T) {
			x, w, dst := make([]float32, 2*8), make([]float32, 4*8), make([]float32, 2*4)
			for name, f := range map[string]func(){
				"x":    func() { gemm(dst, 4, x[:15], 8, 2, w, 8, 4, 8, nil) },
				"w":    func() { gemm(dst, 4, x, 8, 2, w[:31], 8, 4, 8, nil) },
				"dst":  func() { gemm(dst[:7], 4, x, 8, 2, w, 8, 4, 8, nil) },
				"bias": func() { gemm(dst, 4, x, 8, 2, w, 8, 4, 8, make([]float32, 3)) },
			} {
				func() {
					defer func() {
						if recover() == nil {
							t.Errorf("short %s: no panic", name)
						}
					}()
					f()
				}()
			}
		})
	}
}

// TestGemmFloat16Weights checks that the kernel on float16 weights
// returns the same bits as the float32 kernel on the same weights widened,
// and that the model's float16 copies widen back to its float32 weights.
func TestGemmFloat16Weights(t *testing.T) {
	if !haveF16 {
		t.Skip("no float16 kernel in this build or on this CPU")
	}
	rng := rand.New(rand.NewPCG(5, 6))
	for _, k := range []int{0, 8, 16, 24, 64, 256, 1536} {
		for _, sh := range [][2]int{{1, 1}, {1, 4}, {2, 5}, {3, 4}, {7, 9}, {13, 12}} {
			c := newGemmCase(rng, sh[0], sh[1], k, true)
			h := make([]uint16, len(c.w))
			for i, v := range c.w {
				h[i] = usefile.F32ToF16(v)
				c.w[i] = usefile.F16ToF32(h[i])
			}
			want := c.run(gemmSIMD)
			got := c.run(func(dst []float32, ds int, x []float32, xs, rows int, _ []float32, ws, cols, k int, bias []float32) {
				gemmSIMDh(dst, ds, x, xs, rows, h, ws, cols, k, bias)
			})
			for i := range want {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
					t.Fatalf("k=%d %dx%d: element %d: float16 kernel %v, float32 kernel %v", k, sh[0], sh[1], i, got[i], want[i])
				}
			}
		}
	}

	m := testModel(t)
	ws := []matrix{m.tanhW}
	for _, l := range m.layers {
		ws = append(ws, l.qkvW, l.outW, l.ffn1W, l.ffn2W)
	}
	ws = append(ws, m.layers[0].resW)
	for i, w := range ws {
		if m.dtypeLabel == "f16" && w.f16 == nil {
			t.Fatalf("matrix %d has no float16 copy", i)
		}
		for j, h := range w.f16 {
			if usefile.F16ToF32(h) != w.f32[j] {
				t.Fatalf("matrix %d element %d: float16 %#04x widens to %v, weight %v", i, j, h, usefile.F16ToF32(h), w.f32[j])
			}
		}
	}
}

// TestGemmParMatches checks that splitting a product's columns across
// goroutines writes every result, and the same bits as one goroutine.
func TestGemmParMatches(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, path := range kernelPaths() {
		withKernel(t, path, func(t *testing.T) {
			for _, cols := range []int{97, 130, 1536} {
				rows, k := 50, 520
				if cols == 1536 {
					rows, k = 7, 512
				}
				if rows*cols*k < parMinWork {
					t.Fatalf("%dx%dx%d is too small to be split", rows, cols, k)
				}
				c := newGemmCase(rng, rows, cols, k, true)
				w := matrix{f32: c.w}
				want := c.run(gemm)
				for _, par := range []int{2, 3, 4} {
					sp := &splitter{par: par}
					got := c.run(func(dst []float32, ds int, x []float32, xs, rows int, _ []float32, ws, cols, k int, bias []float32) {
						sp.gemm(dst, ds, x, xs, rows, w, ws, cols, k, bias)
					})
					for i := range want {
						if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
							t.Fatalf("cols=%d par=%d: element %d is %v, %v on one goroutine", cols, par, i, got[i], want[i])
						}
					}
				}
			}
		})
	}
}
