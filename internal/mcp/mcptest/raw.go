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
// misbehaviour a go-sdk server cannot produce (bad base64, wrong field types,
// expired HTTP sessions, stalled responses). Results maps a method to the raw
// result JSON; initialize is answered with the resources capability when
// Results has no entry for it. Methods not in Results get -32601.
//
// It speaks over an in-memory pipe (Transport) or as a minimal Streamable
// HTTP server (ServeHTTP); set the fields before either starts.
type RawServer struct {
	Results map[string]string

	// HTTP only. Stall lists methods whose response stops after the status
	// line and headers until the client gives up. Body, when set for a
	// method, is written verbatim as the whole response body (with
	// Content-Type ContentType[method], default application/json) instead of
	// the JSON answer built from Results.
	Stall       map[string]bool
	Body        map[string]func(id string) []byte
	ContentType map[string]string
	// Status, when set for a method, is the HTTP status of its answer, and
	// SessionID the Mcp-Session-Id it carries instead of the session's.
	Status    map[string]int
	SessionID map[string]string

	// Ignore lists methods never answered (in-memory transport only), as
	// a relay that fails to forward them does not answer.
	Ignore map[string]bool

	mu          sync.Mutex
	requests    []*jsonrpc.Request
	sessions    map[string]bool // HTTP session id → live
	nextID      int
	expireAt    map[string]int  // method → expire the session when it is received
	unavailable map[string]bool // method → answer 503
}

// Requests returns the requests received so far, in order.
func (s *RawServer) Requests() []*jsonrpc.Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*jsonrpc.Request(nil), s.requests...)
}

// Count returns how many requests for method were received so far.
func (s *RawServer) Count(method string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, r := range s.requests {
		if r.Method == method {
			n++
		}
	}
	return n
}

func (s *RawServer) record(req *jsonrpc.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests = append(s.requests, req)
}

// answer builds the response to a call.
func (s *RawServer) answer(req *jsonrpc.Request) *jsonrpc.Response {
	resp := &jsonrpc.Response{ID: req.ID}
	raw, ok := s.Results[req.Method]
	switch {
	case ok:
		resp.Result = json.RawMessage(raw)
	case req.Method == "ping":
		resp.Result = json.RawMessage(`{}`)
	case req.Method == "initialize":
		resp.Result = json.RawMessage(`{"protocolVersion":"2025-06-18","capabilities":{"resources":{}},"serverInfo":{"name":"raw","version":"0"}}`)
	default:
		resp.Error = &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "Method not found"}
	}
	return resp
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
			s.record(req)
			if s.Ignore[req.Method] {
				continue
			}
			if err := conn.Write(ctx, s.answer(req)); err != nil {
				return
			}
		}
	}()
	return ct
}
