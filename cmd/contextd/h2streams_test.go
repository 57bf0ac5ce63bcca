package main

import (
	"bytes"
	"cmp"
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/types/known/emptypb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/contextd/contextd/internal/config"
	"github.com/contextd/contextd/internal/h2flood"
	"github.com/contextd/contextd/internal/service"
)

const h2TestToken = "h2-test-token"

// answerServer is a gRPC server built as serve builds the daemon's (the
// token, the connection bounds, the answer bounds, the transport), with
// bigService and the health service.
type answerServer struct {
	addr      string
	clientTLS *tls.Config    // nil: plaintext
	u         *unsentAnswers // its count of answers not yet read
}

func startAnswerServer(t *testing.T, useTLS bool, answer int, stall time.Duration) answerServer {
	t.Helper()
	var creds credentials.TransportCredentials
	var clientTLS *tls.Config
	if useTLS {
		dir := t.TempDir()
		writePKI(t, dir)
		var err error
		if creds, _, err = serverTLS(config.TLS{CertFile: filepath.Join(dir, "server.pem"), KeyFile: filepath.Join(dir, "server-key.pem"),
			ClientCAFile: filepath.Join(dir, "ca.pem")}); err != nil {
			t.Fatal(err)
		}
		pool, err := certPool(filepath.Join(dir, "ca.pem"))
		if err != nil {
			t.Fatal(err)
		}
		cert, err := tls.LoadX509KeyPair(filepath.Join(dir, "client.pem"), filepath.Join(dir, "client-key.pem"))
		if err != nil {
			t.Fatal(err)
		}
		clientTLS = &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{cert}, ServerName: "localhost", NextProtos: []string{"h2"}}
	}
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	conns := config.Conns{HandshakeTimeout: 10 * time.Second, IdleTimeout: stall}
	u := newUnsentAnswers(256<<20, stall)
	lis := limitConns(raw, 16, silentGrace(conns), "listen", slog.New(slog.DiscardHandler))
	lis.(*limitListener).answers = u
	lis = withWriteStall(lis, stall)
	sopts := service.Guard(service.GuardOptions{Token: h2TestToken})
	sopts = append(sopts, grpcConnOptions(conns)...)
	sopts = append(sopts, u.options()...)
	sopts = append(sopts, u.transport(creds))
	s := grpc.NewServer(sopts...)
	s.RegisterService(bigService(answer), struct{}{})
	healthpb.RegisterHealthServer(s, health.NewServer())
	go s.Serve(lis)
	t.Cleanup(s.Stop)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go u.run(ctx)
	return answerServer{addr: raw.Addr().String(), clientTLS: clientTLS, u: u}
}

// dial connects a raw HTTP/2 client that takes no answer bytes until it
// grants a window (SETTINGS_INITIAL_WINDOW_SIZE 0).
func (a answerServer) dial(t *testing.T) *h2flood.Conn {
	t.Helper()
	c, err := h2flood.DialConfig(a.addr, h2flood.Config{TLS: a.clientTLS, Settings: []http2.Setting{{ID: http2.SettingInitialWindowSize, Val: 0}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

var h2TestMD = [][2]string{{"authorization", "Bearer " + h2TestToken}}

func forBoth(t *testing.T, f func(t *testing.T, useTLS bool)) {
	t.Run("plaintext", func(t *testing.T) { f(t, false) })
	t.Run("tls", func(t *testing.T) { f(t, true) })
}

// A client with the token that leaves one answer unread for good while it
// keeps the server writing others on the same connection (here, reading
// an answer every 50 ms) has the connection closed about idle_timeout
// after that answer stopped, freeing it: counting the bytes written per
// connection would see it as a client reading its answers.
func TestAStuckAnswerClosesItsConnection(t *testing.T) {
	forBoth(t, func(t *testing.T, useTLS bool) {
		const answer, stall = 256 << 10, time.Second
		srv := startAnswerServer(t, useTLS, answer, stall)
		c := srv.dial(t)
		stuck := c.Call("/test.Big/Get", h2TestMD, nil)
		start := time.Now()
		read := 0
		for !c.Closed() && time.Since(start) < 10*stall {
			id := c.Call("/test.Big/Get", h2TestMD, nil)
			c.Grant(id, answer+64)
			c.Grant(0, answer+64)
			if c.Wait(5*time.Second, func() bool { st, ok := c.Status(id); return ok && st == "0" }) {
				read++
			}
			time.Sleep(50 * time.Millisecond)
		}
		if !c.Closed() {
			t.Fatalf("the connection is still open %v after its answer on stream %d stopped (idle_timeout %v), while the client read %d others", time.Since(start).Round(time.Millisecond), stuck, stall, read)
		}
		t.Logf("closed after %v; the client read %d other answers meanwhile", time.Since(start).Round(time.Millisecond), read)
		if read < 5 {
			t.Errorf("the client read only %d other answers before the connection closed: the attack was not kept up", read)
		}
		if got := c.Received(stuck); got != 0 {
			t.Errorf("the stuck stream received %d bytes, want none (no window)", got)
		}
	})
}

// A client that opens its window a little at a time (32 KiB every
// 200 ms, well under the answer's size in idle_timeout but above the
// 64 KiB of progress it needs) reads its whole answer on an open
// connection.
func TestASlowSteadyReaderKeepsItsConnection(t *testing.T) {
	forBoth(t, func(t *testing.T, useTLS bool) {
		const answer, stall, step = 512 << 10, time.Second, 32 << 10
		srv := startAnswerServer(t, useTLS, answer, stall)
		c := srv.dial(t)
		id := c.Call("/test.Big/Get", h2TestMD, nil)
		deadline := time.Now().Add(20 * time.Second)
		for c.Received(id) < answer && !c.Closed() && time.Now().Before(deadline) {
			c.Grant(id, step)
			c.Grant(0, step)
			time.Sleep(200 * time.Millisecond)
		}
		c.Grant(id, step)
		c.Grant(0, step)
		if !c.Wait(5*time.Second, func() bool { _, ok := c.Status(id); return ok }) {
			t.Fatalf("the slow reader got %d of %d bytes, closed=%v", c.Received(id), answer, c.Closed())
		}
		if st, _ := c.Status(id); st != "0" || c.Received(id) < answer {
			t.Fatalf("the slow reader's call ended with grpc-status %q after %d of %d bytes", st, c.Received(id), answer)
		}
	})
}

// A client that trickles its window (64 KiB per half idle_timeout: enough
// progress in each stall, far too little for its answer) cannot hold the
// answer, and its share of the bound on unsent answers, for hours: an
// answer must end within maxAnswerWait stalls of first waiting.
func TestATricklingReaderIsCut(t *testing.T) {
	// 1 s, not less: under -race on a loaded 2-core machine a grant sent
	// every 125 ms came late enough that a 250-ms stall passed without
	// one, and the reader was cut at 450 ms as stalled, not as trickling.
	const answer, stall, step = 4 << 20, time.Second, 64 << 10
	srv := startAnswerServer(t, false, answer, stall)
	c := srv.dial(t)
	id := c.Call("/test.Big/Get", h2TestMD, nil)
	start := time.Now()
	for !c.Closed() && c.Received(id) < answer && time.Since(start) < 4*maxAnswerWait*stall {
		c.Grant(id, step)
		c.Grant(0, step)
		time.Sleep(stall / 2)
	}
	if !c.Closed() {
		t.Fatalf("a trickling reader kept its connection %v (idle_timeout %v) and read %d of %d bytes", time.Since(start).Round(time.Millisecond), stall, c.Received(id), answer)
	}
	if took := time.Since(start); took < maxAnswerWait*stall {
		t.Errorf("cut after %v, before %d × idle_timeout", took.Round(time.Millisecond), maxAnswerWait)
	}
}

// A grpc-go client is unaffected: a health Watch idle for several times
// idle_timeout stays open beside big answers on the same connection.
func TestGRPCClientsAreUnaffectedByStuckAnswerChecks(t *testing.T) {
	forBoth(t, func(t *testing.T, useTLS bool) {
		// 2 s, not less: under -race on a 2-core machine busy with other
		// packages' tests, a client took over 1 s to read a 3 MiB answer,
		// over TLS and in plaintext, and was taken for a stuck one.
		const answer, stall = 3 << 20, 2 * time.Second
		srv := startAnswerServer(t, useTLS, answer, stall)
		creds := insecure.NewCredentials()
		if useTLS {
			creds = credentials.NewTLS(srv.clientTLS)
		}
		cc, err := grpc.NewClient(srv.addr, grpc.WithTransportCredentials(creds))
		if err != nil {
			t.Fatal(err)
		}
		defer cc.Close()
		ctx := metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer "+h2TestToken)
		ctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		w, err := healthpb.NewHealthClient(cc).Watch(ctx, &healthpb.HealthCheckRequest{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Recv(); err != nil {
			t.Fatal(err)
		}
		watchErr := make(chan error, 1)
		go func() {
			for {
				if _, err := w.Recv(); err != nil {
					watchErr <- err
					return
				}
			}
		}()
		for range 3 {
			out := new(wrapperspb.BytesValue)
			if err := cc.Invoke(ctx, "/test.Big/Get", new(emptypb.Empty), out); err != nil {
				t.Fatal(err)
			}
			if len(out.Value) != answer {
				t.Fatalf("got %d bytes, want %d", len(out.Value), answer)
			}
			time.Sleep(stall)
		}
		select {
		case err := <-watchErr:
			t.Fatalf("the Watch ended while idle: %v", err)
		default:
		}
	})
}

// A sweep that runs while a write is under way (the connection beneath has
// counted its bytes as written, the frames in them are not followed yet)
// does not count them again as left of their answer. It did: once the
// answer ended, a call that never ends (a health Watch) kept the
// connection's count from falling to 0, and the connection was closed a
// stall later, though every answer had been read.
func TestASweepDuringAWriteKeepsNoAnswerCounted(t *testing.T) {
	const answer = 48 << 10
	u := newUnsentAnswers(256<<20, time.Minute)
	l := limitConns(nil, 4, time.Second, "listen", slog.New(slog.DiscardHandler)).(*limitListener)
	l.answers = u
	l.slots <- struct{}{}
	lc := &limitConn{Conn: sinkConn{}, l: l, accepted: time.Now()}
	u.track(lc)
	// Between the connection that counts and the one that follows
	// frames, as TLS is: a sweep after every write beneath.
	var h *h2Conn
	mid := &hookConn{Conn: lc, after: func() { h.releaseDropped(time.Now()) }}
	h = u.watch(mid, lc).(*h2Conn)

	var hb bytes.Buffer
	enc := hpack.NewEncoder(&hb)
	block := func(fields ...string) []byte {
		hb.Reset()
		for i := 0; i < len(fields); i += 2 {
			_ = enc.WriteField(hpack.HeaderField{Name: fields[i], Value: fields[i+1]})
		}
		return bytes.Clone(hb.Bytes())
	}
	// The client's side: a Watch (stream 1) and a call (stream 3), both
	// requests ended; what the client writes is only followed.
	h.mu.Lock()
	h.fromClient(http2.FrameHeaders, http2.FlagHeadersEndHeaders|http2.FlagHeadersEndStream, 1, 0, nil)
	h.fromClient(http2.FrameHeaders, http2.FlagHeadersEndHeaders|http2.FlagHeadersEndStream, 3, 0, nil)
	h.fromClient(http2.FrameWindowUpdate, 0, 0, 4, binary.BigEndian.AppendUint32(nil, 1<<20))
	h.fromClient(http2.FrameWindowUpdate, 0, 3, 4, binary.BigEndian.AppendUint32(nil, 1<<20))
	h.mu.Unlock()

	fr := http2.NewFramer(h, nil)
	if err := fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: block(":status", "200"), EndHeaders: true}); err != nil {
		t.Fatal(err)
	}
	if !u.reserve(lc, answer) {
		t.Fatal("the answer was refused")
	}
	if err := fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 3, BlockFragment: block(":status", "200", answerBytesHeader, strconv.Itoa(answer)), EndHeaders: true}); err != nil {
		t.Fatal(err)
	}
	for left := answer + 5; left > 0; {
		n := min(left, 16<<10)
		left -= n
		if err := fr.WriteData(3, left == 0, make([]byte, n)); err != nil {
			t.Fatal(err)
		}
	}
	if got := lc.ans.unsent(); got != 0 {
		t.Errorf("%d bytes still counted unsent once the answer was written", got)
	}
	if got := u.total.Load(); got != 0 {
		t.Errorf("%d bytes of unsent answers counted in all once the answer was written", got)
	}
}

// sinkConn takes every write; it has addresses and nothing else.
type sinkConn struct{ net.Conn }

func (sinkConn) Write(p []byte) (int, error) { return len(p), nil }
func (sinkConn) RemoteAddr() net.Addr        { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 1} }
func (sinkConn) LocalAddr() net.Addr         { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 2} }

// hookConn calls after once each write beneath it returns.
type hookConn struct {
	net.Conn
	after func()
}

func (c *hookConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	c.after()
	return n, err
}

// frameReader finds the same frames however the bytes are split.
func TestFrameReaderSplitsAnywhere(t *testing.T) {
	var buf bytes.Buffer
	fr := http2.NewFramer(&buf, nil)
	_ = fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: 7})
	_ = fr.WriteData(1, false, make([]byte, 1000))
	_ = fr.WriteWindowUpdate(3, 99)
	_ = fr.WriteRSTStream(5, http2.ErrCodeCancel)
	_ = fr.WriteData(1, true, nil)
	want := []string{"SETTINGS 0 6 [0 4 0 0 0 7]", "DATA 1 1000 []", "WINDOW_UPDATE 3 4 [0 0 0 99]", "RST_STREAM 5 4 []", "DATA 1 0 []"}
	for _, step := range []int{1, 2, 9, 10, 1 << 20} {
		var r frameReader
		var got []string
		on := func(typ http2.FrameType, _ http2.Flags, id uint32, n int, p []byte) {
			got = append(got, sprintFrame(typ, id, n, p))
		}
		b := buf.Bytes()
		for len(b) > 0 {
			n := min(step, len(b))
			r.feed(b[:n], on)
			b = b[n:]
		}
		if len(got) != len(want) {
			t.Fatalf("step %d: got %q, want %q", step, got, want)
		}
		for i := range got {
			if got[i] != want[i] {
				t.Errorf("step %d: frame %d is %q, want %q", step, i, got[i], want[i])
			}
		}
	}
}

func sprintFrame(typ http2.FrameType, id uint32, n int, p []byte) string {
	return fmt.Sprintf("%v %d %d %v", typ, id, n, p)
}

// BenchmarkFrameReader measures following a connection's frames: 16 KiB
// DATA frames, fed in 32 KiB writes as gRPC's writer flushes them.
func BenchmarkFrameReader(b *testing.B) {
	var buf bytes.Buffer
	fr := http2.NewFramer(&buf, nil)
	for range 64 {
		_ = fr.WriteData(1, false, make([]byte, 16<<10))
	}
	stream := buf.Bytes()
	c := &h2Conn{streams: map[uint32]*h2Stream{1: {win: 1 << 40, answering: true}}, connWin: 1 << 40}
	b.SetBytes(int64(len(stream)))
	for b.Loop() {
		for p := stream; len(p) > 0; p = p[min(32<<10, len(p)):] {
			c.out.feed(p[:min(32<<10, len(p))], c.fromServer)
		}
	}
}

// A client that grants the connection window past 2^31-1 (which HTTP/2
// forbids) wraps gRPC's 32-bit send quota back to what it was, so gRPC
// sends nothing more while a follower that added the grants would see the
// window wide open and never count the answer stuck. Such a connection is
// closed, however it keeps the server writing other frames (here, calls
// refused for want of the token).
func TestAWindowPastTheMaximumClosesItsConnection(t *testing.T) {
	forBoth(t, func(t *testing.T, useTLS bool) {
		const answer, stall = 256 << 10, time.Second
		srv := startAnswerServer(t, useTLS, answer, stall)
		c := srv.dial(t)
		stuck := c.Call("/test.Big/Get", h2TestMD, nil)
		c.Grant(stuck, answer+64)
		c.Grant(0, 1<<31-1)
		c.Grant(0, 1<<31-1)
		c.Grant(0, 2)
		start := time.Now()
		for !c.Closed() && time.Since(start) < 10*stall {
			for range 200 {
				c.Call("/test.Big/Get", nil, nil)
			}
			time.Sleep(20 * time.Millisecond)
		}
		if !c.Closed() {
			t.Fatalf("the connection is still open %v after its answer on stream %d stopped at %d of %d bytes (idle_timeout %v)",
				time.Since(start).Round(time.Millisecond), stuck, c.Received(stuck), answer, stall)
		}
		t.Logf("closed after %v; the stuck stream received %d bytes", time.Since(start).Round(time.Millisecond), c.Received(stuck))
	})
}

// Once gRPC has said GOAWAY and drains a connection (here, idle for
// idle_timeout, while the client opened a call in the heads-up's grace and
// keeps it open by never sending its request message), it ignores new
// streams without a word. A follower that kept a stream for every request
// HEADERS would keep one for each of them for as long as the client keeps
// the connection: about 90 bytes per 15-byte frame, without bound.
func TestStreamsTheServerIgnoresAreNotFollowed(t *testing.T) {
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	conns := config.Conns{HandshakeTimeout: 10 * time.Second, IdleTimeout: 300 * time.Millisecond}
	u := newUnsentAnswers(256<<20, conns.IdleTimeout)
	lis := limitConns(raw, 16, silentGrace(conns), "listen", slog.New(slog.DiscardHandler))
	lis.(*limitListener).answers = u
	s := grpc.NewServer(append(append(grpcConnOptions(conns), u.options()...), u.transport(nil))...)
	s.RegisterService(bigService(10), struct{}{})
	go s.Serve(lis)
	t.Cleanup(s.Stop)

	c, err := net.Dial("tcp", raw.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fr := http2.NewFramer(c, c)
	var hb bytes.Buffer
	enc := hpack.NewEncoder(&hb)
	headers := func(id uint32) error {
		hb.Reset()
		for _, kv := range [][2]string{{":method", "POST"}, {":scheme", "http"}, {":path", "/test.Big/Get"},
			{":authority", "localhost"}, {"content-type", "application/grpc"}, {"te", "trailers"}} {
			_ = enc.WriteField(hpack.HeaderField{Name: kv[0], Value: kv[1]})
		}
		return fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: hb.Bytes(), EndHeaders: true})
	}
	if _, err := c.Write([]byte(http2.ClientPreface)); err != nil {
		t.Fatal(err)
	}
	if err := fr.WriteSettings(); err != nil {
		t.Fatal(err)
	}
	// Until the second GOAWAY, the reader alone writes: on the heads-up
	// GOAWAY it opens call 1, then acknowledges the ping that follows.
	draining := make(chan uint32, 1)
	go func() {
		for {
			f, err := fr.ReadFrame()
			if err != nil {
				return
			}
			switch f := f.(type) {
			case *http2.SettingsFrame:
				if !f.IsAck() {
					_ = fr.WriteSettingsAck()
				}
			case *http2.GoAwayFrame:
				if f.LastStreamID == 1<<31-1 {
					_ = headers(1)
				} else {
					draining <- f.LastStreamID
					return
				}
			case *http2.PingFrame:
				if !f.IsAck() {
					_ = fr.WritePing(true, f.Data)
				}
			}
		}
	}()
	select {
	case last := <-draining:
		if last != 1 {
			t.Fatalf("the server drains with last stream %d, want 1 (the call opened in the grace)", last)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("no GOAWAY from an idle connection")
	}
	const ignored = 20000
	for id := uint32(3); id < 3+2*ignored; id += 2 {
		if err := headers(id); err != nil {
			t.Fatalf("the server closed the connection after stream %d: %v", id, err)
		}
	}
	// The server has read them when it answers a ping.
	if err := fr.WritePing(false, [8]byte{7}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond)
	u.mu.Lock()
	defer u.mu.Unlock()
	if len(u.h2) != 1 {
		t.Fatalf("%d connections followed, want 1", len(u.h2))
	}
	for h := range u.h2 {
		h.mu.Lock()
		n := len(h.streams)
		h.mu.Unlock()
		if n > 1 {
			t.Fatalf("%d streams followed on a connection with 1 call open and %d streams the server ignored", n, ignored)
		}
	}
}

// BenchmarkFollowSettings measures following a client's SETTINGS frames
// of 16 KiB, each 2,730 initial window sizes, with 100 calls open.
func BenchmarkFollowSettings(b *testing.B) {
	var buf bytes.Buffer
	fr := http2.NewFramer(&buf, nil)
	var ss []http2.Setting
	for i := range 2730 {
		ss = append(ss, http2.Setting{ID: http2.SettingInitialWindowSize, Val: uint32(i%2) * 65535})
	}
	_ = fr.WriteSettings(ss...)
	frame := buf.Bytes()
	c := &h2Conn{streams: map[uint32]*h2Stream{}, connWin: h2InitialWindow, initWin: h2InitialWindow, lastID: 1<<31 - 1}
	for i := range 100 {
		c.streams[uint32(2*i+1)] = &h2Stream{}
	}
	b.SetBytes(int64(len(frame)))
	for b.Loop() {
		c.in.feed(frame, c.fromClient)
	}
}

// A call that answers for as long as the connection lives (a health
// Watch) sees the connection's window shut for a moment whenever another
// answer takes it; it holds no counted answer, and two such moments hours
// apart do not close the connection.
func TestALongCallIsNotCutForBriefWaits(t *testing.T) {
	const stall = time.Second
	c := &h2Conn{streams: map[uint32]*h2Stream{}, connWin: h2InitialWindow, initWin: 1 << 20, lastID: 1<<31 - 1}
	c.dec = hpack.NewDecoder(4096, c.headerField)
	answer := func(id uint32, n int) {
		c.fromClient(http2.FrameHeaders, http2.FlagHeadersEndStream|http2.FlagHeadersEndHeaders, id, 0, nil)
		c.fromServer(http2.FrameHeaders, http2.FlagHeadersEndHeaders, id, 0, nil)
		c.fromServer(http2.FrameData, 0, id, n, nil)
	}
	answer(1, 20) // the Watch
	t0 := time.Now()
	answer(3, 60000) // takes the connection's window down to 5535 bytes
	if c.stuck(t0, stall) {
		t.Fatal("stuck at once")
	}
	c.fromClient(http2.FrameWindowUpdate, 0, 0, 4, binary.BigEndian.AppendUint32(nil, 60000))
	c.fromServer(http2.FrameHeaders, http2.FlagHeadersEndStream|http2.FlagHeadersEndHeaders, 3, 0, nil)
	for i := 1; i <= maxAnswerWait; i++ {
		if c.stuck(t0.Add(time.Duration(i)*stall), stall) {
			t.Fatalf("stuck %d stalls later, the windows open", i)
		}
	}
	answer(5, 60000) // another answer, read at once
	if c.stuck(t0.Add((maxAnswerWait+1)*stall), stall) {
		t.Fatalf("the Watch's connection is closed: its wait was taken to begin %d stalls ago, at another answer's moment", maxAnswerWait+1)
	}
}

// A call waiting only on the connection's window (a health Watch with
// nothing to send) is not stuck while other answers on the connection make
// progress: a client reading big answers slowly keeps the connection's
// window low for longer than a stall, but it is reading.
func TestACallWaitingOnTheConnectionsWindowIsNotStuckWhileOthersProgress(t *testing.T) {
	const stall = time.Second
	c := &h2Conn{streams: map[uint32]*h2Stream{}, connWin: h2InitialWindow, initWin: 1 << 20, lastID: 1<<31 - 1}
	c.dec = hpack.NewDecoder(4096, c.headerField)
	c.fromClient(http2.FrameHeaders, http2.FlagHeadersEndStream|http2.FlagHeadersEndHeaders, 1, 0, nil)
	c.fromServer(http2.FrameHeaders, http2.FlagHeadersEndHeaders, 1, 0, nil)
	c.fromServer(http2.FrameData, 0, 1, 20, nil) // the Watch's first answer
	c.fromClient(http2.FrameHeaders, http2.FlagHeadersEndStream|http2.FlagHeadersEndHeaders, 3, 0, nil)
	c.fromServer(http2.FrameHeaders, http2.FlagHeadersEndHeaders, 3, 0, nil)
	c.fromServer(http2.FrameData, 0, 3, 60000, nil) // the connection's window down to 5,515 bytes
	t0 := time.Now()
	if c.stuck(t0, stall) {
		t.Fatal("stuck at once")
	}
	for i := 1; i <= maxAnswerWait; i++ {
		// The client grants the connection what it read, and the big
		// answer takes it at once: the window is low at every look.
		c.fromClient(http2.FrameWindowUpdate, 0, 0, 4, binary.BigEndian.AppendUint32(nil, 70000))
		c.fromServer(http2.FrameData, 0, 3, 70000, nil)
		if c.stuck(t0.Add(time.Duration(i)*stall), stall) {
			t.Fatalf("the connection is taken as stuck %d stalls later, though an answer on it moved %d bytes each stall", i, 70000)
		}
	}
}

// A client that sends all but the last byte of a big request message on
// call after call has the connection closed once the unfinished requests
// pass maxPartialRequests: gRPC keeps what arrived of each message, with
// no deadline, until it ends. A client library sending requests of many
// frames, many at once, keeps its connection.
func TestUnfinishedRequestsAreBoundedPerConnection(t *testing.T) {
	forBoth(t, func(t *testing.T, useTLS bool) {
		srv := startAnswerServer(t, useTLS, 1<<10, time.Minute)
		c := srv.dial(t)
		sent := 0
		for i := 0; i < 8 && !c.Closed(); i++ {
			c.Partial("/test.Big/Get", h2TestMD, 512<<10)
			sent += 512 << 10
		}
		if !c.Wait(5*time.Second, c.Closed) {
			t.Fatalf("the connection is still open with %d KiB of unfinished requests sent", sent>>10)
		}
		t.Logf("closed after %d KiB of unfinished requests", sent>>10)

		// A message sent a byte a frame: gRPC keeps each frame apart, so
		// each counts for more than its byte.
		tiny := srv.dial(t)
		tiny.PartialFrames("/test.Big/Get", h2TestMD, 64<<10, 1)
		if !tiny.Wait(5*time.Second, tiny.Closed) {
			t.Fatalf("the connection is still open with 64 KiB of a request sent in 1-byte frames")
		}

		// A client library sending big requests that end keeps its
		// connection: 64 calls of a 60 KiB message (4 frames), 16 at a
		// time, and one of 1 MiB.
		var dopts []grpc.DialOption
		if srv.clientTLS != nil {
			dopts = append(dopts, grpc.WithTransportCredentials(credentials.NewTLS(srv.clientTLS)))
		} else {
			dopts = append(dopts, grpc.WithTransportCredentials(insecure.NewCredentials()))
		}
		cc, err := grpc.NewClient(srv.addr, dopts...)
		if err != nil {
			t.Fatal(err)
		}
		defer cc.Close()
		ctx := metadata.AppendToOutgoingContext(t.Context(), "authorization", "Bearer "+h2TestToken)
		big := wrapperspb.Bytes(make([]byte, 60<<10))
		errs := make(chan error, 16)
		for range 4 {
			for range 16 {
				go func() { errs <- cc.Invoke(ctx, "/test.Big/Get", big, new(wrapperspb.BytesValue)) }()
			}
			for range 16 {
				if err := <-errs; err != nil {
					t.Fatalf("a call with a 60 KiB request: %v", err)
				}
			}
		}
		if err := cc.Invoke(ctx, "/test.Big/Get", wrapperspb.Bytes(make([]byte, service.MaxRecvMsgSize-16)), new(wrapperspb.BytesValue)); err != nil {
			t.Fatalf("a call with a 1 MiB request: %v", err)
		}
		// Many such calls at once on one connection: the client
		// interleaves their frames, so more than 1 MiB is unfinished for
		// a moment, and every call ends.
		for _, k := range []struct{ calls, size int }{{25, 64000}, {100, 20000}, {60, 60 << 10}} {
			errs := make(chan error, k.calls)
			msg := wrapperspb.Bytes(make([]byte, k.size))
			for range k.calls {
				go func() { errs <- cc.Invoke(ctx, "/test.Big/Get", msg, new(wrapperspb.BytesValue)) }()
			}
			for range k.calls {
				if err := <-errs; err != nil {
					t.Fatalf("%d calls at once of %d bytes each: %v", k.calls, k.size, err)
				}
			}
		}

		// Frames just over 1 KiB: gRPC reads each into a 4 KiB buffer, so
		// 16 requests counted at their bytes just under the bound held 4
		// times it.
		pooled := srv.dial(t)
		for range 16 {
			pooled.PartialFrames("/test.Big/Get", h2TestMD, 63000, 1025)
		}
		if !pooled.Wait(5*time.Second, pooled.Closed) {
			t.Fatalf("the connection is still open with 16 requests of 63,000 bytes sent in 1,025-byte frames")
		}

		// A client that keeps more than the bound unfinished, never going
		// past the hard bound, is closed after partialGrace.
		slow := srv.dial(t)
		for range 3 {
			slow.Partial("/test.Big/Get", h2TestMD, 512<<10)
		}
		start := time.Now()
		if !slow.Wait(5*time.Second, slow.Closed) {
			t.Fatalf("the connection is still open with 1.5 MiB of unfinished requests for 5s")
		}
		if d := time.Since(start); d > partialGrace+time.Second {
			t.Errorf("closed %v after 1.5 MiB of unfinished requests, want about %v", d, partialGrace)
		}
	})
}

// A client that sends whole calls and reads nothing has them all waiting
// for an answer or refusal the daemon cannot write: past
// maxFollowedStreams of them the connection is closed (1,100 such
// connections held 1 GB of queued refusals, with or without the token).
// As many as gRPC serves at once (maxStreamsPerConn) keep it.
func TestCallsNeverAnsweredAreBoundedPerConnection(t *testing.T) {
	for _, tc := range []struct {
		calls   int
		wantErr error
	}{
		{maxStreamsPerConn, nil},
		{2*maxStreamsPerConn + 1, errUnansweredCalls},
	} {
		var in bytes.Buffer
		in.WriteString(http2.ClientPreface)
		fr := http2.NewFramer(&in, nil)
		_ = fr.WriteSettings()
		for i := range tc.calls {
			_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: uint32(2*i + 1), BlockFragment: []byte{0x82}, EndHeaders: true, EndStream: true})
		}
		u := newUnsentAnswers(256<<20, time.Minute)
		l := limitConns(nil, 4, time.Second, "listen", slog.New(slog.DiscardHandler)).(*limitListener)
		l.answers = u
		l.slots <- struct{}{}
		lc := &limitConn{Conn: &readConn{sinkConn: sinkConn{}, r: &in}, l: l, accepted: time.Now()}
		u.track(lc)
		h := u.watch(lc, lc)
		var err error
		buf := make([]byte, 1024)
		for err == nil {
			_, err = h.Read(buf)
		}
		if tc.wantErr == nil && err != io.EOF || tc.wantErr != nil && !errors.Is(err, tc.wantErr) {
			t.Errorf("%d calls never answered: the connection ended with %v, want %v", tc.calls, err, cmp.Or(tc.wantErr, io.EOF))
		}
	}
}

// readConn reads from r and takes every write.
type readConn struct {
	sinkConn
	r io.Reader
}

func (c *readConn) Read(p []byte) (int, error) { return c.r.Read(p) }

func (c *readConn) Close() error { return nil }
