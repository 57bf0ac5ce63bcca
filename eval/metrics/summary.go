package metrics

import (
	"math"
	"slices"
	"time"
)

// A Query is one evaluated query: what the ranker returned, the judgements
// it is scored against, and how long it took.
type Query struct {
	// ID names the query; it is carried for reports and not used in scoring.
	ID string
	// Ranking is the ranked document ids, best first.
	Ranking []string
	// Judgements maps document ids to graded relevance (>0 = relevant).
	Judgements map[string]int
	// Latency is the wall time of the query, as measured by the caller.
	Latency time.Duration
}

// A Summary aggregates the [Query] results of one ranking strategy.
type Summary struct {
	// Queries is the number of queries summarised.
	Queries int
	// Mean holds the arithmetic mean of every measure over the queries,
	// including the recall@k curve, point by point.
	Mean Scores
	// LatencyP50 and LatencyP95 are nearest-rank percentiles of the query
	// latencies (see [Percentile]).
	LatencyP50 time.Duration
	LatencyP95 time.Duration
}

// Summarize scores every query and returns the means and latency
// percentiles. With no queries every number is 0 and the curve is all zeros.
func Summarize(queries []Query) Summary {
	s := Summary{
		Queries: len(queries),
		Mean:    Scores{RecallCurve: make([]float64, CurveDepth)},
	}
	if len(queries) == 0 {
		return s
	}
	latencies := make([]time.Duration, len(queries))
	m := &s.Mean
	for i, q := range queries {
		sc := Score(q.Ranking, q.Judgements)
		m.HitAt1 += sc.HitAt1
		m.HitAt5 += sc.HitAt5
		m.RecallAt5 += sc.RecallAt5
		m.RecallAt10 += sc.RecallAt10
		m.MRR += sc.MRR
		m.NDCGAt10 += sc.NDCGAt10
		for k, r := range sc.RecallCurve {
			m.RecallCurve[k] += r
		}
		latencies[i] = q.Latency
	}
	n := float64(len(queries))
	m.HitAt1 /= n
	m.HitAt5 /= n
	m.RecallAt5 /= n
	m.RecallAt10 /= n
	m.MRR /= n
	m.NDCGAt10 /= n
	for k := range m.RecallCurve {
		m.RecallCurve[k] /= n
	}
	slices.Sort(latencies)
	s.LatencyP50 = nearestRank(latencies, 50)
	s.LatencyP95 = nearestRank(latencies, 95)
	return s
}

// Percentile returns the p-th percentile (0 < p ≤ 100) of latencies by the
// nearest-rank definition: the smallest value v such that at least p percent
// of the values are ≤ v, that is the ⌈p/100·n⌉-th smallest of n values. The
// result is always one of the measured values; nothing is interpolated.
// Percentile returns 0 for no values, and the smallest value for p ≤ 0.
// latencies is not modified.
func Percentile(latencies []time.Duration, p float64) time.Duration {
	return nearestRank(slices.Sorted(slices.Values(latencies)), p)
}

func nearestRank(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	// The rank is computed from p in integer hundredths of a percent so that,
	// for example, p = 95 and n = 20 give exactly rank 19 with no rounding
	// doubt.
	r := int(math.Round(p * 100))
	rank := (r*len(sorted) + 9999) / 10000
	return sorted[min(max(rank, 1), len(sorted))-1]
}
