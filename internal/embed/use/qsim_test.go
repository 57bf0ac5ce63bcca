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
// channel (0: float), activation levels per row, asym: activations
// mapped affinely onto [0, xq] (a zero point) instead of symmetrically.
type qspec struct {
	wq, xq int
	asym   bool
}

type qsimConfig map[string]qspec // by matrix name ("l0.qkv", ...)

func simLinear(m *model, cfg qsimConfig) func(out, x []float32, n, in int, w matrix, b []float32) bool {
	// Weights quantized and dequantized ("fake quantization"): the float
	// kernel then computes the quantized product to float32 rounding,
	// which is far below the quantization error measured.
	type fqw struct {
		sp qspec
		w  []float32
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
		for c := range cols {
			row := mt.w.f32[c*in : (c+1)*in]
			var mx float64
			for _, v := range row {
				mx = max(mx, math.Abs(float64(v)))
			}
			s := mx / float64(sp.wq)
			if s == 0 {
				s = 1
			}
			for i, v := range row {
				q[c*in+i] = float32(math.RoundToEven(float64(v)/s) * s)
			}
		}
		fq[&mt.w.f32[0]] = fqw{sp, q}
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
			var lo, hi float64
			for _, v := range row {
				lo, hi = min(lo, float64(v)), max(hi, float64(v))
			}
			var s, z float64
			qmax := float64(sp.xq)
			qmin := -qmax
			if sp.asym {
				s = (hi - lo) / float64(sp.xq)
				if s == 0 {
					s = 1
				}
				z = math.RoundToEven(-lo / s)
				qmin, qmax = -z, float64(sp.xq)-z
			} else {
				s = max(hi, -lo) / float64(sp.xq)
				if s == 0 {
					s = 1
				}
			}
			for i, v := range row {
				q := min(max(math.RoundToEven(float64(v)/s), qmin), qmax)
				xq[r*in+i] = float32(q * s)
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
	for _, wx := range [][2]int{{2047, 2047}, {8191, 511}, {511, 8191}, {4095, 1023}, {1023, 4095}, {2895, 2895}} {
		sp := qspec{wx[0], wx[1], false}
		cases = append(cases, cfgCase{fmt.Sprintf("w%dx%d", wx[0], wx[1]), uni(sp, sp)})
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
	for _, c := range cases {
		linearHook = simLinear(m, c.cfg)
		got, err := e.EmbedBatch(t.Context(), texts)
		linearHook = nil
		if err != nil {
			t.Fatal(err)
		}
		report(c.name, got)
	}
}
