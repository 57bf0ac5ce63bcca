package mcpserver_test

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
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

// post sends one JSON-RPC message to the Streamable HTTP endpoint and
// returns the response's status and session ID.
func post(t *testing.T, url, session, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
		req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode, resp.Header.Get("Mcp-Session-Id")
}

// Clients that start a session and never end it (a script run again and
// again) do not leave their sessions behind for good: an idle session is
// closed after Options.SessionTimeout, goroutine and all.
func TestAbandonedHTTPSessionsAreClosed(t *testing.T) {
	f := newFacade(t, map[string]*mcpsdk.Server{"a": mcptest.NewServer(map[string]string{"doc://x": "x"}, nil)},
		&mcpserver.Options{SessionTimeout: 300 * time.Millisecond}, engine.Options{})
	ts := httptest.NewServer(f.srv.HTTPHandler())
	defer ts.Close()
	before := runtime.NumGoroutine()
	const n = 200
	var first, last string
	for i := range n {
		code, sid := post(t, ts.URL, "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"script","version":"1"}}}`)
		if code != http.StatusOK || sid == "" {
			t.Fatalf("initialize: %d, session %q", code, sid)
		}
		post(t, ts.URL, sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
		if i == 0 {
			first = sid
		}
		last = sid
	}
	if code, _ := post(t, ts.URL, last, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`); code != http.StatusOK {
		t.Fatalf("tools/list in a live session: %d", code)
	}
	deadline := time.Now().Add(20 * time.Second)
	for runtime.NumGoroutine() > before+n/10 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if g := runtime.NumGoroutine(); g > before+n/10 {
		t.Errorf("%d goroutines after %d sessions went idle, %d before", g, n, before)
	}
	if code, _ := post(t, ts.URL, first, `{"jsonrpc":"2.0","id":3,"method":"tools/list"}`); code != http.StatusNotFound {
		t.Errorf("a request in a session idle past the timeout: %d, want 404 (the client starts a new session)", code)
	}
}

// A client that initializes in a loop holds at most MaxSessions sessions:
// each new one past it closes the one used least recently (once idle for
// MinIdleToClose), whose next request gets 404 (its host initializes
// again), while the newest keep working.
func TestHTTPSessionsAreBounded(t *testing.T) {
	f := newFacade(t, map[string]*mcpsdk.Server{"a": mcptest.NewServer(map[string]string{"doc://x": "x"}, nil)},
		&mcpserver.Options{MaxSessions: 8, MinIdleToClose: time.Nanosecond}, engine.Options{})
	ts := httptest.NewServer(f.srv.HTTPHandler())
	defer ts.Close()
	const n = 100
	var ids []string
	for range n {
		code, sid := post(t, ts.URL, "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"script","version":"1"}}}`)
		if code != http.StatusOK || sid == "" {
			t.Fatalf("initialize: %d, session %q", code, sid)
		}
		post(t, ts.URL, sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
		ids = append(ids, sid)
	}
	held := func() int {
		k := 0
		for range f.srv.MCP().Sessions() {
			k++
		}
		return k
	}
	deadline := time.Now().Add(10 * time.Second)
	for held() > 8 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if k := held(); k > 8 {
		t.Errorf("%d sessions held after %d were started, want at most 8", k, n)
	}
	if code, _ := post(t, ts.URL, ids[0], `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`); code != http.StatusNotFound {
		t.Errorf("a request in the oldest session: %d, want 404 (the client starts a new session)", code)
	}
	if code, _ := post(t, ts.URL, ids[n-1], `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`); code != http.StatusOK {
		t.Errorf("a request in the newest session: %d, want 200", code)
	}
}

// A client initializing in a loop does not close the sessions hosts are
// using: a session with a request in the last MinIdleToClose, or one in
// flight, is not closed to make room; the new session is refused with 503
// instead. Once sessions are idle that long, the least recently used is
// closed for a new one, whether or not it holds its GET stream open (256
// held streams kept every new host out).
func TestSessionChurnSparesSessionsInUse(t *testing.T) {
	const idle = 400 * time.Millisecond
	f := newFacade(t, map[string]*mcpsdk.Server{"a": mcptest.NewServer(map[string]string{"doc://x": "x"}, nil)},
		&mcpserver.Options{MaxSessions: 4, MinIdleToClose: idle}, engine.Options{})
	ts := httptest.NewServer(f.srv.HTTPHandler())
	defer ts.Close()
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"script","version":"1"}}}`
	start := func() (int, string) {
		code, sid := post(t, ts.URL, "", init)
		if code == http.StatusOK {
			post(t, ts.URL, sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
		}
		return code, sid
	}
	_, host := start()
	// Another host holds an SSE stream open and sends nothing else.
	_, streamer := start()
	req, _ := http.NewRequest(http.MethodGet, ts.URL, nil)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Mcp-Session-Id", streamer)
	req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
	stream, err := http.DefaultClient.Do(req)
	if err != nil || stream.StatusCode != http.StatusOK {
		t.Fatalf("GET stream: %v %v", stream, err)
	}
	defer stream.Body.Close()

	refused := 0
	for i := range 60 {
		if code, _ := start(); code == http.StatusServiceUnavailable {
			refused++
		}
		if i%10 == 0 { // the host keeps working, more often than idle
			if code, _ := post(t, ts.URL, host, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`); code != http.StatusOK {
				t.Fatalf("the host's request during the churn: %d, want 200", code)
			}
		}
		time.Sleep(idle / 40)
	}
	if refused == 0 {
		t.Errorf("no new session refused while every session was in use")
	}
	if code, _ := post(t, ts.URL, host, `{"jsonrpc":"2.0","id":3,"method":"tools/list"}`); code != http.StatusOK {
		t.Errorf("the host's request after the churn: %d, want 200", code)
	}
	// Once idle long enough, the least recently used make room: the
	// streaming host's session is one of them (during the churn or now),
	// its stream open or not.
	// The churn's last sessions may be younger than idle: wait them out,
	// keeping the host in use.
	time.Sleep(idle)
	post(t, ts.URL, host, `{"jsonrpc":"2.0","id":4,"method":"tools/list"}`)
	time.Sleep(idle / 2)
	if code, _ := start(); code != http.StatusOK {
		t.Errorf("a new session while a session holding only its stream was idle: %d, want 200", code)
	}
	if code, _ := post(t, ts.URL, host, `{"jsonrpc":"2.0","id":5,"method":"tools/list"}`); code != http.StatusOK {
		t.Errorf("the host's request after the new session: %d, want 200", code)
	}
	if code, _ := post(t, ts.URL, streamer, `{"jsonrpc":"2.0","id":6,"method":"tools/list"}`); code != http.StatusNotFound {
		t.Errorf("the streaming host's request once its session was closed: %d, want 404", code)
	}
}

// A session may hold at most MaxSubscriptions subscriptions, and when it
// ends they end with it (a client subscribing to new URIs in session after
// session would otherwise leave them all counted for good).
func TestSubscriptionsAreBoundedAndEndWithTheirSession(t *testing.T) {
	docs := map[string]string{}
	for i := range 5 {
		docs[fmt.Sprintf("doc://%d", i)] = fmt.Sprintf("document %d", i)
	}
	up := mcptest.NewServer(docs, &mcpsdk.ServerOptions{
		SubscribeHandler:          func(context.Context, *mcpsdk.SubscribeRequest) error { return nil },
		UnsubscribeHandler:        func(context.Context, *mcpsdk.UnsubscribeRequest) error { return nil },
		SupportedProtocolVersions: []string{"2025-11-25"}, // resources/subscribe, not subscriptions/listen
	})
	f := newFacade(t, map[string]*mcpsdk.Server{"a": up}, &mcpserver.Options{MaxSubscriptions: 3}, engine.Options{})
	ct, st := mcpsdk.NewInMemoryTransports()
	ss, err := f.srv.MCP().Connect(t.Context(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	cs, err := mcpsdk.NewClient(&mcpsdk.Implementation{Name: "test-host", Version: "v0"}, nil).Connect(t.Context(), ct, &mcpsdk.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	sub := func(i int) error {
		return cs.Subscribe(t.Context(), &mcpsdk.SubscribeParams{URI: fmt.Sprintf("contextd:resource/a/doc://%d", i)})
	}
	for i := range 3 {
		if err := sub(i); err != nil {
			t.Fatalf("subscription %d of 3: %v", i, err)
		}
	}
	if err := sub(0); err != nil {
		t.Errorf("subscribing again to a resource the session holds: %v", err)
	}
	checkCode(t, "a fourth subscription", sub(3), jsonrpc.CodeInvalidParams, "holds 3 subscriptions")
	if err := cs.Unsubscribe(t.Context(), &mcpsdk.UnsubscribeParams{URI: "contextd:resource/a/doc://0"}); err != nil {
		t.Fatal(err)
	}
	if err := sub(3); err != nil {
		t.Errorf("a subscription after unsubscribing from one: %v", err)
	}

	if r, n := mcpserver.SubscriptionsHeld(f.srv); r != 3 || n != 1 {
		t.Errorf("with the session open: %d resources subscribed by %d sessions, want 3 by 1", r, n)
	}
	cs.Close()
	_ = ss.Wait()
	deadline := time.Now().Add(5 * time.Second)
	for r, n := mcpserver.SubscriptionsHeld(f.srv); (r != 0 || n != 0) && time.Now().Before(deadline); r, n = mcpserver.SubscriptionsHeld(f.srv) {
		time.Sleep(10 * time.Millisecond)
	}
	if r, n := mcpserver.SubscriptionsHeld(f.srv); r != 0 || n != 0 {
		t.Errorf("after the session ended: %d resources subscribed by %d sessions, want none", r, n)
	}
}

// A request body over MaxRequestBytes (one starting a session: over
// MaxSessionStartBytes) is refused with 413, before the go-sdk reads it
// whole into memory.
func TestHTTPRequestBodiesAreBounded(t *testing.T) {
	f := newFacade(t, map[string]*mcpsdk.Server{"a": mcptest.NewServer(map[string]string{"doc://x": "x"}, nil)}, nil, engine.Options{})
	ts := httptest.NewServer(f.srv.HTTPHandler())
	defer ts.Close()
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"script","version":"1"}}}`
	code, sid := post(t, ts.URL, "", init+strings.Repeat(" ", mcpserver.MaxSessionStartBytes/2))
	if code != http.StatusOK {
		t.Fatalf("initialize of %d KiB: %d, want 200", mcpserver.MaxSessionStartBytes/2>>10, code)
	}
	if code, _ := post(t, ts.URL, "", init+strings.Repeat(" ", mcpserver.MaxSessionStartBytes)); code != http.StatusRequestEntityTooLarge {
		t.Errorf("initialize of %d KiB: %d, want 413", mcpserver.MaxSessionStartBytes>>10, code)
	}
	post(t, ts.URL, sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	ping := `{"jsonrpc":"2.0","id":2,"method":"ping"}`
	if code, _ := post(t, ts.URL, sid, ping+strings.Repeat(" ", mcpserver.MaxRequestBytes/2)); code != http.StatusOK {
		t.Errorf("ping of %d KiB: %d, want 200", mcpserver.MaxRequestBytes/2>>10, code)
	}
	if code, _ := post(t, ts.URL, sid, ping+strings.Repeat(" ", mcpserver.MaxRequestBytes)); code != http.StatusRequestEntityTooLarge {
		t.Errorf("ping of %d KiB: %d, want 413", mcpserver.MaxRequestBytes>>10, code)
	}
}

// A session closed to make room while a request of it is still running is
// closed once: new sessions meanwhile neither count it nor start closing
// it again (a goroutine each, waiting for that request, which a client
// starting sessions in a loop would pile up by the thousand).
func TestASessionBusyClosingIsClosedOnce(t *testing.T) {
	hold := make(chan struct{})
	admit := func(context.Context) (func(), error) { <-hold; return func() {}, nil }
	f := newFacade(t, map[string]*mcpsdk.Server{"a": mcptest.NewServer(map[string]string{"doc://x": "x"}, nil)},
		&mcpserver.Options{MaxSessions: 4, Admit: admit, MinIdleToClose: time.Nanosecond}, engine.Options{})
	ts := httptest.NewServer(f.srv.HTTPHandler())
	defer ts.Close()
	defer close(hold)
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"script","version":"1"}}}`
	_, busy := post(t, ts.URL, "", init)
	post(t, ts.URL, busy, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	go func() { // runs until hold is closed
		req, _ := http.NewRequest(http.MethodPost, ts.URL, strings.NewReader(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"search_resources","arguments":{"query":"x"}}}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Session-Id", busy)
		req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	}()
	time.Sleep(100 * time.Millisecond)
	before := runtime.NumGoroutine()
	const n = 200
	for range n {
		if code, sid := post(t, ts.URL, "", init); code != http.StatusOK || sid == "" {
			t.Fatalf("initialize: %d, session %q", code, sid)
		}
	}
	time.Sleep(100 * time.Millisecond)
	if g := runtime.NumGoroutine(); g > before+n/10 {
		t.Errorf("%d goroutines after %d new sessions while the oldest finishes a request, %d before", g, n, before)
	}
}

// The go-sdk's records of each session's start and end are logged at debug
// level: at info, a client starting sessions in a loop wrote three lines
// for each.
func TestSessionsAreNotLoggedAtInfo(t *testing.T) {
	var buf syncBuffer
	log := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo}))
	f := newFacade(t, map[string]*mcpsdk.Server{"a": mcptest.NewServer(map[string]string{"doc://x": "x"}, nil)},
		&mcpserver.Options{Logger: log}, engine.Options{})
	ts := httptest.NewServer(f.srv.HTTPHandler())
	defer ts.Close()
	for range 20 {
		_, sid := post(t, ts.URL, "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"script","version":"1"}}}`)
		post(t, ts.URL, sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
		req, _ := http.NewRequest(http.MethodDelete, ts.URL, nil)
		req.Header.Set("Mcp-Session-Id", sid)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	}
	if out := buf.String(); strings.Contains(out, "session") {
		t.Errorf("20 sessions logged at info:\n%.2000s", out)
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// What a caller sends reaches the log bounded: the go-sdk warns of a
// request whose Mcp-Protocol-Version header names a version past the ones a
// stateful server speaks, quoting the header whole (all that
// MaxSessionHeaderBytes lets through, escaped to four times that, on every
// request).
func TestCallerInputInSDKWarningsIsBounded(t *testing.T) {
	var buf syncBuffer
	log := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelWarn}))
	f := newFacade(t, map[string]*mcpsdk.Server{"a": mcptest.NewServer(map[string]string{"doc://x": "x"}, nil)},
		&mcpserver.Options{Logger: log}, engine.Options{})
	ts := httptest.NewServer(f.srv.HTTPHandler())
	defer ts.Close()
	_, sid := post(t, ts.URL, "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"script","version":"1"}}}`)
	post(t, ts.URL, sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	const requests = 5
	for range requests {
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, ts.URL, strings.NewReader(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Session-Id", sid)
		req.Header["Mcp-Protocol-Version"] = []string{"2026-07-29" + strings.Repeat("\x80", mcpserver.MaxSessionHeaderBytes-200)}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("status %d, want 400", resp.StatusCode)
		}
	}
	out := buf.String()
	if !strings.Contains(out, "rejecting request with protocol version") {
		t.Fatalf("the go-sdk's warning was not logged; the test no longer sees what it checks:\n%.500s", out)
	}
	if len(out) > requests*2048 {
		t.Errorf("%d requests with a %d KiB header logged %d bytes, want at most 2 KiB each", requests, mcpserver.MaxSessionHeaderBytes>>10, len(out))
	}
}
