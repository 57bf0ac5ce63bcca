// Package answers builds the answer-bearing dataset: a corpus of MCP
// resources from three servers, and developer questions each answered by a
// short exact string that occurs in exactly one resource. A context assembler
// answers a question when the text it returns contains one of the strings.
//
// # Corpus
//
// The corpus is BEIR-layout (package
// [github.com/contextd/contextd/eval/beir]) with contextd's resource fields,
// from three servers:
//
//   - "gosrc": Go standard-library source code. For each package of
//     [Packages], the non-test .go files of its directory (not its
//     subdirectories) that build for linux/amd64 ([godoc.Context]). _id
//     "gosrc:" + path below GOROOT/src, title that path, name the file name,
//     text (the description) empty as a file server gives none, uri
//     [GoSrcURIPrefix] + path, mimeType text/x-go, content the file.
//   - "godoc": the reference pages [Pages] of GOROOT/doc as they are
//     (text/html or text/markdown; title from the page's header, text its
//     subtitle or empty), ids "godoc:doc/" + file name; and the package
//     documents of the godoc dataset (eval/datasets/godoc) with their title,
//     description and content, re-ided "godoc:pkg/" + import path.
//   - "npmdocs": every .md file under npm's docs/content, as it is: _id
//     "npmdocs:" + relative path, title and text from the front matter's
//     title and description, uri [NPMURIPrefix] + relative path.
//
// # Questions
//
// The questions are written by hand in questions.jsonl ([Questions]; see
// [Question] for the format and [Check] for what is verified). [Convert]
// fails unless every answer string occurs in its document and in no other.
// The split is a seeded shuffle per (server, kind) group: each group, in file
// order, is shuffled with rand.New(rand.NewPCG(Seed1, Seed2)).Shuffle and its
// first half (rounded down) goes to test, the rest to dev.
//
// The output is a pure function of its inputs: converting twice gives
// identical bytes.
//
// # Using the dataset
//
// A harness loads the corpus and a split's queries with [beir.Load], the
// answer strings with [LoadAnswers], and judges a returned text with
// [Answer.Found].
package answers

import (
	_ "embed"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/contextd/contextd/eval/beir"
)

// Questions is the hand-written question file, questions.jsonl.
//
//go:embed questions.jsonl
var Questions []byte

// QuestionsFile is the name [Questions] is reported under in errors.
const QuestionsFile = "eval/internal/answers/questions.jsonl"

// Server names, the "server" field of the documents.
const (
	ServerGoSrc = "gosrc"
	ServerGoDoc = "godoc"
	ServerNPM   = "npmdocs"
)

// Servers lists the servers in corpus order.
var Servers = []string{ServerGoSrc, ServerGoDoc, ServerNPM}

// URI prefixes and MIME types.
const (
	GoSrcURIPrefix = "file:///usr/local/go/src/"
	GoDocURIPrefix = "godoc://"
	NPMURIPrefix   = "npm-docs://"
	GoMIMEType     = "text/x-go"
)

// Packages are the standard-library packages whose source is in the corpus:
// families of look-alikes (hashes, encodings, containers) and the packages
// developers ask about most.
var Packages = []string{
	"crypto/md5", "crypto/sha1", "crypto/sha256", "crypto/sha512", "crypto/hmac", "crypto/rand", "crypto/subtle",
	"hash/crc32", "hash/fnv", "hash/adler32", "hash/maphash",
	"bufio", "bytes", "strings", "strconv", "unicode/utf8",
	"sync", "sync/atomic", "context", "errors", "time", "os",
	"io", "io/fs", "path", "path/filepath",
	"encoding/json", "encoding/csv", "encoding/xml", "encoding/base64", "encoding/hex", "encoding/binary", "encoding/pem",
	"net/url", "sort", "slices", "maps",
	"container/heap", "container/list", "container/ring",
	"regexp", "compress/gzip", "compress/flate", "archive/zip",
	"log/slog", "flag", "text/tabwriter", "mime",
}

// Pages are the files of GOROOT/doc in the corpus.
var Pages = []string{"go_spec.html", "go_mem.html", "asm.html", "godebug.md"}

// Seed1 and Seed2 seed the split's shuffle: the year and day (10 November)
// Go was announced, as for the godoc dataset.
const (
	Seed1 uint64 = 2009
	Seed2 uint64 = 1110
)

// Split names, and the grade of the answer's document in the qrels.
const (
	SplitDev    = "dev"
	SplitTest   = "test"
	GradeAnswer = 2
)

// Options configures [Convert]. A nil *Options means the defaults.
type Options struct {
	// Questions is the question file's content; nil means [Questions].
	Questions []byte
	// QuestionsName names it in errors; "" means [QuestionsFile].
	QuestionsName string
	// Packages and Pages replace [Packages] and [Pages] when not nil.
	Packages, Pages []string
}

// A Dataset is the converted corpus and questions, ready to [Dataset.Write].
type Dataset struct {
	// GoVersion is the first line of GOROOT/VERSION; GoVersionTime its
	// "time" line without the word, or "". NPMVersion is npm's version.
	GoVersion, GoVersionTime, NPMVersion string
	// Corpus holds the documents: gosrc by path, the godoc pages in [Pages]
	// order, the godoc packages in import-path order, npmdocs by path.
	Corpus []beir.Doc
	// Questions are the located questions, in file order.
	Questions []*Located
	// InTest reports the questions of the test split, by id.
	InTest map[string]bool
	// Packages and Pages are the Go packages and pages read.
	Packages, Pages []string
	// GoLicense and NPMLicense are GOROOT/LICENSE and npm's LICENSE.
	GoLicense, NPMLicense []byte
	// Stats counts facts for the README.
	Stats Stats
}

// Stats counts facts about the sources.
type Stats struct {
	// GoSrcSHA256 is the SHA-256 over the gosrc files' paths and contents;
	// GoSrcSkipped counts the non-test .go files of Packages that do not
	// build for linux/amd64 and are left out.
	GoSrcSHA256  string
	GoSrcSkipped int
	// Docs and Bytes count documents and content bytes per server.
	Docs, Bytes map[string]int
}

// Convert reads the Go distribution in goroot, npm's documentation in
// npmDocs (npm's docs/content directory; its package.json and LICENSE are two
// levels up), the godoc dataset in godocDir, and the questions, and builds the
// dataset as the package documentation describes.
func Convert(goroot, npmDocs, godocDir string, opts *Options) (*Dataset, error) {
	o := Options{Questions: Questions, QuestionsName: QuestionsFile, Packages: Packages, Pages: Pages}
	if opts != nil {
		if opts.Questions != nil {
			o.Questions = opts.Questions
		}
		if opts.QuestionsName != "" {
			o.QuestionsName = opts.QuestionsName
		}
		if opts.Packages != nil {
			o.Packages = opts.Packages
		}
		if opts.Pages != nil {
			o.Pages = opts.Pages
		}
	}
	qs, err := ParseQuestions(o.QuestionsName, o.Questions)
	if err != nil {
		return nil, err
	}
	g, err := readGo(goroot, o.Packages, o.Pages)
	if err != nil {
		return nil, err
	}
	pkgs, err := readGodocCorpus(godocDir)
	if err != nil {
		return nil, err
	}
	n, err := readNPM(npmDocs)
	if err != nil {
		return nil, err
	}
	ds := &Dataset{
		GoVersion: g.version, GoVersionTime: g.versionTime, NPMVersion: n.version,
		GoLicense: g.license, NPMLicense: n.license,
		Packages: slices.Sorted(slices.Values(o.Packages)), Pages: o.Pages,
		Corpus: slices.Concat(g.src, g.pages, pkgs, n.docs),
		Stats:  Stats{GoSrcSHA256: g.srcSHA256, GoSrcSkipped: g.skipped, Docs: map[string]int{}, Bytes: map[string]int{}},
	}
	seen := map[string]bool{}
	for _, d := range ds.Corpus {
		if seen[d.ID] {
			return nil, fmt.Errorf("answers: two documents have id %s", d.ID)
		}
		seen[d.ID] = true
		ds.Stats.Docs[d.Server]++
		ds.Stats.Bytes[d.Server] += len(d.Content)
	}
	if ds.Questions, err = Check(o.QuestionsName, qs, ds.Corpus); err != nil {
		return nil, err
	}
	ds.InTest = split(ds.Questions)
	return ds, nil
}

// split shuffles each (server, kind) group in file order and puts the first
// half of each, rounded down, in test.
func split(qs []*Located) map[string]bool {
	groups := map[string][]*Located{}
	var keys []string
	for _, q := range qs {
		k := q.Server + "\x00" + q.Kind
		if _, ok := groups[k]; !ok {
			keys = append(keys, k)
		}
		groups[k] = append(groups[k], q)
	}
	slices.SortFunc(keys, strings.Compare)
	r := rand.New(rand.NewPCG(Seed1, Seed2))
	inTest := map[string]bool{}
	for _, k := range keys {
		g := groups[k]
		r.Shuffle(len(g), func(i, j int) { g[i], g[j] = g[j], g[i] })
		for _, q := range g[:len(g)/2] {
			inTest[q.ID] = true
		}
	}
	return inTest
}
