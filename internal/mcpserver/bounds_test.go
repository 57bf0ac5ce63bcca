package mcpserver_test

import (
	"bufio"
	"bytes"
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

// emptyObjects returns n empty JSON objects, comma-separated.
func emptyObjects(n int) string {
	return strings.TrimSuffix(strings.Repeat("{},", n), ",")
}

// A body of many small JSON values decodes into Go maps and slices worth
// tens of times its size: past MaxRequestValues it is refused with 413
// before it is decoded; a host's requests (with pins) pass.
func TestHTTPRequestValuesAreBounded(t *testing.T) {
	f := newFacade(t, map[string]*mcpsdk.Server{"a": mcptest.NewServer(map[string]string{"doc://x": "x"}, nil)}, nil, engine.Options{})
	ts := httptest.NewServer(f.srv.HTTPHandler())
	defer ts.Close()
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"script","version":"1"}}}`
	code, sid := post(t, ts.URL, "", init)
	if code != http.StatusOK {
		t.Fatalf("initialize: %d", code)
	}
	post(t, ts.URL, sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	pins := `"contextd:resource/a/doc://x"` + strings.Repeat(`,"contextd:resource/a/doc://x"`, 31)
	// Commas and brackets inside strings are not values.
	call := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"search_resources","arguments":{"query":"` + strings.Repeat("{[,", 30000) + `"}}}`
	if code, _ := post(t, ts.URL, sid, call); code != http.StatusOK {
		t.Errorf("a query of 90,000 brackets and commas: %d, want 200", code)
	}
	call = `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"assemble_context","arguments":{"task":"x","pins":[` + pins + `]}}}`
	if code, _ := post(t, ts.URL, sid, call); code != http.StatusOK {
		t.Errorf("assemble_context with 32 pins: %d, want 200", code)
	}
	ping := `{"jsonrpc":"2.0","id":4,"method":"ping","params":{"_meta":{"x":[` + emptyObjects(mcpserver.MaxRequestValues) + `]}}}`
	if code, _ := post(t, ts.URL, sid, ping); code != http.StatusRequestEntityTooLarge {
		t.Errorf("a ping whose _meta holds %d empty objects (%d KiB): %d, want 413", mcpserver.MaxRequestValues, len(ping)>>10, code)
	}
}

// A session keeps its initialize params for its life: a body starting a
// session is bounded to MaxSessionStartBytes, and what a client puts in it
// beyond what contextd reads (experimental capabilities, extension
// settings, _meta, long clientInfo strings) is not kept.
func TestSessionsDoNotKeepWhatInitializeCarries(t *testing.T) {
	f := newFacade(t, map[string]*mcpsdk.Server{"a": mcptest.NewServer(map[string]string{"doc://x": "x"}, nil)}, nil, engine.Options{})
	ts := httptest.NewServer(f.srv.HTTPHandler())
	defer ts.Close()
	initWith := func(blob, name string) string {
		return `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"_meta":{"m":` + blob + `},"protocolVersion":"2025-06-18","capabilities":{"experimental":{"x":` + blob +
			`},"extensions":{"e":` + blob + `}},"clientInfo":{"name":"` + name + `","version":"1"}}}`
	}
	blob := `[` + emptyObjects(2500) + `]`
	init := initWith(blob, strings.Repeat("n", 16<<10))
	if len(init) > mcpserver.MaxSessionStartBytes {
		t.Fatalf("initialize of %d bytes", len(init))
	}
	if code, _ := post(t, ts.URL, "", initWith(blob, strings.Repeat("n", mcpserver.MaxSessionStartBytes))); code != http.StatusRequestEntityTooLarge {
		t.Errorf("an initialize over %d KiB: %d, want 413", mcpserver.MaxSessionStartBytes>>10, code)
	}
	heap := func() uint64 {
		var m runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	const n = 40
	before := heap()
	for i := range n {
		if code, sid := post(t, ts.URL, "", init); code != http.StatusOK || sid == "" {
			t.Fatalf("initialize %d (%d KiB): %d, session %q", i, len(init)>>10, code, sid)
		}
	}
	after := heap()
	if per := (int64(after) - int64(before)) / n; per > 128<<10 {
		t.Errorf("each session holds %d KiB after an initialize of %d KiB, want at most 128", per>>10, len(init)>>10)
	}
	var names []string
	for ss := range f.srv.MCP().Sessions() {
		p := ss.InitializeParams()
		if p == nil || p.ClientInfo == nil || p.Capabilities == nil {
			continue
		}
		names = append(names, p.ClientInfo.Name)
		if _, ok := p.Capabilities.Extensions["e"]; !ok || len(p.Capabilities.Extensions) != 1 || p.Capabilities.Experimental != nil {
			t.Errorf("capabilities kept: %d extensions (want e), %d experimental (want none)", len(p.Capabilities.Extensions), len(p.Capabilities.Experimental))
		} else if e, _ := p.Capabilities.Extensions["e"].(map[string]any); len(e) != 0 {
			t.Errorf("the settings of extension e were kept")
		}
	}
	if len(names) != n {
		t.Fatalf("%d sessions with params, want %d", len(names), n)
	}
	if len(names[0]) != 256 {
		t.Errorf("clientInfo.name kept: %d bytes, want 256", len(names[0]))
	}
}

// A session's subscriptions hold at most MaxSubscriptionBytes of URIs,
// however few they are (an upstream may list URIs of 4 KiB).
func TestSubscriptionURIsAreBoundedPerSession(t *testing.T) {
	docs := map[string]string{}
	long := strings.Repeat("x", 3<<10)
	n := mcpserver.MaxSubscriptionBytes/(3<<10) + 4
	for i := range n {
		docs[fmt.Sprintf("doc://%d/%s", i, long)] = fmt.Sprintf("document %d", i)
	}
	up := mcptest.NewServer(docs, &mcpsdk.ServerOptions{
		SubscribeHandler:          func(context.Context, *mcpsdk.SubscribeRequest) error { return nil },
		UnsubscribeHandler:        func(context.Context, *mcpsdk.UnsubscribeRequest) error { return nil },
		SupportedProtocolVersions: []string{"2025-11-25"},
	})
	f := newFacade(t, map[string]*mcpsdk.Server{"a": up}, nil, engine.Options{})
	cs := f.connectVersion(t, nil, "2025-11-25")
	held := 0
	var last error
	for i := range n {
		last = cs.Subscribe(t.Context(), &mcpsdk.SubscribeParams{URI: fmt.Sprintf("contextd:resource/a/doc://%d/%s", i, long)})
		if last != nil {
			break
		}
		held++
	}
	short := func(err error) string { return fmt.Sprintf("%.200v", err) }
	if want := mcpserver.MaxSubscriptionBytes / (3<<10 + 32); held < want-1 || held > want {
		t.Errorf("%d subscriptions of 3 KiB URIs held, want about %d; last error: %s", held, want, short(last))
	}
	if last == nil || !strings.Contains(last.Error(), "KiB of URIs") {
		t.Errorf("the subscription past the bound: %s, want an error naming the URIs' size", short(last))
	}
}

// A JSON-RPC batch (protocol 2025-03-26) is handled a goroutine a message:
// one of thousands of resources/list held thousands of goroutines and
// pages per POST, so a batch may hold MaxBatch messages (one).
func TestBatchesAreBounded(t *testing.T) {
	f := newFacade(t, map[string]*mcpsdk.Server{"a": mcptest.NewServer(map[string]string{"doc://x": "x"}, nil)}, nil, engine.Options{})
	ts := httptest.NewServer(f.srv.HTTPHandler())
	defer ts.Close()
	send := func(sid, body string) int {
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, ts.URL, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if sid != "" {
			req.Header.Set("Mcp-Session-Id", sid)
			req.Header.Set("Mcp-Protocol-Version", "2025-03-26")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		_, _ = io.Copy(io.Discard, resp.Body)
		return resp.StatusCode
	}
	code, sid := post(t, ts.URL, "", `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"script","version":"1"}}}`)
	if code != http.StatusOK {
		t.Fatalf("initialize: %d", code)
	}
	send(sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	batch := func(n int) string {
		var b strings.Builder
		b.WriteString(" [")
		for i := range n {
			if i > 0 {
				b.WriteString(",")
			}
			// Commas inside strings and nested values are not messages.
			fmt.Fprintf(&b, `{"jsonrpc":"2.0","id":%d,"method":"resources/list","params":{"_meta":{"x":[1,2,","]}}}`, i+1)
		}
		b.WriteString("]")
		return b.String()
	}
	if code := send(sid, batch(mcpserver.MaxBatch)); code != http.StatusOK {
		t.Errorf("a batch of %d lists: %d, want 200", mcpserver.MaxBatch, code)
	}
	if code := send(sid, batch(mcpserver.MaxBatch+1)); code != http.StatusBadRequest {
		t.Errorf("a batch of %d lists: %d, want 400", mcpserver.MaxBatch+1, code)
	}
	if code := send(sid, batch(1000)); code != http.StatusBadRequest {
		t.Errorf("a batch of 1,000 lists: %d, want 400", code)
	}
}

// Lists that wait for a refresh of the resource list together share the
// next one: each refresh reads every mirror's status, which counts over the
// whole index, and lists queued one refresh each without bound.
func TestListsWaitingTogetherShareARefresh(t *testing.T) {
	f := newFacade(t, map[string]*mcpsdk.Server{"a": mcptest.NewServer(map[string]string{"doc://x": "x"}, nil)},
		&mcpserver.Options{CheckInterval: time.Hour}, engine.Options{})
	cs := f.connect(t, nil)
	if _, err := cs.ListResources(t.Context(), nil); err != nil {
		t.Fatal(err)
	}
	release := mcpserver.HoldRefresh(f.srv) // a refresh in flight
	before := mcpserver.Refreshes(f.srv)
	const lists = 20
	var wg sync.WaitGroup
	for range lists {
		wg.Go(func() {
			if res, err := cs.ListResources(t.Context(), nil); err != nil || len(res.Resources) != 1 {
				t.Errorf("list: %v, %v", res, err)
			}
		})
	}
	time.Sleep(300 * time.Millisecond) // every list waits for the refresh
	release()
	wg.Wait()
	if n := mcpserver.Refreshes(f.srv) - before; n > 2 {
		t.Errorf("%d lists waiting together ran %d refreshes, want 1 (2 if one came late)", lists, n)
	}
}

// Request bodies over SmallBody being read at once are bounded together:
// each connection could otherwise hold MaxRequestBytes for its handshake
// timeout (900 connections of 1 MiB bodies: +810 MB of heap). Past the bound a large body
// is refused at once; small ones are still served.
func TestLargeBodiesReadAtOnceAreBounded(t *testing.T) {
	defer mcpserver.SetMaxLargeBodyBytes(mcpserver.MaxRequestBytes)()
	f := newFacade(t, map[string]*mcpsdk.Server{"a": mcptest.NewServer(map[string]string{"doc://x": "x"}, nil)}, nil, engine.Options{})
	ts := httptest.NewServer(f.srv.HTTPHandler())
	defer ts.Close()
	code, sid := post(t, ts.URL, "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"script","version":"1"}}}`)
	if code != http.StatusOK {
		t.Fatalf("initialize: %d", code)
	}
	post(t, ts.URL, sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	// start sends the headers of a body of mcpserver.MaxRequestBytes-100
	// bytes and the first sent of them. Its connection is closed before
	// the server (which waits for requests in flight).
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	start := func(sent int) net.Conn {
		c, err := net.Dial("tcp", ts.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
		_ = c.SetWriteDeadline(time.Now().Add(10 * time.Second))
		fmt.Fprintf(c, "POST / HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nMcp-Session-Id: %s\r\nMcp-Protocol-Version: 2025-06-18\r\nContent-Length: %d\r\n\r\n",
			ts.Listener.Addr(), sid, mcpserver.MaxRequestBytes-100)
		if _, err := c.Write(bytes.Repeat([]byte(" "), sent)); err != nil {
			t.Fatal(err)
		}
		return c
	}
	status := func(c net.Conn) int {
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			return 0
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	sent := mcpserver.MaxRequestBytes * 7 / 8
	first := start(sent) // its buffer takes the bound
	time.Sleep(200 * time.Millisecond)
	second := start(mcpserver.MaxRequestBytes / 2)
	if code := status(second); code != http.StatusServiceUnavailable {
		t.Errorf("a second large body while the first takes the bound: status %d, want 503 at once", code)
	}
	if code, _ := post(t, ts.URL, sid, `{"jsonrpc":"2.0","id":2,"method":"ping"}`); code != http.StatusOK {
		t.Errorf("a small request meanwhile: %d, want 200", code)
	}
	// The first is served once it is in (a body of spaces: 400), and its
	// share is given back.
	if _, err := first.Write(bytes.Repeat([]byte(" "), mcpserver.MaxRequestBytes-100-sent)); err != nil {
		t.Fatal(err)
	}
	if code := status(first); code != http.StatusBadRequest {
		t.Errorf("the first body, once whole: %d, want 400 (not JSON)", code)
	}
	third := start(mcpserver.MaxRequestBytes - 100)
	if code := status(third); code != http.StatusBadRequest {
		t.Errorf("a large body after the first was done: %d, want 400 (not JSON)", code)
	}
}

// The go-sdk reads a number id as a float64: over HTTP as over stdio, a
// message whose id float cannot hold exactly (2^53+1, 1.5) is refused
// with an error under id null, not answered under another id.
func TestHTTPIDsTheGoSDKWouldChangeAreRefused(t *testing.T) {
	f := newFacade(t, map[string]*mcpsdk.Server{"a": mcptest.NewServer(map[string]string{"doc://x": "x"}, nil)}, nil, engine.Options{})
	ts := httptest.NewServer(f.srv.HTTPHandler())
	defer ts.Close()
	code, sid := post(t, ts.URL, "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"script","version":"1"}}}`)
	if code != http.StatusOK {
		t.Fatalf("initialize: %d", code)
	}
	post(t, ts.URL, sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	for _, id := range []string{"9007199254740993", "1.5", "1e400", "-9007199254740993"} {
		if code, _ := post(t, ts.URL, sid, `{"jsonrpc":"2.0","id":`+id+`,"method":"ping"}`); code != http.StatusBadRequest {
			t.Errorf("a ping with id %s: %d, want 400", id, code)
		}
	}
	for _, id := range []string{"9007199254740992", "7", `"x"`} {
		if code, _ := post(t, ts.URL, sid, `{"jsonrpc":"2.0","id":`+id+`,"method":"ping"}`); code != http.StatusOK {
			t.Errorf("a ping with id %s: %d, want 200", id, code)
		}
	}
}
