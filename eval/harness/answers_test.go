package harness_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/contextd/contextd/eval/beir"
	"github.com/contextd/contextd/eval/harness"
	"github.com/contextd/contextd/eval/internal/answers"
)

func TestRunAnswersFindsADeepAnswerTheBaselinesCut(t *testing.T) {
	// The answer to q1 is at the end of a long page about gzip: head-cut
	// returns the page's head, greedy-whole cannot fit it, and contextd's
	// sections for the query hold it.
	long := strings.Repeat("The gzip format wraps a deflate stream with a header and a trailer.\n\n", 60) +
		"## Checksums\n\nThe trailer holds a CRC-32 checksum: gzip trailer is crc32 then isize.\n"
	docs := []beir.Doc{
		{ID: "gzip", Title: "package gzip", Text: "Package gzip reads and writes gzip compressed files.", Content: long, MIMEType: "text/markdown"},
		{ID: "csv", Title: "package csv", Text: "Package csv reads and writes comma-separated values.", Content: strings.Repeat("csv.NewReader parses records.\n", 40)},
	}
	corpus, err := beir.JSONLines(docs)
	if err != nil {
		t.Fatal(err)
	}
	queries, err := beir.JSONLines([]beir.Query{{ID: "q1", Text: "what checksum does the gzip trailer hold"}})
	if err != nil {
		t.Fatal(err)
	}
	ans, err := json.Marshal(answers.Answer{ID: "q1", Split: "dev", Answers: []string{"gzip trailer is crc32 then isize"}, CorpusID: "gzip", Kind: "deep"})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := beir.WriteFiles(dir, []beir.File{
		{Path: beir.CorpusFile, Data: corpus}, {Path: beir.QueriesFile, Data: queries},
		beir.QrelsFile("dev", []beir.Qrel{{QueryID: "q1", CorpusID: "gzip", Score: 2}}),
	}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, answers.AnswersFile), append(ans, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
	rows, cases, err := harness.RunAnswers(t.Context(), harness.Options{Dataset: dir, Split: "dev"}, []int{200})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 3 || len(cases) != 3 {
		t.Fatalf("%d rows and %d cases, want 3 assemblers × 1 budget", len(rows), len(cases))
	}
	want := map[string]float64{harness.AssemblerContextd: 1, harness.AssemblerGreedyWhole: 0, harness.AssemblerHeadCut: 0}
	for _, r := range rows {
		if r.AnswerBearing != want[r.Assembler] {
			t.Errorf("%s: answer-bearing %.2f, want %.0f (cases %+v)", r.Assembler, r.AnswerBearing, want[r.Assembler], cases)
		}
		if r.OverBudget != 0 || r.Tokens > 200 {
			t.Errorf("%s: %.0f tokens, %d over budget", r.Assembler, r.Tokens, r.OverBudget)
		}
		if r.ByKind["deep"] != r.AnswerBearing {
			t.Errorf("%s: by kind %v", r.Assembler, r.ByKind)
		}
	}
}
