package mcp_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/contextd/contextd/internal/config"
	"github.com/contextd/contextd/internal/mcp"
)

// A request of the server's own, over max_message_bytes, on the event
// stream answering a call must fail that call without the client reading
// on to the event's end: it may not end for 64 × the cap, and a compressed
// body makes those bytes cheap to send (a 1 MB gzip body inflated to a GiB
// took 1.3 s of CPU a read).
func TestAnOversizedServerRequestOnACallStreamFailsTheCall(t *testing.T) {
	const limit = 1 << 20
	var sent atomic.Int64
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		data, _ := io.ReadAll(r.Body)
		msg, _ := jsonrpc.DecodeMessage(data)
		req, ok := msg.(*jsonrpc.Request)
		w.Header().Set("Mcp-Session-Id", "s1")
		if !ok || !req.IsCall() {
			w.WriteHeader(http.StatusAccepted)
			return
		}
		resp := &jsonrpc.Response{ID: req.ID, Result: []byte(`{}`)}
		switch req.Method {
		case "initialize":
			resp.Result = []byte(`{"protocolVersion":"2025-06-18","capabilities":{"resources":{}},"serverInfo":{"name":"h","version":"0"}}`)
		case "resources/read":
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprint(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"ping\",\"params\":{\"pad\":\"")
			chunk := []byte(strings.Repeat("z", 64<<10))
			for sent.Load() < 100*limit {
				if _, err := w.Write(chunk); err != nil {
					return
				}
				sent.Add(int64(len(chunk)))
			}
			return
		case "ping":
		default:
			resp.Result, resp.Error = nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "Method not found"}
		}
		w.Header().Set("Content-Type", "application/json")
		b, _ := jsonrpc.EncodeMessage(resp)
		w.Write(b)
	})
	hs := httptest.NewServer(h)
	t.Cleanup(hs.Close)
	sess, err := mcp.Connect(t.Context(), config.Server{Name: "h", Transport: config.TransportHTTP, URL: hs.URL}, &mcp.Options{KeepAlive: -1, MaxMessageBytes: limit})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sess.Close() })
	if _, err := sess.Read(t.Context(), "x://a"); err == nil || !strings.Contains(err.Error(), "max_message_bytes") {
		t.Errorf("Read = %v; want a failure naming max_message_bytes", err)
	}
	// The cap, and what the connection's buffers hold, not 64 × the cap.
	if n := sent.Load(); n > 16*limit {
		t.Fatalf("the server got %d MiB of the request out, want the client to stop near the %d MiB cap", n>>20, limit>>20)
	}
}
