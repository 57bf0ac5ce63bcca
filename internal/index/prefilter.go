package index

import (
	"cmp"
	"math"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"unsafe"
)

// Dense's exact scan reads every stored vector in float32 (2 KiB per
// 512-dimension row) and sums each row in order, unfused: at 100,000
// descriptors that is 205 MB of memory traffic and tens of milliseconds per
// query. The prefilter below finds the same top n from an int8 copy of the
// rows (a quarter of the bytes, summed with integer SIMD), then rescores
// only the rows that could be among the n best with dot, so the result is
// the exhaustive scan's to the bit.
//
// For a row v (float32, k dimensions) the copy is v′ = a·c with c ∈
// [−127, 127]ᵏ and a = max|vⱼ|/127; the query q is quantized likewise to q′
// = b·d with d int16 (|dⱼ| ≤ qmax). The integer dot c·d is exact, so A =
// a·b·(c·d) = v′·q′ exactly (up to float64 rounding, below). Then, with
// s = v·q the real dot product and s̃ = dot(v, q) its float32 value:
//
//	|v·q − v′·q′| ≤ ‖v − v′‖·‖q‖ + ‖v′‖·‖q − q′‖    (Cauchy–Schwarz)
//	|s̃ − v·q|     ≤ γₖ·‖v‖·‖q‖ + k·2⁻¹⁵⁰          (Higham, ordered sum of rounded products, with underflow)
//
// where γₖ = k·u/(1 − k·u), u = 2⁻²⁴. So s̃ ∈ [A − E, A + E] with E =
// (‖v − v′‖ + γₖ‖v‖)·‖q‖ + ‖v′‖·‖q − q′‖ + k·2⁻¹⁵⁰, which the code
// widens by a relative 10⁻⁹ for the float64 arithmetic that computes A
// and E (whose relative error is below 10⁻¹⁴). For the mixed score the
// bounds of a descriptor's and its passages' dot products go through the
// same float32 mix as the exact score, rounded outwards: the mix is
// monotone in each of them (weights in [0, 1]), so the mixed bounds hold
// too. If T is the n-th largest lower bound, at least n rows score ≥ T,
// so every row of the exact top n (ties broken by key included) scores
// ≥ T and has an upper bound ≥ T: rescoring every row whose upper bound
// reaches T and taking the n best gives exactly the exhaustive top n.

// qvec is a stored vector's int8 copy and the constants of its error
// bound. c's backing array comes first: the assembly kernel reads the row
// pointer at offset 0 of each qvec.
type qvec struct {
	c     []int8  // round(v/a), zero-padded to a multiple of qpad
	a     float64 // scale: v ≈ a·c
	alpha float64 // ‖v − a·c‖ + γₖ·‖v‖
	beta  float64 // ‖a·c‖
}

// qpad is the multiple the int8 rows and int16 queries are padded to
// (with zeros, which change no dot product): the kernels take 32 at a time.
const qpad = 32

// qbig bounds the magnitude of a vector's elements for the prefilter: a
// larger one, or a NaN or infinity, sends the query to the exhaustive
// scan, whose float32 products could overflow where the bounds assume
// they do not.
const qbig = 1e15

// padDim is k rounded up to a multiple of qpad.
func padDim(k int) int { return (k + qpad - 1) / qpad * qpad }

// gammaK is γₖ for k products summed in float32, in order.
func gammaK(k int) float64 {
	u := math.Ldexp(1, -24)
	return float64(k) * u / (1 - float64(k)*u)
}

// quantize returns v's int8 copy, or false if v has an element that is
// not finite or beyond ±qbig.
func quantize(v []float32) (qvec, bool) {
	var m float32
	var nv float64
	for _, x := range v {
		if !(x >= -qbig && x <= qbig) { // NaN fails both
			return qvec{}, false
		}
		m = max(m, abs32(x))
		nv += float64(x) * float64(x)
	}
	q := qvec{c: make([]int8, padDim(len(v)))}
	var ev, nc float64
	if m > 0 {
		q.a = float64(m) / 127
		inv := 127 / float64(m) // |x|·inv ≤ 127 (1 + 2⁻⁵²): rounds into [−127, 127]
		c := q.c[:len(v)]
		for j, x := range v {
			ci := math.RoundToEven(float64(x) * inv)
			c[j] = int8(ci)
			d := float64(x) - q.a*ci
			ev += d * d
			nc += ci * ci
		}
	}
	q.alpha = math.Sqrt(ev) + gammaK(len(v))*math.Sqrt(nv)
	q.beta = q.a * math.Sqrt(nc)
	return q, true
}

func abs32(x float32) float32 { return math.Float32frombits(math.Float32bits(x) &^ (1 << 31)) }

// qquery is a query vector quantized for the kernels.
type qquery struct {
	d      []int16 // round(q/b), zero-padded to padDim(k)
	b      float64 // scale: q ≈ b·d
	nq, eq float64 // ‖q‖, ‖q − b·d‖
	tiny   float64 // k·2⁻¹⁵⁰: what underflow can add to dot's error
}

// quantizeQuery quantizes q (k dimensions) for int8 rows of padDim(k): d's
// magnitude is bounded so that no int32 sum of the kernels can overflow
// (padDim(k)·127·qmax < 2³¹). It returns false for an element that is not
// finite or beyond ±qbig.
func quantizeQuery(q []float32) (qquery, bool) {
	k := padDim(len(q))
	qmax := min(16383, (math.MaxInt32-1)/(127*max(k, 1)))
	if qmax < 1 {
		return qquery{}, false
	}
	var m float32
	for _, x := range q {
		if !(x >= -qbig && x <= qbig) {
			return qquery{}, false
		}
		m = max(m, abs32(x))
	}
	qq := qquery{d: make([]int16, k), tiny: float64(len(q)) * math.Ldexp(1, -150)}
	var eq, nq float64
	if m > 0 {
		qq.b = float64(m) / float64(qmax)
		for j, x := range q {
			di := max(-float64(qmax), min(float64(qmax), math.Round(float64(x)/qq.b)))
			qq.d[j] = int16(di)
			e := float64(x) - qq.b*di
			eq += e * e
			nq += float64(x) * float64(x)
		}
	}
	qq.nq, qq.eq = math.Sqrt(nq), math.Sqrt(eq)
	return qq, true
}

// bounds returns the interval [lo, hi] that holds dot(v, q) for the row v
// whose copy is r, given the integer dot product c·d of the copies.
func (qq *qquery) bounds(r *qvec, cd int32) (lo, hi float64) {
	a := r.a * qq.b * float64(cd)
	e := (r.alpha*qq.nq + r.beta*qq.eq + qq.tiny) * (1 + 1e-9)
	return a - e, a + e
}

// qsimd selects the assembly kernel (AVX2 on amd64) for the integer dot
// products when it is true, plain Go otherwise. It starts as haveQSIMD;
// the tests switch it off to check the plain-Go path. Both compute exact
// integer sums, so they agree to the bit.
var qsimd = haveQSIMD

// qdots sets out[i*m+j] = rows[i].c · q[j*kp:(j+1)*kp] for the m queries
// of kp (a multiple of qpad) int16s each, every row's c being kp long.
func qdots(rows []qvec, q []int16, m, kp int, out []int32) {
	if len(rows) == 0 || m == 0 {
		return
	}
	if len(q) < m*kp || len(out) < len(rows)*m || kp%qpad != 0 {
		panic("index: qdots: slice too short for its shape")
	}
	for i := range rows {
		if len(rows[i].c) != kp {
			panic("index: qdots: row of another length")
		}
	}
	if qsimd {
		// In blocks, so that the goroutine can be preempted between them
		// (the assembly cannot be).
		for lo := 0; lo < len(rows); lo += qdotsBlock {
			hi := min(len(rows), lo+qdotsBlock)
			qdotsAsm(unsafe.Pointer(&rows[lo]), hi-lo, int(unsafe.Sizeof(qvec{})), &q[0], m, kp, &out[lo*m])
		}
		return
	}
	qdotsGo(rows, q, m, kp, out)
}

// qdotsBlock is how many rows qdots hands the assembly kernel at a time:
// well under a millisecond of work.
const qdotsBlock = 1024

// qdotsGo is qdots in plain Go, four partial sums per dot product.
func qdotsGo(rows []qvec, q []int16, m, kp int, out []int32) {
	for i := range rows {
		c := rows[i].c[:kp]
		for j := range m {
			d := q[j*kp : (j+1)*kp]
			d = d[:len(c)]
			var s0, s1, s2, s3 int32
			for t := 0; t+4 <= len(c); t += 4 {
				s0 += int32(c[t]) * int32(d[t])
				s1 += int32(c[t+1]) * int32(d[t+1])
				s2 += int32(c[t+2]) * int32(d[t+2])
				s3 += int32(c[t+3]) * int32(d[t+3])
			}
			out[i*m+j] = s0 + s1 + s2 + s3
		}
	}
}

// quantRows is the int8 copy of a scanRows: qd[i] is vecs[i]'s, qp[i]
// ps[i]'s. ok is false when some vector could not be quantized (see
// quantize) or the rows' lengths differ; then Dense scans exhaustively.
type quantRows struct {
	ok  bool
	dim int
	qd  []qvec
	qp  []qvec
	// by maps each quantized vector (by its first element's address: the
	// index never modifies a stored vector) to its copy, qd[i] for i <
	// len(qd), else qp[i−len(qd)], so a rebuild of the rows after a write
	// quantizes only the vectors it has not seen.
	by map[*float32]int32
}

// quantize builds r.q from r's vectors, reusing old's copies. Rows too few
// for the prefilter get none.
func (r *scanRows) quantize(old *quantRows) {
	if len(r.vecs) < prefilterMinRows {
		return
	}
	q := &quantRows{ok: true, dim: -1}
	r.q = q
	if len(r.vecs) > 0 {
		q.dim = len(r.vecs[0])
	}
	for _, vs := range [][][]float32{r.vecs, r.ps} {
		for _, v := range vs {
			if len(v) != q.dim || len(v) == 0 {
				q.ok = false
				return
			}
		}
	}
	q.qd = make([]qvec, len(r.vecs))
	q.qp = make([]qvec, len(r.ps))
	q.by = make(map[*float32]int32, len(r.vecs)+len(r.ps))
	var todo []int // indexes into r.vecs, then r.ps (offset by len(r.vecs))
	all := len(r.vecs) + len(r.ps)
	vec := func(i int) ([]float32, *qvec) {
		if i < len(r.vecs) {
			return r.vecs[i], &q.qd[i]
		}
		return r.ps[i-len(r.vecs)], &q.qp[i-len(r.vecs)]
	}
	for i := range all {
		v, dst := vec(i)
		if c, ok := old.lookup(v); ok {
			*dst = c
			continue
		}
		todo = append(todo, i)
	}
	parts := max(1, min(runtime.GOMAXPROCS(0), len(todo)/256))
	bad := make([]bool, parts)
	var wg sync.WaitGroup
	for p := range parts {
		lo, hi := p*len(todo)/parts, (p+1)*len(todo)/parts
		wg.Go(func() {
			for _, i := range todo[lo:hi] {
				v, dst := vec(i)
				c, ok := quantize(v)
				if !ok {
					bad[p] = true
					return
				}
				*dst = c
			}
		})
	}
	wg.Wait()
	for _, b := range bad {
		if b {
			*q = quantRows{dim: q.dim}
			return
		}
	}
	for i := range all {
		v, _ := vec(i)
		q.by[unsafe.SliceData(v)] = int32(i)
	}
}

// lookup returns the copy old holds of v, if any.
func (old *quantRows) lookup(v []float32) (qvec, bool) {
	if old == nil || old.by == nil || len(v) == 0 {
		return qvec{}, false
	}
	i, ok := old.by[unsafe.SliceData(v)]
	if !ok {
		return qvec{}, false
	}
	var c qvec
	if int(i) < len(old.qd) {
		c = old.qd[i]
	} else {
		c = old.qp[int(i)-len(old.qd)]
	}
	return c, len(c.c) == padDim(len(v))
}

// down32 and up32 round x (not NaN) to a float32 toward −∞ and +∞.
func down32(x float64) float32 {
	f := float32(x)
	if float64(f) <= x {
		return f
	}
	switch b := math.Float32bits(f); {
	case f == 0:
		return -math.Float32frombits(1) // the least negative float32
	case f > 0:
		return math.Float32frombits(b - 1)
	default:
		return math.Float32frombits(b + 1)
	}
}

func up32(x float64) float32 {
	f := float32(x)
	if float64(f) >= x {
		return f
	}
	switch b := math.Float32bits(f); {
	case f == 0:
		return math.Float32frombits(1) // the least positive float32
	case f > 0:
		return math.Float32frombits(b + 1)
	default:
		return math.Float32frombits(b - 1)
	}
}

// mix32 is Dense's mixed score of a descriptor whose dot product with the
// query is d and whose passages' are first (its first passage's) and best
// (the largest), each rounded to float32 and added unfused, as dot sums.
// It is monotone in d, first and best for w in [0, 1].
func mix32(d, first, best, w float32) float64 {
	p := (first + best) * 0.5
	return float64(float32((1-w)*d) + float32(w*p))
}

// prefilterMinRows is the fewest rows in scope worth the prefilter: below
// it the exhaustive scan is as fast. At 1,000 and 2,000 rows the
// prefilter takes about half the exhaustive scan's CPU time, for one
// query and for a task's nine (BenchmarkDenseEach).
const prefilterMinRows = 512

// prefiltered returns, for each query vector of qs, what scanMixed would:
// the n best rows of server ("" for all) by Dense's mixed score with
// weight w, best first, ties by key, the same hits to the bit. It scores
// the int8 copies of the rows and rescores exactly only the rows whose
// score could reach the n-th best (see the bound above). It returns false
// when the exhaustive scan must do it: no usable copies, n ≤ 0 or not
// fewer than the rows in scope, a query of another length or with an
// element that is not finite, or w outside [0, 1].
func (r *scanRows) prefiltered(qs [][]float32, n int, server string, w float32) ([][]Hit, bool) {
	q := r.q
	if q == nil || !q.ok || n <= 0 || !(w >= 0 && w <= 1) || len(qs) == 0 {
		return nil, false
	}
	m := len(qs)
	kp := padDim(q.dim)
	qd := make([]int16, 0, m*kp)
	qqs := make([]qquery, m)
	for j, v := range qs {
		if len(v) != q.dim {
			return nil, false
		}
		qq, ok := quantizeQuery(v)
		if !ok {
			return nil, false
		}
		qqs[j] = qq
		qd = append(qd, qq.d...)
	}
	var sel []int32 // rows in scope; nil: all
	if server != "" {
		for i, k := range r.keys {
			if k.Server == server {
				sel = append(sel, int32(i))
			}
		}
	}
	scoped := server != ""
	nrows := len(r.keys)
	if scoped {
		nrows = len(sel)
	}
	if n >= nrows || nrows < prefilterMinRows {
		return nil, false
	}
	row := func(at int) int {
		if !scoped {
			return at
		}
		return int(sel[at])
	}
	// Pass 1, in parts on every core: bounds of every row in scope; each
	// part keeps its n largest lower bounds per query.
	hi := getBuf[float64](nrows * m) // upper bounds
	defer putBuf(hi)
	parts := max(1, min(runtime.GOMAXPROCS(0), nrows/prefilterMinRows))
	tops := make([][][]float64, parts)
	var wg sync.WaitGroup
	for p := range parts {
		lo, hiAt := p*nrows/parts, (p+1)*nrows/parts
		wg.Go(func() {
			tops[p] = r.boundsPart(qqs, qd, kp, lo, hiAt, row, scoped, w, hi, n)
		})
	}
	wg.Wait()
	// Pass 2, a query at a time on every core: the threshold T of each
	// query, then the exact scores of the rows whose upper bound reaches it.
	out := make([][]Hit, m)
	var next atomic.Int32
	for range min(parts, m) {
		wg.Go(func() {
			for j := int(next.Add(1)) - 1; j < m; j = int(next.Add(1)) - 1 {
				var lows []float64
				for p := range parts {
					lows = append(lows, tops[p][j]...)
				}
				t := nthLargest(lows, n)
				var cand []int
				for at := range nrows {
					if hi[at*m+j] >= t {
						cand = append(cand, row(at))
					}
				}
				out[j] = topHits(r.exactRows(cand, qs[j], w), n)
			}
		})
	}
	wg.Wait()
	return out, true
}

// exactRows returns the hits of rows (indices into r.vecs) with their
// exact scores for q (exact's). The descriptor products of rows without
// passages are summed four rows at a time, each row's sum still in order
// and unfused, so every score is dot's to the bit: four independent sums
// keep the floating-point unit busy where one waits on its own latency.
func (r *scanRows) exactRows(rows []int, q []float32, w float32) []Hit {
	hits := make([]Hit, len(rows))
	var plain []int // positions in rows of rows without passages
	for at, i := range rows {
		if firstPassage(r.upto, i) == r.upto[i] && len(r.vecs[i]) == len(q) {
			plain = append(plain, at)
			continue
		}
		hits[at] = Hit{Key: r.keys[i], Score: r.exact(i, q, w)}
	}
	k := 0
	for ; k+4 <= len(plain); k += 4 {
		pa, pb, pc, pd := plain[k], plain[k+1], plain[k+2], plain[k+3]
		a, b, c, d := r.vecs[rows[pa]], r.vecs[rows[pb]], r.vecs[rows[pc]], r.vecs[rows[pd]]
		a, b, c, d = a[:len(q)], b[:len(q)], c[:len(q)], d[:len(q)]
		var sa, sb, sc, sd float32
		for e, x := range q {
			sa += float32(a[e] * x)
			sb += float32(b[e] * x)
			sc += float32(c[e] * x)
			sd += float32(d[e] * x)
		}
		hits[pa] = Hit{Key: r.keys[rows[pa]], Score: float64(sa)}
		hits[pb] = Hit{Key: r.keys[rows[pb]], Score: float64(sb)}
		hits[pc] = Hit{Key: r.keys[rows[pc]], Score: float64(sc)}
		hits[pd] = Hit{Key: r.keys[rows[pd]], Score: float64(sd)}
	}
	for ; k < len(plain); k++ {
		i := rows[plain[k]]
		hits[plain[k]] = Hit{Key: r.keys[i], Score: float64(dot(r.vecs[i], q))}
	}
	return hits
}

// exact is row i's mixed score for q, as scoreMixed computes it.
func (r *scanRows) exact(i int, q []float32, w float32) float64 {
	d := dot(r.vecs[i], q)
	from, to := firstPassage(r.upto, i), r.upto[i]
	if from == to {
		return float64(d)
	}
	first := dot(r.ps[from], q)
	best := first
	for _, p := range r.ps[from+1 : to] {
		best = max(best, dot(p, q))
	}
	return mix32(d, first, best, w)
}

// boundsPart computes the bounds of the rows in scope at positions [lo,
// hi) (row(at) is the row at position at), for each of the m queries:
// their upper bounds into his[at*m+j], and returns each query's n largest
// lower bounds (fewer if the part has fewer rows).
func (r *scanRows) boundsPart(qqs []qquery, qd []int16, kp, lo, hi int, row func(int) int, gather bool, w float32, his []float64, n int) [][]float64 {
	q := r.q
	m := len(qqs)
	// The part's rows and passages, contiguous unless the scope is a
	// subset of the rows.
	var drows, prows []qvec
	var pfrom []int // passage index (into prows) of each row's first; pfrom[len] = len(prows)
	if !gather {
		drows = q.qd[lo:hi]
		p0, p1 := firstPassage(r.upto, lo), r.upto[hi-1]
		prows = q.qp[p0:p1]
		if p1 > p0 {
			pfrom = make([]int, hi-lo+1)
			for at := lo; at < hi; at++ {
				pfrom[at-lo] = firstPassage(r.upto, at) - p0
			}
			pfrom[hi-lo] = p1 - p0
		}
	} else {
		drows = make([]qvec, 0, hi-lo)
		pfrom = make([]int, 0, hi-lo+1)
		for at := lo; at < hi; at++ {
			i := row(at)
			drows = append(drows, q.qd[i])
			pfrom = append(pfrom, len(prows))
			prows = append(prows, q.qp[firstPassage(r.upto, i):r.upto[i]]...)
		}
		pfrom = append(pfrom, len(prows))
	}
	dints := getBuf[int32](len(drows) * m)
	defer putBuf(dints)
	qdots(drows, qd, m, kp, dints)
	pints := getBuf[int32](len(prows) * m)
	defer putBuf(pints)
	qdots(prows, qd, m, kp, pints)
	tops := make([][]float64, m)
	for j := range m {
		qq := &qqs[j]
		b, nq, eq, tiny := qq.b, qq.nq, qq.eq, qq.tiny
		top := make([]float64, 0, n)
		floor := math.Inf(-1) // top's least once it holds n
		if len(prows) == 0 {  // descriptors alone: the same bounds, a tighter loop
			his := his[lo*m : hi*m]
			dints := dints[:len(drows)*m]
			for x := range drows {
				dr := &drows[x]
				a := dr.a * b * float64(dints[x*m+j])
				e := (dr.alpha*nq + dr.beta*eq + tiny) * (1 + 1e-9)
				his[x*m+j] = a + e
				if l := a - e; l > floor || len(top) < n {
					top = pushLargest(top, l, n)
					if len(top) == n {
						floor = top[0]
					}
				}
			}
			tops[j] = top
			continue
		}
		for x := range drows {
			dr := &drows[x]
			a := dr.a * b * float64(dints[x*m+j])
			e := (dr.alpha*nq + dr.beta*eq + tiny) * (1 + 1e-9)
			l, h := a-e, a+e
			if p0, p1 := pfrom[x], pfrom[x+1]; p0 != p1 {
				flo, fhi := qq.bounds(&prows[p0], pints[p0*m+j])
				blo, bhi := flo, fhi
				for y := p0 + 1; y < p1; y++ {
					plo, phi := qq.bounds(&prows[y], pints[y*m+j])
					blo, bhi = max(blo, plo), max(bhi, phi)
				}
				l = mix32(down32(l), down32(flo), down32(blo), w)
				h = mix32(up32(h), up32(fhi), up32(bhi), w)
			}
			his[(lo+x)*m+j] = h
			if l > floor || len(top) < n {
				top = pushLargest(top, l, n)
				if len(top) == n {
					floor = top[0]
				}
			}
		}
		tops[j] = top
	}
	return tops
}

// pushLargest adds x to h, a min-heap of at most n float64s holding the n
// largest pushed so far.
func pushLargest(h []float64, x float64, n int) []float64 {
	if len(h) < n {
		h = append(h, x)
		for i := len(h) - 1; i > 0; { // sift up
			p := (i - 1) / 2
			if h[p] <= h[i] {
				break
			}
			h[p], h[i] = h[i], h[p]
			i = p
		}
		return h
	}
	if !(x > h[0]) {
		return h
	}
	h[0] = x
	for i := 0; ; { // sift down
		s := i
		for _, c := range [2]int{2*i + 1, 2*i + 2} {
			if c < len(h) && h[c] < h[s] {
				s = c
			}
		}
		if s == i {
			return h
		}
		h[i], h[s] = h[s], h[i]
		i = s
	}
}

// nthLargest returns the n-th largest of xs (1-based; len(xs) ≥ n ≥ 1).
// xs is reordered.
func nthLargest(xs []float64, n int) float64 {
	slices.SortFunc(xs, func(a, b float64) int { return cmp.Compare(b, a) })
	return xs[n-1]
}

// The prefilter's scratch buffers (about 1.2 MB a query at 100,000 rows)
// are pooled: allocated anew, they would set off a collection of the
// whole heap every few hundred queries.
var (
	f64Bufs sync.Pool
	i32Bufs sync.Pool
)

// getBuf returns a slice of n elements, not zeroed.
func getBuf[T float64 | int32](n int) []T {
	pool := &i32Bufs
	var zero T
	if _, ok := any(zero).(float64); ok {
		pool = &f64Bufs
	}
	if b, ok := pool.Get().(*[]T); ok && cap(*b) >= n {
		return (*b)[:n]
	}
	return make([]T, n)
}

// putBuf returns b to its pool.
func putBuf[T float64 | int32](b []T) {
	pool := &i32Bufs
	var zero T
	if _, ok := any(zero).(float64); ok {
		pool = &f64Bufs
	}
	pool.Put(&b)
}
