package index

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"unsafe"

	"github.com/contextd/contextd/internal/index/indextest"
	"github.com/contextd/contextd/internal/resource"
)

// kernelPaths runs f once per kernel of qdots this build has: the
// assembly one where the CPU supports it, and plain Go.
func kernelPaths(t *testing.T, f func(t *testing.T)) {
	t.Helper()
	paths := []bool{false}
	if haveQSIMD {
		paths = append(paths, true)
	} else {
		t.Log("no assembly kernel in this build or on this CPU: plain Go only")
	}
	for _, simd := range paths {
		t.Run(fmt.Sprintf("simd=%v", simd), func(t *testing.T) {
			defer func(was bool) { qsimd = was }(qsimd)
			qsimd = simd
			f(t)
		})
	}
}

// Both kernels must return the exact integer dot products, including at
// the extremes of the int8 rows and int16 queries that quantizeQuery
// allows (no int32 sum may overflow).
func TestQdotsExact(t *testing.T) {
	if unsafe.Offsetof(qvec{}.c) != 0 {
		t.Fatal("the assembly kernel reads a qvec's row pointer at offset 0")
	}
	r := rand.New(rand.NewPCG(3, 4))
	kernelPaths(t, func(t *testing.T) {
		for _, k := range []int{1, 31, 100, 512, 1536, 4096} {
			kp := padDim(k)
			qmax := min(16383, (math.MaxInt32-1)/(127*kp))
			for _, m := range []int{1, 2, 3, 9} {
				for _, extreme := range []bool{false, true} {
					nrows := 7
					if k == 512 {
						nrows += qdotsBlock // past a block of the kernel
					}
					rows := make([]qvec, nrows)
					for i := range rows {
						rows[i].c = make([]int8, kp)
						for x := range k {
							v := int8(r.IntN(255) - 127)
							if extreme {
								v = -127
								if i%2 == 1 {
									v = 127
								}
							}
							rows[i].c[x] = v
						}
					}
					q := make([]int16, m*kp)
					for j := range m {
						for x := range k {
							v := int16(r.IntN(2*qmax+1) - qmax)
							if extreme {
								v = int16(qmax)
								if j%2 == 1 {
									v = int16(-qmax)
								}
							}
							q[j*kp+x] = v
						}
					}
					out := make([]int32, len(rows)*m)
					qdots(rows, q, m, kp, out)
					for i, row := range rows {
						for j := range m {
							var want int64
							for x := range kp {
								want += int64(row.c[x]) * int64(q[j*kp+x])
							}
							if int64(out[i*m+j]) != want {
								t.Fatalf("k=%d m=%d extreme=%v: row %d query %d: %d, want %d", k, m, extreme, i, j, out[i*m+j], want)
							}
						}
					}
				}
			}
		}
	})
}

// A set of rows for the prefilter tests: keys, vectors and passages.
type testRows struct {
	keys []resource.Key
	vecs [][]float32
	per  [][][]float32 // each row's passages
}

func (tr testRows) scan() *scanRows {
	r := &scanRows{keys: tr.keys, vecs: tr.vecs}
	for _, ps := range tr.per {
		r.ps = append(r.ps, ps...)
		r.upto = append(r.upto, len(r.ps))
	}
	r.quantize(nil)
	return r
}

func unit(r *rand.Rand, k int) []float32 {
	v := make([]float32, k)
	var s float64
	for i := range v {
		x := r.NormFloat64()
		v[i] = float32(x)
		s += x * x
	}
	for i := range v {
		v[i] = float32(float64(v[i]) / math.Sqrt(s))
	}
	return v
}

// The prefilter must return what the exhaustive scan returns, hit for hit
// and bit for bit, on every kernel: random unit vectors, exact ties broken
// by key, near-ties a few ulps apart, spiky vectors that quantize badly,
// tiny and zero vectors, rows equal to the query, passages mixed in with
// weights 0, 0.3 and 1, a server filter, and n from 1 to more than the
// rows.
func TestPrefilterMatchesExhaustive(t *testing.T) {
	dims := []int{512, 100}
	if raceOn {
		dims = dims[1:] // the same cases on shorter vectors: the race detector slows them tenfold
	}
	kernelPaths(t, func(t *testing.T) {
		for _, k := range dims {
			for _, shape := range []string{"random", "ties", "near-ties", "spiky", "tiny", "clustered"} {
				for _, passages := range []bool{false, true} {
					t.Run(fmt.Sprintf("k=%d/%s/passages=%v", k, shape, passages), func(t *testing.T) {
						checkPrefilter(t, k, shape, passages)
					})
				}
			}
		}
	})
}

func checkPrefilter(t *testing.T, k int, shape string, passages bool) {
	r := rand.New(rand.NewPCG(uint64(k), uint64(len(shape))))
	const rows = 3000
	q := unit(r, k)
	base := unit(r, k)
	vec := func(i int) []float32 {
		switch shape {
		case "ties":
			if i%3 == 0 {
				return slices.Clone(base) // many rows score exactly alike
			}
		case "near-ties":
			v := slices.Clone(base)
			for range 1 + i%3 {
				j := r.IntN(k)
				v[j] = math.Nextafter32(v[j], float32(math.Inf(r.IntN(2)*2-1)))
			}
			return v
		case "spiky":
			v := unit(r, k)
			v[r.IntN(k)] = 40 // one large element: a coarse int8 scale
			return v
		case "tiny":
			v := unit(r, k)
			for j := range v {
				v[j] *= 1e-38 // partly subnormal
			}
			if i%5 == 0 {
				clear(v)
			}
			return v
		case "clustered":
			v := slices.Clone(q) // close to the query: scores crowd near 1
			for j := range v {
				v[j] += float32(r.NormFloat64() * 1e-3)
			}
			return v
		}
		if i%97 == 0 {
			return slices.Clone(q)
		}
		return unit(r, k)
	}
	var tr testRows
	for i := range rows {
		server := "a"
		if i%4 == 0 {
			server = "b"
		}
		tr.keys = append(tr.keys, resource.Key{Server: server, URI: fmt.Sprintf("doc://%05d", r.IntN(1_000_000))})
		tr.vecs = append(tr.vecs, vec(i))
		var ps [][]float32
		if passages && i%3 != 1 {
			for range 1 + i%4 {
				ps = append(ps, vec(i+1))
			}
		}
		tr.per = append(tr.per, ps)
	}
	// Keys must be unique, as in the index.
	for i := range tr.keys {
		tr.keys[i].URI += fmt.Sprint("/", i)
	}
	sr := tr.scan()
	if sr.q == nil || !sr.q.ok {
		t.Fatal("rows not quantized")
	}
	for _, w := range []float32{0, 0.3, 1} {
		if !passages && w != 0.3 {
			continue
		}
		for _, server := range []string{"", "b"} {
			all := sr.scanAll(q, 0, server, w) // every row, ranked: topHits' n best are its first n
			for _, n := range []int{1, 10, 100, 749, 750, 2999, 3000, 5000} {
				want := all[:min(n, len(all))]
				got, ok := sr.prefiltered([][]float32{q}, n, server, w)
				inScope := rows
				if server != "" {
					inScope = rows / 4
				}
				if wantOK := n < inScope && inScope >= prefilterMinRows; ok != wantOK {
					t.Fatalf("w=%v server=%q n=%d: prefilter used %v, want %v", w, server, n, ok, wantOK)
				}
				if !ok {
					continue
				}
				if !slices.Equal(got[0], want) {
					t.Fatalf("w=%v server=%q n=%d: prefilter\n%v\nexhaustive\n%v", w, server, n, head(got[0]), head(want))
				}
			}
		}
	}
	// Several queries in one pass: each as if alone.
	qs := [][]float32{q, unit(r, k), tr.vecs[7], unit(r, k)}
	got, ok := sr.prefiltered(qs, 20, "", 0.3)
	if !ok {
		t.Fatal("prefilter not used for 4 queries")
	}
	for j, qj := range qs {
		if want := sr.scanAll(qj, 20, "", 0.3); !slices.Equal(got[j], want) {
			t.Fatalf("query %d of 4: prefilter\n%v\nexhaustive\n%v", j, head(got[j]), head(want))
		}
	}
}

func head(h []Hit) []Hit { return h[:min(len(h), 12)] }

// Rows the int8 copy cannot bound (a NaN, an infinity, a huge element, or
// lengths that differ) and queries of another length or not finite send
// Dense to the exhaustive scan.
func TestPrefilterDeclines(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	mk := func(edit func(vs [][]float32) [][]float32) *scanRows {
		var tr testRows
		for i := range prefilterMinRows + 10 {
			tr.keys = append(tr.keys, resource.Key{Server: "s", URI: fmt.Sprint(i)})
			tr.vecs = append(tr.vecs, unit(r, 64))
			tr.per = append(tr.per, nil)
		}
		tr.vecs = edit(tr.vecs)
		return tr.scan()
	}
	q := unit(r, 64)
	for name, edit := range map[string]func([][]float32) [][]float32{
		"NaN":   func(vs [][]float32) [][]float32 { vs[3][5] = float32(math.NaN()); return vs },
		"Inf":   func(vs [][]float32) [][]float32 { vs[3][5] = float32(math.Inf(-1)); return vs },
		"huge":  func(vs [][]float32) [][]float32 { vs[3][5] = 1e20; return vs },
		"short": func(vs [][]float32) [][]float32 { vs[3] = vs[3][:63]; return vs },
	} {
		if _, ok := mk(edit).prefiltered([][]float32{q}, 10, "", 0.3); ok {
			t.Errorf("%s row: prefilter used", name)
		}
	}
	sr := mk(func(vs [][]float32) [][]float32 { return vs })
	if _, ok := sr.prefiltered([][]float32{q}, 10, "", 0.3); !ok {
		t.Fatal("plain rows: prefilter not used")
	}
	bad := slices.Clone(q)
	bad[0] = float32(math.NaN())
	for name, qq := range map[string][]float32{"short query": q[:10], "NaN query": bad} {
		if _, ok := sr.prefiltered([][]float32{qq}, 10, "", 0.3); ok {
			t.Errorf("%s: prefilter used", name)
		}
	}
	if _, ok := sr.prefiltered([][]float32{q}, 10, "", 1.5); ok {
		t.Error("weight 1.5: prefilter used")
	}
}

// A rebuild of the rows reuses the copies of vectors it already
// quantized, and quantizes the new ones.
func TestQuantizeReusesCopies(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	var tr testRows
	for i := range prefilterMinRows {
		tr.keys = append(tr.keys, resource.Key{Server: "s", URI: fmt.Sprint(i)})
		tr.vecs = append(tr.vecs, unit(r, 64))
		tr.per = append(tr.per, nil)
	}
	old := tr.scan()
	fresh := unit(r, 64)
	tr.vecs[0] = fresh
	tr.keys = append(tr.keys, resource.Key{Server: "s", URI: "new"})
	tr.vecs = append(tr.vecs, unit(r, 64))
	tr.per = append(tr.per, nil)
	nr := &scanRows{keys: tr.keys, vecs: tr.vecs, upto: make([]int, len(tr.vecs))}
	nr.quantize(old.q)
	if &nr.q.qd[1].c[0] != &old.q.qd[1].c[0] {
		t.Error("an unchanged vector was quantized again")
	}
	want, _ := quantize(fresh)
	if !slices.Equal(nr.q.qd[0].c, want.c) || nr.q.qd[0].a != want.a {
		t.Error("a changed vector kept its old copy")
	}
	if len(nr.q.qd) != len(tr.vecs) || nr.q.qd[len(tr.vecs)-1].c == nil {
		t.Error("a new vector was not quantized")
	}
}

// BenchmarkQuantize is the cost of one 512-dimension row's int8 copy.
func BenchmarkQuantize(b *testing.B) {
	v := unit(rand.New(rand.NewPCG(1, 1)), 512)
	for b.Loop() {
		quantize(v)
	}
}

// down32 and up32 must bound x from below and above by the nearest
// float32s.
func TestRound32Outwards(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	xs := []float64{0, 1, -1, 1e-46, -1e-46, math.SmallestNonzeroFloat32, 3.4e38, -3.4e38, 0.1, -0.1, 1.0000001}
	for range 100000 {
		xs = append(xs, r.NormFloat64()*math.Pow(10, float64(r.IntN(60)-30)))
	}
	for _, x := range xs {
		d, u := down32(x), up32(x)
		if float64(d) > x || float64(u) < x {
			t.Fatalf("%g: down %g, up %g", x, d, u)
		}
		if float64(float32(x)) == x {
			if float64(d) != x || float64(u) != x {
				t.Fatalf("%g is a float32: down %g, up %g", x, d, u)
			}
			continue
		}
		if math.Nextafter32(d, float32(math.Inf(1))) != u {
			t.Fatalf("%g: down %g and up %g are not adjacent", x, d, u)
		}
	}
}

// BenchmarkQdots is the kernel over 100,000 rows of 512 dimensions, for
// one query and for nine (a compound task's clauses).
func BenchmarkQdots(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 1))
	rows := make([]qvec, 100_000)
	for i := range rows {
		rows[i], _ = quantize(unit(r, 512))
	}
	for _, m := range []int{1, 9} {
		q := make([]int16, 512*m)
		for i := range q {
			q[i] = int16(r.IntN(32767) - 16383)
		}
		out := make([]int32, len(rows)*m)
		for _, simd := range []bool{false, true} {
			if simd && !haveQSIMD {
				continue
			}
			b.Run(fmt.Sprintf("m=%d/simd=%v", m, simd), func(b *testing.B) {
				defer func(was bool) { qsimd = was }(qsimd)
				qsimd = simd
				for b.Loop() {
					qdots(rows, q, m, 512, out)
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/1e6, "ms/op")
			})
		}
	}
}

// DenseEach must return, for each query, what the exhaustive scan of
// every row in scope returns, whether the queries share a pass or not,
// with and without a server filter and at every depth.
func TestDenseEachMatchesExhaustive(t *testing.T) {
	ix, err := Open(t.Context(), Options{Embedder: indextest.RandomEmbedder{Dims: 64}})
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	for _, s := range []string{"a", "b"} {
		var ds []resource.Descriptor
		for i := range 1500 {
			ds = append(ds, resource.Descriptor{Server: s, URI: fmt.Sprintf("doc://%d", i), Name: fmt.Sprint("n", i)})
		}
		if _, err := ix.Replace(t.Context(), s, ds); err != nil {
			t.Fatal(err)
		}
	}
	queries := []string{"invoice", "weather map", "a long task: book the flight and pay the invoice", "invoice"}
	for _, f := range []Filter{{}, {Servers: []string{"a", "b"}}, {Servers: []string{"b"}}} {
		for _, n := range []int{0, 1, 100, 1499, 3001} {
			got, err := ix.DenseEach(t.Context(), queries, n, f)
			if err != nil {
				t.Fatal(err)
			}
			r := ix.rows()
			if r.q == nil || !r.q.ok {
				t.Fatal("rows not quantized")
			}
			for i, q := range queries {
				v, _ := ix.qvecs.embed(t.Context(), ix.emb, q)
				var want []Hit
				if len(f.Servers) == 1 {
					want = r.scanAll(v, n, f.Servers[0], float32(ix.cw))
				} else {
					want = r.scanAll(v, n, "", float32(ix.cw))
				}
				if !slices.Equal(got[i], want) {
					t.Fatalf("filter %v n=%d query %q: DenseEach\n%v\nexhaustive\n%v", f, n, q, head(got[i]), head(want))
				}
				if one, _ := ix.Dense(t.Context(), q, n, f); !slices.Equal(one, want) {
					t.Fatalf("filter %v n=%d query %q: Dense differs from the exhaustive scan", f, n, q)
				}
			}
		}
	}
}
