package mcp_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/contextd/contextd/internal/config"
	"github.com/contextd/contextd/internal/mcp"
)

// A server that answers a call with an event stream holding only a new
// event id and "retry: 1", then ends it, has the go-sdk reconnect (GET with
// Last-Event-ID) after the delay it asked for; each new id counts as
// progress, so the loop lasts as long as the call waits. The client must
// not reconnect faster than its own backoff.
func TestShortSSERetryFieldsDoNotSetTheReconnectPace(t *testing.T) {
	var gets, ev atomic.Int64
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			gets.Add(1)
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprintf(w, "id: %d\nretry: 1\n\n", ev.Add(1))
			return
		}
		if r.Method != http.MethodPost {
			return
		}
		data, _ := io.ReadAll(r.Body)
		msg, _ := jsonrpc.DecodeMessage(data)
		req, ok := msg.(*jsonrpc.Request)
		w.Header().Set("Mcp-Session-Id", "s1")
		if !ok || !req.IsCall() {
			w.WriteHeader(202)
			return
		}
		resp := &jsonrpc.Response{ID: req.ID, Result: []byte(`{}`)}
		switch req.Method {
		case "initialize":
			resp.Result = []byte(`{"protocolVersion":"2025-06-18","capabilities":{"resources":{}},"serverInfo":{"name":"h","version":"0"}}`)
		case "resources/read":
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprintf(w, "id: %d\nretry: 1\n\n", ev.Add(1))
			return
		case "ping":
		default:
			resp.Result, resp.Error = nil, &jsonrpc.Error{Code: -32601, Message: "nf"}
		}
		w.Header().Set("Content-Type", "application/json")
		b, _ := jsonrpc.EncodeMessage(resp)
		w.Write(b)
	})
	hs := httptest.NewServer(h)
	defer hs.Close()
	sess, err := mcp.Connect(t.Context(), config.Server{Name: "h", Transport: config.TransportHTTP, URL: hs.URL}, &mcp.Options{KeepAlive: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Second)
	defer cancel()
	_, err = sess.Read(ctx, "x://a")
	if err == nil {
		t.Fatal("Read succeeded; the server never answers it")
	}
	// The go-sdk's backoff starts at 1 s (plus jitter): at most 3 in 3 s.
	if n := gets.Load(); n > 5 {
		t.Fatalf("%d reconnections in 3 s, want at most 5", n)
	}
}
