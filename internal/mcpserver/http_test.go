package mcpserver_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/contextd/contextd/internal/config"
	"github.com/contextd/contextd/internal/engine"
	"github.com/contextd/contextd/internal/mcp"
	"github.com/contextd/contextd/internal/mcp/mcptest"
)

func TestHTTPEndpointRefusesRebindingAndCrossOriginRequests(t *testing.T) {
	f := newFacade(t, map[string]*mcpsdk.Server{"a": mcptest.NewServer(map[string]string{"doc://a": "alpha"}, nil)}, nil, engine.Options{})
	ts := httptest.NewServer(f.srv.HTTPHandler()) // on 127.0.0.1
	defer ts.Close()
	const initialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"curl","version":"0"}}}`
	post := func(host string, header map[string]string) int {
		t.Helper()
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, ts.URL, strings.NewReader(initialize))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if host != "" {
			req.Host = host
		}
		for k, v := range header {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := post("", nil); code != http.StatusOK {
		t.Errorf("a host's initialize: HTTP %d, want 200", code)
	}
	if code := post("evil.example:7879", nil); code != http.StatusForbidden {
		t.Errorf("Host evil.example (DNS rebinding): HTTP %d, want 403", code)
	}
	if code := post("", map[string]string{"Sec-Fetch-Site": "cross-site", "Origin": "https://evil.example"}); code != http.StatusForbidden {
		t.Errorf("a cross-site browser request: HTTP %d, want 403", code)
	}
}

// A contextd whose configuration lists its own mcp_listen (the README's
// VS Code entry in the host file it reads) does not mirror itself: each
// list_changed it sent itself added its entries one level deeper, every
// read going round through its own endpoint. Its server names the process
// in initialize's _meta, and its client refuses a server so named; another
// client, or another contextd, is answered as ever.
func TestAContextdDoesNotMirrorItself(t *testing.T) {
	f := newFacade(t, map[string]*mcpsdk.Server{"a": mcptest.NewServer(map[string]string{"doc://a": "alpha"}, nil)}, nil, engine.Options{})
	ts := httptest.NewServer(f.srv.HTTPHandler())
	defer ts.Close()
	_, err := mcp.Connect(t.Context(), config.Server{Name: "contextd", Transport: config.TransportHTTP, URL: ts.URL}, nil)
	if !errors.Is(err, mcp.ErrSelf) {
		t.Fatalf("connecting to its own endpoint: %v, want ErrSelf", err)
	}
	cs := f.connectVersion(t, nil, "2025-11-25") // initialize, not server/discover
	if got, _ := cs.InitializeResult().Meta[mcp.InstanceMetaKey].(string); got != mcp.Instance() {
		t.Fatalf("initialize _meta %v; want this process named", cs.InitializeResult().Meta)
	}
}
