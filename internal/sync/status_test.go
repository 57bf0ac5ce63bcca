package sync_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"strings"
	gosync "sync"
	"sync/atomic"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/contextd/contextd/internal/config"
	"github.com/contextd/contextd/internal/embed/remote"
	"github.com/contextd/contextd/internal/index"
	"github.com/contextd/contextd/internal/mcp"
	"github.com/contextd/contextd/internal/mcp/mcptest"
	"github.com/contextd/contextd/internal/redact"
	ctxsync "github.com/contextd/contextd/internal/sync"
)

// A connected server whose descriptors are being embedded says so
// ("indexing N/M"), rather than looking like one still connecting; the
// activity is gone once the sync is done.
func TestStatusSaysIndexingWhileEmbedding(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 300
		docs := map[string]string{}
		for i := range n {
			docs[fmt.Sprintf("doc://walrus/%03d", i)] = "text"
		}
		srv := mcptest.NewServer(docs, nil)
		ix, err := index.Open(t.Context(), index.Options{Embedder: &slowEmbedder{d: time.Second}})
		if err != nil {
			t.Fatal(err)
		}
		defer ix.Close()
		m := ctxsync.New(ctxsync.Options{Server: "s", Index: ix, Dial: mcptest.Dial(t, "s", srv), ContentMaxResources: noContentIndex})
		start(t, m)
		synctest.Wait()
		if st := m.Status(); st.Activity != fmt.Sprintf("indexing 0/%d", n) {
			t.Errorf("while the first descriptors are embedded: state %s, activity %q; want indexing 0/%d", st.State, st.Activity, n)
		}
		<-m.Ready()
		if st := m.Status(); st.State != ctxsync.StateReady || st.Activity != "" || st.Resources != n {
			t.Errorf("after the sync: state %s, activity %q, %d resources; want ready, no activity, %d", st.State, st.Activity, st.Resources, n)
		}
	})
}

// A server whose session was lost and that is ready again on a new session
// does not show the old session's end as its last error.
func TestReadyAfterReconnectShowsNoOldError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := mcptest.NewServer(map[string]string{"doc://a": "a"}, nil)
		var mu gosync.Mutex
		var first *mcpsdk.ServerSession
		dial := dialWith(t, srv, func(ss *mcpsdk.ServerSession) {
			mu.Lock()
			defer mu.Unlock()
			if first == nil {
				first = ss
			}
		})
		m := ctxsync.New(ctxsync.Options{Server: "s", Index: newIndex(t), Dial: dial, MinBackoff: 10 * time.Millisecond, MaxBackoff: 20 * time.Millisecond})
		start(t, m)
		<-m.Ready()
		synctest.Wait()
		mu.Lock()
		first.Close()
		mu.Unlock()
		time.Sleep(time.Second)
		synctest.Wait()
		st := m.Status()
		if st.State != ctxsync.StateReady || st.Syncs != 2 {
			t.Fatalf("after the reconnect: state %s after %d syncs, want ready after 2", st.State, st.Syncs)
		}
		if st.LastError != "" {
			t.Errorf("ready, yet last error %q", st.LastError)
		}
	})
}

// A stdio server that writes kilobytes to stderr and exits: the lost
// session's warning and last error quote only a bounded tail of it.
func TestLostSessionQuotesABoundedStderrTail(t *testing.T) {
	script := `read -r l
printf '%s\n' '{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"sh","version":"1"}}}'
read -r l
i=0
while [ $i -lt 100 ]; do echo "stderr line $i: the server is chatty on stderr" >&2; i=$((i+1)); done
sleep 0.2
exit 3
`
	var logs logBuffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	dial := func(ctx context.Context, o *mcp.Options) (*mcp.Session, error) {
		o.ProtocolVersion = "2025-11-25"
		return mcp.Connect(ctx, config.Server{Name: "sh", Transport: config.TransportStdio, Command: "sh", Args: []string{"-c", script}}, o)
	}
	m := ctxsync.New(ctxsync.Options{Server: "sh", Index: newIndex(t), Dial: dial, Logger: log, MinBackoff: time.Hour, MaxBackoff: time.Hour})
	start(t, m)
	deadline := time.Now().Add(20 * time.Second)
	// The state turns stale just before the warning is logged: wait for both.
	for m.Status().State != ctxsync.StateStale || !strings.Contains(logs.String(), "session lost") {
		if time.Now().After(deadline) {
			t.Fatalf("the session did not end: %+v", m.Status())
		}
		time.Sleep(10 * time.Millisecond)
	}
	st := m.Status()
	if !strings.Contains(st.LastError, "stderr line 99:") || strings.Contains(st.LastError, "stderr line 0:") || len(st.LastError) > 700 {
		t.Errorf("last error (%d bytes) = %q; want the end of stderr, at most about 512 bytes of it", len(st.LastError), st.LastError)
	}
	var warn string
	for _, l := range strings.Split(logs.String(), "\n") {
		if strings.Contains(l, "session lost") {
			warn = l
		}
	}
	if warn == "" || len(warn) > 1000 || !strings.Contains(warn, "stderr line 99:") {
		t.Errorf("session lost warning (%d bytes): %q; want one with a bounded stderr tail", len(warn), warn)
	}
}

// logBuffer collects log output written from several goroutines.
type logBuffer struct {
	mu  gosync.Mutex
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

// echoServer is a stdio MCP server (sh) listing doc://a that, asked to read
// any URI, prints "cannot read URI" to stderr and exits.
const echoServer = `while read -r l; do
id=$(printf '%s' "$l" | sed -n 's/.*"id":\([0-9]*\).*/\1/p')
case "$l" in
*'"initialize"'*) printf '{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2025-11-25","capabilities":{"resources":{}},"serverInfo":{"name":"sh","version":"1"}}}\n' "$id";;
*'"resources/list"'*) printf '{"jsonrpc":"2.0","id":%s,"result":{"resources":[{"uri":"doc://a","name":"a"}]}}\n' "$id";;
*'"resources/templates/list"'*) printf '{"jsonrpc":"2.0","id":%s,"result":{"resourceTemplates":[]}}\n' "$id";;
*'"resources/read"'*) printf 'cannot read %s\n' "$(printf '%s' "$l" | sed -n 's/.*"uri":"\([^"]*\)".*/\1/p')" >&2; sleep 0.1; exit 3;;
esac
done
`

// readEcho reads uri from a fresh echoServer whose credential is secret,
// and returns the read's error and the server's last error once the
// session ended.
func readEcho(t *testing.T, secret, uri string) (readErr, lastErr string) {
	t.Helper()
	dial := func(ctx context.Context, o *mcp.Options) (*mcp.Session, error) {
		o.ProtocolVersion = "2025-11-25"
		return mcp.Connect(ctx, config.Server{Name: "sh", Transport: config.TransportStdio, Command: "sh", Args: []string{"-c", echoServer}}, o)
	}
	m := ctxsync.New(ctxsync.Options{Server: "sh", Index: newIndex(t), Dial: dial, Redact: redact.New(secret), MinBackoff: time.Hour, MaxBackoff: time.Hour, ContentMaxResources: noContentIndex})
	start(t, m)
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	select {
	case <-m.Ready():
	case <-ctx.Done():
		t.Fatalf("not ready: %+v", m.Status())
	}
	_, _, err := m.ReadFetch(ctx, uri)
	if err == nil {
		t.Fatalf("read of %s from a server that exits succeeded", uri)
	}
	for m.Status().State != ctxsync.StateStale {
		if ctx.Err() != nil {
			t.Fatalf("the session did not end: %+v", m.Status())
		}
		time.Sleep(10 * time.Millisecond)
	}
	return err.Error(), m.Status().LastError
}

// A stdio server may print a URI a caller chose (a pin) to stderr before it
// exits. Masked for pieces of secrets, its last line would tell the caller
// which guess begins the server's credential; once a caller's URI was
// sent, the line is withheld from the read's error, and the last error
// says only that the session was lost. Lines after reads of listed URIs are still shown.
func TestStderrIsNoOracleForSecrets(t *testing.T) {
	const secret = "ghp_T9kLmN2pQ7rS4vW8xY1zA3bC5dE6fG0h"
	right, wrong := secret[:12], "zq3xv8wk1jy5"
	rErr, rLast := readEcho(t, secret, "doc://x/"+right)
	wErr, wLast := readEcho(t, secret, "doc://x/"+wrong)
	same := func(s, guess string) string { return strings.ReplaceAll(s, guess, "GUESS") }
	if same(rErr, right) != same(wErr, wrong) || same(rLast, right) != same(wLast, wrong) {
		t.Errorf("a right guess reads unlike a wrong one:\nread error %q\n        vs %q\nlast error %q\n        vs %q", rErr, wErr, rLast, wLast)
	}
	if strings.Contains(rErr, "cannot read") || !strings.Contains(rLast, "session lost") || strings.Contains(rLast, "cannot read") {
		t.Errorf("read error %q, last error %q; want the stderr line withheld", rErr, rLast)
	}
	lErr, lLast := readEcho(t, secret, "doc://a")
	if !strings.Contains(lErr, "stderr: cannot read doc://a") || !strings.Contains(lLast, "stderr: cannot read doc://a") {
		t.Errorf("read of a listed URI: error %q, last error %q; want its stderr line", lErr, lLast)
	}
}

// A server may remember a caller's words across sessions (one over HTTP
// keeps its state when contextd reconnects): once any session carried
// them, a listed read's error on a later session says what failed, not
// what the server said.
func TestErrorsAfterCallerTextStayClassifiedAcrossSessions(t *testing.T) {
	var mu gosync.Mutex
	last := "nothing"
	srv := mcptest.NewServer(nil, nil)
	srv.AddResource(&mcpsdk.Resource{URI: "doc://e", Name: "e"}, func(context.Context, *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
		mu.Lock()
		defer mu.Unlock()
		return nil, &jsonrpc.Error{Code: -32603, Message: "busy; last asked " + last}
	})
	srv.AddReceivingMiddleware(func(next mcpsdk.MethodHandler) mcpsdk.MethodHandler {
		return func(ctx context.Context, method string, req mcpsdk.Request) (mcpsdk.Result, error) {
			if r, ok := req.(*mcpsdk.ReadResourceRequest); ok && r.Params.URI != "doc://e" {
				mu.Lock()
				last = r.Params.URI
				mu.Unlock()
			}
			return next(ctx, method, req)
		}
	})
	var sessions []*mcpsdk.ServerSession
	dial := dialWith(t, srv, func(ss *mcpsdk.ServerSession) {
		mu.Lock()
		sessions = append(sessions, ss)
		mu.Unlock()
	})
	m := ctxsync.New(ctxsync.Options{Server: "s", Index: newIndex(t), Dial: dial, MinBackoff: 10 * time.Millisecond, MaxBackoff: 20 * time.Millisecond, ContentMaxResources: noContentIndex})
	start(t, m)
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	<-m.Ready()
	if _, _, err := m.ReadFetch(ctx, "doc://e"); err == nil || !strings.Contains(err.Error(), "busy; last asked nothing") {
		t.Fatalf("before any caller's words: %v; want the server's message", err)
	}
	_, _, _ = m.ReadFetch(ctx, "doc://x/planted-word")
	mu.Lock()
	sessions[0].Close()
	mu.Unlock()
	for m.Status().Syncs < 2 {
		if ctx.Err() != nil {
			t.Fatalf("no new session: %+v", m.Status())
		}
		time.Sleep(10 * time.Millisecond)
	}
	_, _, err := m.ReadFetch(ctx, "doc://e")
	if err == nil || strings.Contains(err.Error(), "planted") || !strings.Contains(err.Error(), "the server answered error -32603") {
		t.Errorf("on a new session after a caller's words: %v; want what failed only", err)
	}
	// The new session's server info is the server's text too.
	if st := m.Status(); st.ServerName != "(withheld)" || st.ServerVersion != "" {
		t.Errorf("server info on a new session after a caller's words: %q %q; want it withheld", st.ServerName, st.ServerVersion)
	}
}

// brokenConn is a client connection whose Read fails with a message of the
// server's choosing once told to (as the go-sdk's does on a message it
// cannot decode, quoting the message's bytes), ending the session.
type brokenConn struct {
	mcpsdk.Connection
	fail chan string
}

func (c *brokenConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	type read struct {
		msg jsonrpc.Message
		err error
	}
	got := make(chan read, 1)
	go func() {
		msg, err := c.Connection.Read(ctx)
		got <- read{msg, err}
	}()
	select {
	case r := <-got:
		return r.msg, r.err
	case s := <-c.fail:
		return nil, fmt.Errorf("invalid message version tag %q", s)
	}
}

type brokenTransport struct {
	mcpsdk.Transport
	fail chan string
}

func (t *brokenTransport) Connect(ctx context.Context) (mcpsdk.Connection, error) {
	c, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &brokenConn{Connection: c, fail: t.fail}, nil
}

// Once a server was sent a caller's words, the error its session ended
// with (which may quote bytes it sent) is withheld from the status too.
func TestSessionLostAfterCallerTextIsWithheld(t *testing.T) {
	fail := make(chan string, 1)
	srv := mcptest.NewServer(map[string]string{"doc://a": "a"}, nil)
	dial := func(ctx context.Context, opts *mcp.Options) (*mcp.Session, error) {
		ct, st := mcpsdk.NewInMemoryTransports()
		ss, err := srv.Connect(ctx, st, nil)
		if err != nil {
			return nil, err
		}
		t.Cleanup(func() { _ = ss.Close() })
		sess, err := mcp.ConnectTransport(ctx, "s", &brokenTransport{Transport: ct, fail: fail}, opts)
		if err == nil {
			t.Cleanup(func() { _ = sess.Close() })
		}
		return sess, err
	}
	m := ctxsync.New(ctxsync.Options{Server: "s", Index: newIndex(t), Dial: dial, MinBackoff: time.Hour, MaxBackoff: time.Hour, ContentMaxResources: noContentIndex,
		Redact: redact.New("correcthorse")})
	start(t, m)
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	<-m.Ready()
	_, _, _ = m.ReadFetch(ctx, "doc://x/planted")
	fail <- "zebra correcthorse planted"
	for m.Status().State != ctxsync.StateStale {
		if ctx.Err() != nil {
			t.Fatalf("the session did not end: %+v", m.Status())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if st := m.Status(); strings.Contains(st.LastError, "zebra") || strings.Contains(st.LastError, "REDACTED") || !strings.Contains(st.LastError, "session lost") {
		t.Errorf("last error %q; want that the session was lost, with what the server sent withheld", st.LastError)
	}
}

// With what servers say withheld, a failure contextd met itself is still
// named, in words no server chose: a command that would not start (its
// name is the configuration's), a refused connection; a DNS failure
// without the name, which a redirect may have chosen.
func TestWithheldStatusNamesLocalFailures(t *testing.T) {
	for _, tc := range []struct {
		err       error
		want, not string
	}{
		{&exec.Error{Name: "no-such-server", Err: exec.ErrNotFound}, `cannot start "no-such-server"`, ""},
		// A command line written whole, a key in it: not quoted.
		{&exec.Error{Name: "GITHUB_TOKEN=ghp_Zq8mT3kLw9PxR2vN7bYc0123 npx -y server", Err: exec.ErrNotFound}, "cannot start the server's command", "Zq8m"},
		{&exec.Error{Name: "uvx mcp-server --api-key Zq7v/Hq4vL8nR2tY6w", Err: exec.ErrNotFound}, "cannot start the server's command", "Hq4v"},
		{fmt.Errorf("embedding: %w: POST https://e.example/v1: HTTP 401", remote.ErrUnauthorized), "check embedder.api_key", "e.example"},
		{&jsonrpc.Error{Code: -32005, Message: "rejected by transport: Post https://alpha-correcthorse.example: dial tcp"}, "the HTTP request failed", "alpha"},
		{&net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}, "connection refused", ""},
		{&net.DNSError{Name: "alpha-correcthorse.invalid", Err: "no such host", IsNotFound: true}, "did not resolve", "alpha"},
		// An HTTP error status: its code, never the server's words.
		{fmt.Errorf("mcp: server %q: initialize: %w", "s", &mcp.HTTPStatusError{Code: 401, Err: errors.New("calling initialize: Unauthorized: tok-planted-9931")}), "the server answered HTTP 401 Unauthorized (check the credentials", "planted"},
		{&mcp.HTTPStatusError{Code: 404, Err: errors.New("Not Found: /mcp-planted")}, "HTTP 404 Not Found (check its url", "planted"},
		{fmt.Errorf("initialize: %w: stat /srv/planted: no such file or directory", mcp.ErrWorkingDir), "cannot start the server: its working directory (cwd) is missing", "planted"},
	} {
		flag := new(atomic.Bool)
		flag.Store(true)
		m := ctxsync.New(ctxsync.Options{Server: "s", Index: newIndex(t), CallerText: flag, MinBackoff: time.Hour, MaxBackoff: time.Hour, ContentMaxResources: noContentIndex,
			Dial: func(context.Context, *mcp.Options) (*mcp.Session, error) { return nil, tc.err }})
		start(t, m)
		<-m.Ready()
		st := m.Status()
		if !strings.Contains(st.LastError, tc.want) || tc.not != "" && strings.Contains(st.LastError, tc.not) {
			t.Errorf("%v: last error %q; want %q named, no %q", tc.err, st.LastError, tc.want, tc.not)
		}
	}
}

// A withheld status holds numbers a server chose (an error code): masking
// it anew when a reload adds secrets would tell which number is one.
func TestSetRedactLeavesAWithheldStatus(t *testing.T) {
	flag := new(atomic.Bool)
	flag.Store(true)
	m := ctxsync.New(ctxsync.Options{Server: "s", Index: newIndex(t), CallerText: flag, MinBackoff: time.Hour, MaxBackoff: time.Hour, ContentMaxResources: noContentIndex,
		Dial: func(context.Context, *mcp.Options) (*mcp.Session, error) {
			return nil, &jsonrpc.Error{Code: 20242024, Message: "planted"}
		}})
	start(t, m)
	<-m.Ready()
	before := m.Status().LastError
	if !strings.Contains(before, "20242024") {
		t.Fatalf("last error %q; want the code the server answered", before)
	}
	m.SetRedact(redact.New("20242024"))
	if after := m.Status().LastError; after != before {
		t.Errorf("after SetRedact: %q; want it as it was, %q", after, before)
	}
}
