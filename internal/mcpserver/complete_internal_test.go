package mcpserver

import (
	"strings"
	"testing"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// A task longer than a completion would offer is not kept: 64 sessions of
// 20 tasks of megabytes would otherwise stay in memory for good.
func TestRecentTasksAreBoundedInLength(t *testing.T) {
	s := &Server{recent: map[*mcpsdk.ServerSession][]string{}}
	sess := &mcpsdk.ServerSession{}
	s.remember(sess, "rotate the signing keys")
	s.remember(sess, strings.Repeat("x", 3<<20))
	if got := s.recent[sess]; len(got) != 1 || got[0] != "rotate the signing keys" {
		t.Errorf("recent tasks = %d, want only the short one", len(got))
	}
}
