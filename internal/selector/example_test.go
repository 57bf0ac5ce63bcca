package selector_test

import (
	"context"
	"fmt"

	"github.com/contextd/contextd/internal/budget"
	"github.com/contextd/contextd/internal/selector"
)

func ExampleSelect() {
	tk, err := budget.NewTokenizer(budget.EncodingCL100K)
	if err != nil {
		panic(err)
	}
	// Already ranked, best first.
	ranked := []selector.Candidate{
		{Server: "docs", URI: "docs://guide.md", MIMEType: "text/markdown"},
		{Server: "docs", URI: "docs://logo.png", MIMEType: "image/png"},
		{Server: "repo", URI: "file:///main.go", MIMEType: "text/x-go"},
		{Server: "repo", URI: "file:///go.mod"},
	}
	files := map[string]string{
		"docs://guide.md": "# Guide\n\nStart the daemon, then ask for context.\n",
		"file:///main.go": "package main\n\nimport \"os\"\n\nfunc main() {\n\tif err := run(os.Args[1:]); err != nil {\n\t\tos.Exit(1)\n\t}\n}\n\nfunc run(args []string) error {\n\treturn serve(args)\n}\n",
		"file:///go.mod":  "module example.com/m\n",
	}
	read := func(ctx context.Context, server, uri string) ([]selector.Content, error) {
		return []selector.Content{{URI: uri, Text: files[uri]}}, nil
	}

	res, err := selector.Select(context.Background(), selector.Request{TokenBudget: 50}, ranked, read, tk)
	if err != nil {
		panic(err)
	}
	for _, it := range res.Items {
		fmt.Printf("%s: %s\n", it.URI, it.Reason)
	}
	for _, o := range res.Omitted {
		fmt.Printf("%s: omitted, %s (%s)\n", o.URI, o.Reason, o.Detail)
	}
	fmt.Printf("%d of 50 tokens, %d reads\n", res.TotalTokens, res.Reads)
	// Output:
	// docs://guide.md: rank 1, fits whole (12 tokens)
	// file:///main.go: rank 3, truncated to 34 tokens to fit the budget; cut to 102 of 156 bytes
	// docs://logo.png: omitted, binary_excluded (descriptor MIME type "image/png" is binary)
	// file:///go.mod: omitted, budget_exhausted (budget filled by rank 3)
	// 46 of 50 tokens, 2 reads
}
