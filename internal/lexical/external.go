package lexical

import "math"

// ScoreDoc returns the BM25F score [Index.Search] would give d for query if
// d were one more document of the index: the collection statistics (N,
// document frequencies, mean field lengths) are the index's with d counted
// in, and d's ID is not looked up (a document with the same ID is not
// replaced). Nothing is added. It returns 0 when d shares no term with
// query or query has only stop words, like Search. contextd uses it to
// rank a resource expanded from a template alongside the listed ones.
func (x *Index) ScoreDoc(query string, d Doc) float64 {
	terms, onlyStop := analyze(query, true)
	if len(terms) == 0 || onlyStop {
		return 0
	}
	terms = distinct(terms)
	a := x.analyze(d)
	at := make(map[string]int, len(a.terms))
	for i, t := range a.terms {
		at[t] = i
	}
	k1, b, w := x.p.k1, x.p.b, &x.p.weights

	x.mu.RLock()
	defer x.mu.RUnlock()
	N := float64(len(x.ids) + 1)
	var avg [numFields]float64
	for f, total := range x.totalLen {
		avg[f] = float64(total+int64(a.lens[f])) / N
	}
	score := 0.0
	for _, t := range terms {
		i, ok := at[t]
		if !ok {
			continue
		}
		df := float64(len(x.postings[t]) + 1)
		idf := math.Log(1 + (N-df+0.5)/(df+0.5))
		var tf float64
		for f := range numFields {
			if a.freqs[i][f] == 0 {
				continue
			}
			norm := 1 - b + b*float64(a.lens[f])/avg[f]
			tf += w[f] * float64(a.freqs[i][f]) / norm
		}
		score += idf * tf * (k1 + 1) / (tf + k1)
	}
	return score
}
