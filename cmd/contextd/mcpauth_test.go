package main

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// bearerTransport adds "Authorization: Bearer token" to every request.
type bearerTransport struct{ token string }

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// With auth.token set, the MCP endpoint serve runs beside gRPC asks for
// the token too: every local user can reach a loopback port, and the
// token is what keeps them out.
func TestMCPOverHTTPRequiresTheToken(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	const token = "mcp-http-token-0123456789"
	cfg := writeConfig(t, fmt.Sprintf("listen: unix://%s\nmcp_listen: %s\nauth: {token: %s}\ndata_dir: %s\nmcpServers: {}\n",
		filepath.Join(t.TempDir(), "c.sock"), addr, token, t.TempDir()))
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	logs := &syncWriter{w: &bytes.Buffer{}}
	go func() { done <- run(ctx, []string{"serve", "--config", cfg}, logs, logs) }()
	defer func() {
		cancel()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Error("serve did not stop within 30s")
		}
	}()
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("nothing listens on %s after 30s", addr)
		}
		time.Sleep(50 * time.Millisecond)
	}
	url := "http://" + addr + "/mcp"
	connect := func(hc *http.Client) (*mcpsdk.ClientSession, error) {
		cctx, ccancel := context.WithTimeout(ctx, 20*time.Second)
		defer ccancel()
		c := mcpsdk.NewClient(&mcpsdk.Implementation{Name: "t", Version: "v"}, nil)
		return c.Connect(cctx, &mcpsdk.StreamableClientTransport{Endpoint: url, HTTPClient: hc, MaxRetries: -1, DisableStandaloneSSE: true}, nil)
	}
	for name, hc := range map[string]*http.Client{
		"no token":    {},
		"wrong token": {Transport: bearerTransport{token: token + "x"}},
	} {
		if cs, err := connect(hc); err == nil {
			cs.Close()
			t.Errorf("%s: connected to the MCP endpoint", name)
		}
	}
	resp, err := http.Post(url, "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("a request without the token: %s, want 401", resp.Status)
	}
	// With the token, a browser's request still does not get through: a
	// rebound DNS name (Host not loopback), or a cross-origin page.
	for name, set := range map[string]func(*http.Request){
		"non-loopback Host": func(r *http.Request) { r.Host = "evil.example:80" },
		"cross-origin": func(r *http.Request) {
			r.Header.Set("Sec-Fetch-Site", "cross-site")
			r.Header.Set("Origin", "http://evil.example")
		},
	} {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		set(req)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("%s with the token: %s, want 403", name, resp.Status)
		}
	}
	cs, err := connect(&http.Client{Transport: bearerTransport{token: token}})
	if err != nil {
		t.Fatalf("with the token: %v", err)
	}
	defer cs.Close()
	tools, err := cs.ListTools(ctx, nil)
	if err != nil || len(tools.Tools) == 0 {
		t.Errorf("with the token: tools/list = %v, %v", tools, err)
	}
}
