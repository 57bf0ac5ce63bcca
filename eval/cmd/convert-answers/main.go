// Command convert-answers builds the answer-bearing dataset in
// eval/datasets/answers from a Go distribution, npm's documentation, the
// godoc dataset and the hand-written questions of eval/internal/answers. See
// package eval/internal/answers for the rules and the generated README for
// the result.
//
//	go run ./eval/cmd/convert-answers -goroot $(go env GOROOT) \
//	  -npmdocs /usr/lib/node_modules/npm/docs/content -out eval/datasets/answers
//
// With -locate STRING it converts nothing and prints which documents of the
// dataset in -out contain STRING, for writing questions:
//
//	go run ./eval/cmd/convert-answers -locate 'MaxScanTokenSize = 64 * 1024'
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/contextd/contextd/eval/beir"
	"github.com/contextd/contextd/eval/internal/answers"
)

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "convert-answers:", err)
		os.Exit(1)
	}
}

func run(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("convert-answers", flag.ContinueOnError)
	fs.SetOutput(stderr)
	goroot := fs.String("goroot", "", "Go distribution (the output of go env GOROOT)")
	npmDocs := fs.String("npmdocs", "", "npm's docs/content directory, e.g. /usr/lib/node_modules/npm/docs/content")
	godocDir := fs.String("godoc", "eval/datasets/godoc", "godoc dataset whose package documents to include")
	out := fs.String("out", "eval/datasets/answers", "dataset directory to write")
	questions := fs.String("questions", "", "question file to use instead of the embedded eval/internal/answers/questions.jsonl")
	packages := fs.String("packages", "", "comma-separated Go packages whose source to include instead of the built-in list")
	locate := fs.String("locate", "", "print the documents of the dataset in -out that contain this exact string, and convert nothing")
	pages := fs.String("pages", "", "comma-separated files of GOROOT/doc to include instead of the built-in list")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *locate != "" {
		if fs.NArg() > 0 {
			return fmt.Errorf("want no arguments")
		}
		return locateIn(*out, *locate, stdout)
	}
	if *goroot == "" || *npmDocs == "" || fs.NArg() > 0 {
		fs.Usage()
		return fmt.Errorf("want -goroot DIR -npmdocs DIR and no arguments")
	}
	opts := &answers.Options{}
	if *questions != "" {
		b, err := os.ReadFile(*questions)
		if err != nil {
			return err
		}
		opts.Questions, opts.QuestionsName = b, *questions
	}
	if *packages != "" {
		opts.Packages = strings.Split(*packages, ",")
	}
	if *pages != "" {
		opts.Pages = strings.Split(*pages, ",")
	}
	ds, err := answers.Convert(*goroot, *npmDocs, *godocDir, opts)
	if err != nil {
		return err
	}
	if err := ds.Write(*out); err != nil {
		return err
	}
	test := len(ds.InTest)
	fmt.Fprintf(stdout, "%s, npm %s: %d documents, %d questions (%d test, %d dev) written to %s\n",
		ds.GoVersion, ds.NPMVersion, len(ds.Corpus), len(ds.Questions), test, len(ds.Questions)-test, *out)
	return nil
}

// locateIn prints the documents of the dataset in dir that contain s: one
// line per document, "ID<tab>first byte offset<tab>content bytes", then a
// count. It helps question writers find an answer string that is unique.
func locateIn(dir, s string, stdout io.Writer) error {
	ds, err := beir.Load(dir, answers.SplitDev)
	if err != nil {
		return err
	}
	hits := answers.Locate(ds.Corpus, s)
	for _, h := range hits {
		fmt.Fprintf(stdout, "%s\t%d\t%d\n", h.ID, h.Offset, h.Size)
	}
	fmt.Fprintf(stdout, "%q: %d of %d documents\n", s, len(hits), len(ds.Corpus))
	return nil
}
