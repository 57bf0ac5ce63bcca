//go:build longeval && !race

// The answer-bearing floor indexes 5.25 MB of text, every passage embedded:
// minutes of USE-lite, too long for the README's test command. It runs as
// the second documented command (README "Tests"), which .ci/run also runs:
//
//	go test -tags longeval -timeout 30m -run TestAnswerBearingFloor ./eval/harness/

package harness_test

import (
	"testing"

	"github.com/contextd/contextd/eval/harness"
)

// TestAnswerBearingFloor answers the answers dataset's test split at 500,
// 2,000 and 8,000 tokens and fails if contextd's answer-bearing rate falls
// below what it measured when the selection was last changed
// (eval/README.md), less one question (1/81), if an answer goes over
// budget, or if contextd stops beating the two baselines.
func TestAnswerBearingFloor(t *testing.T) {
	floors := map[int]float64{500: 0.309, 2000: 0.531, 8000: 0.691}
	rows, _, err := harness.RunAnswers(t.Context(), harness.Options{Dataset: "../datasets/answers", Split: "test"}, []int{500, 2000, 8000})
	if err != nil {
		t.Fatal(err)
	}
	best := map[int]float64{} // the better baseline at each budget
	for _, r := range rows {
		if r.OverBudget != 0 {
			t.Errorf("%s at %d: %d answers over budget", r.Assembler, r.Budget, r.OverBudget)
		}
		if r.Assembler != harness.AssemblerContextd {
			best[r.Budget] = max(best[r.Budget], r.AnswerBearing)
		}
	}
	for _, r := range rows {
		if r.Assembler != harness.AssemblerContextd {
			continue
		}
		t.Logf("%d tokens: answer-bearing %.3f (better baseline %.3f), %.0f tokens, %.2f reads", r.Budget, r.AnswerBearing, best[r.Budget], r.Tokens, r.ReadsPerAnswer)
		if r.AnswerBearing < floors[r.Budget]-1.0/81 {
			t.Errorf("%d tokens: answer-bearing %.3f, below its floor %.3f", r.Budget, r.AnswerBearing, floors[r.Budget])
		}
		if r.AnswerBearing <= best[r.Budget] {
			t.Errorf("%d tokens: answer-bearing %.3f, no better than a baseline's %.3f", r.Budget, r.AnswerBearing, best[r.Budget])
		}
	}
}
