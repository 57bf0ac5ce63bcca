// Package godoc builds a BEIR-layout dataset (see package
// [github.com/contextd/contextd/eval/beir]) in which each document is the
// documentation of one Go standard-library package, read from a Go
// distribution (a GOROOT), and each query is a developer task whose relevant
// documents are the packages that answer it. It is the data for measuring
// context assembly with resource contents: the documents are MCP resources
// whose bodies are whole Markdown documents, some of them over 100 KB.
//
// # Packages
//
// Every directory under GOROOT/src is a candidate, except cmd/ (the
// toolchain's commands), any directory named internal, vendor or testdata and
// its subtree, and directories whose name begins with "." or "_" (which the go
// command ignores too). A directory is a package when it holds .go files that
// are not _test.go files and that match the build context [Context]:
// linux/amd64, cgo enabled, the release tags of the distribution's VERSION
// file, and no other tags (so packages behind a GOEXPERIMENT, such as
// encoding/json/v2, or built only for another platform, such as syscall/js,
// are left out and listed in the README). Directories whose files are
// package main are commands and left out too. The import path is the
// directory's slash-separated path below src.
//
// # Documents
//
// One document per package, in import-path order:
//
//   - _id and name: the import path.
//   - title: "package NAME (IMPORT PATH)", or "package NAME" when the two are
//     the same (fmt, io, …).
//   - text: the synopsis, the first sentence of the package doc comment
//     ([doc.Package.Synopsis]).
//   - uri: [URIPrefix] + the import path; an opaque URI.
//   - mimeType: text/markdown.
//   - content: the package's documentation as Markdown (see [Render]).
//
// The documentation is what go/doc extracts with its default mode (exported
// declarations only; unexported struct fields and interface methods are
// replaced by a "contains filtered or unexported …" comment), except for
// package builtin, documented with [doc.AllDecls] as go doc does.
//
// # Queries
//
// The queries are developer tasks written by hand in queries.tsv (see
// [ParseQueries] for its format and the grades), embedded in this package as
// [Queries]. Every package a query judges must be in the corpus, or
// [Convert] fails. The queries are split into "dev" and "test" by a seeded
// shuffle: the single-package and the multi-package queries (two or more
// packages graded 2) are each shuffled, in file order, with
// rand.New(rand.NewPCG(Seed1, Seed2)).Shuffle (math/rand/v2); the first half
// of each (rounded down) goes to test and the rest to dev.
//
// The output is a pure function of the GOROOT's files and the queries:
// converting twice gives identical bytes.
package godoc

import (
	_ "embed"
	"fmt"
	"math/rand/v2"
	"slices"

	"github.com/contextd/contextd/eval/beir"
)

// Queries is the hand-written query file, queries.tsv.
//
//go:embed queries.tsv
var Queries []byte

// QueriesFile is the name [Queries] is reported under in errors.
const QueriesFile = "eval/internal/godoc/queries.tsv"

// URIPrefix starts every document URI; the import path follows.
const URIPrefix = "godoc://pkg/"

// MIMEType is every document's MIME type.
const MIMEType = "text/markdown"

// Seed1 and Seed2 seed the PCG generator that shuffles the queries before
// they are split: the year Go was announced and its day (10 November).
const (
	Seed1 uint64 = 2009
	Seed2 uint64 = 1110
)

// Split names.
const (
	SplitDev  = "dev"
	SplitTest = "test"
)

// Grades of a judgement.
const (
	// GradeAnswer is the package that answers the task.
	GradeAnswer = 2
	// GradeHelps is a package that helps with it.
	GradeHelps = 1
)

// Options configures [Convert]. A nil *Options means the defaults.
type Options struct {
	// Queries is the query file's content; nil means [Queries].
	Queries []byte
	// QueriesName names the query file in errors; "" means [QueriesFile].
	QueriesName string
}

// A Dataset is the converted documentation and queries, ready to
// [Dataset.Write].
type Dataset struct {
	// GoVersion is the first line of GOROOT/VERSION, e.g. "go1.26.8".
	GoVersion string
	// GoVersionTime is the line of GOROOT/VERSION that begins with "time ",
	// without that word, or "".
	GoVersionTime string
	// Corpus has one document per package, in import-path order.
	Corpus []beir.Doc
	// Queries holds every query, in query file order.
	Queries []beir.Query
	// Splits are test and dev, in that order.
	Splits []Split
	// License is GOROOT/LICENSE, copied as it is.
	License []byte
	// Stats counts what the conversion did, for the README.
	Stats Stats
}

// A Split is the judgements of one qrels file: its queries in query file
// order.
type Split struct {
	Name       string
	Judgements []Judgement
}

// A Judgement is one query and its graded documents: the answers (grade 2)
// then the helpers (grade 1), each in the order the query file lists them.
type Judgement struct {
	QueryID string
	Answers []string
	Helps   []string
	// Multi reports whether the query has more than one answer.
	Multi bool
}

// Stats counts facts about the source and the conversion.
type Stats struct {
	// SourceFiles is the number of .go files read; SourceSHA256 the SHA-256
	// of their slash-separated paths below GOROOT/src and contents (see
	// [Convert]).
	SourceFiles  int
	SourceSHA256 string
	// Excluded lists the candidate directories holding non-test .go files
	// none of which match [Context], by import path.
	Excluded []string
	// Commands lists the candidate directories of package main.
	Commands []string
	// NoSynopsis lists the packages without a synopsis.
	NoSynopsis []string
	// ContentBytes is the total size of the contents; Largest the biggest
	// documents, largest first (at most 10), and Median the median size.
	ContentBytes int
	Median       int
	Largest      []Sized
	// Answers and Helps count the judgements of each grade; Multi the
	// queries with more than one answer; Judged the distinct packages
	// judged by some query.
	Answers, Helps, Multi, Judged int
}

// A Sized is a document id and its content size in bytes.
type Sized struct {
	ID    string
	Bytes int
}

// Convert reads the Go distribution in goroot and the queries, and builds the
// dataset as the package documentation describes.
func Convert(goroot string, opts *Options) (*Dataset, error) {
	queries, queriesName := Queries, QueriesFile
	if opts != nil {
		if opts.Queries != nil {
			queries = opts.Queries
		}
		if opts.QueriesName != "" {
			queriesName = opts.QueriesName
		}
	}
	tree, err := readTree(goroot)
	if err != nil {
		return nil, err
	}
	ds := &Dataset{GoVersion: tree.version, GoVersionTime: tree.versionTime, License: tree.license}
	st := &ds.Stats
	st.SourceFiles, st.SourceSHA256 = tree.files, tree.sha256
	st.Excluded, st.Commands = tree.excluded, tree.commands
	known := map[string]bool{}
	var sizes []Sized
	for _, p := range tree.packages {
		d, err := document(p)
		if err != nil {
			return nil, err
		}
		if d.Text == "" {
			st.NoSynopsis = append(st.NoSynopsis, d.ID)
		}
		known[d.ID] = true
		ds.Corpus = append(ds.Corpus, d)
		sizes = append(sizes, Sized{d.ID, len(d.Content)})
		st.ContentBytes += len(d.Content)
	}
	if len(ds.Corpus) == 0 {
		return nil, fmt.Errorf("godoc: no packages in %s", goroot)
	}
	slices.SortStableFunc(sizes, func(a, b Sized) int { return b.Bytes - a.Bytes })
	st.Largest = sizes[:min(len(sizes), 10)]
	st.Median = sizes[len(sizes)/2].Bytes

	qs, err := ParseQueries(queriesName, queries, known)
	if err != nil {
		return nil, err
	}
	judged := map[string]bool{}
	var single, multi []*Query
	for _, q := range qs {
		ds.Queries = append(ds.Queries, beir.Query{ID: q.ID, Text: q.Text})
		st.Answers += len(q.Answers)
		st.Helps += len(q.Helps)
		for _, id := range slices.Concat(q.Answers, q.Helps) {
			judged[id] = true
		}
		if len(q.Answers) > 1 {
			multi = append(multi, q)
		} else {
			single = append(single, q)
		}
	}
	st.Multi, st.Judged = len(multi), len(judged)

	r := rand.New(rand.NewPCG(Seed1, Seed2))
	inTest := map[string]bool{}
	for _, group := range [][]*Query{single, multi} {
		r.Shuffle(len(group), func(i, j int) { group[i], group[j] = group[j], group[i] })
		for _, q := range group[:len(group)/2] {
			inTest[q.ID] = true
		}
	}
	test, dev := Split{Name: SplitTest}, Split{Name: SplitDev}
	for _, q := range qs { // file order
		j := Judgement{QueryID: q.ID, Answers: q.Answers, Helps: q.Helps, Multi: len(q.Answers) > 1}
		if inTest[q.ID] {
			test.Judgements = append(test.Judgements, j)
		} else {
			dev.Judgements = append(dev.Judgements, j)
		}
	}
	ds.Splits = []Split{test, dev}
	return ds, nil
}
