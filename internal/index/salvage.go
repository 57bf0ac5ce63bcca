package index

import (
	"compress/gzip"
	"encoding/gob"
	"errors"
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/philippgille/chromem-go"
)

// keepAside is how many DIR.corrupt-* directories are kept for inspection.
const keepAside = 3

// chromem-go's on-disk names: each collection is a subdirectory holding
// "00000000.gob.gz" (its metadata) and one "<hash>.gob.gz" per document.
const (
	metadataName = "00000000"
	docSuffix    = ".gob.gz"
	metadataFile = metadataName + docSuffix
)

// salvageVectors removes the document files that do not decode or whose
// vector is not dim long, holds a NaN or an infinity, or is not of unit
// length (see storedVector): chromem-go fails
// every query over a collection holding a vector of another length, and a
// NaN ranks its resource by lexical scores alone, forever. The next sync
// embeds them again.
func salvageVectors(dir string, dim int) (int, error) {
	return salvageWhere(dir, func(d *chromem.Document) bool { return !storedVector(d.Embedding, dim) })
}

// storedVector reports whether v, read from a document file, is what
// the store writes: dim finite components of unit length (it normalises
// every vector before writing it, see docStore). A vector of 3e38s is
// finite, and scored its resource 0.1 where it should have been 1, until
// its text changed.
func storedVector(v []float32, dim int) bool {
	if !validVector(v, dim) {
		return false
	}
	var sq float64
	for _, x := range v {
		sq += float64(x) * float64(x)
	}
	// Loose: normalizeVector sums in float32, and a vector it wrote
	// must not be dropped (and embedded again) at every start.
	return math.Abs(math.Sqrt(sq)-1) < 1e-3
}

// validVector reports whether v has dim finite components.
func validVector(v []float32, dim int) bool {
	if len(v) != dim {
		return false
	}
	for _, x := range v {
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			return false
		}
	}
	return true
}

// salvageWhere removes the document files under dir that do not decode, or
// whose document bad reports, and returns how many it removed.
func salvageWhere(dir string, bad func(*chromem.Document) bool) (int, error) {
	colls, err := os.ReadDir(dir)
	if err != nil {
		return 0, err
	}
	removed := 0
	for _, c := range colls {
		if !c.IsDir() {
			continue
		}
		files, err := os.ReadDir(filepath.Join(dir, c.Name()))
		if err != nil {
			return removed, err
		}
		for _, f := range files {
			if f.IsDir() || f.Name() == metadataFile || !strings.HasSuffix(f.Name(), docSuffix) {
				continue
			}
			p := filepath.Join(dir, c.Name(), f.Name())
			if d, ok := decode(p); ok && !bad(d) {
				continue
			}
			if err := os.Remove(p); err != nil {
				return removed, err
			}
			removed++
		}
	}
	return removed, nil
}

// decode returns the document in the file at p, and whether it is a
// complete gzip'd gob Document.
func decode(p string) (*chromem.Document, bool) {
	f, err := os.Open(p)
	if err != nil {
		return nil, false
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return nil, false
	}
	var d chromem.Document
	if err := gob.NewDecoder(zr).Decode(&d); err != nil || d.ID == "" {
		return nil, false
	}
	// Reading to EOF checks the gzip trailer (CRC and length).
	_, err = io.Copy(io.Discard, zr)
	return &d, err == nil || errors.Is(err, io.EOF)
}

// pruneAside deletes all but the newest keep DIR.corrupt-* directories.
func pruneAside(dir string, keep int, log *slog.Logger) {
	dir = strings.TrimRight(dir, "/")
	parent, prefix := filepath.Dir(dir), filepath.Base(dir)+".corrupt-"
	entries, err := os.ReadDir(parent)
	if err != nil {
		return
	}
	var aside []string
	for _, e := range entries {
		if e.IsDir() && strings.HasPrefix(e.Name(), prefix) {
			aside = append(aside, e.Name())
		}
	}
	if len(aside) <= keep {
		return
	}
	slices.Sort(aside) // the suffix is a UTC timestamp, so lexical order is age
	for _, name := range aside[:len(aside)-keep] {
		if err := os.RemoveAll(filepath.Join(parent, name)); err != nil {
			log.Warn("removing an old corrupt index failed", "dir", name, "err", err)
		}
	}
}
