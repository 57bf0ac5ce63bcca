package mcp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/contextd/contextd/internal/config"
	"github.com/contextd/contextd/internal/mcp"
	"github.com/contextd/contextd/internal/mcp/mcptest"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
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

// A server that switches protocols (101) and holds the connection fails
// the request: the connection, handed over as the body, is not read past
// the deadline. The handshake fails at once.
func TestSwitchingProtocolsFailsTheRequest(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, buf, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		defer conn.Close()
		buf.WriteString("HTTP/1.1 101 Switching Protocols\r\nUpgrade: x-held\r\nConnection: Upgrade\r\n\r\n") //nolint:errcheck
		buf.Flush()                                                                                           //nolint:errcheck
		<-release
	}))
	defer srv.Close()
	defer close(release)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		sess, err := mcp.Connect(ctx, config.Server{Name: "web", Transport: config.TransportHTTP, URL: srv.URL + "/mcp"}, nil)
		if err == nil {
			sess.Close()
		}
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("connected to a server that switched protocols")
		}
		if errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil {
			t.Fatalf("Connect = %v; want it failed by the 101, not by the deadline", err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("Connect still running 30 s past its deadline: the held connection is being read")
	}
}

// A read answered 101 mid-session fails on its own; the session goes on.
func TestSwitchingProtocolsOnAReadFailsThatRead(t *testing.T) {
	srv := mcptest.NewServer(map[string]string{"doc://ok": "fine", "doc://held": "never"}, nil)
	h := mcpsdk.NewStreamableHTTPHandler(func(*http.Request) *mcpsdk.Server { return srv }, nil)
	release := make(chan struct{})
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			if bytes.Contains(body, []byte("doc://held")) {
				conn, buf, err := http.NewResponseController(w).Hijack()
				if err != nil {
					return
				}
				defer conn.Close()
				buf.WriteString("HTTP/1.1 101 Switching Protocols\r\nUpgrade: x-held\r\nConnection: Upgrade\r\n\r\n") //nolint:errcheck
				buf.Flush()                                                                                           //nolint:errcheck
				<-release
				return
			}
		}
		h.ServeHTTP(w, r)
	}))
	defer hs.Close()
	defer close(release)
	sess, err := mcp.Connect(t.Context(), config.Server{Name: "web", Transport: config.TransportHTTP, URL: hs.URL}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { _, err := sess.Read(ctx, "doc://held"); done <- err }()
	select {
	case err := <-done:
		if err == nil || ctx.Err() != nil {
			t.Fatalf("read answered 101: %v (deadline passed: %v); want it failed by the 101", err, ctx.Err())
		}
	case <-time.After(60 * time.Second):
		t.Fatal("read still running 30 s past its deadline: the held connection is being read")
	}
	if c, err := sess.Read(ctx, "doc://ok"); err != nil || len(c) != 1 || c[0].Text != "fine" {
		t.Errorf("the next read: %v, %v", c, err)
	}
}

// The status named is the one that answered a message: a DELETE of the
// session after a failed handshake (answered 405, as the spec allows) is
// not why the handshake failed.
func TestTheStatusNamedIsAMessagesAnswer(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if json.NewDecoder(r.Body).Decode(&req) != nil || req.Method != "initialize" {
			w.WriteHeader(http.StatusAccepted)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Mcp-Session-Id", "s-1")
		io.WriteString(w, `{"jsonrpc":"2.0","id":`+string(req.ID)+`,"result":{"protocolVersion":"1999-01-01","capabilities":{},"serverInfo":{"name":"x","version":"1"}}}`) //nolint:errcheck
	}))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	sess, err := mcp.Connect(ctx, config.Server{Name: "web", Transport: config.TransportHTTP, URL: srv.URL + "/mcp"}, nil)
	if err == nil {
		sess.Close()
		t.Fatal("connected with an unsupported protocol version")
	}
	var hs *mcp.HTTPStatusError
	if errors.As(err, &hs) {
		t.Errorf("error %v names HTTP %d", err, hs.Code)
	}
}
