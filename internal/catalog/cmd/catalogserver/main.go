// Command catalogserver serves a catalog.Load catalogue over stdio: a big,
// realistic MCP server for measuring how fast contextd indexes one.
//
//	go build -o /tmp/catalogserver ./internal/catalog/cmd/catalogserver
//	/tmp/catalogserver -n 2000 -corpus eval/datasets/godoc
package main

import (
	"context"
	"flag"
	"fmt"
	"os"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/contextd/contextd/internal/catalog"
)

func main() {
	n := flag.Int("n", 2000, "resources to serve")
	corpus := flag.String("corpus", catalog.DefaultCorpus(), "the godoc dataset directory (holds corpus.jsonl)")
	flag.Parse()
	rs, err := catalog.Load(*corpus, *n)
	if err != nil {
		fmt.Fprintln(os.Stderr, "catalogserver:", err)
		os.Exit(1)
	}
	if err := catalog.NewServer(rs).Run(context.Background(), &mcpsdk.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, "catalogserver:", err)
		os.Exit(1)
	}
}
