package lexical_test

import (
	"fmt"

	"github.com/contextd/contextd/internal/lexical"
)

func Example() {
	x := lexical.New(nil)
	x.Upsert(
		lexical.Doc{
			ID:          "docs|file:///docs/architecture.md",
			Name:        "architecture.md",
			Title:       "Architecture overview",
			Description: "How the daemon's components fit together.",
			URI:         "file:///docs/architecture.md",
			MIMEType:    "text/markdown",
		},
		lexical.Doc{
			ID:          "api|api://users/getUserProfile",
			Name:        "getUserProfile",
			Description: "Returns a user's profile and settings.",
			URI:         "api://users/getUserProfile",
			MIMEType:    "application/json",
		},
		lexical.Doc{
			ID:          "api|api://users/listUsers",
			Name:        "listUsers",
			Description: "Lists all users.",
			URI:         "api://users/listUsers",
			MIMEType:    "application/json",
		},
	)
	for _, h := range x.Search("what are the user profile settings?", 10, nil) {
		fmt.Println(h.ID)
	}
	fmt.Println(lexical.Tokenize("HTTPServer getUserProfile file:///docs/architecture.md"))
	// Output:
	// api|api://users/getUserProfile
	// api|api://users/listUsers
	// [http server get user profile file doc architecture md]
}
