package beir

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
)

// A File is one file of a dataset directory: its slash-separated path inside
// the directory and its bytes. Converters build a dataset as Files so that
// tests can compare them byte for byte before anything is written.
type File struct {
	Path string
	Data []byte
}

// A Qrel is one judgement: a line of a qrels file.
type Qrel struct {
	QueryID, CorpusID string
	Score             int
}

// Corpus and queries files hold one JSON value per line.

// JSONLines encodes one value per line, without HTML escaping so that "<",
// ">" and "&" stay readable.
func JSONLines[T any](vs []T) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	for _, v := range vs {
		if err := enc.Encode(v); err != nil {
			return nil, fmt.Errorf("beir: %w", err)
		}
	}
	return b.Bytes(), nil
}

// QrelsFile returns the qrels file of split: the header line, then one
// tab-separated line per judgement, in the order given.
func QrelsFile(split string, qrels []Qrel) File {
	var b bytes.Buffer
	b.WriteString(QrelsHeader + "\n")
	for _, q := range qrels {
		fmt.Fprintf(&b, "%s\t%s\t%d\n", q.QueryID, q.CorpusID, q.Score)
	}
	return File{Path: QrelsDir + "/" + split + ".tsv", Data: b.Bytes()}
}

// A SplitQrels is one split's judgements, written as qrels/<Name>.tsv.
type SplitQrels struct {
	Name  string
	Qrels []Qrel
}

// DatasetFiles returns the files of a BEIR dataset directory in a fixed
// order: corpus.jsonl and queries.jsonl (JSONLines of corpus and queries),
// the qrels of each split in the order given, then LICENSE. Errors are
// JSONLines's.
func DatasetFiles[C, Q any](corpus []C, queries []Q, splits []SplitQrels, license []byte) ([]File, error) {
	c, err := JSONLines(corpus)
	if err != nil {
		return nil, err
	}
	q, err := JSONLines(queries)
	if err != nil {
		return nil, err
	}
	files := []File{{Path: CorpusFile, Data: c}, {Path: QueriesFile, Data: q}}
	for _, s := range splits {
		files = append(files, QrelsFile(s.Name, s.Qrels))
	}
	return append(files, File{Path: "LICENSE", Data: license}), nil
}

// WriteFiles writes files into dir, creating directories as needed and
// replacing files of the same names; other files in dir are left alone.
func WriteFiles(dir string, files []File) error {
	for _, f := range files {
		p := filepath.Join(dir, filepath.FromSlash(f.Path))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return fmt.Errorf("beir: %w", err)
		}
		if err := os.WriteFile(p, f.Data, 0o644); err != nil {
			return fmt.Errorf("beir: %w", err)
		}
	}
	return nil
}
