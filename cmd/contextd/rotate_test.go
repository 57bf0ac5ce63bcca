//go:build unix

package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	contextdv1 "github.com/contextd/contextd/proto/contextd/v1"
)

// A token replaced in its file and reloaded (SIGHUP) is the one every
// listener asks for from then on: the one before it, leaked perhaps, is
// refused by gRPC, the MCP endpoint and pprof. It was kept until a
// restart (auth was restart-only), so rotating a leaked token with a
// reload left it working.
func TestAReloadRotatesTheToken(t *testing.T) {
	const old, next = "rotate-old-token-0123456789abcdef", "rotate-new-token-fedcba9876543210"
	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "token")
	if err := os.WriteFile(tokenFile, []byte(old+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	addr, mcpAddr, metAddr, dataDir := freeAddr(t), freeAddr(t), freeAddr(t), t.TempDir()
	cfg := writeConfig(t, fmt.Sprintf("listen: %s\nmcp_listen: %s\nmetrics_listen: %s\nmetrics_pprof: true\nauth: {token_file: %s}\ndata_dir: %s\nmcpServers: {}\n",
		addr, mcpAddr, metAddr, tokenFile, dataDir))
	logText, gc := serveForRotation(t, cfg, addr, mcpAddr, metAddr)
	grpcCode := func(token string) codes.Code {
		ctx := metadata.AppendToOutgoingContext(t.Context(), "authorization", "Bearer "+token)
		_, err := contextdv1.NewContextServiceClient(gc).ListServers(ctx, &contextdv1.ListServersRequest{})
		return status.Code(err)
	}
	httpStatus := func(url, token string) int {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	mcpURL, pprofURL := "http://"+mcpAddr+"/mcp", "http://"+metAddr+"/debug/pprof/cmdline"
	if c := grpcCode(old); c != codes.OK {
		t.Fatalf("gRPC with the token: %v", c)
	}
	if s := httpStatus(pprofURL, old); s != http.StatusOK {
		t.Fatalf("pprof with the token: %d", s)
	}

	if err := os.WriteFile(tokenFile, []byte(next+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for grpcCode(next) != codes.OK {
		if time.Now().After(deadline) {
			t.Fatalf("the new token refused 30 s after the reload; logs:\n%s", logText())
		}
		time.Sleep(50 * time.Millisecond)
	}
	if c := grpcCode(old); c != codes.Unauthenticated {
		t.Errorf("gRPC with the token before: %v; want Unauthenticated", c)
	}
	if s := httpStatus(mcpURL, old); s != http.StatusUnauthorized {
		t.Errorf("the MCP endpoint with the token before: %d; want 401", s)
	}
	if s := httpStatus(mcpURL, next); s == http.StatusUnauthorized {
		t.Errorf("the MCP endpoint with the new token: %d", s)
	}
	if s := httpStatus(pprofURL, old); s != http.StatusUnauthorized {
		t.Errorf("pprof with the token before: %d; want 401", s)
	}
	if s := httpStatus(pprofURL, next); s != http.StatusOK {
		t.Errorf("pprof with the new token: %d; want 200", s)
	}
	l := logText()
	if !strings.Contains(l, "the auth token changed") || strings.Contains(l, "takes effect only when contextd restarts") {
		t.Errorf("the log does not say the token changed, or says it waits for a restart:\n%s", l)
	}
	if strings.Contains(l, next) || strings.Contains(l, old) {
		t.Errorf("a token reached the log:\n%s", l)
	}

	// auth taken out: that waits for a restart, and the token in force
	// stays. Put back with a third token, it is a rotation, not a
	// change waiting for a restart.
	reload := func(config string) {
		t.Helper()
		if err := os.WriteFile(cfg, []byte(config), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
			t.Fatal(err)
		}
	}
	const third = "rotate-third-token-00112233445566"
	reload(fmt.Sprintf("listen: %s\nmcp_listen: %s\nmetrics_listen: %s\nmetrics_pprof: true\ndata_dir: %s\nmcpServers: {}\n", addr, mcpAddr, metAddr, dataDir))
	for deadline := time.Now().Add(30 * time.Second); !strings.Contains(logText(), "takes effect only when contextd restarts"); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("auth taken out: no word that it waits for a restart within 30 s; logs:\n%s", logText())
		}
	}
	if c := grpcCode(next); c != codes.OK {
		t.Errorf("gRPC with the token in force after auth was taken out of the file: %v", c)
	}
	mark := len(logText())
	if err := os.WriteFile(tokenFile, []byte(third+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	reload(fmt.Sprintf("listen: %s\nmcp_listen: %s\nmetrics_listen: %s\nmetrics_pprof: true\nauth: {token_file: %s}\ndata_dir: %s\nmcpServers: {}\n", addr, mcpAddr, metAddr, tokenFile, dataDir))
	for deadline := time.Now().Add(30 * time.Second); grpcCode(third) != codes.OK; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the third token refused 30 s after the reload; logs:\n%s", logText())
		}
	}
	if l := logText()[mark:]; strings.Contains(l, "takes effect only when contextd restarts") {
		t.Errorf("auth put back with another token: the log says it waits for a restart, and it rotated:\n%s", l)
	}
}

// A token rotated while an earlier reload waits on the requests of a
// server it stops (at most a minute) is in force at once: it waited
// behind that reload, and the old token worked 27 s on.
func TestARotationDoesNotWaitBehindAReloadDrainingRequests(t *testing.T) {
	const old, next = "drain-old-token-0123456789abcdef", "drain-new-token-fedcba9876543210"
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "token")
	if err := os.WriteFile(tokenFile, []byte(old+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	addr, metAddr, dataDir := freeAddr(t), freeAddr(t), t.TempDir()
	head := fmt.Sprintf("listen: %s\nmetrics_listen: %s\nauth: {token_file: %s}\ndata_dir: %s\nembedder: glove\n", addr, metAddr, tokenFile, dataDir)
	cfg := writeConfig(t, head+fmt.Sprintf("mcpServers:\n  hung:\n    command: %q\n    env: { CONTEXTD_TEST_EXEC: hung-upstream }\n", self))
	logText, gc := serveForRotation(t, cfg, addr)
	client := contextdv1.NewContextServiceClient(gc)
	with := func(token string) context.Context {
		return metadata.AppendToOutgoingContext(t.Context(), "authorization", "Bearer "+token)
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		r, err := client.ListServers(with(old), &contextdv1.ListServersRequest{})
		if err == nil && len(r.GetServers()) == 1 && r.GetServers()[0].GetResourceCount() > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the hung server did not sync within 30 s: %v; logs:\n%s", err, logText())
		}
	}
	// A query reading the hung server: in flight for its read timeout.
	go func() {
		_, _ = client.Assemble(with(old), &contextdv1.AssembleRequest{Query: "walrus migration", TokenBudget: 200, Servers: []string{"hung"}})
	}()
	time.Sleep(time.Second)
	// The server taken out: that reload waits for the query.
	if err := os.WriteFile(cfg, []byte(head+"mcpServers: {}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond)
	if err := os.WriteFile(tokenFile, []byte(next+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	rotated := time.Now()
	code := func(token string) codes.Code {
		_, err := client.ListServers(with(token), &contextdv1.ListServersRequest{})
		return status.Code(err)
	}
	for code(old) != codes.Unauthenticated {
		if time.Since(rotated) > 10*time.Second {
			t.Fatalf("the old token still accepted 10 s after its rotation, behind a reload waiting for a query (read timeout 30 s); logs:\n%s", logText())
		}
		time.Sleep(50 * time.Millisecond)
	}
	if c := code(next); c != codes.OK {
		t.Errorf("the new token: %v", c)
	}

	// A file refused while the removal still drains stays the last word
	// once the removal applies: the gauge operators alert on says 0.
	if err := os.WriteFile(cfg, []byte(head+"mcpServers: [oops\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(60 * time.Second); !strings.Contains(logText(), "removed=[hung]"); time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the removal not applied within 60 s; logs:\n%s", logText())
		}
	}
	resp, err := http.Get("http://" + metAddr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), "contextd_config_last_reload_successful 0") {
		t.Errorf("after a refused file, then the removal read before it applied: the reload gauge is not 0:\n%s", grepLines(string(body), "contextd_config_"))
	}
	if r, err := client.ListServers(with(next), &contextdv1.ListServersRequest{}); err != nil || r.GetConfigError() == "" {
		t.Errorf("ListServers config_error = %q (%v); want the refusal", r.GetConfigError(), err)
	}
}

// grepLines returns the lines of s holding sub.
func grepLines(s, sub string) string {
	var out []string
	for l := range strings.Lines(s) {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "")
}

// serveForRotation starts serve with cfg, listening on addrs (the gRPC
// one first), and returns its log so far and a gRPC connection to it.
func serveForRotation(t *testing.T, cfg string, addrs ...string) (logText func() string, gc *grpc.ClientConn) {
	t.Helper()
	w, buf := startServe(t, cfg, addrs...)
	logText = func() string {
		w.mu.Lock()
		defer w.mu.Unlock()
		return buf.String()
	}
	gc, err := grpc.NewClient(addrs[0], grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { gc.Close() })
	return logText, gc
}
