package mcp

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/contextd/contextd/internal/redact"
)

// endless is a server's output that starts with head and then never ends
// its line: a reader of it that skips to the line's end reads forever.
type endless struct {
	head string
	n    atomic.Int64 // bytes read so far
}

func (e *endless) Read(p []byte) (int, error) {
	i := 0
	if off := int(e.n.Load()); off < len(e.head) {
		i = copy(p, e.head[off:])
	}
	for ; i < len(p); i++ {
		p[i] = 'a'
	}
	e.n.Add(int64(len(p)))
	return len(p), nil
}

func (e *endless) Close() error { return nil }

// A stdio server that sends a message, or a non-JSON line, that never ends
// is read to a bound (skipFactor × the cap), then its stream fails, so the
// session is stopped and reconnected rather than read at full speed for as
// long as the server likes.
func TestJSONLinesStopAtAnEndlessLine(t *testing.T) {
	const limit = 1 << 10
	for _, head := range []string{`{"jsonrpc":"2.0","id":3,"result":{"resources":[{"uri":"x://`, `garbage `} {
		src := &endless{head: head}
		done := make(chan error, 1)
		go func() {
			_, err := io.Copy(io.Discard, &jsonLines{r: bufio.NewReaderSize(src, 64<<10), max: limit})
			done <- err
		}()
		if err := <-done; !errors.Is(err, errEndless) {
			t.Errorf("%q…: the stream ended with %v, want errEndless", head, err)
		}
		if n := src.n.Load(); n > int64(skipBound(limit))+(128<<10) {
			t.Errorf("%q…: read %d bytes, want at most about %d", head, n, skipBound(limit))
		}
	}
}

type bodyTransport struct{ body func() io.ReadCloser }

func (b bodyTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"text/event-stream"}}, Body: b.body(), Request: req}, nil
}

// An event-stream answer to a POSTed call that passes the cap answers the
// call at once with the cap's error, reading no further; an endless event
// on a stream with no call (the standalone GET) ends the stream at the
// bound.
func TestSSEStopsAtAnOversizedEvent(t *testing.T) {
	const limit = 1 << 10
	src := &endless{head: "event: message\ndata: " + `{"jsonrpc":"2.0","id":5,"result":{"contents":[{"uri":"x://a","text":"`}
	rt := capTransport{base: bodyTransport{func() io.ReadCloser { return src }}, max: limit, log: slog.New(slog.DiscardHandler)}
	req, _ := http.NewRequest(http.MethodPost, "http://127.0.0.1/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":5,"method":"resources/read","params":{"uri":"x://a"}}`))
	req.GetBody = func() (io.ReadCloser, error) {
		return io.NopCloser(strings.NewReader(`{"jsonrpc":"2.0","id":5,"method":"resources/read","params":{"uri":"x://a"}}`)), nil
	}
	resp, err := rt.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), `"id":5,"error"`) || !strings.Contains(string(out), "exceeds max_message_bytes") {
		t.Errorf("the call's answer = %.300q, want the cap's error", out)
	}
	if n := src.n.Load(); n > 256<<10 {
		t.Errorf("read %d bytes of the answer, want little more than the %d-byte cap", n, limit)
	}

	get := &endless{head: "event: message\ndata: " + `{"jsonrpc":"2.0","method":"notifications/message","params":{"data":"`}
	rt.base = bodyTransport{func() io.ReadCloser { return get }}
	req, _ = http.NewRequest(http.MethodGet, "http://127.0.0.1/mcp", nil)
	if resp, err = rt.RoundTrip(req); err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(io.Discard, resp.Body); !errors.Is(err, errEndless) {
		t.Errorf("an endless event on the GET stream ended it with %v, want errEndless", err)
	}
	if n := get.n.Load(); n > int64(skipBound(limit))+(128<<10) {
		t.Errorf("read %d bytes of the GET stream, want at most about %d", n, skipBound(limit))
	}
}

// countHandler counts the records logged through it.
type countHandler struct{ n atomic.Int64 }

func (h *countHandler) Enabled(context.Context, slog.Level) bool  { return true }
func (h *countHandler) Handle(context.Context, slog.Record) error { h.n.Add(1); return nil }
func (h *countHandler) WithAttrs([]slog.Attr) slog.Handler        { return h }
func (h *countHandler) WithGroup(string) slog.Handler             { return h }

// A server that prints garbage on stdout (or sends events that are not
// JSON-RPC) as fast as it can has its lines skipped with a warning a
// second, not one each: 10,000 lines logged 10,000 warnings.
func TestGarbageFromAServerIsLoggedAtARate(t *testing.T) {
	in := strings.Repeat("garbage line\n", 10000) + `{"jsonrpc":"2.0","id":1,"result":{}}` + "\n"
	h := &countHandler{}
	out, err := io.ReadAll(&jsonLines{r: bufio.NewReaderSize(strings.NewReader(in), 64<<10), log: slog.New(h), max: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	if string(out) != `{"jsonrpc":"2.0","id":1,"result":{}}`+"\n" {
		t.Fatalf("passed %q, want the one message", out)
	}
	if n := h.n.Load(); n < 1 || n > 5 {
		t.Errorf("10,000 non-JSON lines logged %d warnings, want one a second (at least one)", n)
	}

	h = &countHandler{}
	rt := capTransport{base: bodyTransport{func() io.ReadCloser {
		return io.NopCloser(strings.NewReader(strings.Repeat("event: message\ndata: <html>\n\n", 10000)))
	}}, max: 1 << 20, log: slog.New(h), quiet: &warnLimit{}}
	req, _ := http.NewRequest(http.MethodGet, "http://127.0.0.1/mcp", nil)
	resp, err := rt.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		t.Fatal(err)
	}
	if n := h.n.Load(); n < 1 || n > 5 {
		t.Errorf("10,000 events that are not JSON-RPC logged %d warnings, want one a second (at least one)", n)
	}
}

// The start of a long non-JSON stdout line the log quotes ends with
// redact.Cut, so that a secret the cut split is masked by the log's
// redactor: cut bare, 10 of an 11-byte password reached the log.
func TestAQuotedNonJSONLineIsMarkedCut(t *testing.T) {
	const secret = "Pw0rd!2024x"
	var buf bytes.Buffer
	log := slog.New(redact.Handler(slog.NewTextHandler(&buf, nil), redact.New(secret)))
	in := strings.Repeat("x", maxQuotedLine-6) + secret + strings.Repeat("y", 100) + "\n" + `{"jsonrpc":"2.0","id":1,"result":{}}` + "\n"
	if _, err := io.ReadAll(&jsonLines{r: bufio.NewReaderSize(strings.NewReader(in), 64<<10), log: log, max: 1 << 20}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "skipped a non-JSON line") || strings.Contains(buf.String(), secret[:4]) {
		t.Errorf("logged %q, want the line quoted without a piece of the secret", buf.String())
	}
}

// notifying is a server's answer to a call that sends notifications of
// its own, up to 4 MiB (then the stream ends), and never the answer.
type notifying struct {
	event string
	n     atomic.Int64 // bytes read so far
	off   int
}

func (e *notifying) Read(p []byte) (int, error) {
	if e.n.Load() >= 4<<20 {
		return 0, io.EOF
	}
	i := 0
	for i < len(p) {
		c := copy(p[i:], e.event[e.off:])
		i += c
		e.off = (e.off + c) % len(e.event)
	}
	e.n.Add(int64(len(p)))
	return len(p), nil
}

func (e *notifying) Close() error { return nil }

// A call's stream that carries the server's own messages without end
// (log notifications under the cap each) and never the answer fails the
// call once they pass max_message_bytes in all, reading no further; a few
// progress notifications before the answer pass.
func TestSSEStopsAtEndlessNotificationsOnACall(t *testing.T) {
	const limit = 64 << 10
	post := func(body func() io.ReadCloser) string {
		t.Helper()
		rt := capTransport{base: bodyTransport{body}, max: limit, log: slog.New(slog.DiscardHandler)}
		call := `{"jsonrpc":"2.0","id":7,"method":"resources/read","params":{"uri":"x://a"}}`
		req, _ := http.NewRequest(http.MethodPost, "http://127.0.0.1/mcp", strings.NewReader(call))
		req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(strings.NewReader(call)), nil }
		resp, err := rt.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		out, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return string(out)
	}
	pad := strings.Repeat("x", 8<<10)
	// Whatever is not the call's answer counts, whatever it claims to be.
	for name, event := range map[string]string{
		"log notifications":   "event: message\ndata: " + `{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"` + pad + `"}}` + "\n\n",
		"ping requests":       "event: message\ndata: " + `{"jsonrpc":"2.0","id":"p1","method":"ping","params":{"_meta":{"pad":"` + pad + `"}}}` + "\n\n",
		"null-id messages":    "event: message\ndata: " + `{"jsonrpc":"2.0","id":null,"method":"notifications/message","params":{"data":"` + pad + `"}}` + "\n\n",
		"answers to another":  "event: message\ndata: " + `{"jsonrpc":"2.0","id":8,"result":{"pad":"` + pad + `"}}` + "\n\n",
		"comments":            ": " + pad + "\n\n",
		"events of no type":   "event: foo\ndata: " + `{"pad":"` + pad + `"}` + "\n\n",
		"ignored field lines": pad + "\n",
		// Taken for no answer by the go-sdk, so for none here.
		"answer-like named events": "event: x\ndata: " + `{"jsonrpc":"2.0","id":7,"result":{"pad":"` + pad + `"}}` + "\n\n",
		"escaped method names":     "event: message\ndata: " + `{"jsonrpc":"2.0","id":7,"\u006dethod":"ping","params":{"pad":"` + pad + `"}}` + "\n\n",
		"renamed from message":     "event: message\nevent: x\ndata: " + `{"jsonrpc":"2.0","id":7,"result":{"pad":"` + pad + `"}}` + "\n\n",
	} {
		src := &notifying{event: event}
		out := post(func() io.ReadCloser { return src })
		if !strings.Contains(out, `"id":7,"error"`) || !strings.Contains(out, "without answering") {
			t.Errorf("%s: the call's answer = %.300q…, want an error saying the server never answered", name, out[max(0, len(out)-300):])
		}
		if n := src.n.Load(); n > 2*limit+(64<<10) {
			t.Errorf("%s: read %d bytes, want little more than the %d-byte cap", name, n, limit)
		}
	}
	// The answer ends the stream: what the server sends after it is not
	// read.
	after := &notifying{event: "event: message\ndata: " + `{"jsonrpc":"2.0","id":7,"result":{"contents":[]}}` + "\n\n" + strings.Repeat(": "+pad+"\n\n", 8)}
	if out := post(func() io.ReadCloser { return after }); !strings.HasSuffix(out, `{"jsonrpc":"2.0","id":7,"result":{"contents":[]}}`+"\n\n") {
		t.Errorf("an answer, then more: %.300q; want the answer last", out)
	}
	if n := after.n.Load(); n > 128<<10 {
		t.Errorf("read %d bytes after the answer; want the stream ended", n)
	}
	// An event named twice is of its last name, as the go-sdk reads it:
	// renamed to a message event, the answer ends the stream.
	renamed := &notifying{event: "event: x\nevent: message\ndata: " + `{"jsonrpc":"2.0","id":7,"result":{"contents":[]}}` + "\n\n" + strings.Repeat(": "+pad+"\n\n", 8)}
	if out := post(func() io.ReadCloser { return renamed }); !strings.HasSuffix(out, `{"jsonrpc":"2.0","id":7,"result":{"contents":[]}}`+"\n\n") {
		t.Errorf("an answer named twice, then more: %.300q; want the answer last", out)
	}
	if n := renamed.n.Load(); n > 128<<10 {
		t.Errorf("read %d bytes after an answer named twice; want the stream ended", n)
	}
	progress := strings.Repeat("event: message\ndata: "+`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":1}}`+"\n\n", 20)
	answer := "event: message\ndata: " + `{"jsonrpc":"2.0","id":7,"result":{"contents":[]}}` + "\n\n"
	out := post(func() io.ReadCloser { return io.NopCloser(strings.NewReader(progress + answer)) })
	if !strings.Contains(out, `"id":7,"result"`) || strings.Count(out, "notifications/progress") != 20 {
		t.Errorf("a call with 20 progress notifications: %.300q, want them and its answer", out)
	}
	// The answer itself does not count: 40 KiB of notifications and an
	// answer of 60 KiB (each under the cap, over it together) pass.
	logs := strings.Repeat("event: message\ndata: "+`{"jsonrpc":"2.0","method":"notifications/message","params":{"data":"`+strings.Repeat("y", 4<<10)+`"}}`+"\n\n", 10)
	big := "event: message\ndata: " + `{"jsonrpc":"2.0","id":7,"result":{"contents":[{"uri":"x://a","text":"` + strings.Repeat("z", 60<<10) + `"}]}}` + "\n\n"
	out = post(func() io.ReadCloser { return io.NopCloser(strings.NewReader(logs + big)) })
	if !strings.Contains(out, `"id":7,"result"`) || strings.Contains(out, `"error"`) {
		t.Errorf("a call with 40 KiB of logs and a 60 KiB answer: %.300q…, want its answer", out[max(0, len(out)-300):])
	}
}

// A call's stream that ends after an event id without the answer is
// resumed by the go-sdk with a GET carrying Last-Event-ID: what the
// resumed stream carries counts with what the first did, so a server
// cannot get max_message_bytes afresh at each resumption, whatever the
// id's spelling or length; resumptions of ids never seen share one count.
func TestSSEResumedCallStreamsCountTogether(t *testing.T) {
	const limit = 64 << 10
	long := strings.Repeat("L", 2<<10)
	for _, tc := range []struct{ name, idLine, sent string }{
		{"plain", "id: e1", "e1"},
		{"spaces around", "id:  e1 ", "e1"},
		{"a tab", "id:\te1", "e1"},
		{"over 1 KiB", "id: " + long, long},
		{"never seen", "id: e1", "zz"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			flood := &notifying{event: "id: e2\nevent: message\ndata: " + `{"jsonrpc":"2.0","method":"notifications/message","params":{"data":"` + strings.Repeat("x", 8<<10) + `"}}` + "\n\n"}
			first := tc.idLine + "\nevent: message\ndata: " + `{"jsonrpc":"2.0","method":"notifications/message","params":{"data":"` + strings.Repeat("y", 40<<10) + `"}}` + "\n\n"
			rt := capTransport{max: limit, log: slog.New(slog.DiscardHandler), quiet: &warnLimit{}, calls: &callStreams{}}
			rt.base = roundTripFunc(func(req *http.Request) (*http.Response, error) {
				body := io.ReadCloser(flood)
				if req.Method == http.MethodPost {
					body = io.NopCloser(strings.NewReader(first))
				}
				return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"text/event-stream"}}, Body: body, Request: req}, nil
			})
			call := `{"jsonrpc":"2.0","id":7,"method":"resources/read","params":{"uri":"x://a"}}`
			req, _ := http.NewRequest(http.MethodPost, "http://127.0.0.1/mcp", strings.NewReader(call))
			req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(strings.NewReader(call)), nil }
			resp, err := rt.RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			if out, err := io.ReadAll(resp.Body); err != nil || strings.Contains(string(out), `"error"`) {
				t.Fatalf("the first stream: %v, %.200q; want its 40 KiB notification", err, out)
			}
			resume := func() int64 {
				before := flood.n.Load()
				get, _ := http.NewRequest(http.MethodGet, "http://127.0.0.1/mcp", nil)
				get.Header.Set(lastEventIDHeader, tc.sent)
				resp, err := rt.RoundTrip(get)
				if err != nil {
					t.Fatal(err)
				}
				io.Copy(io.Discard, resp.Body)
				return flood.n.Load() - before
			}
			if tc.sent == "zz" {
				// Unknown: the first such resumption has a whole cap,
				// the next shares it.
				if n := resume(); n > limit+(64<<10) {
					t.Errorf("read %d bytes of a resumption of an unknown id; want about the %d-byte cap", n, limit)
				}
				if n := resume(); n > 64<<10 {
					t.Errorf("read %d bytes of a second resumption of an unknown id; want the cap shared", n)
				}
				return
			}
			if n := resume(); n > limit {
				t.Errorf("read %d bytes of the resumed stream; want under the %d left of the cap", n, limit-40<<10)
			}
		})
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }
