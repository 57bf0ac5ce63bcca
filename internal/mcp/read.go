package mcp

import (
	"context"
	"errors"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/contextd/contextd/internal/resource"
)

// JSON-RPC error codes that mean "no such resource" (MCP 2025-11-25
// "Resources > Error Handling" uses -32002; newer revisions and the go-sdk
// since v1.7 use -32602 Invalid params).
const (
	codeResourceNotFound = -32002
	codeInvalidParams    = jsonrpc.CodeInvalidParams
)

// A NotFoundError reports that the server does not know a URI.
type NotFoundError struct {
	Server, URI string
	Code        int64  // the JSON-RPC error code the server sent
	Message     string // the server's message
}

func (e *NotFoundError) Error() string {
	return fmt.Sprintf("mcp: server %q: resource %q not found (%d: %s)", e.Server, e.URI, e.Code, e.Message)
}

// Read sends resources/read for uri and returns every content item. Blob
// items are base64-decoded; a missing MIME type stays empty.
//
// Errors: ErrNoResources (nothing sent), *NotFoundError, or the transport's.
func (s *Session) Read(ctx context.Context, uri string) ([]resource.Content, error) {
	if !s.caps.Resources {
		return nil, fmt.Errorf("mcp: server %q: read %q: %w", s.name, uri, ErrNoResources)
	}
	res, err := s.cs.ReadResource(ctx, &mcpsdk.ReadResourceParams{URI: uri})
	if err != nil {
		var werr *jsonrpc.Error
		if errors.As(err, &werr) && (werr.Code == codeResourceNotFound || werr.Code == codeInvalidParams) {
			return nil, &NotFoundError{Server: s.name, URI: uri, Code: werr.Code, Message: werr.Message}
		}
		return nil, fmt.Errorf("mcp: server %q: read %q: %w", s.name, uri, s.exited(err))
	}
	out := make([]resource.Content, 0, len(res.Contents))
	for _, c := range res.Contents {
		if c == nil {
			continue
		}
		item := resource.Content{URI: c.URI, MIMEType: c.MIMEType}
		if why, ok := c.Meta[metaInvalid].(string); ok {
			item.IsBlob, item.Error = true, why
		} else if c.Blob != nil {
			item.IsBlob = true
			item.Blob = c.Blob
		} else {
			item.Text = c.Text
		}
		out = append(out, item)
	}
	return out, nil
}

// ErrSessionExpired is wrapped by the errors of requests a Streamable HTTP
// server answered with 404 for the session id: the server ended the session
// (MCP 2025-06-18, Transports § Session Management) and a client must
// initialize a new one. It is the go-sdk's ErrSessionMissing.
var ErrSessionExpired = mcpsdk.ErrSessionMissing

// ErrSubscribeListen is returned by Subscribe on sessions that negotiated
// protocol 2026-07-28 or later, whose subscriptions/listen streams contextd
// does not hold yet; nothing is sent.
var ErrSubscribeListen = errors.New("subscriptions/listen (protocol 2026-07-28) is not supported yet")

// streamingSubscriptions reports whether the negotiated protocol moved
// subscriptions to subscriptions/listen.
func (s *Session) streamingSubscriptions() bool {
	_, _, proto := s.ServerInfo()
	return proto >= "2026-07-28"
}

// Subscribe asks the server for notifications/resources/updated about uri.
//
// Errors: ErrNoResources or ErrNoSubscribe (nothing sent), or the server's.
func (s *Session) Subscribe(ctx context.Context, uri string) error {
	if err := s.canSubscribe("subscribe", uri); err != nil {
		return err
	}
	if err := s.cs.Subscribe(ctx, &mcpsdk.SubscribeParams{URI: uri}); err != nil {
		return fmt.Errorf("mcp: server %q: subscribe %q: %w", s.name, uri, err)
	}
	return nil
}

// Unsubscribe cancels a subscription made by Subscribe. Errors: as Subscribe.
func (s *Session) Unsubscribe(ctx context.Context, uri string) error {
	if err := s.canSubscribe("unsubscribe", uri); err != nil {
		return err
	}
	if err := s.cs.Unsubscribe(ctx, &mcpsdk.UnsubscribeParams{URI: uri}); err != nil {
		return fmt.Errorf("mcp: server %q: unsubscribe %q: %w", s.name, uri, err)
	}
	return nil
}

// canSubscribe says why op (subscribe or unsubscribe) must not be sent, or nil.
func (s *Session) canSubscribe(op, uri string) error {
	var why error
	switch {
	case !s.caps.Resources:
		why = ErrNoResources
	case !s.caps.Subscribe:
		why = ErrNoSubscribe
	case s.streamingSubscriptions():
		// From 2026-07-28 a subscription is a long-lived subscriptions/listen
		// request that the go-sdk's Subscribe holds open until cancelled.
		why = ErrSubscribeListen
	default:
		return nil
	}
	return fmt.Errorf("mcp: server %q: %s %q: %w", s.name, op, uri, why)
}
