package harness_test

import (
	"strings"
	"testing"

	"github.com/contextd/contextd/eval/beir"
	"github.com/contextd/contextd/eval/harness"
)

func TestRunBudgetComparesAssemblersWithinBudget(t *testing.T) {
	docs := []beir.Doc{
		{ID: "gzip", Title: "package gzip", Text: "Package gzip reads and writes gzip compressed files.", Content: strings.Repeat("gzip.NewReader decompresses a stream.\n", 40)},
		{ID: "csv", Title: "package csv", Text: "Package csv reads and writes comma-separated values.", Content: strings.Repeat("csv.NewReader parses records.\n", 40)},
		{ID: "tar", Title: "package tar", Text: "Package tar implements access to tar archives.", Content: strings.Repeat("tar.NewReader walks an archive.\n", 40)},
	}
	corpus, err := beir.JSONLines(docs)
	if err != nil {
		t.Fatal(err)
	}
	queries, err := beir.JSONLines([]beir.Query{{ID: "q1", Text: "decompress a gzip stream"}})
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
	rows, err := harness.RunBudget(t.Context(), harness.Options{Dataset: dir, Split: "dev"}, []int{50, 5000})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 6 {
		t.Fatalf("%d rows, want 3 assemblers × 2 budgets", len(rows))
	}
	for _, r := range rows {
		if r.OverBudget != 0 {
			t.Errorf("%s at %d: %d answers over budget", r.Assembler, r.Budget, r.OverBudget)
		}
		switch {
		case r.Budget == 50 && r.RelevantShare != 1:
			// The gzip page ranks first and fills 50 tokens on its own.
			t.Errorf("%s at 50 tokens: relevant share %.3f, want 1", r.Assembler, r.RelevantShare)
		case r.Budget == 5000 && r.Assembler == harness.AssemblerContextd && (r.RelevantShare != 1 || r.ReadsPerAnswer != 1):
			// The value floor leaves csv and tar, far below gzip, unread.
			t.Errorf("contextd at 5000 tokens: relevant share %.3f with %.1f reads, want 1 from 1 read", r.RelevantShare, r.ReadsPerAnswer)
		case r.Budget == 5000 && r.Assembler != harness.AssemblerContextd && (r.RelevantShare <= 0.2 || r.RelevantShare >= 0.5):
			// Everything fits: about a third of the tokens are gzip's.
			t.Errorf("%s at 5000 tokens: relevant share %.3f, want about a third", r.Assembler, r.RelevantShare)
		}
		if r.Assembler == harness.AssemblerReadAll && r.ReadsPerAnswer != 3 {
			t.Errorf("read-all reads %.1f per answer, want every candidate (3)", r.ReadsPerAnswer)
		}
		if r.Assembler != harness.AssemblerReadAll && r.Budget == 50 && r.ReadsPerAnswer != 1 {
			t.Errorf("%s at 50 tokens reads %.1f, want 1", r.Assembler, r.ReadsPerAnswer)
		}
	}
}
