package mcptest

import (
	"context"
	"encoding/json"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// A RawServer answers JSON-RPC requests with hand-written JSON, for wire
// misbehaviour a go-sdk server cannot produce (bad base64, wrong field types).
// Results maps a method to the raw result JSON; initialize is answered with
// the resources capability when Results has no entry for it. Methods not in
// Results get -32601.
type RawServer struct {
	Results map[string]string

	mu       sync.Mutex
	requests []*jsonrpc.Request
}

// Requests returns the requests received so far, in order.
func (s *RawServer) Requests() []*jsonrpc.Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*jsonrpc.Request(nil), s.requests...)
}

// Transport starts the server on one end of an in-memory pipe and returns
// the other end for the client. The server stops when the test ends.
func (s *RawServer) Transport(t testing.TB) mcpsdk.Transport {
	ct, st := mcpsdk.NewInMemoryTransports()
	conn, err := st.Connect(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); conn.Close(); <-done })
	go func() {
		defer close(done)
		for {
			msg, err := conn.Read(ctx)
			if err != nil {
				return
			}
			req, ok := msg.(*jsonrpc.Request)
			if !ok || !req.ID.IsValid() {
				continue // a notification
			}
			s.mu.Lock()
			s.requests = append(s.requests, req)
			s.mu.Unlock()
			resp := &jsonrpc.Response{ID: req.ID}
			raw, ok := s.Results[req.Method]
			switch {
			case ok:
				resp.Result = json.RawMessage(raw)
			case req.Method == "initialize":
				resp.Result = json.RawMessage(`{"protocolVersion":"2025-06-18","capabilities":{"resources":{}},"serverInfo":{"name":"raw","version":"0"}}`)
			default:
				resp.Error = &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "Method not found"}
			}
			if err := conn.Write(ctx, resp); err != nil {
				return
			}
		}
	}()
	return ct
}
