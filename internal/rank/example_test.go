package rank_test

import (
	"fmt"

	"github.com/contextd/contextd/internal/rank"
)

func ExampleFuse() {
	lexical := []string{"docs/auth.md", "docs/tokens.md", "src/login.go"}
	dense := []string{"src/login.go", "docs/auth.md", "docs/sessions.md"}
	for _, f := range rank.Fuse(0, lexical, dense) { // k = 0: the paper's 60
		fmt.Printf("%-16s %.4f %v\n", f.ID, f.Score, f.Ranks)
	}
	// Output:
	// docs/auth.md     0.0325 [1 2]
	// src/login.go     0.0323 [3 1]
	// docs/tokens.md   0.0161 [2 0]
	// docs/sessions.md 0.0159 [0 3]
}
