// Package beir loads retrieval datasets in the BEIR layout (Thakur et al.,
// "BEIR: A Heterogeneous Benchmark for Zero-shot Evaluation of Information
// Retrieval Models", NeurIPS 2021 Datasets and Benchmarks, arXiv:2104.08663;
// format as read by the beir package's GenericDataLoader).
//
// # Layout
//
// A dataset is a directory holding
//
//	corpus.jsonl       one JSON object per line: {"_id", "title", "text", …}
//	queries.jsonl      one JSON object per line: {"_id", "text", …}
//	qrels/<split>.tsv  a header line "query-id\tcorpus-id\tscore", then one
//	                   tab-separated judgement per line
//
// contextd's eval datasets add optional corpus fields that describe an MCP
// resource: "name", "uri", "mimeType", "server" and "content" (the text a
// resources/read returns). Other fields (BEIR's "metadata", for one) are
// ignored.
//
// Scores are integers and graded: a score above 0 is relevant, 0 or below is
// not (BEIR judges some documents non-relevant explicitly). A split is the
// set of queries its qrels file names.
//
// # Validation
//
// [Load] reads everything and fails on the first problem with a [*Error] that
// names the file and line: a missing file or split, a line that is not one
// JSON object, a missing or empty "_id", a missing "text", an empty query
// text, a duplicate id, invalid UTF-8, an empty line, a missing or wrong qrels
// header, a row that is not three fields, a score that is not an integer, a
// query or corpus id the qrels name but the other files do not hold, and the
// same (query, document) pair judged twice.
package beir

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// File names inside a dataset directory.
const (
	CorpusFile  = "corpus.jsonl"
	QueriesFile = "queries.jsonl"
	QrelsDir    = "qrels"
	// QrelsHeader is the first line every qrels file must have.
	QrelsHeader = "query-id\tcorpus-id\tscore"
)

// A Doc is one corpus entry. The JSON names are the BEIR ones plus
// contextd's resource fields; empty optional fields are omitted when a Doc is
// marshalled.
type Doc struct {
	ID    string `json:"_id"`
	Title string `json:"title"`
	Text  string `json:"text"`
	// Name, URI, MIMEType, Server and Content describe the document as an
	// MCP resource. They are empty when the dataset does not give them.
	Name     string `json:"name,omitempty"`
	URI      string `json:"uri,omitempty"`
	MIMEType string `json:"mimeType,omitempty"`
	Server   string `json:"server,omitempty"`
	Content  string `json:"content,omitempty"`
}

// A Query is one entry of queries.jsonl.
type Query struct {
	ID   string `json:"_id"`
	Text string `json:"text"`
}

// A Dataset is a corpus with the queries and judgements of one split.
type Dataset struct {
	// Split is the name of the qrels file the dataset was loaded with.
	Split string
	// Corpus holds every document, in file order.
	Corpus []Doc
	// Queries holds the queries the split judges, in the order of
	// queries.jsonl. A query whose judgements are all ≤ 0 is included.
	Queries []Query
	// Qrels maps a query id, then a corpus id, to its graded score.
	Qrels map[string]map[string]int
}

// An Error is a problem with a dataset file. Line is 0 when the problem is
// not on one line (a missing file, an empty file).
type Error struct {
	File string
	Line int
	Err  error
}

func (e *Error) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %v", e.File, e.Line, e.Err)
	}
	return fmt.Sprintf("%s: %v", e.File, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

// Load reads the dataset in dir with the judgements of split (the file
// qrels/<split>.tsv) and validates all three files; see the package
// documentation for what is checked. Every error it returns is an [*Error].
func Load(dir, split string) (*Dataset, error) {
	if split == "" || strings.ContainsAny(split, `/\`) || split == "." || split == ".." {
		return nil, &Error{File: filepath.Join(dir, QrelsDir), Err: fmt.Errorf("invalid split name %q", split)}
	}
	qrelsPath := filepath.Join(dir, QrelsDir, split+".tsv")
	corpus, err := readCorpus(filepath.Join(dir, CorpusFile))
	if err != nil {
		return nil, err
	}
	queries, err := readQueries(filepath.Join(dir, QueriesFile))
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(qrelsPath); errors.Is(err, fs.ErrNotExist) {
		have, _ := Splits(dir)
		return nil, &Error{File: qrelsPath, Err: fmt.Errorf("no split %q (splits: %s)", split, orNone(have))}
	}
	docIDs := make(map[string]bool, len(corpus))
	for _, d := range corpus {
		docIDs[d.ID] = true
	}
	queryIDs := make(map[string]bool, len(queries))
	for _, q := range queries {
		queryIDs[q.ID] = true
	}
	qrels, err := readQrels(qrelsPath, queryIDs, docIDs)
	if err != nil {
		return nil, err
	}
	ds := &Dataset{Split: split, Corpus: corpus, Qrels: qrels}
	for _, q := range queries {
		if _, ok := qrels[q.ID]; ok {
			ds.Queries = append(ds.Queries, q)
		}
	}
	return ds, nil
}

// Splits returns the split names of the dataset in dir (the qrels/*.tsv
// files), sorted.
func Splits(dir string) ([]string, error) {
	entries, err := os.ReadDir(filepath.Join(dir, QrelsDir))
	if err != nil {
		return nil, &Error{File: filepath.Join(dir, QrelsDir), Err: unwrapPath(err)}
	}
	var splits []string
	for _, e := range entries {
		if name, ok := strings.CutSuffix(e.Name(), ".tsv"); ok && !e.IsDir() && name != "" {
			splits = append(splits, name)
		}
	}
	slices.Sort(splits)
	return splits, nil
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}

// entry holds the fields common to corpus and query lines. Pointers tell a
// missing field from an empty one.
type entry struct {
	ID   *string `json:"_id"`
	Text *string `json:"text"`
}

func readCorpus(path string) ([]Doc, error) {
	var docs []Doc
	first := map[string]int{}
	err := eachLine(path, func(line int, b []byte) error {
		id, _, err := checkEntry(b, first, line)
		if err != nil {
			return err
		}
		var d Doc
		if err := json.Unmarshal(b, &d); err != nil {
			return jsonError(err)
		}
		d.ID = id
		docs = append(docs, d)
		return nil
	})
	if err == nil && len(docs) == 0 {
		err = &Error{File: path, Err: errors.New("no documents")}
	}
	return docs, err
}

func readQueries(path string) ([]Query, error) {
	var queries []Query
	first := map[string]int{}
	err := eachLine(path, func(line int, b []byte) error {
		id, text, err := checkEntry(b, first, line)
		if err != nil {
			return err
		}
		if strings.TrimSpace(text) == "" {
			return fmt.Errorf("query %q has an empty text", id)
		}
		queries = append(queries, Query{ID: id, Text: text})
		return nil
	})
	if err == nil && len(queries) == 0 {
		err = &Error{File: path, Err: errors.New("no queries")}
	}
	return queries, err
}

// checkEntry validates the "_id" and "text" of one JSONL line and records the
// id's line in first.
func checkEntry(b []byte, first map[string]int, line int) (id, text string, err error) {
	var e entry
	if err := json.Unmarshal(b, &e); err != nil {
		return "", "", jsonError(err)
	}
	switch {
	case e.ID == nil:
		return "", "", errors.New(`missing "_id"`)
	case *e.ID == "":
		return "", "", errors.New(`empty "_id"`)
	case e.Text == nil:
		return "", "", fmt.Errorf(`%q: missing "text"`, *e.ID)
	}
	if l, dup := first[*e.ID]; dup {
		return "", "", fmt.Errorf("duplicate _id %q (first on line %d)", *e.ID, l)
	}
	first[*e.ID] = line
	return *e.ID, *e.Text, nil
}

// jsonError turns a decoding error into a message that does not depend on
// the Go type the line was decoded into.
func jsonError(err error) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return fmt.Errorf("field %q: JSON %s where a string is expected", te.Field, te.Value)
	}
	return fmt.Errorf("not a JSON object: %v", err)
}

func readQrels(path string, queryIDs, docIDs map[string]bool) (map[string]map[string]int, error) {
	qrels := map[string]map[string]int{}
	firstPair := map[[2]string]int{}
	err := eachLine(path, func(line int, b []byte) error {
		s := string(b)
		if line == 1 {
			if s != QrelsHeader {
				return fmt.Errorf("want the header line %q, got %q", QrelsHeader, s)
			}
			return nil
		}
		f := strings.Split(s, "\t")
		if len(f) != 3 {
			return fmt.Errorf("want 3 tab-separated fields (query-id, corpus-id, score), got %d", len(f))
		}
		qid, did := f[0], f[1]
		score, err := strconv.Atoi(f[2])
		if err != nil {
			return fmt.Errorf("score %q is not an integer", f[2])
		}
		switch {
		case !queryIDs[qid]:
			return fmt.Errorf("query-id %q is not in %s", qid, QueriesFile)
		case !docIDs[did]:
			return fmt.Errorf("corpus-id %q is not in %s", did, CorpusFile)
		}
		if l, dup := firstPair[[2]string{qid, did}]; dup {
			return fmt.Errorf("query %q and document %q already judged on line %d", qid, did, l)
		}
		firstPair[[2]string{qid, did}] = line
		if qrels[qid] == nil {
			qrels[qid] = map[string]int{}
		}
		qrels[qid][did] = score
		return nil
	})
	if err == nil && len(qrels) == 0 {
		err = &Error{File: path, Err: errors.New("no judgements after the header")}
	}
	return qrels, err
}

// eachLine calls fn for every line of the file at path, numbered from 1,
// without its line ending ("\n" or "\r\n"). Lines may be of any length. An
// error from fn, or an empty line or invalid UTF-8, stops the walk and is
// returned as an [*Error] for that line.
func eachLine(path string, fn func(line int, b []byte) error) error {
	f, err := os.Open(path)
	if err != nil {
		return &Error{File: path, Err: unwrapPath(err)}
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 1<<16)
	for n := 1; ; n++ {
		b, err := r.ReadBytes('\n')
		if err != nil && err != io.EOF {
			return &Error{File: path, Line: n, Err: err}
		}
		if len(b) == 0 && err == io.EOF {
			return nil
		}
		b = bytes.TrimSuffix(bytes.TrimSuffix(b, []byte("\n")), []byte("\r"))
		switch {
		case len(bytes.TrimSpace(b)) == 0:
			return &Error{File: path, Line: n, Err: errors.New("empty line")}
		case !utf8.Valid(b):
			return &Error{File: path, Line: n, Err: errors.New("invalid UTF-8")}
		}
		if ferr := fn(n, b); ferr != nil {
			return &Error{File: path, Line: n, Err: ferr}
		}
		if err == io.EOF {
			return nil
		}
	}
}

// unwrapPath drops the *fs.PathError wrapper, whose path the [*Error]
// already carries.
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
