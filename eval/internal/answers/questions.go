package answers

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/contextd/contextd/eval/beir"
)

// Kinds of question.
const (
	// KindDeep: the answer lies beyond the first DeepOffset bytes of a
	// document of at least DeepMinSize bytes.
	KindDeep = "deep"
	// KindSimilar: the answer's document has look-alikes in the corpus,
	// listed in the question's "near" field.
	KindSimilar = "similar"
	// KindReworded: the question shares no word of MinSharedWord letters or
	// more with the answer strings (see [Check]).
	KindReworded = "reworded"
)

// Limits the questions are checked against.
const (
	DeepMinSize   = 32 * 1024
	DeepOffset    = 16 * 1024
	MinAnswerLen  = 5
	MaxAnswerLen  = 60
	MinSharedWord = 4
)

// A Question is one line of the question file, a JSON object:
//
//	{"id": "a001", "kind": "deep", "doc": "gosrc:bufio/scan.go",
//	 "near": ["gosrc:encoding/csv/reader.go"],
//	 "question": "…", "answers": ["MaxScanTokenSize = 64 * 1024"]}
//
// id is "a" and three or more digits, unique; kind is one of the Kind
// constants; doc is the corpus id of the document that holds the answer;
// near lists look-alike documents (required for "similar", optional
// otherwise); answers are one or more exact strings, alternatives, each of
// which must occur in doc and in no other document.
type Question struct {
	ID       string   `json:"id"`
	Kind     string   `json:"kind"`
	Doc      string   `json:"doc"`
	Near     []string `json:"near,omitempty"`
	Question string   `json:"question"`
	Answers  []string `json:"answers"`
	// Line is the question's line in the file.
	Line int `json:"-"`
}

var idPattern = regexp.MustCompile(`^a[0-9]{3,}$`)

// ParseQuestions reads a question file: UTF-8, one JSON object per line
// (see [Question]); empty lines and lines that begin with "#" or "//" are
// ignored. It checks the form of each question, not the corpus (see
// [Check]); an error names name and the line.
func ParseQuestions(name string, b []byte) ([]*Question, error) {
	if !utf8.Valid(b) {
		return nil, fmt.Errorf("%s: invalid UTF-8", name)
	}
	var qs []*Question
	ids, texts := map[string]int{}, map[string]int{}
	for i, line := range strings.Split(string(b), "\n") {
		n := i + 1
		t := strings.TrimSpace(line)
		if t == "" || strings.HasPrefix(t, "#") || strings.HasPrefix(t, "//") {
			continue
		}
		q := &Question{Line: n}
		dec := json.NewDecoder(strings.NewReader(t))
		dec.DisallowUnknownFields()
		if err := dec.Decode(q); err != nil {
			return nil, fmt.Errorf("%s:%d: %v", name, n, err)
		}
		if dec.More() {
			return nil, fmt.Errorf("%s:%d: more than one JSON value", name, n)
		}
		if err := q.checkForm(); err != nil {
			return nil, fmt.Errorf("%s:%d: %v", name, n, err)
		}
		if l, dup := ids[q.ID]; dup {
			return nil, fmt.Errorf("%s:%d: id %s is used on line %d too", name, n, q.ID, l)
		}
		if l, dup := texts[q.Question]; dup {
			return nil, fmt.Errorf("%s:%d: question %s repeats line %d", name, n, q.ID, l)
		}
		ids[q.ID], texts[q.Question] = n, n
		qs = append(qs, q)
	}
	if len(qs) == 0 {
		return nil, fmt.Errorf("%s: no questions", name)
	}
	return qs, nil
}

func (q *Question) checkForm() error {
	if !idPattern.MatchString(q.ID) {
		return fmt.Errorf("id %q: want a and three or more digits", q.ID)
	}
	switch q.Kind {
	case KindDeep, KindSimilar, KindReworded:
	default:
		return fmt.Errorf("question %s: kind %q: want deep, similar or reworded", q.ID, q.Kind)
	}
	if q.Doc == "" {
		return fmt.Errorf("question %s: no doc", q.ID)
	}
	if strings.TrimSpace(q.Question) == "" || strings.TrimSpace(q.Question) != q.Question ||
		strings.ContainsAny(q.Question, "\n\r\t") {
		return fmt.Errorf("question %s: question %q is empty, has surrounding white space or a tab or newline", q.ID, q.Question)
	}
	if q.Kind == KindSimilar && len(q.Near) == 0 {
		return fmt.Errorf("question %s: a similar question lists its look-alikes in near", q.ID)
	}
	if len(q.Answers) == 0 {
		return fmt.Errorf("question %s: no answers", q.ID)
	}
	for _, a := range q.Answers {
		if len(a) < MinAnswerLen || len(a) > MaxAnswerLen {
			return fmt.Errorf("question %s: answer %q is %d bytes, want %d to %d", q.ID, a, len(a), MinAnswerLen, MaxAnswerLen)
		}
		if strings.Contains(q.Question, a) {
			return fmt.Errorf("question %s: the question contains its answer %q", q.ID, a)
		}
	}
	if q.Kind == KindReworded {
		if w := sharedWords(q.Question, q.Answers); len(w) > 0 {
			return fmt.Errorf("question %s: reworded, yet it shares %q with its answers", q.ID, w)
		}
	}
	return nil
}

// stopWords are common English words a reworded question may share with its
// answer.
var stopWords = map[string]bool{
	"that": true, "this": true, "with": true, "from": true, "when": true, "will": true,
	"have": true, "each": true, "into": true, "than": true, "then": true, "them": true,
	"they": true, "what": true, "which": true, "does": true, "there": true, "their": true,
	"only": true, "more": true, "must": true, "your": true, "been": true, "also": true,
}

// sharedWords returns the words of at least MinSharedWord letters, digits or
// underscores that the question and an answer share, case-insensitively, other
// than stop words.
func sharedWords(question string, answers []string) []string {
	qw := map[string]bool{}
	for _, w := range words(question) {
		qw[w] = true
	}
	var shared []string
	for _, a := range answers {
		for _, w := range words(a) {
			if qw[w] && !slices.Contains(shared, w) {
				shared = append(shared, w)
			}
		}
	}
	return shared
}

func words(s string) []string {
	var out []string
	for _, w := range strings.FieldsFunc(strings.ToLower(s), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '_'
	}) {
		if utf8.RuneCountInString(w) >= MinSharedWord && !stopWords[w] {
			out = append(out, w)
		}
	}
	return out
}

// A Located question is a checked question with where its answers are.
type Located struct {
	*Question
	// Server is the answer document's server.
	Server string
	// Offsets are the byte offsets of the first occurrence of each answer
	// in the document's content.
	Offsets []int
	// Size is the document's content size in bytes.
	Size int
}

// Check verifies every question against corpus and returns them located, in
// file order. Each answer must occur, byte for byte, in the content of the
// question's doc and of no other document; a deep question's doc must be at
// least DeepMinSize bytes with every answer first occurring at DeepOffset or
// later; the near documents must exist and differ from doc. The error lists
// every problem found, one per line.
func Check(name string, qs []*Question, corpus []beir.Doc) ([]*Located, error) {
	byID := make(map[string]*beir.Doc, len(corpus))
	for i := range corpus {
		byID[corpus[i].ID] = &corpus[i]
	}
	var errs []error
	bad := func(q *Question, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s:%d: question %s: %s", name, q.Line, q.ID, fmt.Sprintf(format, args...)))
	}
	var out []*Located
	for _, q := range qs {
		d, ok := byID[q.Doc]
		if !ok {
			bad(q, "doc %q is not in the corpus", q.Doc)
			continue
		}
		for _, n := range q.Near {
			if _, ok := byID[n]; !ok || n == q.Doc {
				bad(q, "near %q is not another document of the corpus", n)
			}
		}
		l := &Located{Question: q, Server: d.Server, Size: len(d.Content)}
		for _, a := range q.Answers {
			var in []string
			for _, h := range Locate(corpus, a) {
				in = append(in, h.ID)
			}
			switch {
			case len(in) == 0:
				bad(q, "answer %q occurs in no document", a)
			case len(in) > 1:
				bad(q, "answer %q occurs in %d documents: %s", a, len(in), strings.Join(in[:min(len(in), 5)], " "))
			case in[0] != q.Doc:
				bad(q, "answer %q occurs in %s, not in doc %s", a, in[0], q.Doc)
			}
			off := strings.Index(d.Content, a)
			l.Offsets = append(l.Offsets, off)
			if q.Kind == KindDeep && off >= 0 && (len(d.Content) < DeepMinSize || off < DeepOffset) {
				bad(q, "deep, yet answer %q is at byte %d of a %d-byte document (want ≥ %d of ≥ %d)",
					a, off, len(d.Content), DeepOffset, DeepMinSize)
			}
		}
		out = append(out, l)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return out, nil
}

// A Hit is a document that contains a string.
type Hit struct {
	ID string
	// Offset is the byte offset of the first occurrence in the content;
	// Size the content's size in bytes.
	Offset, Size int
}

// Locate returns the documents of corpus whose content contains s, byte for
// byte, in corpus order.
func Locate(corpus []beir.Doc, s string) []Hit {
	var hits []Hit
	for _, d := range corpus {
		if i := strings.Index(d.Content, s); i >= 0 {
			hits = append(hits, Hit{ID: d.ID, Offset: i, Size: len(d.Content)})
		}
	}
	return hits
}

// jsonLine encodes v on one line without HTML escaping.
func jsonLine(b *bytes.Buffer, v any) error {
	enc := json.NewEncoder(b)
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}
