package mcp_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/contextd/contextd/internal/config"
	"github.com/contextd/contextd/internal/mcp"
)

// A server that answers the handshake with an HTTP error status fails the
// connection with that status as a value (HTTPStatusError), whatever its
// body and reason phrase say, so the failure can be named without quoting
// the server.
func TestConnectNamesTheHTTPStatus(t *testing.T) {
	for _, code := range []int{http.StatusUnauthorized, http.StatusForbidden, http.StatusNotFound, http.StatusInternalServerError} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("WWW-Authenticate", `Bearer error="invalid_token"`)
			http.Error(w, "the token tok-planted-9931 expired", code)
		}))
		ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
		sess, err := mcp.Connect(ctx, config.Server{Name: "web", Transport: config.TransportHTTP, URL: srv.URL + "/mcp"}, nil)
		cancel()
		srv.Close()
		if err == nil {
			sess.Close()
			t.Fatalf("HTTP %d: connected", code)
		}
		var hs *mcp.HTTPStatusError
		if !errors.As(err, &hs) || hs.Code != code {
			t.Errorf("HTTP %d: error %v (%T); want an HTTPStatusError with that code", code, err, err)
		}
	}
}

// A handshake that fails after a 2xx answer (here: not JSON-RPC) is no
// HTTP status failure.
func TestConnectAfterASuccessfulAnswerIsNoStatusFailure(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"jsonrpc":"2.0","id":`)) //nolint:errcheck
	}))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	sess, err := mcp.Connect(ctx, config.Server{Name: "web", Transport: config.TransportHTTP, URL: srv.URL + "/mcp"}, nil)
	if err == nil {
		sess.Close()
		t.Fatal("connected to a server that answers half a message")
	}
	var hs *mcp.HTTPStatusError
	if errors.As(err, &hs) {
		t.Errorf("error %v names HTTP %d", err, hs.Code)
	}
}
