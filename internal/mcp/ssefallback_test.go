package mcp_test

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/contextd/contextd/internal/config"
	"github.com/contextd/contextd/internal/mcp"
	"github.com/contextd/contextd/internal/mcp/mcptest"
)

// A server of the HTTP+SSE transport of 2024-11-05 is read for as long as
// its session lasts, not as long as the handshake's context. Named by a
// bare url, as host files name it, it answers the POST of a Streamable HTTP
// initialize with a 4xx: contextd then GETs the URL for an endpoint event,
// as MCP asks of a client that supports both, and reads it as if typed sse.
func TestAnSSEServerIsReadAfterItsHandshake(t *testing.T) {
	for name, transport := range map[string]string{"type sse": config.TransportSSE, "bare url": config.TransportHTTP} {
		t.Run(name, func(t *testing.T) {
			srv := mcptest.NewServer(map[string]string{"note://a": "the legacy transport still serves"}, nil)
			hs := httptest.NewServer(mcpsdk.NewSSEHandler(func(*http.Request) *mcpsdk.Server { return srv }, nil))
			t.Cleanup(hs.Close)
			// The daemon connects under a deadline it cancels once connected.
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			var logs logBuffer
			s, err := mcp.Connect(ctx, config.Server{Name: "old", Transport: transport, URL: hs.URL}, &mcp.Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
			cancel()
			if err != nil {
				t.Fatalf("Connect: %v", err)
			}
			t.Cleanup(func() { s.Close() })
			got, err := s.Read(t.Context(), "note://a")
			if err != nil || len(got) != 1 || got[0].Text != "the legacy transport still serves" {
				t.Fatalf("Read = %+v, %v", got, err)
			}
			// Its POSTs are answered 202 with a body of no matter: no
			// warning blames the server for them.
			if l := logs.String(); strings.Contains(l, "level=WARN") {
				t.Fatalf("warnings about an honest SSE server:\n%s", l)
			}
		})
	}
}

// Credentials refused say nothing about the transport: no GET follows, and
// the error names the status.
func TestARefusedStreamableHTTPServerIsNotTriedBySSE(t *testing.T) {
	var gets atomic.Int32
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			gets.Add(1)
		}
		http.Error(w, "no", http.StatusUnauthorized)
	}))
	t.Cleanup(hs.Close)
	_, err := mcp.Connect(t.Context(), config.Server{Name: "locked", Transport: config.TransportHTTP, URL: hs.URL}, nil)
	var se *mcp.HTTPStatusError
	if err == nil || !errors.As(err, &se) || se.Code != http.StatusUnauthorized {
		t.Fatalf("Connect error = %v, want the 401", err)
	}
	if n := gets.Load(); n != 0 {
		t.Fatalf("%d GETs after a 401, want none", n)
	}
}

// A relay that cannot forward server/discover (a stdio bridge to an HTTP
// server that refuses it) answers nothing: the connect falls back to
// initialize after discoverTimeout, on the same connection, instead of
// waiting out its deadline and failing.
func TestAnUnansweredDiscoverFallsBackToInitialize(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		raw := &mcptest.RawServer{Ignore: map[string]bool{"server/discover": true}}
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		defer cancel()
		start := time.Now()
		s, err := mcp.ConnectTransport(ctx, "relayed", raw.Transport(t), nil)
		if err != nil {
			t.Fatalf("Connect through a relay dropping server/discover: %v", err)
		}
		defer s.Close()
		if el := time.Since(start); el > 6*time.Second {
			t.Fatalf("connected after %v; want about 5 s", el)
		}
		if raw.Count("initialize") != 1 {
			t.Fatalf("requests %d initialize; want 1", raw.Count("initialize"))
		}
	})
}

// A list naming this process (contextd's own MCP server puts its instance
// name in each entry's _meta) is this contextd, however the bridge between
// rewrote the URIs or answered initialize: ListResources fails with
// ErrSelf.
func TestAListNamingThisProcessIsItself(t *testing.T) {
	raw := &mcptest.RawServer{Results: map[string]string{
		"resources/list": `{"resources":[{"uri":"hub://up/contextd%3Aresource%2Feverything%2Fdemo%3A%2F%2Fa","name":"a","_meta":{"contextd/server":"everything","` + mcp.InstanceMetaKey + `":"` + mcp.Instance() + `"}}]}`,
	}}
	s, err := mcp.ConnectTransport(t.Context(), "hub", raw.Transport(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.ListResources(t.Context()); !errors.Is(err, mcp.ErrSelf) {
		t.Fatalf("ListResources = %v, want ErrSelf", err)
	}
	// Named anywhere else (a title anyone may write), it is not itself.
	quoted := &mcptest.RawServer{Results: map[string]string{
		"resources/list": `{"resources":[{"uri":"note://1","name":"pasted {\"_meta\":{\"` + mcp.InstanceMetaKey + `\":\"` + mcp.Instance() + `\"}}","description":"` + mcp.Instance() + `"}]}`,
	}}
	s3, err := mcp.ConnectTransport(t.Context(), "notes", quoted.Transport(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s3.Close()
	if l, err := s3.ListResources(t.Context()); err != nil || len(l.Items) != 1 {
		t.Fatalf("a note quoting the instance name: %+v, %v", l, err)
	}
	other := &mcptest.RawServer{Results: map[string]string{
		"resources/list": `{"resources":[{"uri":"hub://up/x","name":"a","_meta":{"` + mcp.InstanceMetaKey + `":"ANOTHERCONTEXTDINSTANCE00"}}]}`,
	}}
	s2, err := mcp.ConnectTransport(t.Context(), "hub2", other.Transport(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if l, err := s2.ListResources(t.Context()); err != nil || len(l.Items) != 1 {
		t.Fatalf("another contextd's list: %+v, %v", l, err)
	}
}
