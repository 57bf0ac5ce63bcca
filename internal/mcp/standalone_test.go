package mcp_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
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

var rawStandalone = map[string]string{
	"initialize":          `{"protocolVersion":"2025-11-25","capabilities":{"resources":{"subscribe":true,"listChanged":true}},"serverInfo":{"name":"raw","version":"1"}}`,
	"resources/list":      `{"resources":[{"uri":"x://a","name":"a"}]}`,
	"resources/subscribe": `{}`,
}

// standaloneServer serves the raw server's POSTs, and its standalone GETs
// with get (n counts from 1).
func standaloneServer(t *testing.T, get func(w http.ResponseWriter, r *http.Request, n int)) (*mcptest.RawServer, *httptest.Server) {
	t.Helper()
	raw := &mcptest.RawServer{Results: rawStandalone}
	var gets atomic.Int32
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			get(w, r, int(gets.Add(1)))
			return
		}
		raw.ServeHTTP(w, r)
	}))
	t.Cleanup(hs.Close)
	return raw, hs
}

// sse starts an event stream on w.
func sse(w http.ResponseWriter) http.Flusher {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	f := w.(http.Flusher)
	f.Flush()
	return f
}

func updated(uri string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":%q}}`, uri)
}

// uriLog collects the URIs OnUpdated reports.
type uriLog struct {
	mu   sync.Mutex
	uris []string
}

func (l *uriLog) add(uri string) { l.mu.Lock(); l.uris = append(l.uris, uri); l.mu.Unlock() }

func (l *uriLog) has(uri string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, u := range l.uris {
		if u == uri {
			return true
		}
	}
	return false
}

func waitFor(t *testing.T, what string, d time.Duration, ok func() bool) {
	t.Helper()
	for deadline := time.Now().Add(d); !ok(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// noLeaks returns a check, to run after the session and the server are
// closed, that the goroutines started since are gone.
func noLeaks(t *testing.T) func() {
	before := runtime.NumGoroutine()
	return func() {
		t.Helper()
		http.DefaultTransport.(*http.Transport).CloseIdleConnections()
		for deadline := time.Now().Add(5 * time.Second); runtime.NumGoroutine() > before; time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				buf := make([]byte, 1<<20)
				t.Fatalf("%d goroutines after the session closed, %d before:\n%s", runtime.NumGoroutine(), before, buf[:runtime.Stack(buf, true)])
			}
		}
	}
}

func connectHTTP(t *testing.T, url string, o *mcp.Options) *mcp.Session {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	sess, err := mcp.Connect(ctx, config.Server{Name: "web", Transport: config.TransportHTTP, URL: url}, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sess.Close() })
	return sess
}

// A 2025-era Streamable HTTP server that answers the standalone GET with
// 405 offers no stream, so it cannot notify: its session must not claim
// subscriptions or list_changed, or reads cached under a subscription
// would be served stale and the catalogue never re-listed.
func TestHTTPSessionsWithoutTheStandaloneStreamDoNotSubscribe(t *testing.T) {
	for _, answer := range []struct {
		name string
		get  func(w http.ResponseWriter)
	}{
		{"405", func(w http.ResponseWriter) { http.Error(w, "method not allowed", http.StatusMethodNotAllowed) }},
		{"404", func(w http.ResponseWriter) { http.NotFound(w, nil) }},
		{"200 JSON", func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{}`))
		}},
	} {
		t.Run(answer.name, func(t *testing.T) {
			var gets atomic.Int32
			var hdr http.Header
			raw, hs := standaloneServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
				gets.Store(int32(n))
				hdr = r.Header.Clone()
				answer.get(w)
			})
			sess := connectHTTP(t, hs.URL, &mcp.Options{})
			caps := sess.Capabilities()
			if !caps.Resources {
				t.Fatal("resources not declared")
			}
			if n := gets.Load(); n != 1 {
				t.Fatalf("%d standalone GETs at connect, want 1", n)
			}
			if hdr.Get("Accept") != "text/event-stream" || hdr.Get("Mcp-Protocol-Version") != "2025-11-25" {
				t.Errorf("GET headers: Accept %q, Mcp-Protocol-Version %q", hdr.Get("Accept"), hdr.Get("Mcp-Protocol-Version"))
			}
			if caps.Subscribe || caps.ListChanged {
				t.Errorf("no standalone stream, yet the session claims subscribe=%v listChanged=%v", caps.Subscribe, caps.ListChanged)
			}
			if err := sess.Subscribe(t.Context(), "x://a"); err == nil {
				t.Error("Subscribe succeeded on a session that cannot receive resources/updated")
			}
			if n := raw.Count("resources/subscribe"); n != 0 {
				t.Errorf("%d resources/subscribe sent", n)
			}
			if _, err := sess.ListResources(t.Context()); err != nil {
				t.Errorf("the session does not work: %v", err)
			}
		})
	}
}

// A go-sdk server on 2025-11-25 serves the standalone stream: the session
// subscribes, and the resources/updated and list_changed the server sends
// outside any call (on that stream) reach the session's handlers; its ping
// is answered.
func TestHTTPSessionsReceiveWhatTheStandaloneStreamCarries(t *testing.T) {
	srv := mcptest.NewServer(map[string]string{"doc://a": "alpha"}, &mcpsdk.ServerOptions{
		SubscribeHandler:   func(context.Context, *mcpsdk.SubscribeRequest) error { return nil },
		UnsubscribeHandler: func(context.Context, *mcpsdk.UnsubscribeRequest) error { return nil },
	})
	var gets atomic.Int32
	h := mcpsdk.NewStreamableHTTPHandler(func(*http.Request) *mcpsdk.Server { return srv }, nil)
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			gets.Add(1)
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(hs.Close)
	var ups uriLog
	var lists atomic.Int32
	sess := connectHTTP(t, hs.URL, &mcp.Options{ProtocolVersion: "2025-11-25", OnUpdated: ups.add, OnListChanged: func() { lists.Add(1) }})
	if _, _, proto := sess.ServerInfo(); proto != "2025-11-25" {
		t.Fatalf("negotiated %q", proto)
	}
	caps := sess.Capabilities()
	if !caps.Subscribe || !caps.ListChanged {
		t.Fatalf("the server serves the standalone stream, yet subscribe=%v listChanged=%v", caps.Subscribe, caps.ListChanged)
	}
	if gets.Load() != 1 {
		t.Errorf("%d GETs", gets.Load())
	}
	if err := sess.Subscribe(t.Context(), "doc://a"); err != nil {
		t.Fatal(err)
	}
	if err := srv.ResourceUpdated(t.Context(), &mcpsdk.ResourceUpdatedNotificationParams{URI: "doc://a"}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "resources/updated on the standalone stream", 5*time.Second, func() bool { return ups.has("doc://a") })
	mcptest.AddText(srv, "doc://b", "b", "beta")
	waitFor(t, "list_changed on the standalone stream", 5*time.Second, func() bool { return lists.Load() > 0 })
	var pinged bool
	for ss := range srv.Sessions() {
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		pinged = ss.Ping(ctx, nil) == nil
		cancel()
	}
	if !pinged {
		t.Error("the server's ping (on the standalone stream) was not answered")
	}
	if _, err := sess.Read(t.Context(), "doc://b"); err != nil {
		t.Errorf("the session does not work: %v", err)
	}
}

// A standalone stream that breaks is resumed with Last-Event-ID, and what
// the server sends on the resumed stream arrives.
func TestTheStandaloneStreamIsResumedWithLastEventID(t *testing.T) {
	defer mcp.SetStandaloneBaseDelay(10 * time.Millisecond)()
	leaks := noLeaks(t)
	var lastIDs sync.Map // n → Last-Event-ID
	_, hs := standaloneServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
		lastIDs.Store(n, r.Header.Get("Last-Event-ID"))
		f := sse(w)
		switch n {
		case 1:
			fmt.Fprintf(w, "id: e1\ndata: %s\n\n", updated("x://a"))
			f.Flush()
			return // the stream breaks
		default:
			fmt.Fprintf(w, "id: e%d\ndata: %s\n\n", n, updated("x://b"))
			f.Flush()
			<-r.Context().Done()
		}
	})
	var ups uriLog
	sess := connectHTTP(t, hs.URL, &mcp.Options{OnUpdated: ups.add})
	if !sess.Capabilities().Subscribe {
		t.Fatal("the server serves the standalone stream, yet the session does not subscribe")
	}
	waitFor(t, "the update on the resumed stream", 5*time.Second, func() bool { return ups.has("x://a") && ups.has("x://b") })
	if id, _ := lastIDs.Load(2); id != "e1" {
		t.Errorf("the second GET sent Last-Event-ID %q, want e1", id)
	}
	if _, err := sess.ListResources(t.Context()); err != nil {
		t.Errorf("the session does not work: %v", err)
	}
	sess.Close()
	hs.Close()
	leaks()
}

// A stream reopened without Last-Event-ID (the server gave no event id)
// may have missed notifications: every subscribed URI is reported updated
// and the list changed, so nothing cached under a subscription outlives
// the gap.
func TestAStandaloneStreamReopenedWithoutResumingReportsTheGap(t *testing.T) {
	defer mcp.SetStandaloneBaseDelay(10 * time.Millisecond)()
	broke := make(chan struct{})
	_, hs := standaloneServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
		sse(w)
		if n == 1 {
			select {
			case <-broke: // the test subscribed: break the stream
			case <-r.Context().Done():
			}
			return
		}
		<-r.Context().Done()
	})
	var ups uriLog
	var lists atomic.Int32
	sess := connectHTTP(t, hs.URL, &mcp.Options{OnUpdated: ups.add, OnListChanged: func() { lists.Add(1) }})
	if err := sess.Subscribe(t.Context(), "x://a"); err != nil {
		t.Fatal(err)
	}
	close(broke)
	waitFor(t, "x://a reported updated after the gap", 5*time.Second, func() bool { return ups.has("x://a") })
	waitFor(t, "list_changed after the gap", 5*time.Second, func() bool { return lists.Load() > 0 })
}

// A standalone stream that cannot be re-established ends the session, so
// that contextd reconnects (and empties what it cached under
// subscriptions) instead of claiming subscriptions without the stream.
func TestAStandaloneStreamThatCannotComeBackEndsTheSession(t *testing.T) {
	defer mcp.SetStandaloneBaseDelay(10 * time.Millisecond)()
	leaks := noLeaks(t)
	var gets atomic.Int32
	_, hs := standaloneServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
		gets.Store(int32(n))
		if n == 1 {
			sse(w)
			return // breaks at once
		}
		http.Error(w, "unavailable", http.StatusServiceUnavailable)
	})
	sess := connectHTTP(t, hs.URL, &mcp.Options{})
	ended := make(chan error, 1)
	go func() { ended <- sess.Wait() }()
	select {
	case err := <-ended:
		if err == nil || !strings.Contains(err.Error(), "standalone") {
			t.Errorf("the session ended with %v, want the standalone stream's failure", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the session outlived its standalone stream")
	}
	if n := gets.Load(); n != 1+5 {
		t.Errorf("%d GETs, want the first and 5 attempts", n)
	}
	sess.Close()
	hs.Close()
	leaks()
}

// A server that answers the resumption with 404 ended the session: it
// ends at once, as expired.
func TestAStandaloneStreamAnswered404EndsTheSessionAsExpired(t *testing.T) {
	defer mcp.SetStandaloneBaseDelay(10 * time.Millisecond)()
	_, hs := standaloneServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
		if n == 1 {
			w.Header().Set("Mcp-Session-Id", "s1")
			sse(w)
			return
		}
		http.NotFound(w, r)
	})
	sess := connectHTTP(t, hs.URL, &mcp.Options{})
	ended := make(chan error, 1)
	go func() { ended <- sess.Wait() }()
	select {
	case err := <-ended:
		if !errors.Is(err, mcp.ErrSessionExpired) {
			t.Errorf("the session ended with %v, want ErrSessionExpired", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the session outlived its standalone stream")
	}
}

// Hostile streams: an event far over max_message_bytes is dropped (the
// session stays up and the next event arrives), and a server that ends
// every stream at once with "retry: 1" gets a reconnection pace that
// slows down, not one a millisecond.
func TestHostileStandaloneStreams(t *testing.T) {
	t.Run("oversized event", func(t *testing.T) {
		_, hs := standaloneServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
			f := sse(w)
			big := strings.Repeat("x", 256<<10)
			fmt.Fprintf(w, "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/resources/updated\",\"params\":{\"uri\":\"x://big%s\"}}\n\n", big)
			fmt.Fprintf(w, "data: %s\n\n", updated("x://after"))
			f.Flush()
			<-r.Context().Done()
		})
		var ups uriLog
		sess := connectHTTP(t, hs.URL, &mcp.Options{OnUpdated: ups.add, MaxMessageBytes: 8 << 10})
		waitFor(t, "the event after the oversized one", 5*time.Second, func() bool { return ups.has("x://after") })
		ups.mu.Lock()
		n := len(ups.uris)
		ups.mu.Unlock()
		if n != 1 {
			t.Errorf("%d updates, want only the one within the cap", n)
		}
		if _, err := sess.ListResources(t.Context()); err != nil {
			t.Errorf("the session does not work: %v", err)
		}
	})
	t.Run("flood", func(t *testing.T) {
		// Notifications and comments without end: the stream is closed
		// past twice max_message_bytes and opened again after a pause,
		// so the bytes read stay near that per opening, and what the
		// server sends once the flood stops still arrives.
		defer mcp.SetStandaloneBaseDelay(50 * time.Millisecond)() // the flood's wait: 1.9 s
		var sent atomic.Int64
		var gets atomic.Int32
		_, hs := standaloneServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
			gets.Store(int32(n))
			f := sse(w)
			if n > 2 {
				fmt.Fprintf(w, "data: %s\n\n", updated("x://after"))
				f.Flush()
				<-r.Context().Done()
				return
			}
			note := fmt.Sprintf("data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{\"level\":\"info\",\"data\":%q}}\n\n: %s\n\n", strings.Repeat("x", 2<<10), strings.Repeat("c", 2<<10))
			for r.Context().Err() == nil {
				k, err := io.WriteString(w, note)
				sent.Add(int64(k))
				if err != nil {
					return
				}
			}
		})
		var ups uriLog
		sess := connectHTTP(t, hs.URL, &mcp.Options{OnUpdated: ups.add, MaxMessageBytes: 64 << 10})
		began := time.Now()
		waitFor(t, "the update after the flood", 20*time.Second, func() bool { return ups.has("x://after") })
		if d := time.Since(began); d < 3500*time.Millisecond {
			t.Errorf("the update came %v after connecting; want the stream reopened only after the longest wait, twice", d)
		}
		// Two floods of about 2 × (64 KiB + 4 KiB) read each, and what
		// loopback's socket buffers took besides (a few MiB).
		if n := sent.Load(); n > 16<<20 {
			t.Errorf("the server wrote %d bytes over %d streams; want about %d a stream read", n, gets.Load()-1, 2*(68<<10))
		}
		if _, err := sess.ListResources(t.Context()); err != nil {
			t.Errorf("the session does not work: %v", err)
		}
	})
	t.Run("tiny flood", func(t *testing.T) {
		// 200 tiny pings, 10 KB in all: each costs an answer POSTed
		// back, so each counts for more than its bytes, and the stream
		// is closed (then opened again) though far under the bytes.
		defer mcp.SetStandaloneBaseDelay(50 * time.Millisecond)()
		_, hs := standaloneServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
			f := sse(w)
			if n > 1 {
				fmt.Fprintf(w, "data: %s\n\n", updated("x://after"))
				f.Flush()
				<-r.Context().Done()
				return
			}
			for i := range 200 {
				fmt.Fprintf(w, "data: {\"jsonrpc\":\"2.0\",\"id\":\"p%d\",\"method\":\"ping\"}\n\n", i)
			}
			f.Flush()
			<-r.Context().Done()
		})
		var ups uriLog
		connectHTTP(t, hs.URL, &mcp.Options{OnUpdated: ups.add, MaxMessageBytes: 64 << 10})
		waitFor(t, "the update after the flood", 20*time.Second, func() bool { return ups.has("x://after") })
	})
	t.Run("retry 1 loop", func(t *testing.T) {
		var gets atomic.Int32
		_, hs := standaloneServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
			gets.Store(int32(n))
			f := sse(w)
			fmt.Fprintf(w, "retry: 1\nid: %d\ndata: %s\n\n", n, updated("x://a"))
			f.Flush()
		})
		sess := connectHTTP(t, hs.URL, &mcp.Options{})
		time.Sleep(5 * time.Second)
		n := gets.Load()
		// 1 s apart at first, then 1.5 s, 2.25 s… (+ up to a quarter of
		// jitter): at most 4 in 5 s; a constant 1 s pace would make 5 or 6.
		if n < 2 || n > 4 {
			t.Errorf("%d GETs in 5 s, want 2 to 4 (reconnections from 1 s apart, growing)", n)
		}
		if _, err := sess.ListResources(t.Context()); err != nil {
			t.Errorf("the session does not work: %v", err)
		}
	})
}

// The real server-everything (Streamable HTTP, 2025 era) serves the
// standalone stream and, once toggle-subscriber-updates is called, sends
// resources/updated for what the session subscribed every 5 s, outside
// any call: it arrives.
func TestEverythingNotifiesOnTheStandaloneStream(t *testing.T) {
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
	url := fmt.Sprintf("http://127.0.0.1:%d/mcp", port)
	var ups uriLog
	var sess *mcp.Session
	for deadline := time.Now().Add(30 * time.Second); ; {
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		sess, err = mcp.Connect(ctx, config.Server{Name: "everything", Transport: config.TransportHTTP, URL: url}, &mcp.Options{OnUpdated: ups.add})
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
	_, _, proto := sess.ServerInfo()
	if proto >= "2026-07-28" {
		t.Skipf("server-everything negotiated %s: no standalone stream in that era", proto)
	}
	if !sess.Capabilities().Subscribe {
		t.Fatalf("server-everything (%s) serves the standalone stream, yet the session does not subscribe", proto)
	}
	l2, err := sess.ListResources(t.Context())
	if err != nil || len(l2.Items) == 0 {
		t.Fatalf("list: %v", err)
	}
	uri := l2.Items[0].URI
	if err := sess.Subscribe(t.Context(), uri); err != nil {
		t.Fatal(err)
	}
	// Its updates, sent outside any call, start with this tool.
	if err := sess.CallTool(t.Context(), "toggle-subscriber-updates"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "server-everything's resources/updated for "+uri, 15*time.Second, func() bool { return ups.has(uri) })
}

// The standalone GET goes through the session's own HTTP client: the
// configured headers (credentials) reach it, with the session id and the
// negotiated protocol version.
func TestTheStandaloneGETCarriesTheSessionsHeaders(t *testing.T) {
	got := make(chan http.Header, 1)
	_, hs := standaloneServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
		select {
		case got <- r.Header.Clone():
		default:
		}
		sse(w)
		<-r.Context().Done()
	})
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	sess, err := mcp.Connect(ctx, config.Server{Name: "web", Transport: config.TransportHTTP, URL: hs.URL, Headers: map[string]string{"Authorization": "Bearer s3cret-token"}}, &mcp.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	h := <-got
	if h.Get("Authorization") != "Bearer s3cret-token" || h.Get("Mcp-Session-Id") == "" || h.Get("Mcp-Protocol-Version") != "2025-11-25" || h.Get("Accept") != "text/event-stream" {
		t.Errorf("GET headers: %v", h)
	}
}
