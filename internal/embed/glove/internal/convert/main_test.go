package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/contextd/contextd/internal/embed/glove/internal/vecfile"
)

// writeTarball writes an npm-style tarball holding a small source document
// with the given words, in order, and returns its path and integrity string.
func writeTarball(t *testing.T, words []string) (path, integrity string) {
	t.Helper()
	src := source{
		Precision: 8, L2NormIndex: dim, WordIndex: dim + 1,
		Size: len(words), Dimensions: dim, Words: words,
		Vectors: map[string][]float64{},
	}
	for i, w := range words {
		v := make([]float64, dim+2)
		var ss float64
		for d := range dim {
			v[d] = math.Sin(float64(i*dim+d)) * float64(1+i%3)
			ss += v[d] * v[d]
		}
		v[dim], v[dim+1] = math.Sqrt(ss), float64(i)
		src.Vectors[w] = v
	}
	doc, err := json.Marshal(src)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for name, body := range map[string][]byte{"package/LICENSE": []byte("MIT"), jsonPath: doc} {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(body))}); err != nil {
			t.Fatal(err)
		}
		tw.Write(body)
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

func TestRun(t *testing.T) {
	words := []string{"the", ",", "of", "well-known", "file", "Upper", "mp3", "read", "disk"}
	in, integ := writeTarball(t, words)
	out := filepath.Join(t.TempDir(), "out.vec")
	var stdout strings.Builder
	if err := run(in, integ, out, 5, 1000, &stdout); err != nil {
		t.Fatalf("run: %v", err)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	tab, err := vecfile.Decode(string(data))
	if err != nil {
		t.Fatalf("Decode: %v", err)
	}
	// Punctuation, hyphenated and upper-case words are skipped; the first
	// five others are kept with their 1-based position as rank.
	if diff := cmp.Diff([]string{"the", "of", "file", "mp3", "read"}, tab.Words); diff != "" {
		t.Errorf("Words mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]uint32{1, 3, 5, 7, 8}, tab.Ranks); diff != "" {
		t.Errorf("Ranks mismatch (-want +got):\n%s", diff)
	}
	if tab.Dim != dim || tab.Vocab != len(words) {
		t.Errorf("Dim, Vocab = %d, %d; want %d, %d", tab.Dim, tab.Vocab, dim, len(words))
	}
	if !strings.Contains(stdout.String(), fmt.Sprintf("sha256:        %x", sha256.Sum256(data))) {
		t.Errorf("report does not give the output's sha256:\n%s", stdout.String())
	}
	if !strings.Contains(stdout.String(), "min 0.99") {
		t.Errorf("report shows poor quantisation:\n%s", stdout.String())
	}
}

func TestRunRejectsWrongIntegrity(t *testing.T) {
	in, _ := writeTarball(t, []string{"the"})
	out := filepath.Join(t.TempDir(), "out.vec")
	err := run(in, integrity, out, 5, 10, new(strings.Builder))
	if err == nil || !strings.Contains(err.Error(), "integrity") {
		t.Fatalf("run with the wrong integrity: err = %v, want an integrity error", err)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("output written despite the integrity failure (stat: %v)", err)
	}
}

func TestReachable(t *testing.T) {
	for w, want := range map[string]bool{
		"file": true, "mp3": true, "naïve": true, "東京": true,
		"": false, ",": false, "well-known": false, "Upper": false, "don't": false, "a_b": false,
	} {
		if got := reachable(w); got != want {
			t.Errorf("reachable(%q) = %v, want %v", w, got, want)
		}
	}
}
