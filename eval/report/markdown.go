package report

import (
	"bufio"
	"fmt"
	"io"
	"strings"

	"github.com/contextd/contextd/eval/metrics"
)

// WriteMarkdown writes a Markdown report of r: a table with every strategy's
// metrics and latency percentiles, the chart (when chart, a path relative to
// the report, is not empty), a table of recall@k for k = 1…20, and the
// definitions of the measures.
func WriteMarkdown(w io.Writer, r *Results, chart string) error {
	if err := r.check(); err != nil {
		return err
	}
	b := bufio.NewWriter(w)
	fmt.Fprintf(b, "# Retrieval evaluation: %s / %s\n\n", md(r.Dataset), md(r.Split))
	fmt.Fprintf(b, "%d queries, %d strategies. Metrics are means over queries; a document is relevant\n", r.Queries, len(r.Strategies))
	fmt.Fprintf(b, "when its qrels score is above 0. Latency is per query, in milliseconds.\n\n")

	b.WriteString("| strategy | nDCG@10 | recall@5 | recall@10 | hit@1 | hit@5 | MRR | p50 ms | p95 ms |\n")
	b.WriteString("|---|--:|--:|--:|--:|--:|--:|--:|--:|\n")
	for _, s := range r.Strategies {
		m := s.Summary.Mean
		fmt.Fprintf(b, "| %s | %.4f | %.4f | %.4f | %.4f | %.4f | %.4f | %.2f | %.2f |\n",
			md(s.Name), m.NDCGAt10, m.RecallAt5, m.RecallAt10, m.HitAt1, m.HitAt5, m.MRR,
			millis(s.Summary.LatencyP50), millis(s.Summary.LatencyP95))
	}

	fmt.Fprintf(b, "\n## Recall@k\n\n")
	if chart != "" {
		fmt.Fprintf(b, "![recall@k for k = 1 to %d, one line per strategy](%s)\n\n", metrics.CurveDepth, chart)
	}
	b.WriteString("| k |")
	for _, s := range r.Strategies {
		fmt.Fprintf(b, " %s |", md(s.Name))
	}
	b.WriteString("\n|--:|")
	b.WriteString(strings.Repeat("--:|", len(r.Strategies)))
	b.WriteString("\n")
	for k := 1; k <= metrics.CurveDepth; k++ {
		fmt.Fprintf(b, "| %d |", k)
		for _, s := range r.Strategies {
			fmt.Fprintf(b, " %.4f |", s.Summary.Mean.RecallCurve[k-1])
		}
		b.WriteString("\n")
	}

	b.WriteString(`
## Definitions

- **hit@k**: the share of queries with at least one relevant document in the top k.
- **recall@k**: the mean, over queries, of the share of a query's relevant documents found in
  the top k. With one relevant document per query it equals hit@k.
- **MRR**: the mean of 1/rank of the first relevant document (0 when none is ranked), with no
  cut-off.
- **nDCG@10**: the discounted cumulative gain of the top 10 (graded gain / log2(rank + 1)),
  divided by that of the ideal ordering of the judged documents (Järvelin & Kekäläinen, ACM
  TOIS 2002); the form trec_eval and BEIR report.
- **p50 / p95**: nearest-rank percentiles of per-query latency: the smallest measured latency
  that at least 50% / 95% of the queries do not exceed.
`)
	return b.Flush()
}

// md escapes text for a Markdown table cell or heading.
func md(s string) string {
	r := strings.NewReplacer("|", `\|`, "\n", " ", "\r", " ")
	return r.Replace(s)
}
