package mcp_test

import (
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/contextd/contextd/internal/config"
	"github.com/contextd/contextd/internal/mcp"
	"github.com/contextd/contextd/internal/mcp/mcptest"
)

// A Streamable HTTP server on a revision before 2026-07-28 notifies on the
// standalone GET stream, which this client does not open: its session must
// not claim subscriptions or list_changed, or reads cached under a
// subscription would be served stale and the catalogue never re-listed.
func TestHTTPSessionsWithoutTheStandaloneStreamDoNotSubscribe(t *testing.T) {
	raw := &mcptest.RawServer{Results: map[string]string{
		"initialize":     `{"protocolVersion":"2025-11-25","capabilities":{"resources":{"subscribe":true,"listChanged":true}},"serverInfo":{"name":"raw","version":"1"}}`,
		"resources/list": `{"resources":[{"uri":"x://a","name":"a"}]}`,
	}}
	var gets atomic.Int32
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			gets.Add(1)
		}
		raw.ServeHTTP(w, r)
	}))
	defer hs.Close()
	sess, err := mcp.Connect(t.Context(), config.Server{Name: "web", Transport: config.TransportHTTP, URL: hs.URL}, &mcp.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	caps := sess.Capabilities()
	if !caps.Resources {
		t.Fatal("resources not declared")
	}
	if gets.Load() == 0 && (caps.Subscribe || caps.ListChanged) {
		t.Errorf("no standalone stream was opened, yet the session claims subscribe=%v listChanged=%v", caps.Subscribe, caps.ListChanged)
	}
	if err := sess.Subscribe(t.Context(), "x://a"); err == nil {
		t.Error("Subscribe succeeded on a session that cannot receive resources/updated")
	}
	if n := raw.Count("resources/subscribe"); n != 0 {
		t.Errorf("%d resources/subscribe sent", n)
	}
}
