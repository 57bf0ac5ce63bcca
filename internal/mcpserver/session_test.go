package mcpserver_test

import (
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/contextd/contextd/internal/engine"
	"github.com/contextd/contextd/internal/mcp/mcptest"
	"github.com/contextd/contextd/internal/mcpserver"
)

// post sends one JSON-RPC message to the Streamable HTTP endpoint and
// returns the response's status and session ID.
func post(t *testing.T, url, session, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
		req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode, resp.Header.Get("Mcp-Session-Id")
}

// Clients that start a session and never end it (a script run again and
// again) do not leave their sessions behind for good: an idle session is
// closed after Options.SessionTimeout, goroutine and all.
func TestAbandonedHTTPSessionsAreClosed(t *testing.T) {
	f := newFacade(t, map[string]*mcpsdk.Server{"a": mcptest.NewServer(map[string]string{"doc://x": "x"}, nil)},
		&mcpserver.Options{SessionTimeout: 300 * time.Millisecond}, engine.Options{})
	ts := httptest.NewServer(f.srv.HTTPHandler())
	defer ts.Close()
	before := runtime.NumGoroutine()
	const n = 200
	var first, last string
	for i := range n {
		code, sid := post(t, ts.URL, "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"script","version":"1"}}}`)
		if code != http.StatusOK || sid == "" {
			t.Fatalf("initialize: %d, session %q", code, sid)
		}
		post(t, ts.URL, sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
		if i == 0 {
			first = sid
		}
		last = sid
	}
	if code, _ := post(t, ts.URL, last, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`); code != http.StatusOK {
		t.Fatalf("tools/list in a live session: %d", code)
	}
	deadline := time.Now().Add(20 * time.Second)
	for runtime.NumGoroutine() > before+n/10 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if g := runtime.NumGoroutine(); g > before+n/10 {
		t.Errorf("%d goroutines after %d sessions went idle, %d before", g, n, before)
	}
	if code, _ := post(t, ts.URL, first, `{"jsonrpc":"2.0","id":3,"method":"tools/list"}`); code != http.StatusNotFound {
		t.Errorf("a request in a session idle past the timeout: %d, want 404 (the client starts a new session)", code)
	}
}
