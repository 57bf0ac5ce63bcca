package mcpserver

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// maxRecent is how many recent tasks each session keeps; maxSessions how
// many sessions keep them; maxRecentBytes the longest task kept (a longer
// one is no completion a host would offer), so they hold at most 5 MiB.
const (
	maxRecent      = 20
	maxSessions    = 64
	maxRecentBytes = 4 << 10
)

// remember records task as the session's most recent. What it keeps is a
// copy: the trimmed task shares the memory of the string it was cut from,
// so a task of a few bytes sent inside a megabyte of spaces would keep the
// megabyte (MaxRequestBytes for each of maxSessions × maxRecent tasks).
func (s *Server) remember(sess *mcpsdk.ServerSession, task string) {
	task = strings.TrimSpace(task)
	if sess == nil || task == "" || len(task) > maxRecentBytes {
		return // a task longer than a completion could offer is not kept
	}
	task = strings.Clone(task)
	s.mu.Lock()
	defer s.mu.Unlock()
	list, known := s.recent[sess]
	list = slices.DeleteFunc(list, func(t string) bool { return t == task })
	list = append([]string{task}, list...)
	s.recent[sess] = list[:min(len(list), maxRecent)]
	if !known {
		s.order = append(s.order, sess)
		if len(s.order) > maxSessions {
			delete(s.recent, s.order[0])
			s.order = s.order[1:]
		}
	}
}

// complete answers completion/complete: server names for a "server"
// argument, mirrored URIs for a "uri" argument, the session's recent tasks
// for a "task" argument, a few budgets for a "budget" argument.
func (s *Server) complete(ctx context.Context, req *mcpsdk.CompleteRequest) (*mcpsdk.CompleteResult, error) {
	p := req.Params
	switch p.Ref.Type {
	case "ref/prompt":
		if p.Ref.Name != promptName {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("unknown prompt %q (contextd has %q)", p.Ref.Name, promptName)}
		}
	case "ref/resource":
		if p.Ref.URI != ContextTemplate && p.Ref.URI != resourceTemplate {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("unknown resource template %q (contextd has %q and %q)", p.Ref.URI, ContextTemplate, resourceTemplate)}
		}
	default:
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("unknown reference type %q", p.Ref.Type)}
	}
	var values []string
	prefix := p.Argument.Value
	switch p.Argument.Name {
	case "server":
		values = s.eng.ServerNames()
	case "task":
		s.mu.Lock()
		values = slices.Clone(s.recent[req.Session])
		s.mu.Unlock()
	case "budget":
		values = []string{"1000", "2000", "4000", "8000", "16000"}
	case "uri":
		// The mirrored URIs of the server already chosen (of every server
		// when none is), as the {+uri} variable holds them; matched by
		// prefix, case and all, since URIs are opaque.
		server := ""
		if p.Context != nil {
			server = p.Context.Arguments["server"]
		}
		descs, err := s.eng.Descriptors(server)
		if err != nil {
			return nil, rpcError(ctx, err, "")
		}
		var out []string
		for _, d := range descs {
			var b strings.Builder
			escape(&b, d.URI, true)
			if u := b.String(); strings.HasPrefix(u, prefix) || strings.HasPrefix(d.URI, prefix) {
				out = append(out, u)
			}
		}
		return completion(slices.Compact(out)), nil
	}
	var out []string
	for _, v := range values {
		if strings.HasPrefix(strings.ToLower(v), strings.ToLower(prefix)) {
			out = append(out, v)
		}
	}
	return completion(out), nil
}

// completion returns at most 100 values (the protocol's cap), saying how
// many there are.
func completion(values []string) *mcpsdk.CompleteResult {
	total := len(values)
	if len(values) > 100 {
		values = values[:100]
	}
	return &mcpsdk.CompleteResult{Completion: mcpsdk.CompletionResultDetails{Values: nonNil(values), Total: total, HasMore: total > len(values)}}
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
