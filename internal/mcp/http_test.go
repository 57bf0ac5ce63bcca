package mcp_test

import (
	"errors"
	"testing"

	"github.com/contextd/contextd/internal/config"
	"github.com/contextd/contextd/internal/mcp"
	"github.com/contextd/contextd/internal/mcp/mcptest"
)

func httpSession(t *testing.T, srv *mcptest.RawServer, opts *mcp.Options) *mcp.Session {
	t.Helper()
	url := srv.StartHTTP(t)
	sess, err := mcp.Connect(t.Context(), config.Server{Name: "web", Transport: config.TransportHTTP, URL: url}, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sess.Close() })
	return sess
}

func TestExpiredHTTPSessionIsTyped(t *testing.T) {
	srv := &mcptest.RawServer{Results: map[string]string{
		"resources/read": `{"contents":[{"uri":"x://a","text":"hi"}]}`,
	}}
	sess := httpSession(t, srv, nil)
	if _, err := sess.Read(t.Context(), "x://a"); err != nil {
		t.Fatal(err)
	}
	srv.ExpireSessions()
	_, err := sess.Read(t.Context(), "x://a")
	t.Logf("err = %v", err)
	if !errors.Is(err, mcp.ErrSessionExpired) {
		t.Fatalf("Read after expiry: %v, want ErrSessionExpired", err)
	}
	werr := sess.Wait()
	t.Logf("wait = %v", werr)
}
