package mcp_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	neturl "net/url"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/contextd/contextd/internal/config"
	"github.com/contextd/contextd/internal/mcp"
	"github.com/contextd/contextd/internal/mcp/mcptest"
)

func httpSession(t *testing.T, srv *mcptest.RawServer, opts *mcp.Options) *mcp.Session {
	t.Helper()
	url := srv.StartHTTP(t)
	sess, err := mcp.Connect(t.Context(), config.Server{Name: "web", Transport: config.TransportHTTP, URL: url}, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sess.Close() })
	return sess
}

func TestExpiredHTTPSessionIsTyped(t *testing.T) {
	srv := &mcptest.RawServer{Results: map[string]string{
		"resources/read": `{"contents":[{"uri":"x://a","text":"hi"}]}`,
	}}
	sess := httpSession(t, srv, nil)
	if _, err := sess.Read(t.Context(), "x://a"); err != nil {
		t.Fatal(err)
	}
	srv.ExpireSessions()
	_, err := sess.Read(t.Context(), "x://a")
	if !errors.Is(err, mcp.ErrSessionExpired) {
		t.Fatalf("Read after expiry: %v, want ErrSessionExpired", err)
	}
	if err := sess.Wait(); !errors.Is(err, mcp.ErrSessionExpired) {
		t.Fatalf("Wait after expiry = %v, want ErrSessionExpired (the mirror reconnects on it)", err)
	}
}

// bigRead returns a resources/read answer of about n bytes of text.
func bigRead(id string, n int) []byte {
	return []byte(`{"jsonrpc":"2.0","id":` + id + `,"result":{"contents":[{"uri":"x://big","text":"` + strings.Repeat("a", n) + `"}]}}`)
}

func TestOversizedHTTPResponseFailsOnlyItsRead(t *testing.T) {
	const limit = 1 << 20
	for _, ct := range []string{"application/json", "text/event-stream"} {
		t.Run(ct, func(t *testing.T) {
			var calls atomic.Int32
			srv := &mcptest.RawServer{
				ContentType: map[string]string{"resources/read": ct},
				Body: map[string]func(string) []byte{"resources/read": func(id string) []byte {
					n := 2 * limit
					if calls.Add(1) > 1 {
						n = 10
					}
					b := bigRead(id, n)
					if ct == "text/event-stream" {
						b = append(append([]byte("event: message\ndata: "), b...), "\n\n"...)
					}
					return b
				}},
			}
			sess := httpSession(t, srv, &mcp.Options{MaxMessageBytes: limit})
			_, err := sess.Read(t.Context(), "x://big")
			if err == nil || !strings.Contains(err.Error(), "exceeds max_message_bytes (1048576)") {
				t.Fatalf("Read of a 2 MiB answer = %v, want it to exceed max_message_bytes", err)
			}
			got, err := sess.Read(t.Context(), "x://big")
			if err != nil || len(got) != 1 || got[0].Text != strings.Repeat("a", 10) {
				t.Fatalf("the next read = %+v, %v; want the session to stay up", got, err)
			}
		})
	}
}

func TestFiftyMegabyteHTTPResourceKeepsMemoryBounded(t *testing.T) {
	const limit = 1 << 20
	body := bigRead("0", 50<<20) // allocated before measuring; the id is patched below
	// The answer's id does not matter: the cap answers with the id of the
	// request it read.
	srv := &mcptest.RawServer{Body: map[string]func(string) []byte{"resources/read": func(string) []byte { return body }}}
	sess := httpSession(t, srv, &mcp.Options{MaxMessageBytes: limit})
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	_, err := sess.Read(ctx, "x://big")
	runtime.ReadMemStats(&after)
	if err == nil || !strings.Contains(err.Error(), "exceeds max_message_bytes") {
		t.Fatalf("Read = %v, want exceeds max_message_bytes", err)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 16<<20 {
		t.Errorf("reading a 50 MB answer allocated %d MB, want it bounded near the 1 MiB cap", alloc>>20)
	}
}

func TestStallAfterHeadersIsBoundedByTheRequestDeadline(t *testing.T) {
	for _, ct := range []string{"application/json", "text/event-stream"} {
		t.Run(ct, func(t *testing.T) {
			srv := &mcptest.RawServer{
				Results:     map[string]string{"resources/list": `{"resources":[{"uri":"x://a","name":"a"}]}`},
				Stall:       map[string]bool{"resources/read": true},
				ContentType: map[string]string{"resources/read": ct},
			}
			sess := httpSession(t, srv, nil)
			ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
			defer cancel()
			if _, err := sess.Read(ctx, "x://a"); !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("stalled read = %v, want the deadline", err)
			}
			if res, err := sess.ListResources(t.Context()); err != nil || len(res.Items) != 1 {
				t.Fatalf("list after a stalled read = %+v, %v; want the session to stay up", res, err)
			}
		})
	}
}

func TestMalformedHTTPAnswerFailsOnlyItsRead(t *testing.T) {
	for _, tc := range []struct {
		name, contentType, body string
		status                  int
	}{
		{name: "413 in plain text", contentType: "text/plain", body: "Request Entity Too Large", status: 413},
		{name: "400 in html", contentType: "text/html", body: "<h1>Bad Request</h1>", status: 400},
		{name: "answer to another call", contentType: "application/json", body: `{"jsonrpc":"2.0","id":999,"result":{}}`},
		{name: "a notification instead of the answer", contentType: "application/json", body: `{"jsonrpc":"2.0","method":"notifications/message","params":{}}`},
		{name: "html", contentType: "text/html; charset=utf-8", body: "<html>502 from a proxy</html>"},
		{name: "event not json", contentType: "text/event-stream", body: "event: message\ndata: <html>502</html>\n\n"},
		{name: "event json but not json-rpc", contentType: "text/event-stream", body: "data: 42\n\n"},
		// The go-sdk takes an event's last name: a message event, whatever
		// came before.
		{name: "event renamed to message", contentType: "text/event-stream", body: "event: ping\nevent: message\ndata: <html>502</html>\n\n"},
		{name: "bad content-type parameter", contentType: "application/json; charset", body: `{"jsonrpc":"2.0","id":1,"result":{}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := &mcptest.RawServer{
				Results:     map[string]string{"resources/list": `{"resources":[{"uri":"x://a","name":"a"}]}`},
				ContentType: map[string]string{"resources/read": tc.contentType},
				Body:        map[string]func(string) []byte{"resources/read": func(string) []byte { return []byte(tc.body) }},
				Status:      map[string]int{"resources/read": tc.status},
			}
			sess := httpSession(t, srv, nil)
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer cancel()
			if _, err := sess.Read(ctx, "x://a"); err == nil || !(strings.Contains(err.Error(), "malformed response") || strings.Contains(err.Error(), "HTTP 4")) {
				t.Fatalf("Read = %v, want a malformed-response or HTTP error", err)
			}
			if res, err := sess.ListResources(ctx); err != nil || len(res.Items) != 1 {
				t.Fatalf("list after a malformed answer = %+v, %v; want the session to stay up", res, err)
			}
		})
	}
}

// The go-sdk skips events that are not message events; so do we.
func TestOtherSSEEventsPassThrough(t *testing.T) {
	srv := &mcptest.RawServer{
		ContentType: map[string]string{"resources/read": "text/event-stream"},
		Body: map[string]func(string) []byte{"resources/read": func(id string) []byte {
			return []byte("event: ping\ndata: hello\n\n: a comment\n\nhello world\n \nevent: message\ndata: " + string(bigRead(id, 3)) + "\n\n")
		}},
	}
	sess := httpSession(t, srv, nil)
	got, err := sess.Read(t.Context(), "x://big")
	if err != nil || len(got) != 1 || got[0].Text != "aaa" {
		t.Fatalf("Read = %+v, %v; want the answer after a ping event and a comment", got, err)
	}
}

func TestAnotherSessionIDInAnAnswerIsIgnored(t *testing.T) {
	srv := &mcptest.RawServer{
		Results:   map[string]string{"resources/read": `{"contents":[{"uri":"x://a","text":"hi"}]}`, "resources/list": `{"resources":[]}`},
		SessionID: map[string]string{"resources/read": "someone-else"},
	}
	sess := httpSession(t, srv, nil)
	if _, err := sess.Read(t.Context(), "x://a"); err != nil {
		t.Fatalf("Read = %v; want the answer, whatever session id it carried", err)
	}
	if _, err := sess.ListResources(t.Context()); err != nil {
		t.Fatalf("list after an answer with another session id: %v; want the session up", err)
	}
}

func TestKeepAliveEndsTheSessionOfADeadHTTPServer(t *testing.T) {
	srv := &mcptest.RawServer{}
	hs := httptest.NewServer(srv)
	sess, err := mcp.Connect(t.Context(), config.Server{Name: "web", Transport: config.TransportHTTP, URL: hs.URL}, &mcp.Options{KeepAlive: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	hs.CloseClientConnections()
	hs.Close()
	done := make(chan error, 1)
	go func() { done <- sess.Wait() }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the session of a dead server is still up after 5 s")
	}
}

// logBuffer is a slog handler target that tests can read while sessions log.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// A 2025-era Streamable HTTP server answers the go-sdk's first request,
// server/discover (2026-07-28), with 400 and a JSON-RPC error whose id is
// null (as server-everything does); the SDK then initializes. That is the
// normal version fallback: it must not log a warning, and the session must
// come up on the older revision.
func TestDiscoverFallbackIsNotAWarning(t *testing.T) {
	raw := &mcptest.RawServer{}
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if bytes.Contains(body, []byte(`"server/discover"`)) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			w.Write([]byte(`{"jsonrpc":"2.0","error":{"code":-32000,"message":"Bad Request: Server not initialized"},"id":null}`))
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		raw.ServeHTTP(w, r)
	}))
	t.Cleanup(hs.Close)
	var logs logBuffer
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	sess, err := mcp.Connect(t.Context(), config.Server{Name: "web", Transport: config.TransportHTTP, URL: hs.URL}, &mcp.Options{Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	if _, _, proto := sess.ServerInfo(); proto == "" || proto >= "2026-07-28" {
		t.Errorf("negotiated %q, want a 2025 revision after the fallback", proto)
	}
	if strings.Contains(logs.String(), "level=WARN") {
		t.Errorf("the server/discover fallback logged a warning:\n%s", logs.String())
	}
}

// The same against the real server-everything over Streamable HTTP.
func TestDiscoverFallbackEverythingIsNotAWarning(t *testing.T) {
	entry := mcptest.NodePeer(t, "server-everything")
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	cmd := exec.Command("node", entry, "streamableHttp")
	cmd.Env = append(os.Environ(), fmt.Sprintf("PORT=%d", port))
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	var logs logBuffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	url := fmt.Sprintf("http://127.0.0.1:%d/mcp", port)
	var sess *mcp.Session
	for deadline := time.Now().Add(30 * time.Second); ; {
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		sess, err = mcp.Connect(ctx, config.Server{Name: "everything", Transport: config.TransportHTTP, URL: url}, &mcp.Options{Logger: log})
		cancel()
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("server-everything (streamableHttp) did not accept a session within 30s: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	defer sess.Close()
	if _, err := sess.ListResources(t.Context()); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(logs.String(), "level=WARN") {
		t.Errorf("connecting to server-everything logged a warning:\n%s", logs.String())
	}
}

// On 2026-07-28 over Streamable HTTP, a subscriptions/listen stream that
// breaks (a proxy cuts it, the server restarts) without the server's answer
// ends the subscription as an answer would (the go-sdk makes up an error
// answer, which its ClientSession drops): OnSubscriptionEnded reports it,
// and Subscribe opens a new stream.
func TestBrokenListenStreamEndsTheSubscription(t *testing.T) {
	srv := mcptest.NewServer(map[string]string{"doc://0": "zero"}, &mcpsdk.ServerOptions{
		SubscribeHandler:   func(context.Context, *mcpsdk.SubscribeRequest) error { return nil },
		UnsubscribeHandler: func(context.Context, *mcpsdk.UnsubscribeRequest) error { return nil },
	})
	origin := httptest.NewServer(mcpsdk.NewStreamableHTTPHandler(func(*http.Request) *mcpsdk.Server { return srv },
		&mcpsdk.StreamableHTTPOptions{Stateless: true}))
	t.Cleanup(origin.Close)
	target, _ := neturl.Parse(origin.URL)
	proxy := httputil.NewSingleHostReverseProxy(target)
	proxy.FlushInterval = -1
	proxy.ErrorLog = log.New(io.Discard, "", 0)
	var mu sync.Mutex
	var cuts []context.CancelFunc
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		if bytes.Contains(body, []byte(`"resourceSubscriptions"`)) {
			ctx, cancel := context.WithCancel(r.Context())
			mu.Lock()
			cuts = append(cuts, cancel)
			mu.Unlock()
			r = r.WithContext(ctx)
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(front.Close)

	ended := make(chan []string, 4)
	sess, err := mcp.Connect(t.Context(), config.Server{Name: "web", Transport: config.TransportHTTP, URL: front.URL},
		&mcp.Options{OnSubscriptionEnded: func(uris []string) { ended <- uris }})
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	if _, _, proto := sess.ServerInfo(); proto != "2026-07-28" {
		t.Fatalf("negotiated %q, want 2026-07-28", proto)
	}
	if err := sess.Subscribe(t.Context(), "doc://0"); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	for _, cut := range cuts {
		cut()
	}
	mu.Unlock()
	select {
	case uris := <-ended:
		if len(uris) != 1 || uris[0] != "doc://0" {
			t.Errorf("OnSubscriptionEnded(%q), want doc://0", uris)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the broken listen stream was not reported within 10s")
	}
	if err := sess.Subscribe(t.Context(), "doc://0"); err != nil {
		t.Errorf("subscribing again after the break: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(cuts) != 2 {
		t.Errorf("%d listen streams opened for doc://0, want 2 (the second after the break)", len(cuts))
	}
}

// A listen stream reads with a small buffer: a message longer than it (here
// a 10 KB URI in the acknowledgement and the update) still arrives whole.
func TestListenStreamCarriesLongMessages(t *testing.T) {
	uri := "doc://" + strings.Repeat("x", 10_000)
	srv := mcptest.NewServer(map[string]string{uri: "long"}, &mcpsdk.ServerOptions{
		SubscribeHandler:   func(context.Context, *mcpsdk.SubscribeRequest) error { return nil },
		UnsubscribeHandler: func(context.Context, *mcpsdk.UnsubscribeRequest) error { return nil },
	})
	hs := httptest.NewServer(mcpsdk.NewStreamableHTTPHandler(func(*http.Request) *mcpsdk.Server { return srv },
		&mcpsdk.StreamableHTTPOptions{Stateless: true}))
	t.Cleanup(hs.Close)
	updated := make(chan string, 1)
	sess, err := mcp.Connect(t.Context(), config.Server{Name: "web", Transport: config.TransportHTTP, URL: hs.URL},
		&mcp.Options{OnUpdated: func(u string) { updated <- u }})
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	if err := sess.Subscribe(t.Context(), uri); err != nil {
		t.Fatalf("subscribing a 10 KB URI: %v", err)
	}
	if err := srv.ResourceUpdated(t.Context(), &mcpsdk.ResourceUpdatedNotificationParams{URI: uri}); err != nil {
		t.Fatal(err)
	}
	select {
	case got := <-updated:
		if got != uri {
			t.Errorf("updated %d bytes of URI, want the %d sent", len(got), len(uri))
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no resources/updated within 10s")
	}
}

// An HTTP server answering a read with a 4xx whose body is a JSON-RPC
// error of 60 KB has its message cut like any error answer's: the go-sdk
// puts the message in the call's error, which reaches callers.
func TestHTTPErrorAnswersAreBounded(t *testing.T) {
	msg := strings.Repeat("E", 60<<10)
	srv := &mcptest.RawServer{
		Results:     map[string]string{"resources/list": `{"resources":[{"uri":"x://a","name":"a"}]}`},
		ContentType: map[string]string{"resources/read": "application/json"},
		Body: map[string]func(string) []byte{"resources/read": func(id string) []byte {
			return []byte(`{"jsonrpc":"2.0","id":` + id + `,"error":{"code":-32603,"message":"` + msg + `"}}`)
		}},
		Status: map[string]int{"resources/read": 400},
	}
	sess := httpSession(t, srv, nil)
	_, err := sess.Read(t.Context(), "x://a")
	if err == nil || !strings.Contains(err.Error(), "EEEE") || len(err.Error()) > mcp.MaxErrorMessageBytes+300 {
		t.Fatalf("Read: error of %d bytes (%.120q); want the server's message, cut to about %d", len(fmt.Sprint(err)), fmt.Sprint(err), mcp.MaxErrorMessageBytes)
	}
}
