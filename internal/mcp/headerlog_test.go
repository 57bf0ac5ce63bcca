package mcp_test

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/contextd/contextd/internal/config"
	"github.com/contextd/contextd/internal/mcp"
	"github.com/contextd/contextd/internal/mcp/mcptest"
)

// Header values are the server's to choose (up to Go's 10 MB of headers an
// answer): what the log and the call's error quote of them must be
// bounded, as every call can carry new ones.
func TestHeaderValuesInLogsAndErrorsAreBounded(t *testing.T) {
	huge := strings.Repeat("z", 1<<20)
	read := `{"contents":[{"uri":"x://a","text":"hi"}]}`
	cases := map[string]struct {
		srv    *mcptest.RawServer
		status string // a status line reason phrase for reads, or ""
	}{
		"another session id": {srv: &mcptest.RawServer{Results: map[string]string{"resources/read": read}, SessionID: map[string]string{"resources/read": huge}}},
		"content type":       {srv: &mcptest.RawServer{Results: map[string]string{"resources/read": read}, ContentType: map[string]string{"resources/read": "text/html; q=" + huge}}},
		"500 with a long error": {srv: &mcptest.RawServer{Status: map[string]int{"resources/read": 500}, Body: map[string]func(string) []byte{"resources/read": func(id string) []byte {
			return []byte(`{"jsonrpc":"2.0","id":` + id + `,"error":{"code":-32000,"message":"` + huge + `"}}`)
		}}}},
		"malformed status line": {srv: &mcptest.RawServer{Results: map[string]string{"resources/read": read}}, status: "\x00" + huge},
		"status reason":         {srv: &mcptest.RawServer{Results: map[string]string{"resources/read": read}}, status: "400 " + huge},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			var h http.Handler = c.srv
			if c.status != "" {
				h = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					body, _ := io.ReadAll(r.Body)
					if !bytes.Contains(body, []byte(`"resources/read"`)) {
						r.Body = io.NopCloser(bytes.NewReader(body))
						c.srv.ServeHTTP(w, r)
						return
					}
					conn, rw, err := w.(http.Hijacker).Hijack()
					if err != nil {
						t.Error(err)
						return
					}
					defer conn.Close()
					line := "HTTP/1.1 " + c.status
					if c.status[0] == 0 {
						line = c.status[1:] // not a status line at all
					}
					fmt.Fprintf(rw, "%s\r\nContent-Type: text/plain\r\nContent-Length: 4\r\nConnection: close\r\n\r\nnope", line)
					rw.Flush()
				})
			}
			hs := httptest.NewServer(h)
			t.Cleanup(hs.Close)
			var logs logBuffer
			log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
			sess, err := mcp.Connect(t.Context(), config.Server{Name: "web", Transport: config.TransportHTTP, URL: hs.URL}, &mcp.Options{Logger: log, KeepAlive: -1})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { sess.Close() })
			before := len(logs.String())
			_, err = sess.Read(t.Context(), "x://a")
			if err != nil && len(err.Error()) > 4<<10 {
				t.Errorf("Read error of %d bytes, want at most 4 KiB", len(err.Error()))
			}
			if n := len(logs.String()) - before; n > 16<<10 {
				sc := bufio.NewScanner(strings.NewReader(logs.String()[before:]))
				sc.Buffer(nil, 4<<20)
				for sc.Scan() {
					if len(sc.Text()) > 1024 {
						t.Logf("long line: %.200s… (%d bytes)", sc.Text(), len(sc.Text()))
					}
				}
				t.Errorf("one read logged %d bytes, want at most 16 KiB", n)
			}
		})
	}
}

// An initialize result is bounded only by max_message_bytes; the version
// a server claims is quoted in the handshake's error when it is not one
// contextd speaks, and that error is logged at every reconnect.
func TestAnUnsupportedProtocolVersionIsQuotedBounded(t *testing.T) {
	huge := strings.Repeat("v", 1<<20)
	srv := &mcptest.RawServer{Results: map[string]string{"initialize": `{"protocolVersion":"` + huge + `","capabilities":{"resources":{}},"serverInfo":{"name":"raw","version":"0"}}`}}
	_, err := mcp.ConnectTransport(t.Context(), "raw", srv.Transport(t), nil)
	if err == nil {
		t.Fatal("Connect succeeded with an unsupported protocol version")
	}
	if n := len(err.Error()); n > 1024 {
		t.Fatalf("Connect error of %d bytes (%.120s…), want at most 1 KiB", n, err)
	}
}

// The legacy SSE transport's handshake quotes the stream's first event
// (its name, or the endpoint URL that does not parse) in its error, which
// is logged at every reconnect.
func TestLegacySSEHandshakeErrorsAreBounded(t *testing.T) {
	huge := strings.Repeat("e", 1<<20)
	for name, event := range map[string]string{
		"event name":   "event: " + huge + "\ndata: /msg\n\n",
		"endpoint url": "event: endpoint\ndata: http://[" + huge + "\n\n",
	} {
		t.Run(name, func(t *testing.T) {
			hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				io.WriteString(w, event)
			}))
			t.Cleanup(hs.Close)
			_, err := mcp.Connect(t.Context(), config.Server{Name: "old", Transport: config.TransportSSE, URL: hs.URL}, nil)
			if err == nil {
				t.Fatal("Connect succeeded")
			}
			if n := len(err.Error()); n > 1024 {
				t.Fatalf("Connect error of %d bytes (%.120s…), want at most 1 KiB", n, err)
			}
		})
	}
}

// A server can give every HTTP answer a fault that is logged (another
// session id, a body that is not JSON-RPC): the warnings come at most once
// a second, saying how many were not logged, however many answers.
func TestHTTPAnswerWarningsAreRateLimited(t *testing.T) {
	read := `{"contents":[{"uri":"x://a","text":"hi"}]}`
	cases := map[string]struct {
		srv  *mcptest.RawServer
		warn string
	}{
		"another session id": {srv: &mcptest.RawServer{Results: map[string]string{"resources/read": read}, SessionID: map[string]string{"resources/read": "another"}},
			warn: "another session id"},
		"content type": {srv: &mcptest.RawServer{Results: map[string]string{"resources/read": read}, ContentType: map[string]string{"resources/read": "text/html"}},
			warn: "an HTTP answer is not JSON-RPC"},
		"400 in plain text": {srv: &mcptest.RawServer{Status: map[string]int{"resources/read": 400}, Body: map[string]func(string) []byte{"resources/read": func(string) []byte { return []byte("bad request") }}},
			warn: "an HTTP error answer is not JSON-RPC"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			hs := httptest.NewServer(c.srv)
			t.Cleanup(hs.Close)
			var logs logBuffer
			log := slog.New(slog.NewTextHandler(&logs, nil))
			sess, err := mcp.Connect(t.Context(), config.Server{Name: "web", Transport: config.TransportHTTP, URL: hs.URL}, &mcp.Options{Logger: log, KeepAlive: -1})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { sess.Close() })
			start := time.Now()
			const reads = 100
			for range reads {
				sess.Read(t.Context(), "x://a")
			}
			secs := int(time.Since(start)/time.Second) + 1
			if n := strings.Count(logs.String(), c.warn); n == 0 || n > secs+1 {
				t.Errorf("%d reads in %d s logged %q %d times, want 1 to %d", reads, secs, c.warn, n, secs+1)
			}
		})
	}
}
