package client_test

import (
	"context"
	"fmt"
	"log"
	"net"
	"time"

	"github.com/contextd/contextd/client"
	contextdv1 "github.com/contextd/contextd/proto/contextd/v1"
)

// Dial a daemon with a token, ask for the context of a task within 300
// tokens, and list its servers.
func Example() {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	const token = "0123456789abcdef0123456789abcdef"      // the daemon's auth.token
	stop, err := startDaemon(l, token, map[string]string{ // stands in for `contextd serve`
		"doc://architecture": "# Architecture\n\nThe daemon mirrors each server's resources into one index.\n",
		"doc://changelog":    "# Changelog\n\nVersion 2 renamed the flags.\n",
	})
	if err != nil {
		log.Fatal(err)
	}
	defer stop()

	c, err := client.Dial(l.Addr().String(), &client.Options{Token: token})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	resp, err := c.Assemble(ctx, &contextdv1.AssembleRequest{Query: "how is the daemon's architecture organised", TokenBudget: 300})
	if err != nil {
		log.Fatal(err)
	}
	for _, it := range resp.GetItems() {
		fmt.Printf("%d. %s %s (%s, %d tokens)\n", it.GetRank(), it.GetServer(), it.GetUri(), it.GetForm(), it.GetTokens())
	}
	for _, o := range resp.GetOmitted() {
		fmt.Printf("omitted %s %s: %s\n", o.GetServer(), o.GetUri(), o.GetReason())
	}
	fmt.Printf("%d of %d tokens (%s)\n", resp.GetTotalTokens(), resp.GetTokenBudget(), resp.GetTokenizer())

	servers, err := c.ListServers(ctx)
	if err != nil {
		log.Fatal(err)
	}
	for _, s := range servers.GetServers() {
		fmt.Printf("%s: %s, %d resources\n", s.GetName(), s.GetState(), s.GetResourceCount())
	}
	// Output:
	// 1. docs doc://architecture (whole, 14 tokens)
	// omitted docs doc://changelog: low_value
	// 14 of 300 tokens (cl100k_base)
	// docs: STATE_READY, 2 resources
}
