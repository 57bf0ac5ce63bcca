package mcpserver_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/contextd/contextd/internal/engine"
	"github.com/contextd/contextd/internal/mcp/mcptest"
	"github.com/contextd/contextd/internal/mcpserver"
)

// startSession initializes a 2025-06-18 session on the Streamable HTTP
// endpoint at url and returns its ID.
func startSession(t *testing.T, url string) string {
	t.Helper()
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"script","version":"1"}}}`
	code, sid := post(t, url, "", init)
	if code != http.StatusOK || sid == "" {
		t.Fatalf("initialize: %d, session %q", code, sid)
	}
	if code, _ := post(t, url, sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); code != http.StatusAccepted {
		t.Fatalf("notifications/initialized: %d", code)
	}
	return sid
}

// sendAndClose writes a POST of body on session sid over a connection of
// its own, with the extra header lines given, and returns the connection
// unread: closing it is the caller leaving.
func sendAndClose(t *testing.T, addr, sid, extra, body string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	_ = c.SetDeadline(time.Now().Add(20 * time.Second))
	fmt.Fprintf(c, "POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"+
		"Mcp-Protocol-Version: 2025-06-18\r\nMcp-Session-Id: %s\r\n%sContent-Length: %d\r\n\r\n%s", sid, extra, len(body), body)
	return c
}

// A call whose caller closes its connection before the answer stops: the
// go-sdk would run it to its end for nobody (before protocol 2026-07-28 a
// call's context is the session's), so a caller sending calls and
// closing each connection at once would have them all admitted, ranked
// and read, piling up faster than they finish.
func TestACallWhoseCallerLeftStops(t *testing.T) {
	entered := make(chan struct{}, 1)
	stopped := make(chan error, 1)
	admit := func(ctx context.Context) (func(), error) {
		entered <- struct{}{}
		select {
		case <-ctx.Done():
			stopped <- context.Cause(ctx)
			return nil, ctx.Err()
		case <-time.After(20 * time.Second):
			stopped <- nil
			return func() {}, nil
		}
	}
	f := newFacade(t, map[string]*mcpsdk.Server{"a": mcptest.NewServer(map[string]string{"doc://x": "x"}, nil)},
		&mcpserver.Options{Admit: admit}, engine.Options{})
	ts := httptest.NewServer(f.srv.HTTPHandler())
	defer ts.Close()
	sid := startSession(t, ts.URL)

	c := sendAndClose(t, ts.Listener.Addr().String(), sid, "",
		`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"search_resources","arguments":{"query":"x"}}}`)
	select {
	case <-entered:
	case <-time.After(10 * time.Second):
		t.Fatal("the call did not reach the admission in 10 s")
	}
	c.Close()
	select {
	case err := <-stopped:
		if err == nil || !strings.Contains(err.Error(), "connection closed") {
			t.Errorf("the call's context ended with %v, want the caller having left", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the call still waited for its turn 10 s after its caller closed the connection")
	}

	// The session is not harmed: a caller that stays gets its answer.
	code, _ := post(t, ts.URL, sid, `{"jsonrpc":"2.0","id":8,"method":"ping"}`)
	if code != http.StatusOK {
		t.Errorf("a ping on the same session: %d, want 200", code)
	}
}

// What the go-sdk keeps with a message until it is handled (and, through
// its per-session queue, possibly after) includes the request's headers:
// a session's POST hands over only the headers the go-sdk reads, so a
// caller's junk header (up to MaxHeaderBytes each) is not kept, and the
// headers handed over are bounded.
func TestSessionPOSTsHandOverOnlyTheHeadersTheSDKReads(t *testing.T) {
	f := newFacade(t, map[string]*mcpsdk.Server{"a": mcptest.NewServer(map[string]string{"doc://x": "x"}, nil)}, nil, engine.Options{})
	var mu sync.Mutex
	var seen []http.Header
	f.srv.MCP().AddReceivingMiddleware(func(next mcpsdk.MethodHandler) mcpsdk.MethodHandler {
		return func(ctx context.Context, method string, req mcpsdk.Request) (mcpsdk.Result, error) {
			if extra := req.GetExtra(); extra != nil && method == "ping" {
				mu.Lock()
				seen = append(seen, extra.Header)
				mu.Unlock()
			}
			return next(ctx, method, req)
		}
	})
	ts := httptest.NewServer(f.srv.HTTPHandler())
	defer ts.Close()
	sid := startSession(t, ts.URL)

	junk := "X-Junk: " + strings.Repeat("j", 40<<10) + "\r\nUser-Agent: attacker\r\n"
	c := sendAndClose(t, ts.Listener.Addr().String(), sid, junk, `{"jsonrpc":"2.0","id":2,"method":"ping"}`)
	buf := make([]byte, 12)
	_, _ = c.Read(buf) // the status line: the ping was handled
	c.Close()
	if got := string(buf); !strings.HasPrefix(got, "HTTP/1.1 200") {
		t.Fatalf("a ping with a 40 KiB junk header: %q, want 200", got)
	}
	mu.Lock()
	if len(seen) != 1 {
		t.Fatalf("the ping was handled %d times, want 1", len(seen))
	}
	size := 0
	for name, values := range seen[0] {
		for _, v := range values {
			size += len(name) + len(v)
		}
	}
	if seen[0].Get("X-Junk") != "" || seen[0].Get("User-Agent") != "" || size > 1<<10 {
		t.Errorf("the go-sdk was handed %d bytes of headers (X-Junk %d bytes, User-Agent %q), want only what it reads",
			size, len(seen[0].Get("X-Junk")), seen[0].Get("User-Agent"))
	}
	if seen[0].Get("Mcp-Session-Id") != sid {
		t.Errorf("the handed-over headers lost the session: %v", seen[0])
	}

	// What is handed over shares no memory with the request's own
	// headers (net/http keeps every value of a request in one array): a
	// message kept keeps none of the junk.
	seen = nil
	mu.Unlock()
	var before runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	const pings = 200
	for i := range pings {
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, ts.URL, strings.NewReader(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"ping"}`, 100+i)))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Session-Id", sid)
		req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
		req.Header.Set("X-Junk", strings.Repeat("j", 40<<10))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	var after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&after)
	mu.Lock()
	if len(seen) != pings {
		t.Fatalf("%d pings handled, want %d", len(seen), pings)
	}
	if grown := int64(after.HeapAlloc) - int64(before.HeapAlloc); grown > 2<<20 {
		t.Errorf("keeping the headers handed over for %d pings with a 40 KiB junk header each keeps %d KiB, want under 2 MiB", pings, grown>>10)
	}
	mu.Unlock()

	// Headers the go-sdk reads are kept whole, and bounded.
	big := "Mcp-Junk: " + strings.Repeat("m", mcpserver.MaxSessionHeaderBytes) + "\r\n"
	c = sendAndClose(t, ts.Listener.Addr().String(), sid, big, `{"jsonrpc":"2.0","id":3,"method":"ping"}`)
	_, _ = c.Read(buf)
	c.Close()
	if got := string(buf); !strings.HasPrefix(got, "HTTP/1.1 431") {
		t.Errorf("a ping with an Mcp-* header over %d bytes: %q, want 431", mcpserver.MaxSessionHeaderBytes, got)
	}
}

// The go-sdk queues a session's messages without bound and keeps handled
// ones reachable from its queue: a session's next message is handed over
// only once the previous one has started. Calls whose callers leave while
// they wait for that never reach the go-sdk; a session whose message is
// slow to start refuses the next after a while (503), and a message the
// go-sdk drops before it starts does not hold the session for good.
func TestASessionsMessagesAreHandedOverOneAtATime(t *testing.T) {
	defer mcpserver.SetHandOverWaits(2*time.Second, 10*time.Second)()
	f := newFacade(t, map[string]*mcpsdk.Server{"a": mcptest.NewServer(map[string]string{"doc://x": "x"}, nil)}, nil, engine.Options{})
	held := make(chan struct{})
	var mu sync.Mutex
	calls := 0
	f.srv.MCP().AddReceivingMiddleware(func(next mcpsdk.MethodHandler) mcpsdk.MethodHandler {
		return func(ctx context.Context, method string, req mcpsdk.Request) (mcpsdk.Result, error) {
			switch method {
			case "notifications/roots/list_changed":
				<-held // handled in order: nothing after it starts meanwhile
			case "tools/call":
				mu.Lock()
				calls++
				mu.Unlock()
			}
			return next(ctx, method, req)
		}
	})
	ts := httptest.NewServer(f.srv.HTTPHandler())
	defer ts.Close()
	sid := startSession(t, ts.URL)
	if code, _ := post(t, ts.URL, sid, `{"jsonrpc":"2.0","method":"notifications/roots/list_changed"}`); code != http.StatusAccepted {
		t.Fatalf("notifications/roots/list_changed: %d", code)
	}

	// 100 callers of 100 KiB calls, each leaving after 100 ms; half of
	// them carry a "METHOD":null member, which a decoder matching names in
	// any case would take for an answer's.
	task := strings.Repeat("flow control ", 100<<10/13)
	var wg sync.WaitGroup
	for i := range 100 {
		extra := ""
		if i%2 == 1 {
			extra = `,"METHOD":null`
		}
		wg.Go(func() {
			c := sendAndClose(t, ts.Listener.Addr().String(), sid, "",
				fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"assemble_context","arguments":{"task":%q}}%s}`, 10+i, task, extra))
			time.Sleep(100 * time.Millisecond)
			c.Close()
		})
	}
	wg.Wait()
	// One caller that stays gets 503 once its wait is over.
	c := sendAndClose(t, ts.Listener.Addr().String(), sid, "", `{"jsonrpc":"2.0","id":200,"method":"ping"}`)
	buf := make([]byte, 12)
	_, _ = c.Read(buf)
	c.Close()
	if got := string(buf); !strings.HasPrefix(got, "HTTP/1.1 503") {
		t.Errorf("a ping waiting for a message that does not start: %q, want 503", got)
	}
	close(held)

	// The session goes on; the calls whose callers left never ran.
	if code, _ := post(t, ts.URL, sid, `{"jsonrpc":"2.0","id":300,"method":"ping"}`); code != http.StatusOK {
		t.Errorf("a ping once the notification started: %d, want 200", code)
	}
	mu.Lock()
	if calls != 0 {
		t.Errorf("%d of 100 calls whose callers left while waiting reached the go-sdk, want none", calls)
	}
	mu.Unlock()

	// A message the go-sdk drops before any handler (a cancellation whose
	// params do not decode) holds the session only for a while.
	mcpserver.SetHandOverWaits(10*time.Second, time.Second)
	if code, _ := post(t, ts.URL, sid, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":{}}}`); code != http.StatusAccepted {
		t.Fatalf("a malformed cancellation: %d, want 202", code)
	}
	start := time.Now()
	if code, _ := post(t, ts.URL, sid, `{"jsonrpc":"2.0","id":301,"method":"ping"}`); code != http.StatusOK || time.Since(start) > 10*time.Second {
		t.Errorf("a ping after a dropped message: %d after %v, want 200", code, time.Since(start))
	}
}

// The header through which a message's handler finds its POST is
// contextd's own: one a caller sends is not taken, on any request.
func TestCallersCannotSetThePOSTHeader(t *testing.T) {
	f := newFacade(t, map[string]*mcpsdk.Server{"a": mcptest.NewServer(map[string]string{"doc://x": "x"}, nil)}, nil, engine.Options{})
	ts := httptest.NewServer(f.srv.HTTPHandler())
	defer ts.Close()
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"script","version":"1"}}}`
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, ts.URL, strings.NewReader(init))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Contextd-Post", "1")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"result"`) || resp.Header.Get("Mcp-Session-Id") == "" {
		t.Errorf("an initialize with a Contextd-Post header: %d %.300s, want a session started", resp.StatusCode, body)
	}
}
