package mcpserver

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/contextd/contextd/internal/engine"
)

// The context prompt.
const promptName = "context"

func (s *Server) addPrompt() {
	s.mcp.AddPrompt(&mcpsdk.Prompt{
		Name:        promptName,
		Title:       "Context for a task",
		Description: "The resources of the user's MCP servers that best serve a task, packed within a token budget, followed by the task.",
		Arguments: []*mcpsdk.PromptArgument{
			{Name: "task", Title: "Task", Description: "the task or question, in plain words", Required: true},
			{Name: "budget", Title: "Token budget", Description: fmt.Sprintf("the most tokens the context may take (default %d)", DefaultBudget)},
		},
	}, s.getPrompt)
}

func (s *Server) getPrompt(ctx context.Context, req *mcpsdk.GetPromptRequest) (*mcpsdk.GetPromptResult, error) {
	args := req.Params.Arguments
	budget, err := parseBudget(args["budget"])
	if err != nil {
		return nil, err
	}
	res, err := s.assemble(ctx, req.Session, engine.AssembleRequest{Query: args["task"], TokenBudget: budget})
	if err != nil {
		return nil, rpcError(ctx, err, "")
	}
	out := &mcpsdk.GetPromptResult{Description: fmt.Sprintf("Context for %q: %d resource(s), %d of %d tokens", args["task"], len(res.Items), res.TotalTokens, budget)}
	for _, it := range res.Items {
		if len(it.Contents) == 0 {
			out.Messages = append(out.Messages, &mcpsdk.PromptMessage{Role: "user", Content: link(it.Candidate)})
		}
		for _, c := range it.Contents {
			out.Messages = append(out.Messages, &mcpsdk.PromptMessage{Role: "user", Content: &mcpsdk.EmbeddedResource{Resource: itemContents(it.Key(), c)}})
		}
	}
	out.Messages = append(out.Messages, &mcpsdk.PromptMessage{Role: "user", Content: &mcpsdk.TextContent{
		Text: args["task"] + "\n\n(" + summary(res, budget) + ")"}})
	return out, nil
}

// parseBudget parses a token budget given as text (a prompt argument, the
// context template's variable): blank means DefaultBudget; anything but a
// whole decimal number ("12 tokens", "0x40", "1e3") is an invalid-params
// error naming it. Its range is the engine's to check.
func parseBudget(b string) (int, error) {
	b = strings.TrimSpace(b)
	if b == "" {
		return DefaultBudget, nil
	}
	n, err := strconv.Atoi(b)
	if err != nil {
		return 0, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("budget %q is not a whole number of tokens", b)}
	}
	return n, nil
}
