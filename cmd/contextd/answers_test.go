package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/contextd/contextd/internal/config"
)

// bigService answers every call with size bytes.
func bigService(size int) *grpc.ServiceDesc {
	return &grpc.ServiceDesc{
		ServiceName: "test.Big",
		HandlerType: (*any)(nil),
		Methods: []grpc.MethodDesc{{MethodName: "Get", Handler: func(_ any, ctx context.Context, dec func(any) error, icpt grpc.UnaryServerInterceptor) (any, error) {
			in := new(emptypb.Empty)
			if err := dec(in); err != nil {
				return nil, err
			}
			h := func(context.Context, any) (any, error) { return wrapperspb.Bytes(make([]byte, size)), nil }
			if icpt == nil {
				return h(ctx, in)
			}
			return icpt(ctx, in, &grpc.UnaryServerInfo{FullMethod: "/test.Big/Get"}, h)
		}}},
	}
}

// A client that opens no flow-control window takes none of its answers,
// which gRPC would hold in memory for as long as it keeps the connection.
// The daemon holds at most the unsent-answers bound: calls past it fail
// with RESOURCE_EXHAUSTED, and a connection whose answers have not moved
// for the stall time is closed, freeing them.
func TestAnswersClientsDoNotReadAreBounded(t *testing.T) {
	const answer, bound, calls = 4 << 20, 16 << 20, 10
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	u := newUnsentAnswers(bound, 2*time.Second)
	lis := limitConns(raw, 16, silentGrace(config.Conns{HandshakeTimeout: 10 * time.Second}), "listen", slog.New(slog.DiscardHandler))
	lis.(*limitListener).answers = u
	s := grpc.NewServer(append(grpcConnOptions(config.Conns{HandshakeTimeout: 10 * time.Second, IdleTimeout: time.Minute}), u.options()...)...)
	s.RegisterService(bigService(answer), struct{}{})
	go s.Serve(lis)
	t.Cleanup(s.Stop)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go u.run(ctx)

	c, err := net.Dial("tcp", raw.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fr := http2.NewFramer(c, c)
	fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	if _, err := c.Write([]byte(http2.ClientPreface)); err != nil {
		t.Fatal(err)
	}
	// No window: the server may send headers but no answer bytes.
	if err := fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: 0}); err != nil {
		t.Fatal(err)
	}
	var exhausted atomic.Int32
	closed := make(chan struct{})
	settings := make(chan struct{})
	go func() {
		defer close(closed)
		acked := false
		for {
			f, err := fr.ReadFrame()
			if err != nil {
				return
			}
			switch f := f.(type) {
			case *http2.SettingsFrame:
				if !f.IsAck() && !acked {
					acked = true
					close(settings)
				}
			case *http2.MetaHeadersFrame:
				for _, hf := range f.Fields {
					if hf.Name == "grpc-status" && hf.Value == "8" {
						exhausted.Add(1)
					}
				}
			}
		}
	}()
	select {
	case <-settings:
	case <-time.After(10 * time.Second):
		t.Fatal("no SETTINGS from the server")
	}
	if err := fr.WriteSettingsAck(); err != nil {
		t.Fatal(err)
	}
	var hb bytes.Buffer
	enc := hpack.NewEncoder(&hb)
	for i := range calls {
		hb.Reset()
		for _, kv := range [][2]string{{":method", "POST"}, {":scheme", "http"}, {":path", "/test.Big/Get"},
			{":authority", "localhost"}, {"content-type", "application/grpc"}, {"te", "trailers"}} {
			_ = enc.WriteField(hpack.HeaderField{Name: kv[0], Value: kv[1]})
		}
		sid := uint32(2*i + 1)
		if err := fr.WriteHeaders(http2.HeadersFrameParam{StreamID: sid, BlockFragment: hb.Bytes(), EndHeaders: true}); err != nil {
			t.Fatal(err)
		}
		if err := fr.WriteData(sid, true, []byte{0, 0, 0, 0, 0}); err != nil {
			t.Fatal(err)
		}
	}
	// The calls past the bound are refused; then the stalled connection
	// is closed, even while the client keeps the server writing small
	// frames (refusals of more calls).
	go func() {
		for i := calls; ; i++ {
			select {
			case <-closed:
				return
			case <-time.After(50 * time.Millisecond):
			}
			hb := new(bytes.Buffer)
			enc := hpack.NewEncoder(hb)
			for _, kv := range [][2]string{{":method", "POST"}, {":scheme", "http"}, {":path", "/test.Big/Get"},
				{":authority", "localhost"}, {"content-type", "application/grpc"}, {"te", "trailers"}} {
				_ = enc.WriteField(hpack.HeaderField{Name: kv[0], Value: kv[1]})
			}
			if fr.WriteHeaders(http2.HeadersFrameParam{StreamID: uint32(2*i + 1), BlockFragment: hb.Bytes(), EndHeaders: true}) != nil ||
				fr.WriteData(uint32(2*i+1), true, []byte{0, 0, 0, 0, 0}) != nil {
				return
			}
		}
	}()
	select {
	case <-closed:
	case <-time.After(15 * time.Second):
		t.Fatalf("the server still holds a connection that has read none of its answers after 15 s (%d MiB unsent)", u.total.Load()>>20)
	}
	if got, want := int(exhausted.Load()), calls-bound/answer; got < want {
		t.Errorf("%d calls were refused with RESOURCE_EXHAUSTED, want at least %d (answers past the %d MiB bound)", got, want, bound>>20)
	}
	deadline := time.Now().Add(5 * time.Second)
	for u.total.Load() != 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := u.total.Load(); n != 0 {
		t.Errorf("%d bytes still counted unsent after the connection closed", n)
	}
}

// An HTTP client (the MCP endpoint, /metrics) that sends a request and
// never reads the answer has the write fail once it makes no progress for
// the stall time, rather than holding the answer and its goroutine for as
// long as it keeps the connection.
func TestHTTPWritesThatMakeNoProgressFail(t *testing.T) {
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	conns := config.Conns{HandshakeTimeout: 10 * time.Second, IdleTimeout: time.Minute}
	lis := withWriteStall(limitConns(raw, 16, silentGrace(conns), "mcp_listen", slog.New(slog.DiscardHandler)), 300*time.Millisecond)
	wrote := make(chan error, 1)
	srv := newHTTPServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		chunk := make([]byte, 1<<20)
		for range 256 { // 256 MiB: more than any socket buffer holds
			if _, err := w.Write(chunk); err != nil {
				wrote <- err
				return
			}
		}
		wrote <- nil
	}), conns, slog.New(slog.DiscardHandler))
	go srv.Serve(lis)
	t.Cleanup(func() { srv.Close() })

	c, err := net.Dial("tcp", raw.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write([]byte("GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-wrote:
		if err == nil {
			t.Fatal("the server wrote 256 MiB to a client that read none of it")
		}
	case <-time.After(15 * time.Second):
		t.Fatal("the server still writes to a client that has read nothing for 15 s")
	}
}

// A call whose client gave up (its deadline passed, or it cancelled)
// before the handler returned has no one to send the answer to: gRPC drops
// it, so it is not counted as waiting. Counted, it stayed against the
// bound and had the honest client's connection closed as stalled an
// idle_timeout later, with whatever else was in flight on it.
func TestAnswersOfCallsGivenUpAreNotCounted(t *testing.T) {
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	conns := config.Conns{HandshakeTimeout: 10 * time.Second, IdleTimeout: time.Minute}
	u := newUnsentAnswers(256<<20, time.Minute)
	lis := limitConns(raw, 16, silentGrace(conns), "listen", slog.New(slog.DiscardHandler))
	lis.(*limitListener).answers = u
	desc := bigService(1 << 20)
	desc.Methods[0].Handler = func(_ any, ctx context.Context, dec func(any) error, icpt grpc.UnaryServerInterceptor) (any, error) {
		in := new(emptypb.Empty)
		if err := dec(in); err != nil {
			return nil, err
		}
		// The request was read; the answer is ready just after the
		// client gave up.
		h := func(ctx context.Context, _ any) (any, error) {
			<-ctx.Done()
			return wrapperspb.Bytes(make([]byte, 1<<20)), nil
		}
		return icpt(ctx, in, &grpc.UnaryServerInfo{FullMethod: "/test.Big/Get"}, h)
	}
	s := grpc.NewServer(append(append(grpcConnOptions(conns), u.options()...), u.transport(nil))...)
	s.RegisterService(desc, struct{}{})
	go s.Serve(lis)
	t.Cleanup(s.Stop)
	cc, err := grpc.NewClient(raw.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	for range 3 {
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		err := cc.Invoke(ctx, "/test.Big/Get", new(emptypb.Empty), new(wrapperspb.BytesValue))
		cancel()
		if status.Code(err) != codes.DeadlineExceeded {
			t.Fatalf("got %v, want DeadlineExceeded", err)
		}
	}
	time.Sleep(200 * time.Millisecond) // the handlers return
	if got := u.total.Load(); got != 0 {
		t.Fatalf("%d bytes counted as waiting for a client, for answers to calls it gave up", got)
	}
}

// A client with the token that cancels (RST_STREAM) calls whose answers
// are queued behind a shut window: gRPC drops the answers, and their
// count must go with them, though the client keeps its connection busy
// reading other answers (32 cancelled 8 MiB answers held the daemon-wide
// bound, and other clients' big answers failed with RESOURCE_EXHAUSTED).
func TestCancelledAnswersAreNotCountedForGood(t *testing.T) {
	const answer, stall = 1 << 20, time.Second
	srv := startAnswerServer(t, false, answer, stall)
	u := srv.u
	c := srv.dial(t)
	for range 8 {
		id := c.Call("/test.Big/Get", h2TestMD, nil)
		time.Sleep(100 * time.Millisecond) // the answer is queued
		c.Reset(id)
	}
	start := time.Now()
	for time.Since(start) < 5*stall && !c.Closed() {
		id := c.Call("/test.Big/Get", h2TestMD, nil)
		c.Grant(id, answer+64)
		c.Grant(0, answer+64)
		c.Wait(5*time.Second, func() bool { _, ok := c.Status(id); return ok })
		time.Sleep(300 * time.Millisecond)
	}
	if got := u.total.Load(); got > 0 && !c.Closed() {
		t.Fatalf("%d bytes of cancelled answers still counted %v later, the connection open", got, time.Since(start).Round(time.Millisecond))
	}
}

// The answers of calls reset before they are written are released though
// the client keeps its connection busy with other calls, so that a
// moment with none in flight never comes.
func TestCancelledAnswersAreReleasedOnABusyConnection(t *testing.T) {
	const answer, stall = 1 << 20, time.Second
	srv := startAnswerServer(t, false, answer, stall)
	u := srv.u
	c := srv.dial(t)
	for range 8 {
		id := c.Call("/test.Big/Get", h2TestMD, nil)
		time.Sleep(100 * time.Millisecond) // the answer is queued
		c.Reset(id)
	}
	start, read := time.Now(), time.Now()
	// Until they are released: a sweep comes each stall; under load (the
	// race detector, a busy machine) five took longer than 5 s.
	for time.Since(start) < 30*stall && !c.Closed() && u.total.Load() > answer {
		// A call every 20 ms, answered at once (no such method), so
		// that one is in flight at every sweep or just before it.
		c.Call("/test.Big/Nope", h2TestMD, nil)
		if time.Since(read) > 300*time.Millisecond {
			id := c.Call("/test.Big/Get", h2TestMD, nil)
			c.Grant(id, answer+64)
			c.Grant(0, answer+64)
			read = time.Now()
		}
		time.Sleep(20 * time.Millisecond)
	}
	if got := u.total.Load(); got > answer && !c.Closed() {
		t.Fatalf("%d bytes of cancelled answers still counted %v later, the connection open", got, time.Since(start).Round(time.Millisecond))
	}
}

// Bytes the connection writes for other calls (refusals) take as much off
// its count of unsent answers, though an answer held behind a shut window
// is still in memory: the sweep counts at least what is left of the
// answers of known size.
func TestOtherBytesDoNotDrainAHeldAnswer(t *testing.T) {
	const answer, stall = 4 << 20, 4 * time.Second
	srv := startAnswerServer(t, false, answer, stall)
	u := srv.u
	c := srv.dial(t)
	c.Call("/test.Big/Get", h2TestMD, nil)
	time.Sleep(200 * time.Millisecond)
	start := time.Now()
	for time.Since(start) < 3*time.Second && !c.Closed() {
		// Calls of no such method, refused at once: about 100 bytes
		// written for each.
		for range 200 {
			c.Call("/test.Big/Nope", h2TestMD, nil)
		}
		time.Sleep(5 * time.Millisecond)
	}
	// Between two sweeps (a second apart) the refusals take off
	// what they write, a few hundred KiB.
	if got := u.total.Load(); got < answer-512<<10 && !c.Closed() {
		t.Fatalf("%d KiB of a %d KiB answer held behind a shut window counted after %v of refused calls", got>>10, answer>>10, time.Since(start).Round(time.Millisecond))
	}
}

// HTTP answers written to clients that do not read them are bounded in
// all: a write that would take the bytes in flight on the listener's
// connections past the bound fails at once, closing its connection, so
// its handler drops the answer instead of holding it for the write stall.
func TestHTTPWritesInFlightAreBounded(t *testing.T) {
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	const answer = 16 << 20
	conns := config.Conns{HandshakeTimeout: 10 * time.Second, IdleTimeout: time.Minute}
	lis := withWriteStall(limitConns(raw, 16, silentGrace(conns), "mcp_listen", slog.New(slog.DiscardHandler)), 30*time.Second)
	lis = withWriteBound(lis, answer*3/2)
	wrote := make(chan error, 2)
	srv := newHTTPServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, err := w.Write(make([]byte, answer)) // one write, as the go-sdk writes an event
		wrote <- err
	}), conns, slog.New(slog.DiscardHandler))
	go srv.Serve(lis)
	t.Cleanup(func() { srv.Close() })
	ask := func() net.Conn {
		c, err := net.Dial("tcp", raw.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		_ = c.(*net.TCPConn).SetReadBuffer(4 << 10)
		if _, err := c.Write([]byte("GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")); err != nil {
			t.Fatal(err)
		}
		return c
	}
	first := ask()
	defer first.Close()
	time.Sleep(200 * time.Millisecond) // its answer is being written, and waits
	second := ask()
	defer second.Close()
	select {
	case err := <-wrote:
		if err == nil {
			t.Fatal("an answer was written whole to a client that reads nothing")
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("a second %d MiB answer waits beside the first for clients that read nothing, past a bound of %d MiB", answer>>20, answer*3/2>>20)
	}
}

// Small answers go out however full the bound on HTTP writes in flight
// is: a caller who fills it with answers it does not read, to within a
// few bytes, made every other write fail and close its connection (an
// initialize, a list); now only answers over smallWrite can find it full.
func TestSmallHTTPWritesPassAFullWriteBound(t *testing.T) {
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	const big = 16 << 20
	conns := config.Conns{HandshakeTimeout: 10 * time.Second, IdleTimeout: time.Minute}
	lis := withWriteStall(limitConns(raw, 16, silentGrace(conns), "mcp_listen", slog.New(slog.DiscardHandler)), 30*time.Second)
	lis = withWriteBound(lis, big+100) // a few KiB left once the first answer waits (bufio wrote the rest)
	srv := newHTTPServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/"))
		_, _ = w.Write(make([]byte, n)) // one write, as the go-sdk writes an event
	}), conns, slog.New(slog.DiscardHandler))
	go srv.Serve(lis)
	t.Cleanup(func() { srv.Close() })
	stuck, err := net.Dial("tcp", raw.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer stuck.Close()
	_ = stuck.(*net.TCPConn).SetReadBuffer(4 << 10)
	if _, err := fmt.Fprintf(stuck, "GET /%d HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", big); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond) // its answer is being written, and waits
	get := func(n int) (int, error) {
		c := &http.Client{Timeout: 5 * time.Second}
		resp, err := c.Get(fmt.Sprintf("http://%s/%d", raw.Addr(), n))
		if err != nil {
			return 0, err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return len(b), err
	}
	for _, n := range []int{200, 4 << 10, smallWrite - 1<<10} {
		if got, err := get(n); err != nil || got != n {
			t.Errorf("a %d-byte answer beside a full bound: read %d bytes, %v", n, got, err)
		}
	}
	if got, err := get(1 << 20); err == nil && got == 1<<20 {
		t.Errorf("a 1 MiB answer was written past a full bound")
	}
}
