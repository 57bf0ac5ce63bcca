package mcp

import (
	"context"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// SetStandaloneBaseDelay sets the first reconnection delay of standalone
// streams (see standaloneStream) until the returned function runs.
func SetStandaloneBaseDelay(d time.Duration) (restore func()) {
	old := standaloneBaseDelay.Swap(int64(d))
	return func() { standaloneBaseDelay.Store(old) }
}

// CallTool calls a tool on the session's server (server-everything's
// toggle-subscriber-updates starts its resource updates).
func (s *Session) CallTool(ctx context.Context, name string) error {
	_, err := s.cs.CallTool(ctx, &mcpsdk.CallToolParams{Name: name})
	return err
}
