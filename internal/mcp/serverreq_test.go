package mcp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/contextd/contextd/internal/mcp"
)

// A server may send the client requests, and the go-sdk handles each on a
// goroutine that holds it until its handler returns; its handler of
// completion/complete sends the request back to the server and waits for
// the answer with no deadline. A server that sends such requests and never
// answers the ones sent back made contextd keep a goroutine and the
// request per request, without bound. Every request but ping and
// roots/list is now refused at once, without being decoded or sent back.
func TestRequestsFromAServerAreAnsweredAtOnce(t *testing.T) {
	ct, st := mcpsdk.NewInMemoryTransports()
	conn, err := st.Connect(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); conn.Close(); <-done })

	var mu sync.Mutex
	answers := map[string]*jsonrpc.Response{} // by the server's request ID
	sentBack := 0                             // completion requests the client sent the server
	go func() {
		defer close(done)
		for {
			msg, err := conn.Read(ctx)
			if err != nil {
				return
			}
			switch m := msg.(type) {
			case *jsonrpc.Response:
				mu.Lock()
				answers[fmt.Sprint(m.ID.Raw())] = m
				mu.Unlock()
			case *jsonrpc.Request:
				if !m.IsCall() {
					continue
				}
				resp := &jsonrpc.Response{ID: m.ID, Result: json.RawMessage(`{}`)}
				switch m.Method {
				case "initialize":
					resp.Result = json.RawMessage(`{"protocolVersion":"2025-06-18","capabilities":{"resources":{}},"serverInfo":{"name":"asker","version":"0"}}`)
				case "ping":
				case "completion/complete":
					mu.Lock()
					sentBack++
					mu.Unlock()
					continue // never answered
				default:
					resp.Result, resp.Error = nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "Method not found"}
				}
				if conn.Write(ctx, resp) != nil {
					return
				}
			}
		}
	}()
	sess, err := mcp.ConnectTransport(t.Context(), "asker", ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// The server goes first, so that handlers still waiting on it
		// (without the refusal) end and Close returns.
		cancel()
		conn.Close()
		closed := make(chan struct{})
		go func() { sess.Close(); close(closed) }()
		select {
		case <-closed:
		case <-time.After(5 * time.Second):
			t.Error("Close still waiting after 5 s")
		}
	})

	big := strings.Repeat("x", 64<<10)
	asks := map[string]string{
		"completion/complete":    `{"ref":{"type":"ref/resource","uri":"x://{a}"},"argument":{"name":"a","value":"` + big + `"}}`,
		"sampling/createMessage": `{"messages":[],"maxTokens":1}`,
		"elicitation/create":     `{"message":"` + big + `","requestedSchema":{"type":"object"}}`,
		"tools/call":             `{"name":"x"}`,
	}
	const rounds = 50
	for i := range rounds {
		for method, params := range asks {
			id, _ := jsonrpc.MakeID(fmt.Sprintf("%s-%d", method, i))
			if err := conn.Write(ctx, &jsonrpc.Request{ID: id, Method: method, Params: json.RawMessage(params)}); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, method := range []string{"ping", "roots/list"} {
		id, _ := jsonrpc.MakeID(method)
		if err := conn.Write(ctx, &jsonrpc.Request{ID: id, Method: method}); err != nil {
			t.Fatal(err)
		}
	}

	want := rounds*len(asks) + 2
	deadline := time.Now().Add(5 * time.Second)
	for {
		mu.Lock()
		got, back := len(answers), sentBack
		mu.Unlock()
		if got == want {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d requests answered after 5 s; %d requests sent back to the server", got, want, back)
		}
		time.Sleep(10 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	if sentBack > 0 {
		t.Errorf("the client sent %d requests back to the server, want none", sentBack)
	}
	for id, resp := range answers {
		switch id {
		case "ping", "roots/list":
			if resp.Error != nil {
				t.Errorf("%s: error %v, want an answer", id, resp.Error)
			}
		default:
			if resp.Error == nil {
				t.Errorf("%s: answered %s, want it refused", id, resp.Result)
			} else if len(resp.Error.Error()) > 1024 {
				t.Errorf("%s: a refusal of %d bytes", id, len(resp.Error.Error()))
			}
		}
	}
}
