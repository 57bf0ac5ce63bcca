package beir

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// AnswersFile is the optional file of answer strings in a dataset
// directory: one JSON object per line,
//
//	{"_id": "a001", "split": "dev", "answers": ["MaxScanTokenSize = 64 * 1024"],
//	 "corpus-id": "gosrc:bufio/scan.go", "kind": "deep"}
//
// where answers are exact strings (any one of them answers the query) that
// occur in the content of the corpus document corpus-id, and kind says what
// the query tests ("deep", "similar", "reworded"; free text to this
// package).
const AnswersFile = "answers.jsonl"

// An Answer is what answers one query: strings, any one of which in the
// returned text means the text holds what the query needed.
type Answer struct {
	QueryID  string   `json:"_id"`
	Split    string   `json:"split"`
	Answers  []string `json:"answers"`
	CorpusID string   `json:"corpus-id"`
	Kind     string   `json:"kind,omitempty"`
}

// LoadAnswers reads dir's answers.jsonl and returns the answers of split's
// queries by query id. It fails with a [*Error] naming the file and line on
// a line that is not one JSON object, a missing id, a repeated id, or an
// answer list that is empty or holds an empty string. A dataset without the
// file returns an error wrapping fs.ErrNotExist.
func LoadAnswers(dir, split string) (map[string]Answer, error) {
	path := filepath.Join(dir, AnswersFile)
	if _, err := os.Stat(path); err != nil {
		return nil, err
	}
	out := map[string]Answer{}
	seen := map[string]bool{}
	err := eachLine(path, func(line int, b []byte) error {
		var a Answer
		if err := json.Unmarshal(b, &a); err != nil {
			return jsonError(err)
		}
		switch {
		case a.QueryID == "":
			return errors.New(`missing "_id"`)
		case seen[a.QueryID]:
			return fmt.Errorf("query %q is answered twice", a.QueryID)
		case len(a.Answers) == 0:
			return fmt.Errorf("query %q has no answers", a.QueryID)
		}
		for _, s := range a.Answers {
			if strings.TrimSpace(s) == "" {
				return fmt.Errorf("query %q has an empty answer", a.QueryID)
			}
		}
		seen[a.QueryID] = true
		if a.Split == split {
			out[a.QueryID] = a
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
