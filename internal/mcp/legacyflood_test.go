package mcp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/contextd/contextd/internal/config"
	"github.com/contextd/contextd/internal/mcp"
)

// legacyServer is an HTTP+SSE (2024-11-05) server: its event stream
// carries the answers to the calls POSTed to its endpoint, and, once the
// session is initialized, flood (if set) written over and over.
type legacyServer struct {
	flood   string
	answer  func(req *jsonrpc.Request) []byte // a read's result; nil: {}
	endless func(id jsonrpc.ID)               // if set, answers reads on its own
	out     chan []byte
	sent    atomic.Int64 // bytes of flood written
}

func (l *legacyServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodGet {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "event: endpoint\ndata: /msg\n\n")
		w.(http.Flusher).Flush()
		for {
			select {
			case <-r.Context().Done():
				return
			case ev := <-l.out:
				if _, err := w.Write(ev); err != nil {
					return
				}
				w.(http.Flusher).Flush()
			}
		}
	}
	data, _ := io.ReadAll(r.Body)
	msg, err := jsonrpc.DecodeMessage(data)
	w.WriteHeader(http.StatusAccepted)
	req, ok := msg.(*jsonrpc.Request)
	if err != nil || !ok {
		return
	}
	if req.Method == "notifications/initialized" && l.flood != "" {
		go func() {
			for {
				select {
				case l.out <- []byte(l.flood):
					l.sent.Add(int64(len(l.flood)))
				case <-time.After(5 * time.Second):
					return // the stream is gone
				}
			}
		}()
	}
	if !req.IsCall() {
		return
	}
	resp := &jsonrpc.Response{ID: req.ID, Result: []byte(`{}`)}
	switch req.Method {
	case "initialize":
		resp.Result = []byte(`{"protocolVersion":"2024-11-05","capabilities":{"resources":{}},"serverInfo":{"name":"old","version":"0"}}`)
	case "resources/read":
		if l.endless != nil {
			go l.endless(req.ID)
			return
		}
		if l.answer != nil {
			resp.Result = l.answer(req)
		}
	}
	b, _ := jsonrpc.EncodeMessage(resp)
	l.out <- append(append([]byte("event: message\ndata: "), b...), "\n\n"...)
}

// The event stream of the HTTP+SSE transport lives as long as the session:
// a server flooding it (large notifications, tiny pings, comments, gzip
// or not) had it read for as long as the session lasted (2 GB in 30 s,
// 1.3 cores). Past twice max_message_bytes within a minute besides the
// answers to contextd's calls, the session ends; answers, however many,
// do not count.
func TestLegacySSEStreamFloodsEndTheSession(t *testing.T) {
	const limit = 1 << 20
	pad := strings.Repeat("x", 64<<10)
	for name, flood := range map[string]string{
		"notifications": "event: message\ndata: " + `{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"` + pad + `"}}` + "\n\n",
		"tiny pings":    "event: message\ndata: " + `{"jsonrpc":"2.0","id":"p","method":"ping"}` + "\n\n",
		"comments":      ": " + pad + "\n\n",
	} {
		t.Run(name, func(t *testing.T) {
			srv := &legacyServer{flood: flood, out: make(chan []byte)}
			hs := httptest.NewServer(srv)
			t.Cleanup(hs.Close)
			var logs logBuffer
			log := slog.New(slog.NewTextHandler(&logs, nil))
			sess, err := mcp.Connect(t.Context(), config.Server{Name: "old", Transport: config.TransportSSE, URL: hs.URL}, &mcp.Options{KeepAlive: -1, MaxMessageBytes: limit, Logger: log})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { sess.Close() })
			ended := make(chan error, 1)
			go func() { ended <- sess.Wait() }()
			select {
			case <-ended:
			case <-time.After(20 * time.Second):
				t.Fatalf("the session still runs after %d bytes of flood; want it ended", srv.sent.Load())
			}
			// Twice the cap, 4 KiB more an event, and what the
			// connection's buffers held (a few MiB on loopback).
			if n := srv.sent.Load(); n > 2*limit+(8<<20) {
				t.Errorf("%d bytes of flood written before the session ended, want little more than %d", n, 2*limit)
			}
			if !strings.Contains(logs.String(), "twice max_message_bytes on its SSE stream") {
				t.Errorf("nothing logged: %q", logs.String())
			}
		})
	}
	t.Run("answers", func(t *testing.T) {
		big := strings.Repeat("y", 768<<10)
		srv := &legacyServer{out: make(chan []byte), answer: func(req *jsonrpc.Request) []byte {
			return []byte(`{"contents":[{"uri":"x://a","text":"` + big + `"}]}`)
		}}
		hs := httptest.NewServer(srv)
		t.Cleanup(hs.Close)
		sess, err := mcp.Connect(t.Context(), config.Server{Name: "old", Transport: config.TransportSSE, URL: hs.URL}, &mcp.Options{KeepAlive: -1, MaxMessageBytes: limit})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { sess.Close() })
		// 40 answers of 768 KiB: 15 times the stream's bound, all asked for.
		for i := range 40 {
			cs, err := sess.Read(t.Context(), "x://a")
			if err != nil || len(cs) != 1 || len(cs[0].Text) != len(big) {
				t.Fatalf("read %d = %d items, %v; want the 768 KiB answer", i, len(cs), err)
			}
		}
	})
	// An oversized answer to a waiting call that never ends, in data or
	// in lines the SSE spec ignores, is read within a bound: exempted
	// whole, it was read until the call's deadline, session after session.
	for name, line := range map[string]string{"data lines": "data: " + strings.Repeat("x", 1<<10) + "\n", "bare lines": strings.Repeat("x", 1<<10) + "\n", "retry lines": "retry: 1\n"} {
		t.Run("endless answer of "+name, func(t *testing.T) {
			var sent atomic.Int64
			srv := &legacyServer{out: make(chan []byte)}
			srv.endless = func(id jsonrpc.ID) {
				b, _ := json.Marshal(id.Raw())
				head := "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":" + string(b) + ",\"result\":{\"contents\":[{\"uri\":\"x://a\",\"text\":\"" + strings.Repeat("y", limit) + "\n"
				srv.out <- []byte(head)
				chunk := []byte(strings.Repeat(line, (64<<10)/len(line)))
				for {
					select {
					case srv.out <- chunk:
						sent.Add(int64(len(chunk)))
					case <-time.After(5 * time.Second):
						return // the stream is gone
					}
				}
			}
			hs := httptest.NewServer(srv)
			t.Cleanup(hs.Close)
			sess, err := mcp.Connect(t.Context(), config.Server{Name: "old", Transport: config.TransportSSE, URL: hs.URL}, &mcp.Options{KeepAlive: -1, MaxMessageBytes: limit})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { sess.Close() })
			ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
			defer cancel()
			go sess.Read(ctx, "x://a")
			ended := make(chan error, 1)
			go func() { ended <- sess.Wait() }()
			select {
			case <-ended:
			case <-ctx.Done():
				t.Fatalf("the session still runs after %d bytes of an endless answer; want it ended", sent.Load())
			}
			if n := sent.Load(); n > 4*limit+(8<<20) {
				t.Errorf("%d bytes of an endless answer read, want little more than %d", n, 4*limit)
			}
		})
	}
	// An answer over max_message_bytes fails its call alone, as on the
	// other transports, up to four times the cap (twice pass uncounted,
	// twice more within the stream's bound): it ended the session.
	t.Run("oversized answer", func(t *testing.T) {
		huge := strings.Repeat("z", 3<<20+512<<10)
		var reads atomic.Int32
		srv := &legacyServer{out: make(chan []byte), answer: func(req *jsonrpc.Request) []byte {
			if reads.Add(1) == 1 {
				return []byte(`{"contents":[{"uri":"x://a","text":"` + huge + `"}]}`)
			}
			return []byte(`{"contents":[{"uri":"x://a","text":"small"}]}`)
		}}
		hs := httptest.NewServer(srv)
		t.Cleanup(hs.Close)
		sess, err := mcp.Connect(t.Context(), config.Server{Name: "old", Transport: config.TransportSSE, URL: hs.URL}, &mcp.Options{KeepAlive: -1, MaxMessageBytes: limit})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { sess.Close() })
		if _, err := sess.Read(t.Context(), "x://a"); err == nil || !strings.Contains(err.Error(), "max_message_bytes") {
			t.Fatalf("the oversized read = %v; want a failure naming max_message_bytes", err)
		}
		if cs, err := sess.Read(t.Context(), "x://a"); err != nil || len(cs) != 1 || cs[0].Text != "small" {
			t.Fatalf("the next read = %v, %v; want the session up and its answer", cs, err)
		}
	})
}
