package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"

	"github.com/contextd/contextd/client"
	"github.com/contextd/contextd/internal/config"
	"github.com/contextd/contextd/internal/h2flood"
	"github.com/contextd/contextd/internal/metrics"
	"github.com/contextd/contextd/internal/service"
	contextdv1 "github.com/contextd/contextd/proto/contextd/v1"
)

// freeAddr returns a loopback host:port nothing listens on.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// quietFDs is openFDs at its lowest over a few samples: the baseline
// before a test opens connections.
func quietFDs(t *testing.T) int {
	t.Helper()
	n := openFDs(t)
	for range 5 {
		time.Sleep(20 * time.Millisecond)
		n = min(n, openFDs(t))
	}
	return n
}

// openFDs counts this process's open file descriptors.
func openFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}

// waitDial waits until something accepts connections at addr.
func waitDial(t *testing.T, addr string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("nothing listens on %s after 30s", addr)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// startServe runs serve with the config file cfg until the test ends, and
// waits until each of addrs accepts connections. Its log is in buf, which
// logs guards.
func startServe(t *testing.T, cfg string, addrs ...string) (logs *syncWriter, buf *bytes.Buffer) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	buf = &bytes.Buffer{}
	logs = &syncWriter{w: buf}
	go func() { done <- run(ctx, []string{"serve", "--config", cfg}, logs, logs) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Error("serve did not stop within 30s")
		}
	})
	for _, a := range addrs {
		waitDial(t, a)
	}
	return logs, buf
}

// Connections held open by a client without the token, more than
// max_connections on each of the daemon's three listeners, neither use up
// its descriptors nor lock out a client with the token: the daemon holds
// at most max_connections per listener, closes the silent ones after
// handshake_timeout, and serves the waiting client in turn; a gRPC
// connection left idle is closed after idle_timeout.
func TestHeldConnectionsAreBounded(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("counts descriptors in /proc/self/fd")
	}
	const (
		token  = "held-connections-token-0123456789"
		maxC   = 4
		held   = 40 // per listener
		listen = 3
	)
	addr, mcpAddr, metAddr := freeAddr(t), freeAddr(t), freeAddr(t)
	cfg := writeConfig(t, fmt.Sprintf("listen: %s\nmcp_listen: %s\nmetrics_listen: %s\nauth: {token: %s}\ndata_dir: %s\nmcpServers: {}\n"+
		"max_connections: %d\nidle_timeout: 400ms\nhandshake_timeout: 200ms\n", addr, mcpAddr, metAddr, token, t.TempDir(), maxC))
	logs, buf := startServe(t, cfg, addr, mcpAddr, metAddr)
	ctx := t.Context()
	time.Sleep(200 * time.Millisecond) // the probes' connections close
	base := quietFDs(t)

	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for _, a := range []string{addr, mcpAddr, metAddr} {
		for range held {
			c, err := net.Dial("tcp", a)
			if err != nil {
				t.Fatalf("dial %s: %v", a, err)
			}
			conns = append(conns, c)
		}
	}
	// The daemon's own descriptors for them: what the process holds
	// beyond the client ends this test opened.
	most := 0
	for range 20 {
		most = max(most, openFDs(t)-base-len(conns))
		time.Sleep(25 * time.Millisecond)
	}
	t.Logf("the daemon held at most %d descriptors for %d silent connections", most, len(conns))
	// Each listener holds max_connections, and one more waiting for room.
	if want := listen*(maxC+1) + 2; most > want {
		t.Errorf("the daemon held %d descriptors for %d silent connections; want at most %d (max_connections %d + 1 on %d listeners, +2)",
			most, len(conns), want, maxC, listen)
	}

	// A client with the token is served on each listener while the
	// silent connections are still open on the client side.
	cctx, ccancel := context.WithTimeout(ctx, 20*time.Second)
	defer ccancel()
	gc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer gc.Close()
	if _, err := contextdv1.NewContextServiceClient(gc).ListServers(metadata.AppendToOutgoingContext(cctx, "authorization", "Bearer "+token),
		&contextdv1.ListServersRequest{}); err != nil {
		t.Errorf("gRPC ListServers with the token, past %d held connections: %v", held, err)
	}
	mc := mcpsdk.NewClient(&mcpsdk.Implementation{Name: "t", Version: "v"}, nil)
	cs, err := mc.Connect(cctx, &mcpsdk.StreamableClientTransport{Endpoint: "http://" + mcpAddr + "/mcp",
		HTTPClient: &http.Client{Transport: bearerTransport{token: token}}, MaxRetries: -1, DisableStandaloneSSE: true}, nil)
	if err != nil {
		t.Errorf("MCP connect with the token, past %d held connections: %v", held, err)
	} else {
		if _, err := cs.ListTools(cctx, nil); err != nil {
			t.Errorf("MCP tools/list: %v", err)
		}
		cs.Close()
	}
	req, _ := http.NewRequestWithContext(cctx, http.MethodGet, "http://"+metAddr+"/metrics", nil)
	if resp, err := http.DefaultClient.Do(req); err != nil {
		t.Errorf("GET /metrics past %d held connections: %v", held, err)
	} else {
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("GET /metrics: %s", resp.Status)
		}
	}

	// Every silent connection was closed by the daemon.
	for i, c := range conns {
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		// (gRPC sends its settings first, HTTP maybe a 408.)
		if _, err := io.Copy(io.Discard, c); err != nil && !isReset(err) {
			t.Fatalf("silent connection %d: %v, want EOF: the daemon kept it open", i, err)
		}
	}

	// An HTTP keep-alive connection left idle after its response is closed
	// after idle_timeout.
	for name, r := range map[string]string{
		"metrics_listen": "GET /metrics HTTP/1.1\r\nHost: " + metAddr + "\r\n\r\n",
		"mcp_listen":     "GET /mcp HTTP/1.1\r\nHost: " + mcpAddr + "\r\nAuthorization: Bearer " + token + "\r\n\r\n",
	} {
		a := metAddr
		if name == "mcp_listen" {
			a = mcpAddr
		}
		c, err := net.Dial("tcp", a)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(5 * time.Second))
		io.WriteString(c, r)
		br := bufio.NewReader(c)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.Close {
			t.Fatalf("%s: the response to %q closes its connection; the test wants a keep-alive one", name, r)
		}
		if _, err := io.Copy(io.Discard, br); err != nil && !isReset(err) {
			t.Errorf("%s: a keep-alive connection left idle: %v, want EOF after idle_timeout", name, err)
		}
	}

	// A gRPC connection with no call in flight is closed (GOAWAY) after
	// idle_timeout; the client goes IDLE and would reconnect on its next call.
	wctx, wcancel := context.WithTimeout(ctx, 5*time.Second)
	defer wcancel()
	for s := gc.GetState(); s != connectivity.Idle; s = gc.GetState() {
		if !gc.WaitForStateChange(wctx, s) {
			t.Fatalf("the gRPC connection is still %v 5s after its call: idle_timeout did not close it", s)
		}
	}
	logs.mu.Lock()
	defer logs.mu.Unlock()
	if !strings.Contains(buf.String(), "connection limit reached") {
		t.Errorf("reaching max_connections was not logged:\n%s", buf.String())
	}
}

// isReset reports whether err is a connection reset by the peer.
func isReset(err error) bool {
	return err != nil && strings.Contains(err.Error(), "connection reset")
}

// An HTTP request that declares a body and never sends it has its
// connection closed after handshake_timeout, but a response streamed for
// longer than that, once the body is in, is not cut.
func TestHTTPReadTimeoutSparesStreams(t *testing.T) {
	const d = 200 * time.Millisecond
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := io.ReadAll(r.Body); err != nil {
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		for i := range 6 { // six times the deadline
			fmt.Fprintf(w, "data: %d\n\n", i)
			w.(http.Flusher).Flush()
			select {
			case <-r.Context().Done():
				return
			case <-time.After(d):
			}
		}
		fmt.Fprint(w, "data: end\n\n")
	})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := newHTTPServer(h, config.Conns{IdleTimeout: time.Minute, HandshakeTimeout: d}, discardLogger())
	go srv.Serve(l)
	defer srv.Close()

	c, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprint(c, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n")
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	start := time.Now()
	if _, err := io.ReadAll(c); err != nil {
		t.Fatalf("a body never sent: %v after %v, want the daemon to close the connection", err, time.Since(start))
	}

	resp, err := http.Post("http://"+l.Addr().String()+"/", "text/plain", strings.NewReader("hello"))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var last string
	for sc := bufio.NewScanner(resp.Body); sc.Scan(); {
		if sc.Text() != "" {
			last = sc.Text()
		}
	}
	if last != "data: end" {
		t.Errorf("a stream longer than the body deadline ended at %q, want \"data: end\"", last)
	}
}

func TestMaxConns(t *testing.T) {
	for _, tc := range []struct {
		max    int
		nofile uint64
		want   int
	}{
		{7, 1 << 20, 7},
		{0, 1 << 20, maxDefaultConns},
		{0, 1024, 256},
		{0, 32, minDefaultConns},
		{0, 0, maxDefaultConns},
	} {
		if got := maxConns(config.Conns{Max: tc.max}, tc.nofile); got != tc.want {
			t.Errorf("maxConns(max %d, nofile %d) = %d, want %d", tc.max, tc.nofile, got, tc.want)
		}
	}
}

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

// With auth.token set, pprof's profiles on metrics_listen ask for the
// token (a heap profile shows the process's memory); /metrics does not.
func TestPprofRequiresTheToken(t *testing.T) {
	const token = "pprof-token-0123456789abcdef"
	metAddr := freeAddr(t)
	cfg := writeConfig(t, fmt.Sprintf("listen: unix://%s\nmetrics_listen: %s\nmetrics_pprof: true\nauth: {token: %s}\ndata_dir: %s\nmcpServers: {}\n",
		filepath.Join(t.TempDir(), "c.sock"), metAddr, token, t.TempDir()))
	startServe(t, cfg, metAddr)
	get := func(path, tok string) int {
		t.Helper()
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, "http://"+metAddr+path, nil)
		if host, ok := strings.CutPrefix(tok, "host="); ok {
			req.Host, tok = host, token
		}
		if tok != "" {
			req.Header.Set("Authorization", "Bearer "+tok)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, tc := range []struct {
		path, token string
		want        int
	}{
		{"/debug/pprof/", "", http.StatusUnauthorized},
		{"/debug/pprof/heap", "", http.StatusUnauthorized},
		{"/debug/pprof/cmdline", "wrong-token-0123456789", http.StatusUnauthorized},
		{"/debug/pprof/heap", token, http.StatusOK},
		{"/metrics", "", http.StatusOK},
		{"/metrics", "host=localhost:9464", http.StatusOK},
		// A web page whose name was rebound to 127.0.0.1 reads nothing.
		{"/metrics", "host=attacker.example:9464", http.StatusForbidden},
		{"/debug/pprof/heap", "host=attacker.example", http.StatusForbidden},
	} {
		if got := get(tc.path, tc.token); got != tc.want {
			t.Errorf("GET %s (token %q): %d, want %d", tc.path, tc.token, got, tc.want)
		}
	}
}

// On a unix socket too, the daemon holds at most max_connections and
// closes silent ones, and a client with the token is served past them.
func TestHeldUnixConnectionsAreBounded(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("counts descriptors in /proc/self/fd")
	}
	const (
		token = "held-unix-token-0123456789abcdef"
		maxC  = 3
		held  = 30
	)
	sock := filepath.Join(t.TempDir(), "c.sock")
	cfg := writeConfig(t, fmt.Sprintf("listen: unix://%s\nauth: {token: %s}\ndata_dir: %s\nmcpServers: {}\n"+
		"max_connections: %d\nidle_timeout: 400ms\nhandshake_timeout: 200ms\n", sock, token, t.TempDir(), maxC))
	startServe(t, cfg)
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, err := net.Dial("unix", sock)
		if err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("nothing listens on %s after 30s", sock)
		}
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond)
	base := quietFDs(t)
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for range held {
		c, err := net.Dial("unix", sock)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
	}
	most := 0
	for range 20 {
		most = max(most, openFDs(t)-base-len(conns))
		time.Sleep(25 * time.Millisecond)
	}
	t.Logf("the daemon held at most %d descriptors for %d silent connections", most, len(conns))
	if want := maxC + 1 + 1; most > want {
		t.Errorf("the daemon held %d descriptors for %d silent connections; want at most %d (max_connections %d + 1, +1)", most, len(conns), want, maxC)
	}
	c, err := client.Dial("unix://"+sock, &client.Options{Token: token})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	cctx, ccancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer ccancel()
	if _, err := c.ListServers(cctx); err != nil {
		t.Errorf("ListServers with the token, past %d held connections: %v", held, err)
	}
	for i, c := range conns {
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		if _, err := io.Copy(io.Discard, c); err != nil && !isReset(err) {
			t.Fatalf("silent connection %d: %v, want EOF: the daemon kept it open", i, err)
		}
	}
}

// A reload that changes a connection bound names it as needing a restart:
// the listeners are built once.
func TestReloadNamesConnectionKeys(t *testing.T) {
	cur := config.Default()
	next := config.Default()
	next.Conns.IdleTimeout = 5 * time.Second
	if got := restartOnly(cur, next); len(got) != 1 || !strings.Contains(got[0], "idle_timeout") {
		t.Errorf("restartOnly = %q, want the connection keys named", got)
	}
}

// A go-sdk MCP session over the bounded HTTP server outlives both
// timeouts: a tool call that answers after five handshake timeouts, and a
// notification on the standalone SSE stream (GET) well after the idle
// timeout, both arrive.
func TestMCPStreamsOutliveTheTimeouts(t *testing.T) {
	const d = 200 * time.Millisecond
	srv := mcpsdk.NewServer(&mcpsdk.Implementation{Name: "s", Version: "v"}, nil)
	mcpsdk.AddTool(srv, &mcpsdk.Tool{Name: "slow"}, func(ctx context.Context, _ *mcpsdk.CallToolRequest, _ struct{}) (*mcpsdk.CallToolResult, any, error) {
		select {
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		case <-time.After(5 * d):
		}
		return &mcpsdk.CallToolResult{Content: []mcpsdk.Content{&mcpsdk.TextContent{Text: "done"}}}, nil, nil
	})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := newHTTPServer(mcpsdk.NewStreamableHTTPHandler(func(*http.Request) *mcpsdk.Server { return srv }, nil),
		config.Conns{IdleTimeout: 2 * d, HandshakeTimeout: d}, discardLogger())
	go hs.Serve(l)
	defer hs.Close()

	changed := make(chan struct{}, 1)
	c := mcpsdk.NewClient(&mcpsdk.Implementation{Name: "c", Version: "v"}, &mcpsdk.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcpsdk.ToolListChangedRequest) {
			select {
			case changed <- struct{}{}:
			default:
			}
		}})
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	cs, err := c.Connect(ctx, &mcpsdk.StreamableClientTransport{Endpoint: "http://" + l.Addr().String(), MaxRetries: -1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.CallTool(ctx, &mcpsdk.CallToolParams{Name: "slow"})
	if err != nil || res.IsError || len(res.Content) != 1 {
		t.Fatalf("a tool answering after %v: %+v, %v", 5*d, res, err)
	}
	time.Sleep(3 * d) // the standalone stream is older than both timeouts
	mcpsdk.AddTool(srv, &mcpsdk.Tool{Name: "late"}, func(context.Context, *mcpsdk.CallToolRequest, struct{}) (*mcpsdk.CallToolResult, any, error) {
		return &mcpsdk.CallToolResult{}, nil, nil
	})
	select {
	case <-changed:
	case <-time.After(5 * time.Second):
		t.Fatal("tools/list_changed did not arrive on the standalone SSE stream: the stream was cut")
	}
}

// At the cap, connections that have sent nothing make room for a new
// one at once, long before handshake_timeout; connections that have sent
// something are not closed for it, and a new client waits behind them.
func TestSilentConnectionsMakeRoom(t *testing.T) {
	const (
		token = "silent-room-token-0123456789abc"
		maxC  = 4
	)
	addr := serveCapped(t, token, maxC)
	dialN := func(n int, say string) []net.Conn {
		t.Helper()
		var cs []net.Conn
		for range n {
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { c.Close() })
			if say != "" {
				io.WriteString(c, say)
			}
			cs = append(cs, c)
		}
		return cs
	}
	listServers := func(wait time.Duration) error {
		t.Helper()
		return listServersAt(t, addr, token, wait)
	}

	dialN(40, "")
	start := time.Now()
	if err := listServers(5 * time.Second); err != nil {
		t.Fatalf("behind 40 silent connections (max_connections %d, handshake_timeout 10s): %v after %v", maxC, err, time.Since(start))
	}
	t.Logf("served behind 40 silent connections in %v", time.Since(start))

	// Connections that began their preface and have no call in flight
	// fill the cap: the one idle longest is closed to make room once it
	// has been idle for idleGrace.
	time.Sleep(200 * time.Millisecond) // the silent ones are gone
	idle := dialN(maxC, "PRI * HTTP/2.0\r\n")
	time.Sleep(100 * time.Millisecond)
	start = time.Now()
	if err := listServers(5 * time.Second); err != nil {
		t.Fatalf("behind %d connections with no call in flight: %v after %v", maxC, err, time.Since(start))
	}
	t.Logf("served behind %d idle connections in %v", maxC, time.Since(start))
	for _, c := range idle {
		c.Close()
	}

	// Connections whose only call is still sending its request (which
	// anyone can open for nothing) have no call in flight either.
	time.Sleep(200 * time.Millisecond)
	for i := range maxC {
		c, err := h2flood.Dial(addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		c.Partial(contextdv1.ContextService_ListServers_FullMethodName, [][2]string{{"authorization", "Bearer " + token}}, 100)
		if c.Closed() {
			t.Fatalf("connection %d with a partial request closed at once", i)
		}
	}
	time.Sleep(100 * time.Millisecond)
	start = time.Now()
	if err := listServers(5 * time.Second); err != nil {
		t.Fatalf("behind %d connections whose calls never sent their request: %v after %v", maxC, err, time.Since(start))
	}

	// Connections with a call in flight (a health Watch) fill the cap;
	// none is closed to make room.
	time.Sleep(200 * time.Millisecond)
	var watches []healthpb.Health_WatchClient
	for i := range maxC {
		gc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { gc.Close() })
		w, err := healthpb.NewHealthClient(gc).Watch(metadata.AppendToOutgoingContext(t.Context(), "authorization", "Bearer "+token), &healthpb.HealthCheckRequest{})
		if err == nil {
			_, err = w.Recv()
		}
		if err != nil {
			t.Fatalf("Watch %d: %v", i, err)
		}
		watches = append(watches, w)
	}
	time.Sleep(2 * idleGrace)
	if err := listServers(2 * time.Second); err == nil {
		t.Errorf("served while %d connections with a call in flight held every slot: one of them was closed", maxC)
	}
	for i, w := range watches {
		got := make(chan error, 1)
		go func() { _, err := w.Recv(); got <- err }()
		select {
		case err := <-got:
			t.Errorf("Watch %d ended while the listener was full: %v", i, err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// pprof's symbol lookup buffers a line of answer per address its body
// names, about ten times the body: a body on the metrics listener is cut
// at maxMetricsBody, so a caller with the token (anyone, without one)
// cannot make it buffer gigabytes.
func TestPprofSymbolBodiesAreBounded(t *testing.T) {
	const token = "pprof-token-0123456789abcdef"
	ts := httptest.NewServer(guardMetrics(service.NewToken(token), metrics.New().Handler(true)))
	defer ts.Close()
	pc := reflect.ValueOf(TestPprofSymbolBodiesAreBounded).Pointer()
	body := strings.Repeat(fmt.Sprintf("%#x+", pc), (8<<20)/len(fmt.Sprintf("%#x+", pc)))
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, ts.URL+"/debug/pprof/symbol", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	n, _ := io.Copy(io.Discard, resp.Body)
	if n < 64<<10 {
		t.Fatalf("the symbol lookup answered %d bytes: it no longer resolves the addresses the test sends", n)
	}
	if n > 16<<20 {
		t.Errorf("8 MiB of addresses made a %d MiB answer, want at most 16 MiB (the body cut at %d KiB)", n>>20, maxMetricsBody>>10)
	}
}

// On an HTTP listener at its cap, a connection whose request is in flight
// (an SSE stream, a long answer) is not closed to make room; one between
// requests is, once idle for idleGrace.
func TestBusyHTTPConnectionsAreNotClosedToMakeRoom(t *testing.T) {
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	lis := limitConns(raw, 2, 50*time.Millisecond, "test", slog.New(slog.DiscardHandler))
	release := make(chan struct{})
	srv := newHTTPServer(trustConn(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/hold" {
			w.WriteHeader(http.StatusOK)
			w.(http.Flusher).Flush()
			<-release
		}
		io.WriteString(w, "ok")
	})), config.Conns{HandshakeTimeout: 10 * time.Second, IdleTimeout: time.Minute}, slog.New(slog.DiscardHandler))
	go srv.Serve(lis)
	t.Cleanup(func() { srv.Close() })
	url := "http://" + raw.Addr().String()
	client := func() *http.Client {
		return &http.Client{Transport: &http.Transport{MaxConnsPerHost: 1}, Timeout: 10 * time.Second}
	}
	var held []*http.Response
	for i := range 2 {
		resp, err := client().Get(url + "/hold")
		if err != nil {
			t.Fatalf("hold %d: %v", i, err)
		}
		held = append(held, resp)
	}
	short := &http.Client{Transport: &http.Transport{}, Timeout: 3 * idleGrace}
	if resp, err := short.Get(url + "/"); err == nil {
		resp.Body.Close()
		t.Fatalf("served while both connections had a request in flight: one was closed")
	}
	close(release)
	for i, resp := range held {
		if b, err := io.ReadAll(resp.Body); err != nil || string(b) != "ok" {
			t.Errorf("held request %d: %q, %v; want its whole answer", i, b, err)
		}
		resp.Body.Close()
	}
	// Both connections are now between requests: one is closed for the
	// next client.
	start := time.Now()
	resp, err := client().Get(url + "/")
	if err != nil {
		t.Fatalf("behind two idle connections: %v after %v", err, time.Since(start))
	}
	resp.Body.Close()
}

// A full listener closes a connection idle long enough at once rather than
// wait for a silent one to age: waiting made room for about a hundred
// connections a second, and a client behind thousands reconnecting waited
// many seconds.
func TestAReadyIdleConnectionMakesRoomAtOnce(t *testing.T) {
	l := limitConns(nil, 2, 5*time.Second, "listen", slog.New(slog.DiscardHandler)).(*limitListener)
	idle := &limitConn{Conn: &closeConn{}, l: l, accepted: time.Now().Add(-time.Minute)}
	idle.heard.Store(true)
	idle.idleSince.Store(time.Now().Add(-2 * idleGrace).UnixNano())
	silent := &limitConn{Conn: &closeConn{}, l: l, accepted: time.Now()}
	for _, c := range []*limitConn{idle, silent} {
		l.slots <- struct{}{}
		l.conns[c] = struct{}{}
	}
	done := make(chan bool, 1)
	go func() { done <- l.makeRoom() }()
	select {
	case ok := <-done:
		if !ok {
			t.Fatal("no room made")
		}
	case <-time.After(2 * time.Second):
		t.Fatal("no room made within 2s: it waits for the silent connection to age (5s)")
	}
	if !idle.Conn.(*closeConn).closed.Load() || silent.Conn.(*closeConn).closed.Load() {
		t.Errorf("closed: idle %v, silent %v; want the idle one only", idle.Conn.(*closeConn).closed.Load(), silent.Conn.(*closeConn).closed.Load())
	}
}

// closeConn records its Close.
type closeConn struct {
	net.Conn
	closed atomic.Bool
}

func (c *closeConn) Close() error { c.closed.Store(true); return nil }

// A client without the token cannot keep a full listener's connections
// from being closed for an honest caller: not by sending the first bytes
// of a call's headers and never the rest, nor by making a call a few
// times a second that is refused unauthenticated. Nor can one with the
// token hold a connection with the headers of a call it never finishes.
func TestConnectionsWithoutAnAuthenticatedCallMakeRoom(t *testing.T) {
	const (
		token = "trusted-room-token-0123456789ab"
		maxC  = 4
	)
	addr := serveCapped(t, token, maxC)
	auth := [][2]string{{"authorization", "Bearer " + token}}
	listServers := func(wait time.Duration) error {
		t.Helper()
		return listServersAt(t, addr, token, wait)
	}
	dial := func() *h2flood.Conn {
		t.Helper()
		c, err := h2flood.Dial(addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	closeAll := func(cs []*h2flood.Conn) {
		for _, c := range cs {
			c.Close()
		}
		time.Sleep(200 * time.Millisecond)
	}
	method := contextdv1.ContextService_ListServers_FullMethodName

	// The first bytes of a call's headers, never the rest.
	var cs []*h2flood.Conn
	for range maxC {
		c := dial()
		c.HeadersStub(64)
		cs = append(cs, c)
	}
	time.Sleep(100 * time.Millisecond)
	start := time.Now()
	if err := listServers(5 * time.Second); err != nil {
		t.Fatalf("behind %d connections holding half a call's headers: %v after %v", maxC, err, time.Since(start))
	}
	closeAll(cs)

	// Whole calls without the token, refused, every 200 ms.
	cs = nil
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range maxC {
		c := dial()
		cs = append(cs, c)
		wg.Go(func() {
			for {
				c.Call(method, nil, nil)
				select {
				case <-stop:
					return
				case <-time.After(200 * time.Millisecond):
				}
			}
		})
	}
	time.Sleep(300 * time.Millisecond)
	start = time.Now()
	err := listServers(5 * time.Second)
	close(stop)
	wg.Wait()
	if err != nil {
		t.Fatalf("behind %d connections making refused calls: %v after %v", maxC, err, time.Since(start))
	}
	closeAll(cs)

	// With the token: one whole call, then half a call's headers. The
	// connection has no call in flight, so it may be closed once idle.
	cs = nil
	for i := range maxC {
		c := dial()
		id := c.Call(method, auth, nil)
		if !c.Wait(5*time.Second, func() bool { _, ok := c.Status(id); return ok }) {
			t.Fatalf("connection %d: the authenticated call got no answer", i)
		}
		c.HeadersStub(64)
		cs = append(cs, c)
	}
	time.Sleep(100 * time.Millisecond)
	start = time.Now()
	if err := listServers(5 * time.Second); err != nil {
		t.Fatalf("behind %d authenticated connections holding half a call's headers: %v after %v", maxC, err, time.Since(start))
	}
	closeAll(cs)
}

// On an HTTP listener at its cap, connections whose requests never pass
// the token check (or ask for a path that does not exist) a few times a
// second, and connections whose request is still sending its body, are
// closed to make room for an honest caller.
func TestHTTPConnectionsNotInUseMakeRoom(t *testing.T) {
	const token = "http-room-token-0123456789abcdef"
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	lis := limitConns(raw, 2, 50*time.Millisecond, "test", slog.New(slog.DiscardHandler))
	mux := http.NewServeMux()
	mux.Handle("/mcp", service.RequireBearer(token, trustConn(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		io.WriteString(w, "ok")
	}))))
	srv := newHTTPServer(mux, config.Conns{HandshakeTimeout: 30 * time.Second, IdleTimeout: time.Minute}, slog.New(slog.DiscardHandler))
	go srv.Serve(lis)
	t.Cleanup(func() { srv.Close() })
	addr := raw.Addr().String()
	honest := func() error {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/mcp", strings.NewReader("{}"))
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := (&http.Client{Transport: &http.Transport{}, Timeout: 4 * time.Second}).Do(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("status %s", resp.Status)
		}
		return nil
	}
	for _, path := range []string{"/x", "/mcp"} { // 404; 401
		stop := make(chan struct{})
		var wg sync.WaitGroup
		for range 2 {
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			wg.Go(func() {
				defer c.Close()
				br := bufio.NewReader(c)
				for {
					fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: %s\r\n\r\n", path, addr)
					resp, err := http.ReadResponse(br, nil)
					if err != nil {
						return
					}
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					select {
					case <-stop:
						return
					case <-time.After(200 * time.Millisecond):
					}
				}
			})
		}
		time.Sleep(300 * time.Millisecond)
		start := time.Now()
		err := honest()
		close(stop)
		wg.Wait()
		if err != nil {
			t.Fatalf("behind 2 connections asking for %s every 200 ms: %v after %v", path, err, time.Since(start))
		}
	}

	// With the token, a request whose body arrives a byte a second.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 2 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		// One whole request first, so the connection is trusted.
		br := bufio.NewReader(c)
		fmt.Fprintf(c, "POST /mcp HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nContent-Length: 2\r\n\r\n{}", addr, token)
		if resp, err := http.ReadResponse(br, nil); err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("a whole request: %v %v", resp, err)
		}
		fmt.Fprintf(c, "POST /mcp HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nContent-Length: 1000\r\n\r\n", addr, token)
		wg.Go(func() {
			defer c.Close()
			for {
				if _, err := c.Write([]byte(" ")); err != nil {
					return
				}
				select {
				case <-stop:
					return
				case <-time.After(300 * time.Millisecond):
				}
			}
		})
	}
	time.Sleep(300 * time.Millisecond)
	start := time.Now()
	err = honest()
	close(stop)
	wg.Wait()
	if err != nil {
		t.Fatalf("behind 2 connections sending a body a byte at a time: %v after %v", err, time.Since(start))
	}
}

// Callers past the token check making a cheap call more often than once a
// second on every connection of a full listener do not keep a new client
// out: with no silent or untrusted connection to close, the one idle
// longest is closed at once, however briefly idle.
func TestBusyTrustedCallersDoNotHoldEverySlot(t *testing.T) {
	const (
		token = "busy-trusted-token-0123456789abc"
		maxC  = 4
	)
	addr := serveCapped(t, token, maxC)
	auth := [][2]string{{"authorization", "Bearer " + token}}
	method := contextdv1.ContextService_ListServers_FullMethodName
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i := range maxC {
		c, err := h2flood.Dial(addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		id := c.Call(method, auth, nil)
		if !c.Wait(5*time.Second, func() bool { _, ok := c.Status(id); return ok }) {
			t.Fatalf("connection %d: the first call got no answer", i)
		}
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				case <-time.After(300 * time.Millisecond):
				}
				c.Call(method, auth, nil)
			}
		})
	}
	time.Sleep(500 * time.Millisecond)
	start := time.Now()
	err := listServersAt(t, addr, token, 5*time.Second)
	close(stop)
	wg.Wait()
	if err != nil {
		t.Fatalf("behind %d trusted connections each calling every 300 ms: %v after %v", maxC, err, time.Since(start))
	}
}

// Nor do such callers who reconnect each connection closed and make their
// first call only 0.7 s after the daemon took it: waiting for their young
// connections to age as untrusted was in vain, and an honest caller
// behind a dozen of them waited 0.7 s for each.
func TestReconnectingTrustedCallersDoNotHoldEverySlot(t *testing.T) {
	const (
		token   = "reconnect-trusted-token-0123456789"
		maxC    = 4
		callers = maxC + 12
	)
	addr := serveCapped(t, token, maxC)
	auth := [][2]string{{"authorization", "Bearer " + token}}
	method := contextdv1.ContextService_ListServers_FullMethodName
	stop := make(chan struct{})
	stopped := func(d time.Duration) bool {
		select {
		case <-stop:
			return true
		case <-time.After(d):
			return false
		}
	}
	var wg sync.WaitGroup
	var calls atomic.Int64
	for range callers {
		wg.Go(func() {
			for {
				c, err := h2flood.Dial(addr)
				if err != nil {
					if stopped(10 * time.Millisecond) {
						return
					}
					continue
				}
				// The daemon's SETTINGS come once it has taken the
				// connection; the first call 0.7 s later.
				c.Wait(10*time.Second, func() bool { return c.Advertised() != 0 })
				if !stopped(700 * time.Millisecond) {
					for !c.Closed() {
						c.Call(method, auth, nil)
						calls.Add(1)
						if stopped(300 * time.Millisecond) {
							break
						}
					}
				}
				c.Close()
				select {
				case <-stop:
					return
				default:
				}
			}
		})
	}
	// Every slot taken, the rest waiting to be.
	time.Sleep(2 * time.Second)
	start := time.Now()
	err := listServersAt(t, addr, token, 4*time.Second)
	close(stop)
	wg.Wait()
	if calls.Load() == 0 {
		t.Fatal("the reconnecting callers made no call")
	}
	if err != nil {
		t.Fatalf("behind %d trusted callers reconnecting, first call 0.7 s after connecting, then every 300 ms: %v after %v",
			callers, err, time.Since(start))
	}
	t.Logf("in after %v", time.Since(start))
}

// listServersAt makes one ListServers call to the daemon at addr with
// token, on a connection of its own, waiting at most wait.
func listServersAt(t *testing.T, addr, token string, wait time.Duration) error {
	t.Helper()
	gc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer gc.Close()
	ctx, cancel := context.WithTimeout(metadata.AppendToOutgoingContext(t.Context(), "authorization", "Bearer "+token), wait)
	defer cancel()
	_, err = contextdv1.NewContextServiceClient(gc).ListServers(ctx, &contextdv1.ListServersRequest{})
	return err
}

// serveCapped starts a daemon with no servers, the given token and
// max_connections, and a 10 s handshake timeout; it returns its gRPC
// address.
func serveCapped(t *testing.T, token string, maxConns int) string {
	t.Helper()
	addr := freeAddr(t)
	cfg := writeConfig(t, fmt.Sprintf("listen: %s\nauth: {token: %s}\ndata_dir: %s\nmcpServers: {}\n"+
		"max_connections: %d\nhandshake_timeout: 10s\n", addr, token, t.TempDir(), maxConns))
	startServe(t, cfg, addr)
	return addr
}
