package mcp_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/contextd/contextd/internal/config"
	"github.com/contextd/contextd/internal/mcp"
)

// answerHolder is a Streamable HTTP server that sends the client n pings on
// the event stream of its answer to a read, each with pad bytes of params, and never answers the
// POSTs that carry the client's answers: it holds them until the test ends.
type answerHolder struct {
	n, pad int
	held   atomic.Int32 // answer POSTs being held now
	seen   atomic.Int32 // answer POSTs received
	stop   chan struct{}
}

func (h *answerHolder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.WriteHeader(http.StatusMethodNotAllowed)
		return
	}
	data, _ := io.ReadAll(r.Body)
	msg, err := jsonrpc.DecodeMessage(data)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	w.Header().Set("Mcp-Session-Id", "s1")
	req, ok := msg.(*jsonrpc.Request)
	if !ok { // an answer to one of our pings: hold it
		h.seen.Add(1)
		h.held.Add(1)
		defer h.held.Add(-1)
		select {
		case <-r.Context().Done():
		case <-h.stop:
		}
		return
	}
	if !req.IsCall() {
		w.WriteHeader(http.StatusAccepted)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	resp := &jsonrpc.Response{ID: req.ID, Result: []byte(`{}`)}
	switch req.Method {
	case "initialize":
		resp.Result = []byte(`{"protocolVersion":"2025-06-18","capabilities":{"resources":{}},"serverInfo":{"name":"holder","version":"0"}}`)
	case "ping":
	case "resources/read":
		// Requests of its own first, on the answer's event stream.
		w.Header().Set("Content-Type", "text/event-stream")
		pad := strings.Repeat("x", h.pad)
		for i := range h.n {
			fmt.Fprintf(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"ping\",\"params\":{\"_meta\":{\"pad\":%q}}}\n\n", 1_000_000+i, pad)
		}
		b, _ := jsonrpc.EncodeMessage(&jsonrpc.Response{ID: req.ID, Result: []byte(`{"contents":[{"uri":"x://a","text":"hi"}]}`)})
		fmt.Fprintf(w, "event: message\ndata: %s\n\n", b)
		return
	default:
		resp.Result, resp.Error = nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "Method not found"}
	}
	b, _ := jsonrpc.EncodeMessage(resp)
	w.Write(b)
}

// A server that sends requests and never lets the client's answers through
// must not make the client hold an HTTP request (a connection, a goroutine
// and the server's request) per answer: the go-sdk writes each answer with
// no deadline, and handles each server request on its own goroutine.
// (200 requests of 64 KiB: under the 16 MiB a call's stream may carry
// besides its answer.)
func TestAnswersAServerHoldsAreBounded(t *testing.T) {
	h := &answerHolder{n: 200, pad: 64 << 10, stop: make(chan struct{})}
	hs := httptest.NewServer(h)
	var once sync.Once
	stop := func() { once.Do(func() { close(h.stop) }) }
	t.Cleanup(func() { stop(); hs.Close() })
	sess, err := mcp.Connect(t.Context(), config.Server{Name: "holder", Transport: config.TransportHTTP, URL: hs.URL}, &mcp.Options{KeepAlive: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stop(); sess.Close() })
	if _, err := sess.Read(t.Context(), "x://a"); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(2 * time.Second)
	for time.Now().Before(deadline) && h.seen.Load() < int32(h.n) {
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond)
	if got := h.held.Load(); got > mcp.MaxAnswersInFlight {
		t.Fatalf("%d answers held by the server at once, want at most %d", got, mcp.MaxAnswersInFlight)
	}
	t.Logf("answers seen %d, held %d", h.seen.Load(), h.held.Load())
	// Closing abandons the answers being written (the go-sdk waits for them).
	start := time.Now()
	closed := make(chan error, 1)
	go func() { closed <- sess.Close() }()
	select {
	case <-closed:
		t.Logf("closed in %v", time.Since(start).Round(time.Millisecond))
	case <-time.After(3 * time.Second):
		t.Fatalf("Close still waiting after %v for answers the server holds", time.Since(start).Round(time.Second))
	}
}
