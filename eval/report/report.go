// Package report writes the results of an eval run: the JSON that
// `contextd eval --json` prints, a Markdown report, and a recall@k chart.
//
// Every writer is deterministic: the same [Results] give the same bytes.
// Strategies appear in the order of [Results.Strategies].
package report

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"time"

	"github.com/contextd/contextd/eval/metrics"
)

// Names of the files [WriteDir] writes.
const (
	JSONFile     = "results.json"
	MarkdownFile = "report.md"
	ChartFile    = "recall_at_k.svg"
)

// Results are the outcome of evaluating ranking strategies on one split of
// a dataset.
type Results struct {
	// Dataset names the dataset, for example "metatool".
	Dataset string
	// Split is the qrels split evaluated, for example "test".
	Split string
	// Queries is the number of queries evaluated.
	Queries int
	// Strategies are reported in this order; names must be unique and
	// non-empty.
	Strategies []Strategy
}

// A Strategy is one ranking strategy's scores.
type Strategy struct {
	Name string
	// Summary holds the means, the recall@k curve (metrics.CurveDepth
	// points) and the latency percentiles.
	Summary metrics.Summary
}

// check reports results a writer cannot represent: JSON has no NaN, a chart
// needs a full curve, and names identify strategies.
func (r *Results) check() error {
	seen := map[string]bool{}
	for i, s := range r.Strategies {
		if s.Name == "" {
			return fmt.Errorf("report: strategy %d has no name", i+1)
		}
		if seen[s.Name] {
			return fmt.Errorf("report: strategy %q appears twice", s.Name)
		}
		seen[s.Name] = true
		m := s.Summary.Mean
		if len(m.RecallCurve) != metrics.CurveDepth {
			return fmt.Errorf("report: strategy %q: recall curve has %d points, want %d",
				s.Name, len(m.RecallCurve), metrics.CurveDepth)
		}
		for _, v := range append([]float64{m.HitAt1, m.HitAt5, m.RecallAt5, m.RecallAt10, m.MRR, m.NDCGAt10}, m.RecallCurve...) {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return fmt.Errorf("report: strategy %q: a metric is %v", s.Name, v)
			}
		}
	}
	return nil
}

type jsonResults struct {
	Dataset    string         `json:"dataset"`
	Split      string         `json:"split"`
	Queries    int            `json:"queries"`
	Strategies []jsonStrategy `json:"strategies"`
}

type jsonStrategy struct {
	Name         string  `json:"name"`
	NDCGAt10     float64 `json:"ndcg_at_10"`
	RecallAt5    float64 `json:"recall_at_5"`
	RecallAt10   float64 `json:"recall_at_10"`
	HitAt1       float64 `json:"hit_at_1"`
	HitAt5       float64 `json:"hit_at_5"`
	MRR          float64 `json:"mrr"`
	LatencyP50MS float64 `json:"latency_p50_ms"`
	LatencyP95MS float64 `json:"latency_p95_ms"`
}

// millis converts a duration to fractional milliseconds.
func millis(d time.Duration) float64 {
	return float64(d) / float64(time.Millisecond)
}

// WriteJSON writes r as one indented JSON object:
//
//	{"dataset":…, "split":…, "queries":N, "strategies":[{"name":…,
//	 "ndcg_at_10":…, "recall_at_5":…, "recall_at_10":…, "hit_at_1":…,
//	 "hit_at_5":…, "mrr":…, "latency_p50_ms":…, "latency_p95_ms":…}, …]}
//
// Keys come in that order; metrics are full-precision means and latencies
// are fractional milliseconds. It ends with a newline.
func WriteJSON(w io.Writer, r *Results) error {
	if err := r.check(); err != nil {
		return err
	}
	out := jsonResults{Dataset: r.Dataset, Split: r.Split, Queries: r.Queries, Strategies: []jsonStrategy{}}
	for _, s := range r.Strategies {
		m := s.Summary.Mean
		out.Strategies = append(out.Strategies, jsonStrategy{
			Name:         s.Name,
			NDCGAt10:     m.NDCGAt10,
			RecallAt5:    m.RecallAt5,
			RecallAt10:   m.RecallAt10,
			HitAt1:       m.HitAt1,
			HitAt5:       m.HitAt5,
			MRR:          m.MRR,
			LatencyP50MS: millis(s.Summary.LatencyP50),
			LatencyP95MS: millis(s.Summary.LatencyP95),
		})
	}
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

// WriteDir writes the JSON ([JSONFile]), the Markdown report
// ([MarkdownFile]) and the SVG chart ([ChartFile]) into dir, creating it if
// needed and replacing files of the same names.
func WriteDir(dir string, r *Results) error {
	if err := r.check(); err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	writers := []struct {
		name  string
		write func(io.Writer) error
	}{
		{JSONFile, func(w io.Writer) error { return WriteJSON(w, r) }},
		{MarkdownFile, func(w io.Writer) error { return WriteMarkdown(w, r, ChartFile) }},
		{ChartFile, func(w io.Writer) error { return WriteChart(w, r, "svg") }},
	}
	for _, wr := range writers {
		if err := writeFile(filepath.Join(dir, wr.name), wr.write); err != nil {
			return err
		}
	}
	return nil
}

func writeFile(path string, write func(io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("report: %w", err)
	}
	werr := write(f)
	cerr := f.Close()
	if err := errors.Join(werr, cerr); err != nil {
		return fmt.Errorf("report: write %s: %w", path, err)
	}
	return nil
}
