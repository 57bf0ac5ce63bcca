// Command contextd-eval measures contextd's ranking on a BEIR-layout dataset;
// `contextd eval` runs it. It is a separate program so that the eval (its
// datasets, charting and extra embedders) is never linked into the daemon.
//
//	contextd-eval --dataset DIR --split NAME [--json] [--out DIR] [--strategy NAME]...
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"

	"github.com/contextd/contextd/eval/harness"
	"github.com/contextd/contextd/eval/report"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return
		}
		fmt.Fprintln(os.Stderr, "contextd eval:", err)
		os.Exit(1)
	}
}

type strategyList []string

func (s *strategyList) String() string     { return strings.Join(*s, ",") }
func (s *strategyList) Set(v string) error { *s = append(*s, v); return nil }

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("contextd eval", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dataset := fs.String("dataset", "", "BEIR-layout dataset directory (corpus.jsonl, queries.jsonl, qrels/SPLIT.tsv)")
	split := fs.String("split", "test", "qrels split to evaluate")
	asJSON := fs.Bool("json", false, "print the results as JSON")
	out := fs.String("out", "", "also write results.json, report.md and a recall@k chart (SVG) to this directory")
	quiet := fs.Bool("quiet", false, "no progress on stderr")
	floors := fs.String("floors", "", "with --budgets, also assemble with each of these value floors (e.g. 0.5,0.8) to compare them")
	budgets := fs.String("budgets", "", "instead of ranking, compare assembly at these token budgets (e.g. 500,2000,8000): contextd vs read-all+trim vs greedy-in-order")
	answers := fs.Bool("answers", false, "with --budgets, measure how often the answer holds the query's answer string (the dataset's answers.jsonl): contextd vs greedy-whole vs head-cut")
	cases := fs.String("cases", "", "with --answers, also write every answer (query, assembler, budget, what was returned) as JSON to this file")
	dataDir := fs.String("data-dir", "", "with --answers, keep the index in this directory so that a second run embeds nothing again")
	var only strategyList
	fs.Var(&only, "strategy", "evaluate only this strategy (repeatable): \""+strings.Join(harness.StrategyNames(), "\", \"")+"\"")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: contextd eval --dataset DIR [--split NAME] [--json] [--out DIR] [--strategy NAME]...")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *dataset == "" || fs.NArg() > 0 {
		fs.Usage()
		return errors.New("--dataset is required and there are no positional arguments")
	}
	opts := harness.Options{Dataset: *dataset, Split: *split, Progress: stderr}
	if *quiet {
		opts.Progress = nil
	}
	if len(only) > 0 {
		opts.Strategies = only
	}
	if *budgets != "" {
		var bs []int
		for _, f := range strings.Split(*budgets, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || n < 1 {
				return fmt.Errorf("--budgets: %q is not a token budget >= 1", f)
			}
			bs = append(bs, n)
		}
		var fl []float64
		if *floors != "" {
			for _, f := range strings.Split(*floors, ",") {
				v, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
				if err != nil || v < 0 || v > 1 {
					return fmt.Errorf("--floors: %q is not a value floor in [0, 1]", f)
				}
				fl = append(fl, v)
			}
		}
		if *answers {
			opts.DataDir = *dataDir
			rows, all, err := harness.RunAnswers(ctx, opts, bs)
			if err != nil {
				return err
			}
			if *cases != "" {
				b, err := json.MarshalIndent(all, "", "  ")
				if err != nil {
					return err
				}
				if err := os.WriteFile(*cases, b, 0o644); err != nil {
					return fmt.Errorf("--cases: %w", err)
				}
			}
			if *asJSON {
				enc := json.NewEncoder(stdout)
				enc.SetIndent("", "  ")
				return enc.Encode(rows)
			}
			_, err = io.WriteString(stdout, harness.AnswerTable(rows))
			return err
		}
		rows, err := harness.RunBudget(ctx, opts, bs, fl...)
		if err != nil {
			return err
		}
		if *asJSON {
			enc := json.NewEncoder(stdout)
			enc.SetIndent("", "  ")
			return enc.Encode(rows)
		}
		_, err = io.WriteString(stdout, harness.BudgetTable(rows))
		return err
	}
	if *out != "" { // fail before a long run, not after it
		if err := os.MkdirAll(*out, 0o755); err != nil {
			return fmt.Errorf("--out: %w", err)
		}
	}
	res, err := harness.Run(ctx, opts)
	if err != nil {
		return err
	}
	if *out != "" {
		if err := report.WriteDir(*out, res); err != nil {
			return err
		}
		fmt.Fprintf(stderr, "eval: wrote %s\n", *out)
	}
	if *asJSON {
		return report.WriteJSON(stdout, res)
	}
	return report.WriteMarkdown(stdout, res, "")
}
