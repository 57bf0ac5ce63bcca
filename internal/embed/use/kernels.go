package use

import "math"

// tileRows is how many input rows [linear] multiplies against the whole
// weight matrix before moving on: 48 rows of the widest input (1,536
// floats) are 288 KiB, which stays in a core's L2 cache while the weights
// stream past.
const tileRows = 48

// linear sets out[t*len(b)+o] = b[o] + Σ_i x[t*in+i]·w[o*in+i] for the n
// rows t of x: a dense layer with its weight matrix w stored transposed,
// [out, in], so that every output is a dot product of two contiguous rows.
//
// The kernel computes a block of 2 outputs × 3 rows at a time: six
// independent sums hide the latency of the float adds, and each loaded
// weight and input is used two or three times. That runs about 7.4 billion
// multiply-adds a second per core on the dev VM, against 5.5 for 1 output ×
// 4 rows (whose four sums wait on the add latency) and less for blocks of 8
// sums (which the compiler spills to the stack). Each sum runs in input
// order in float32, so results do not depend on how rows are batched.
func linear(out, x []float32, n, in int, w, b []float32) {
	od := len(b)
	for t0 := 0; t0 < n; t0 += tileRows {
		t1 := min(n, t0+tileRows)
		o := 0
		for ; o+2 <= od; o += 2 {
			wa := w[o*in : o*in+in]
			wb := w[(o+1)*in : (o+1)*in+in]
			ba, bb := b[o], b[o+1]
			t := t0
			for ; t+3 <= t1; t += 3 {
				a0, a1, a2, b0, b1, b2 := dot2x3(wa, wb, x[t*in:(t+1)*in], x[(t+1)*in:(t+2)*in], x[(t+2)*in:(t+3)*in])
				out[t*od+o], out[t*od+o+1] = a0+ba, b0+bb
				out[(t+1)*od+o], out[(t+1)*od+o+1] = a1+ba, b1+bb
				out[(t+2)*od+o], out[(t+2)*od+o+1] = a2+ba, b2+bb
			}
			for ; t < t1; t++ {
				a0, b0 := dot2x1(wa, wb, x[t*in:(t+1)*in])
				out[t*od+o], out[t*od+o+1] = a0+ba, b0+bb
			}
		}
		for ; o < od; o++ {
			wa := w[o*in : o*in+in]
			for t := t0; t < t1; t++ {
				a0, _ := dot2x1(wa, wa, x[t*in:(t+1)*in])
				out[t*od+o] = a0 + b[o]
			}
		}
	}
}

// dot2x3 returns the dot products of wa and wb with x0, x1 and x2.
func dot2x3(wa, wb, x0, x1, x2 []float32) (a0, a1, a2, b0, b1, b2 float32) {
	// Re-slicing to len(wa) lets the compiler drop the bounds checks in
	// the loop.
	wb = wb[:len(wa)]
	x0 = x0[:len(wa)]
	x1 = x1[:len(wa)]
	x2 = x2[:len(wa)]
	for i, u := range wa {
		v := wb[i]
		y0, y1, y2 := x0[i], x1[i], x2[i]
		a0 += y0 * u
		a1 += y1 * u
		a2 += y2 * u
		b0 += y0 * v
		b1 += y1 * v
		b2 += y2 * v
	}
	return
}

// dot2x1 returns the dot products of wa and wb with x0.
func dot2x1(wa, wb, x0 []float32) (a0, b0 float32) {
	wb = wb[:len(wa)]
	x0 = x0[:len(wa)]
	for i, u := range wa {
		a0 += x0[i] * u
		b0 += x0[i] * wb[i]
	}
	return
}

// dot returns the dot product of a and b[:len(a)].
func dot(a, b []float32) float32 {
	b = b[:len(a)]
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(a); i += 4 {
		s0 += a[i] * b[i]
		s1 += a[i+1] * b[i+1]
		s2 += a[i+2] * b[i+2]
		s3 += a[i+3] * b[i+3]
	}
	for ; i < len(a); i++ {
		s0 += a[i] * b[i]
	}
	return (s0 + s1) + (s2 + s3)
}

// layerNorm sets each row y of out (n rows of width len(g)) from the same
// row x of in: y = g·(x−mean)/sqrt(var+ε) + b, with the mean and the
// (biased) variance over the row, as the graph's layer_norm nodes compute
// it: mul = g·rsqrt(var+ε); y = mul·(x−mean) + b.
func layerNorm(out, in []float32, n int, g, b []float32) {
	d := len(g)
	for t := range n {
		x := in[t*d : (t+1)*d]
		y := out[t*d : (t+1)*d]
		var sum float64
		for _, v := range x {
			sum += float64(v)
		}
		mean := float32(sum / float64(d))
		var ss float64
		for _, v := range x {
			c := float64(v - mean)
			ss += c * c
		}
		r := float32(1 / math.Sqrt(ss/float64(d)+lnEpsilon))
		g, b := g[:d], b[:d]
		for i, v := range x {
			y[i] = g[i]*r*(v-mean) + b[i]
		}
	}
}

// relu sets every negative element of x to 0.
func relu(x []float32) {
	for i, v := range x {
		if v < 0 {
			x[i] = 0
		}
	}
}

// add sets dst[i] += src[i].
func add(dst, src []float32) {
	src = src[:len(dst)]
	for i := range dst {
		dst[i] += src[i]
	}
}

// softmax replaces x by exp(x−max)/Σexp(x−max).
func softmax(x []float32) {
	m := x[0]
	for _, v := range x[1:] {
		m = max(m, v)
	}
	var sum float64
	for i, v := range x {
		e := math.Exp(float64(v - m))
		x[i] = float32(e)
		sum += e
	}
	inv := float32(1 / sum)
	for i := range x {
		x[i] *= inv
	}
}
