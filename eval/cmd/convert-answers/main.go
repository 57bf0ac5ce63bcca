// Command convert-answers builds the answer-bearing dataset in
// eval/datasets/answers from a Go distribution, npm's documentation, the
// godoc dataset and the hand-written questions of eval/internal/answers. See
// package eval/internal/answers for the rules and the generated README for
// the result.
//
//	go run ./eval/cmd/convert-answers -goroot $(go env GOROOT) \
//	  -npmdocs /usr/lib/node_modules/npm/docs/content -out eval/datasets/answers
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

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
	pages := fs.String("pages", "", "comma-separated files of GOROOT/doc to include instead of the built-in list")
	if err := fs.Parse(args); err != nil {
		return err
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
