package mcpserver_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/contextd/contextd/internal/engine"
	"github.com/contextd/contextd/internal/mcp/mcptest"
	"github.com/contextd/contextd/internal/mcpserver"
	"github.com/contextd/contextd/internal/resource"
)

// An upstream that sends resources/updated as fast as it can, for a
// resource a downstream host subscribed to and then stopped reading (a
// suspended host; its stream full): the go-sdk writes to each subscribed
// session in turn, holding its stream while a write waits, so a relay per
// update piled up goroutines (and their notifications) for as long as the
// upstream kept sending. Relays of one resource now wait for each other, the
// updates meanwhile sent as one.
func TestUpdatesToAStuckSubscriberDoNotPileUp(t *testing.T) {
	subOpts := &mcpsdk.ServerOptions{
		SubscribeHandler:          func(context.Context, *mcpsdk.SubscribeRequest) error { return nil },
		UnsubscribeHandler:        func(context.Context, *mcpsdk.UnsubscribeRequest) error { return nil },
		SupportedProtocolVersions: []string{"2025-11-25"},
	}
	up := mcptest.NewServer(map[string]string{"doc://a": "alpha"}, subOpts)
	f := newFacade(t, map[string]*mcpsdk.Server{"up": up}, nil, engine.Options{})
	uri := mcpserver.ResourceURI(resource.Key{Server: "up", URI: "doc://a"})

	// A host driven by hand over pipes: it subscribes, then reads no more.
	toSrvR, toSrvW := io.Pipe()
	fromSrvR, fromSrvW := io.Pipe()
	t.Cleanup(func() { toSrvW.Close(); fromSrvR.Close() })
	ss, err := f.srv.MCP().Connect(t.Context(), &mcpsdk.IOTransport{Reader: toSrvR, Writer: fromSrvW}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fromSrvR.Close(); _ = ss.Close() })
	answers := bufio.NewReader(fromSrvR)
	call := func(msg, wantID string) {
		t.Helper()
		if _, err := io.WriteString(toSrvW, msg+"\n"); err != nil {
			t.Fatal(err)
		}
		for wantID != "" {
			line, err := answers.ReadString('\n')
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(line, `"id":`+wantID+`,`) {
				if strings.Contains(line, `"error"`) {
					t.Fatalf("answer: %s", line)
				}
				return
			}
		}
	}
	call(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"stuck","version":"0"}}}`, "1")
	call(`{"jsonrpc":"2.0","method":"notifications/initialized"}`, "")
	call(fmt.Sprintf(`{"jsonrpc":"2.0","id":2,"method":"resources/subscribe","params":{"uri":%q}}`, uri), "2")

	settle := func() int {
		deadline := time.Now().Add(10 * time.Second)
		last, stable := -1, 0
		for time.Now().Before(deadline) && stable < 5 {
			time.Sleep(50 * time.Millisecond)
			if n := runtime.NumGoroutine(); n == last {
				stable++
			} else {
				last, stable = n, 0
			}
		}
		return last
	}
	before := settle()
	const updates = 2000
	for range updates {
		if err := up.ResourceUpdated(t.Context(), &mcpsdk.ResourceUpdatedNotificationParams{URI: "doc://a"}); err != nil {
			t.Fatal(err)
		}
	}
	after := settle()
	t.Logf("goroutines: %d before %d updates, %d after", before, updates, after)
	if after-before > 50 {
		t.Fatalf("%d goroutines more after %d updates to a subscriber that reads nothing: relays pile up", after-before, updates)
	}

	// Once the host reads again, the relays in flight end: nothing is left.
	go io.Copy(io.Discard, fromSrvR)
	go up.ResourceUpdated(t.Context(), &mcpsdk.ResourceUpdatedNotificationParams{URI: "doc://a"})
	if n := settle(); n-before > 50 {
		t.Errorf("%d goroutines more once the host reads again", n-before)
	}
}

// The go-sdk warns once for each notification it cannot deliver: an
// upstream sending updates as fast as it can, for a resource a host
// subscribed to without opening its standalone stream, had the daemon log a
// warning per update (3,500 lines a second). Its warnings are kept to one a
// second for each kind.
func TestUndeliveredUpdatesAreLoggedAtARate(t *testing.T) {
	var buf syncBuffer
	log := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo}))
	subOpts := &mcpsdk.ServerOptions{
		SubscribeHandler:          func(context.Context, *mcpsdk.SubscribeRequest) error { return nil },
		UnsubscribeHandler:        func(context.Context, *mcpsdk.UnsubscribeRequest) error { return nil },
		SupportedProtocolVersions: []string{"2025-11-25"},
	}
	up := mcptest.NewServer(map[string]string{"doc://a": "alpha"}, subOpts)
	f := newFacade(t, map[string]*mcpsdk.Server{"up": up}, &mcpserver.Options{Logger: log}, engine.Options{})
	ts := httptest.NewServer(f.srv.HTTPHandler())
	defer ts.Close()
	uri := mcpserver.ResourceURI(resource.Key{Server: "up", URI: "doc://a"})
	_, sid := post(t, ts.URL, "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"host","version":"1"}}}`)
	post(t, ts.URL, sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	if code, _ := post(t, ts.URL, sid, fmt.Sprintf(`{"jsonrpc":"2.0","id":2,"method":"resources/subscribe","params":{"uri":%q}}`, uri)); code != http.StatusOK {
		t.Fatalf("subscribe: %d", code)
	}
	for range 300 {
		if err := up.ResourceUpdated(t.Context(), &mcpsdk.ResourceUpdatedNotificationParams{URI: "doc://a"}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond)
	n := strings.Count(buf.String(), "undelivered")
	t.Logf("%d warnings of undelivered notifications logged", n)
	if n == 0 {
		t.Fatal("no warning: the test no longer makes the go-sdk warn")
	}
	if n > 3 {
		t.Fatalf("%d warnings of undelivered notifications for 300 updates in about half a second:\n%.1000s", n, buf.String())
	}
}

// A list_changed notification goes to every session, and one whose client
// opened no standalone stream (a script that lists once) cannot take it:
// by its client's choice, so the daemon says so at debug level only, not
// with a warning at every change of its list.
func TestListChangesASessionCannotTakeAreNoWarning(t *testing.T) {
	var buf syncBuffer
	log := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	up := mcptest.NewServer(map[string]string{"doc://a": "alpha"}, nil)
	f := newFacade(t, map[string]*mcpsdk.Server{"up": up}, &mcpserver.Options{Logger: log, CheckInterval: 20 * time.Millisecond}, engine.Options{})
	ts := httptest.NewServer(f.srv.HTTPHandler())
	defer ts.Close()
	_, sid := post(t, ts.URL, "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"script","version":"1"}}}`)
	post(t, ts.URL, sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	uri := "doc://b"
	up.AddResource(&mcpsdk.Resource{URI: uri, Name: uri, MIMEType: "text/plain"}, func(context.Context, *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
		return &mcpsdk.ReadResourceResult{Contents: []*mcpsdk.ResourceContents{{URI: uri, MIMEType: "text/plain", Text: "beta"}}}, nil
	})
	debug := regexp.MustCompile(`level=DEBUG msg="calling notifications/resources/list_changed: [^"]*undelivered`)
	for deadline := time.Now().Add(10 * time.Second); !debug.MatchString(buf.String()); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no line says the script's session could not take the list change (the test no longer makes the go-sdk fail):\n%.2000s", buf.String())
		}
	}
	if regexp.MustCompile(`level=WARN msg="calling notifications/resources/list_changed`).MatchString(buf.String()) {
		t.Errorf("a list change the script's session could not take was a warning:\n%.2000s", buf.String())
	}
}
