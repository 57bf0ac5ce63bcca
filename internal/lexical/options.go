package lexical

import (
	"fmt"
	"math"
)

// BM25 parameter defaults, from Robertson & Zaragoza, "The Probabilistic
// Relevance Framework: BM25 and Beyond" (2009), and the defaults of Lucene.
const (
	DefaultK1 = 1.2
	DefaultB  = 0.75
)

// FieldWeights are the BM25F weights of the descriptor fields. A term
// occurrence in a field counts as Weight occurrences (after per-field
// length normalisation), so a weight of 2 makes a match in that field worth
// as much as two matches in a field of weight 1. A zero weight leaves the
// field out of the index.
type FieldWeights struct {
	Name        float64
	Title       float64
	Description float64
	URI         float64
	MIMEType    float64
	Content     float64
}

// DefaultWeights returns the weights used when [Options.Weights] is the
// zero value:
//
//	Name        2.0   short and chosen by the server to identify the resource
//	Title       2.0   the human-readable name; often the same words as Name
//	Description 1.0   the reference field; longer, more incidental words
//	URI         0.5   path words are informative, but schemes and hosts
//	                  ("file", "https", "com") are noise
//	MIMEType    0.5   "json", "markdown", "go" help a query that names a
//	                  format, but should not outrank a topical match
//	Content     0.1   the resource's own text, when indexed: by far the
//	                  most words, most of them incidental to what the
//	                  resource is for, and a resource whose text is not
//	                  indexed cannot match them. On the shipped eval
//	                  datasets' dev splits 0.1 was as good as 0.25 where
//	                  every resource has text (Go docs, nDCG@10 0.743 vs
//	                  0.745) and best where descriptors carry the meaning
//	                  (MetaTool, 0.709 vs 0.708, with 0.5 and 1 worse);
//	                  see eval/README.md
func DefaultWeights() FieldWeights {
	return FieldWeights{Name: 2, Title: 2, Description: 1, URI: 0.5, MIMEType: 0.5, Content: 0.1}
}

// Options configure an [Index]. The zero value (and a nil *Options) gives
// BM25F with the documented defaults.
type Options struct {
	// K1 controls how quickly repeated occurrences of a term saturate.
	// If zero, DefaultK1 is used. A negative value means k1 = 0: only the
	// presence of a term counts, not its frequency.
	K1 float64
	// B controls length normalisation, from 0 (none) to 1 (full).
	// If zero, DefaultB is used. A negative value means b = 0.
	B float64
	// Weights are the per-field BM25F weights. If Weights is the zero
	// value, DefaultWeights() is used. Otherwise each weight is used as
	// given, and a field with weight 0 is not indexed.
	Weights FieldWeights
	// GroupBytes bounds the heap, in bytes, the documents of one
	// [Doc.Group] may take for their terms, as [Index.GroupBytes]
	// estimates it. A document inserted when its group is full keeps its
	// first [MinGroupTerms] descriptor terms (in field order: Name first)
	// and as many more as fit; the terms left out are not indexed for it,
	// as if its text stopped there (field lengths still count every
	// occurrence).
	// Zero or negative means no bound.
	GroupBytes int64
}

// field numbers a descriptor field; it indexes per-field arrays.
type field int

const (
	fieldName field = iota
	fieldTitle
	fieldDescription
	fieldURI
	fieldMIMEType
	fieldContent
	numFields
)

var fieldNames = [numFields]string{"Name", "Title", "Description", "URI", "MIMEType", "Content"}

// params are validated, defaulted [Options].
type params struct {
	k1, b      float64
	weights    [numFields]float64
	groupBytes int64
}

// newParams applies the defaults of [Options]. It panics on values that
// can only be programming errors: NaN or infinite parameters, b > 1, or
// negative weights.
func newParams(opts *Options) params {
	var o Options
	if opts != nil {
		o = *opts
	}
	p := params{k1: o.K1, b: o.B, groupBytes: max(o.GroupBytes, 0)}
	switch {
	case p.k1 == 0:
		p.k1 = DefaultK1
	case p.k1 < 0:
		p.k1 = 0
	}
	switch {
	case p.b == 0:
		p.b = DefaultB
	case p.b < 0:
		p.b = 0
	}
	if !finite(p.k1) {
		panic(fmt.Sprintf("lexical: invalid K1 %v", o.K1))
	}
	if !finite(p.b) || p.b > 1 {
		panic(fmt.Sprintf("lexical: invalid B %v (want 0 ≤ b ≤ 1)", o.B))
	}
	w := o.Weights
	if w == (FieldWeights{}) {
		w = DefaultWeights()
	}
	p.weights = [numFields]float64{
		fieldName:        w.Name,
		fieldTitle:       w.Title,
		fieldDescription: w.Description,
		fieldURI:         w.URI,
		fieldMIMEType:    w.MIMEType,
		fieldContent:     w.Content,
	}
	for f, x := range p.weights {
		if !finite(x) || x < 0 {
			panic(fmt.Sprintf("lexical: invalid %s weight %v", fieldNames[f], x))
		}
	}
	return p
}

func finite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }
