package use

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// qspec is a quantization of one linear layer: weight levels per output
// channel, activation levels per row; group > 0: the activation scale is
// also bounded so that every lane group of `group` products (the 256-bit
// kernels' lanes: elements 16t+2j, 16t+2j+1 over group/2 steps) sums to
// at most 2^31-2^18 in magnitude, given each input position's largest
// quantized weight over the output channels.
type qspec struct {
	wq, xq int
	group  int
	wgroup int // > 0: weight rows scaled so that every lane group of wgroup products with |x| <= xq fits in int32
}

type qsimConfig map[string]qspec

var simLevels []float64

func simLinear(m *model, cfg qsimConfig) func(out, x []float32, n, in int, w matrix, b []float32) bool {
	type fqw struct {
		sp qspec
		w  []float32
		W  []float64 // per input position: max |quantized weight|
	}
	fq := map[*float32]fqw{}
	for name, mt := range modelMatrices(m) {
		sp, ok := cfg[name]
		if !ok || sp.wq == 0 {
			continue
		}
		in := mt.in
		cols := len(mt.w.f32) / in
		q := make([]float32, len(mt.w.f32))
		W := make([]float64, in)
		for c := range cols {
			row := mt.w.f32[c*in : (c+1)*in]
			var mx float64
			for _, v := range row {
				mx = max(mx, math.Abs(float64(v)))
			}
			s := mx / float64(sp.wq)
			if sp.wgroup > 0 {
				steps := sp.wgroup / 2
				var gmax float64
				for t0 := 0; t0 < in/16; t0 += steps {
					for j := range 8 {
						var g float64
						for st := t0; st < min(in/16, t0+steps); st++ {
							g += math.Abs(float64(row[16*st+2*j])) + math.Abs(float64(row[16*st+2*j+1]))
						}
						gmax = max(gmax, g)
					}
				}
				B := float64((1<<31-1)/sp.xq) - float64(sp.wgroup)/2
				s = max(s, gmax/B)
				simLevels = append(simLevels, mx/s)
			}
			if s == 0 {
				s = 1
			}
			for i, v := range row {
				r := math.RoundToEven(float64(float32(float64(v) / s)))
				W[i] = max(W[i], math.Abs(r))
				q[c*in+i] = float32(r * s)
			}
		}
		fq[&mt.w.f32[0]] = fqw{sp, q, W}
	}
	return func(out, x []float32, n, in int, w matrix, b []float32) bool {
		f, ok := fq[&w.f32[0]]
		if !ok {
			return false
		}
		sp := f.sp
		cols := len(b)
		xq := make([]float32, n*in)
		for r := range n {
			row := x[r*in : (r+1)*in]
			var hi float64
			for _, v := range row {
				hi = max(hi, math.Abs(float64(v)))
			}
			if hi == 0 {
				continue
			}
			inv := float64(sp.xq) / hi
			if sp.group > 0 {
				steps := sp.group / 2
				var gmax float64
				for t0 := 0; t0 < in/16; t0 += steps {
					for j := range 8 {
						var g float64
						for s := t0; s < min(in/16, t0+steps); s++ {
							for d := range 2 {
								i := 16*s + 2*j + d
								g += math.Abs(float64(row[i])) * f.W[i]
							}
						}
						gmax = max(gmax, g)
					}
				}
				// rounding adds at most 0.5 per element
				lim := float64(1<<31) - float64(sp.group)*0.5*32767 - 1024
				inv = min(inv, lim/gmax*(1-1e-6))
			}
			simLevels = append(simLevels, inv*hi)
			for i, v := range row {
				q := min(max(math.RoundToEven(float64(v)*inv), -32767), 32767)
				xq[r*in+i] = float32(q / inv)
			}
		}
		gemm(out, cols, xq, in, n, f.w, in, cols, in, b)
		return true
	}
}

type namedMatrix struct {
	w  matrix
	in int
}

func modelMatrices(m *model) map[string]namedMatrix {
	out := map[string]namedMatrix{}
	for l := range m.layers {
		L := &m.layers[l]
		p := fmt.Sprintf("l%d.", l)
		out[p+"qkv"] = namedMatrix{L.qkvW, L.in}
		out[p+"out"] = namedMatrix{L.outW, L.in}
		if L.resW.f32 != nil {
			out[p+"res"] = namedMatrix{L.resW, L.in}
		}
		out[p+"ffn1"] = namedMatrix{L.ffn1W, modelDim}
		out[p+"ffn2"] = namedMatrix{L.ffn2W, ffnDim}
	}
	out["tanh"] = namedMatrix{m.tanhW, modelDim}
	return out
}

// simTexts returns the fidelity texts, the task and a sample of MetaTool.
func simTexts(t testing.TB) []string {
	texts := slices.Clone(fidelityTexts)
	texts = append(texts, benchTask...)
	root := repoRoot(t)
	read := func(name string, every int, f func(map[string]any) string) {
		fh, err := os.Open(filepath.Join(root, "eval", "datasets", "metatool", name))
		if err != nil {
			t.Fatal(err)
		}
		defer fh.Close()
		sc := bufio.NewScanner(fh)
		sc.Buffer(nil, 1<<24)
		i := 0
		for sc.Scan() {
			var v map[string]any
			if json.Unmarshal(sc.Bytes(), &v) != nil {
				continue
			}
			if i%every == 0 {
				texts = append(texts, f(v))
			}
			i++
		}
	}
	read("corpus.jsonl", 1, func(v map[string]any) string { return fmt.Sprint(v["title"], ": ", v["text"]) })
	read("corpus.jsonl", 2, func(v map[string]any) string { return fmt.Sprint(v["content"]) })
	read("queries.jsonl", 40, func(v map[string]any) string { return fmt.Sprint(v["text"]) })
	return texts
}

// simReference returns the Node reference's vectors for texts, cached.
func simReference(t *testing.T, texts []string) [][]float64 {
	cache := "/tmp/qint/ref.json"
	var res []nodeResult
	if b, err := os.ReadFile(cache); err == nil && json.Unmarshal(b, &res) == nil && len(res) == len(texts) {
	} else {
		stdin, _ := json.Marshal(texts)
		runReference(t, "embed", stdin, &res)
		b, _ := json.Marshal(res)
		os.WriteFile(cache, b, 0o644)
	}
	out := make([][]float64, len(res))
	for i := range res {
		out[i] = res[i].Vector
	}
	return out
}

func TestQuantSim(t *testing.T) {
	if os.Getenv("QSIM") == "" {
		t.Skip("QSIM unset")
	}
	m := testModel(t)
	texts := simTexts(t)
	ref := simReference(t, texts)
	e := &Embedder{m: m}
	old := intKernel
	intKernel = false
	defer func() { intKernel = old }()
	base, err := e.EmbedBatch(t.Context(), texts)
	if err != nil {
		t.Fatal(err)
	}
	nf := len(fidelityTexts)
	report := func(name string, got [][]float32) {
		var nodeMin, nodeMinF, floatMin = 1.0, 1.0, 1.0
		var dn, df []float64
		for i := range texts {
			cn := cosine(got[i], ref[i])
			cf := cos32(got[i], base[i])
			dn = append(dn, 1-cn)
			df = append(df, 1-cf)
			nodeMin = min(nodeMin, cn)
			floatMin = min(floatMin, cf)
			if i < nf {
				nodeMinF = min(nodeMinF, cn)
			}
		}
		slices.Sort(dn)
		slices.Sort(df)
		q := func(d []float64, p float64) float64 { return d[int(p*float64(len(d)-1))] }
		t.Logf("%-28s node: min(fid) %.7f min(all) %.7f 1-cos p50 %.1e p99 %.1e | float: min %.7f 1-cos p50 %.1e p99 %.1e",
			name, nodeMinF, nodeMin, q(dn, .5), q(dn, .99), floatMin, q(df, .5), q(df, .99))
	}
	report("float (current)", base)
	all := []string{"l0.qkv", "l0.out", "l0.res", "l0.ffn1", "l0.ffn2", "l1.qkv", "l1.out", "l1.ffn1", "l1.ffn2"}
	uni := func(s qspec, relu qspec) qsimConfig {
		c := qsimConfig{}
		for _, n := range all {
			if strings.HasSuffix(n, "ffn2") {
				c[n] = relu
			} else {
				c[n] = s
			}
		}
		return c
	}
	type cfgCase struct {
		name string
		cfg  qsimConfig
	}
	var cases []cfgCase
	// {weight levels, input levels, input lane group (input scale bounded), weight lane group (weight scale bounded)}
	for _, sp := range []qspec{
		{32767, 32767, 0, 0}, {23170, 23170, 0, 0}, {32767, 16383, 0, 0}, {16383, 32767, 0, 0}, {16383, 16383, 0, 0},
		{32767, 32767, 4, 0}, {32767, 32767, 8, 0}, {32767, 32767, 16, 0}, {16383, 32767, 8, 0},
		{32767, 32767, 0, 4}, {32767, 32767, 0, 8}, {32767, 32767, 0, 16}, {32767, 32767, 0, 32},
		{32767, 16383, 0, 8}, {32767, 20000, 0, 8}, {32767, 24000, 0, 8},
	} {
		cases = append(cases, cfgCase{fmt.Sprintf("w%dx%dg%dwg%d", sp.wq, sp.xq, sp.group, sp.wgroup), uni(sp, sp)})
	}
	if env := os.Getenv("QSIM_ONLY"); env != "" {
		cases = slices.DeleteFunc(cases, func(c cfgCase) bool { return !strings.Contains(c.name, env) })
	}
	sub := []string{}
	var subRef [][]float64
	var subBase [][]float32
	for i, tx := range texts {
		if i < nf || i%3 == 0 {
			sub = append(sub, tx)
			subRef = append(subRef, ref[i])
			subBase = append(subBase, base[i])
		}
	}
	texts, ref, base = sub, subRef, subBase
	t.Logf("%d texts", len(texts))
	// The real kernels against the float16 kernel.
	for _, path := range kernelPaths() {
		oldSIMD, oldF16, oldInt, oldQ := simd, simdF16, intKernel, qkern
		simd, simdF16, intKernel, qkern = path.simd, path.f16, path.integer, path.q
		got, err := e.EmbedBatch(t.Context(), texts)
		simd, simdF16, intKernel, qkern = oldSIMD, oldF16, oldInt, oldQ
		if err != nil {
			t.Fatal(err)
		}
		report("kernel "+path.name, got)
	}
	if os.Getenv("QSIM_REAL") != "" {
		return
	}
	for _, c := range cases {
		linearHook = simLinear(m, c.cfg)
		slices.Sort(simLevels)
		if len(simLevels) > 0 {
			t.Logf("   w levels: min %.0f p1 %.0f p10 %.0f p50 %.0f", simLevels[0], simLevels[len(simLevels)/100], simLevels[len(simLevels)/10], simLevels[len(simLevels)/2])
		}
		simLevels = nil
		got, err := e.EmbedBatch(t.Context(), texts)
		linearHook = nil
		if err != nil {
			t.Fatal(err)
		}
		report(c.name, got)
		slices.Sort(simLevels)
		if len(simLevels) > 0 {
			t.Logf("   x levels: p1 %.0f p10 %.0f p50 %.0f", simLevels[len(simLevels)/100], simLevels[len(simLevels)/10], simLevels[len(simLevels)/2])
		}
		simLevels = nil
	}
}
