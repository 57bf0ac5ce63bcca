// Command convert-godoc builds the Go standard-library documentation dataset
// in eval/datasets/godoc from a Go distribution and the hand-written queries
// of eval/internal/godoc. See package eval/internal/godoc for the rules and
// the generated README for the result.
//
//	go run ./eval/cmd/convert-godoc -goroot $(go env GOROOT) -out eval/datasets/godoc
package main

import (
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/contextd/contextd/eval/internal/godoc"
)

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "convert-godoc:", err)
		os.Exit(1)
	}
}

func run(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("convert-godoc", flag.ContinueOnError)
	fs.SetOutput(stderr)
	goroot := fs.String("goroot", "", "Go distribution to document (the output of go env GOROOT)")
	out := fs.String("out", "eval/datasets/godoc", "dataset directory to write")
	queries := fs.String("queries", "", "query file to use instead of the embedded eval/internal/godoc/queries.tsv")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *goroot == "" || fs.NArg() > 0 {
		fs.Usage()
		return fmt.Errorf("want -goroot DIR and no arguments")
	}
	opts := &godoc.Options{}
	if *queries != "" {
		b, err := os.ReadFile(*queries)
		if err != nil {
			return err
		}
		opts.Queries, opts.QueriesName = b, *queries
	}
	ds, err := godoc.Convert(*goroot, opts)
	if err != nil {
		return err
	}
	if err := ds.Write(*out); err != nil {
		return err
	}
	for _, s := range ds.Splits {
		fmt.Fprintf(stdout, "%s: %d queries\n", s.Name, len(s.Judgements))
	}
	fmt.Fprintf(stdout, "%s: %d packages (%d bytes of Markdown), %d queries written to %s\n",
		ds.GoVersion, len(ds.Corpus), ds.Stats.ContentBytes, len(ds.Queries), *out)
	return nil
}
