// Command convert-metatool converts the MetaTool benchmark files into the
// BEIR-layout dataset in eval/datasets/metatool. See package
// eval/internal/metatool for the rules and the generated README for the
// result.
//
//	go run ./eval/cmd/convert-metatool -src DIR -out eval/datasets/metatool
package main

import (
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/contextd/contextd/eval/internal/metatool"
)

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "convert-metatool:", err)
		os.Exit(1)
	}
}

func run(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("convert-metatool", flag.ContinueOnError)
	fs.SetOutput(stderr)
	src := fs.String("src", "", "directory holding the MetaTool source files (plugin_des.json, …)")
	out := fs.String("out", "eval/datasets/metatool", "dataset directory to write")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *src == "" || fs.NArg() > 0 {
		fs.Usage()
		return fmt.Errorf("want -src DIR and no arguments")
	}
	ds, err := metatool.Convert(*src, nil)
	if err != nil {
		return err
	}
	if err := ds.Write(*out); err != nil {
		return err
	}
	for _, s := range ds.Splits {
		fmt.Fprintf(stdout, "%s: %d queries\n", s.Name, len(s.Judgements))
	}
	fmt.Fprintf(stdout, "%d documents, %d queries written to %s\n", len(ds.Corpus), len(ds.Queries), *out)
	return nil
}
