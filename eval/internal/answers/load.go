package answers

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// An Answer is one line of answers.jsonl: a question's accepted answer
// strings and the document they occur in.
type Answer struct {
	// ID is the query id of queries.jsonl and the qrels.
	ID string `json:"_id"`
	// Split is "dev" or "test".
	Split string `json:"split"`
	// Answers are exact strings; any one of them in a returned text answers
	// the question.
	Answers []string `json:"answers"`
	// CorpusID is the document that holds every answer string.
	CorpusID string `json:"corpus-id"`
	// Kind is "deep", "similar" or "reworded".
	Kind string `json:"kind"`
}

// Found reports whether text contains one of the answer strings, byte for
// byte.
func (a Answer) Found(text string) bool {
	for _, s := range a.Answers {
		if strings.Contains(text, s) {
			return true
		}
	}
	return false
}

// LoadAnswers reads dir/answers.jsonl and returns the answers of split in
// file order, or all of them when split is "". It fails, naming the file and
// line, on a line that is not one JSON object of Answer's fields, an empty id
// or corpus-id, a split other than dev or test, no answer strings or an
// empty one, and a repeated id.
func LoadAnswers(dir, split string) ([]Answer, error) {
	name := filepath.Join(dir, AnswersFile)
	b, err := os.ReadFile(name)
	if err != nil {
		return nil, err
	}
	var out []Answer
	seen := map[string]int{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, len(b)+1)
	for n := 1; sc.Scan(); n++ {
		var a Answer
		dec := json.NewDecoder(bytes.NewReader(sc.Bytes()))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&a); err != nil {
			return nil, fmt.Errorf("%s:%d: %v", name, n, err)
		}
		if dec.More() {
			return nil, fmt.Errorf("%s:%d: more than one JSON value", name, n)
		}
		switch {
		case a.ID == "" || a.CorpusID == "":
			return nil, fmt.Errorf("%s:%d: empty _id or corpus-id", name, n)
		case a.Split != SplitDev && a.Split != SplitTest:
			return nil, fmt.Errorf("%s:%d: %s: split %q, want dev or test", name, n, a.ID, a.Split)
		case len(a.Answers) == 0 || slices.Contains(a.Answers, ""):
			return nil, fmt.Errorf("%s:%d: %s: no answers, or an empty one", name, n, a.ID)
		}
		if l, dup := seen[a.ID]; dup {
			return nil, fmt.Errorf("%s:%d: %s is on line %d too", name, n, a.ID, l)
		}
		seen[a.ID] = n
		if split == "" || a.Split == split {
			out = append(out, a)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %v", name, err)
	}
	return out, nil
}
