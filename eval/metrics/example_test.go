package metrics_test

import (
	"fmt"
	"time"

	"github.com/contextd/contextd/eval/metrics"
)

func ExampleSummarize() {
	judgements := map[string]int{"weather": 1, "news": 1}
	s := metrics.Summarize([]metrics.Query{
		{ID: "q1", Ranking: []string{"news", "finance", "weather"}, Judgements: judgements, Latency: 3 * time.Millisecond},
		{ID: "q2", Ranking: []string{"finance"}, Judgements: judgements, Latency: 5 * time.Millisecond},
	})
	fmt.Printf("hit@1 %.2f  recall@5 %.2f  MRR %.2f  nDCG@10 %.3f  p95 %v\n",
		s.Mean.HitAt1, s.Mean.RecallAt5, s.Mean.MRR, s.Mean.NDCGAt10, s.LatencyP95)
	fmt.Println("recall@1..3:", s.Mean.RecallCurve[:3])
	// Output:
	// hit@1 0.50  recall@5 0.50  MRR 0.50  nDCG@10 0.460  p95 5ms
	// recall@1..3: [0.25 0.25 0.5]
}
