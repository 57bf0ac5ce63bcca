package mcp

import (
	"context"
	"errors"
	"fmt"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// ErrNoCompletions is returned by Complete when the server did not declare
// the completions capability; no request was sent.
var ErrNoCompletions = errors.New("server does not declare the completions capability")

// A Completion is a completion/complete result: the server's suggestions
// for one argument (MCP 2025-11-25, Server Features › Utilities ›
// Completion).
type Completion struct {
	// Values are the suggestions, best first; the specification caps them
	// at 100 per response.
	Values []string
	// Total is the number of matches the server says exist (0: not said).
	Total int
	// HasMore says there are more matches than Values.
	HasMore bool
}

// Complete asks the server to complete the value of the variable arg of the
// resource template uriTemplate (a "ref/resource" reference), with the
// values already chosen for other variables as context (nil for none).
//
// Errors: ErrNoCompletions (nothing sent), or the server's or transport's
// error.
func (s *Session) Complete(ctx context.Context, uriTemplate, arg, value string, resolved map[string]string) (Completion, error) {
	if !s.caps.Completions {
		return Completion{}, fmt.Errorf("mcp: server %q: complete %q of %q: %w", s.name, arg, uriTemplate, ErrNoCompletions)
	}
	s.NoteCallerText()
	p := &mcpsdk.CompleteParams{
		Ref:      &mcpsdk.CompleteReference{Type: "ref/resource", URI: uriTemplate},
		Argument: mcpsdk.CompleteParamsArgument{Name: arg, Value: value},
	}
	if len(resolved) > 0 {
		p.Context = &mcpsdk.CompleteContext{Arguments: resolved}
	}
	res, err := s.cs.Complete(ctx, p)
	if err != nil {
		return Completion{}, fmt.Errorf("mcp: server %q: complete %q of %q: %w", s.name, arg, uriTemplate, s.exited(err))
	}
	if res == nil {
		return Completion{}, nil
	}
	c := res.Completion
	return Completion{Values: c.Values, Total: c.Total, HasMore: c.HasMore}, nil
}
