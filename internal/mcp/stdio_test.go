package mcp_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/contextd/contextd/internal/config"
	"github.com/contextd/contextd/internal/mcp"
	"github.com/contextd/contextd/internal/mcp/mcptest"
	"github.com/contextd/contextd/internal/redact"
)

// The test binary doubles as a stdio MCP server when CONTEXTD_FAKE_STDIO is
// set, so stdio tests run a real subprocess without anything to install.
func TestMain(m *testing.M) {
	if mode := os.Getenv("CONTEXTD_FAKE_STDIO"); mode != "" {
		fakeStdioServer(mode)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// noisyWriter prints a log line before every message it forwards.
type noisyWriter struct{ n int }

func (w *noisyWriter) Write(p []byte) (int, error) {
	w.n++
	fmt.Fprintf(os.Stdout, "[INFO] sending message %d\n   \n{not json either}\n", w.n)
	return os.Stdout.Write(p)
}
func (w *noisyWriter) Close() error { return nil }

// exitAfterLastWords exits the process as soon as the answer holding "last
// words" is written to stdout, before the client can have read it.
type exitAfterLastWords struct{}

func (exitAfterLastWords) Write(p []byte) (int, error) {
	n, err := os.Stdout.Write(p)
	if strings.Contains(string(p), "last words") {
		os.Exit(0)
	}
	return n, err
}
func (exitAfterLastWords) Close() error { return nil }

// deafAfter reads r until it has passed word, then blocks for good.
type deafAfter struct {
	r    io.Reader
	word []byte
	deaf bool
}

func (d *deafAfter) Read(p []byte) (int, error) {
	if d.deaf {
		select {}
	}
	n, err := d.r.Read(p)
	d.deaf = bytes.Contains(p[:n], d.word)
	return n, err
}
func (d *deafAfter) Close() error { return nil }

func fakeStdioServer(mode string) {
	srv := mcptest.NewServer(map[string]string{"doc://a": "alpha"}, nil)
	switch mode {
	case "banner":
		fmt.Println("Secure MCP Filesystem Server running on stdio")
		fmt.Println("Allowed directories: [ '/tmp' ]")
		_ = srv.Run(context.Background(), &mcpsdk.IOTransport{Reader: os.Stdin, Writer: &noisyWriter{}})
	case "big":
		mcptest.AddText(srv, "doc://200k", "200k", strings.Repeat("word ", 40_000))
		mcptest.AddText(srv, "doc://2m", "2m", strings.Repeat("word ", 400_000))
		_ = srv.Run(context.Background(), &mcpsdk.StdioTransport{})
	case "answer-and-exit":
		mcptest.AddText(srv, "doc://last", "last", strings.Repeat("last words ", 30_000))
		_ = srv.Run(context.Background(), &mcpsdk.IOTransport{Reader: os.Stdin, Writer: exitAfterLastWords{}})
	case "crash":
		srv.AddResource(&mcpsdk.Resource{URI: "doc://boom", Name: "boom"},
			func(context.Context, *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
				fmt.Fprintln(os.Stderr, "fatal error: out of memory reading doc://boom")
				os.Exit(3)
				return nil, nil
			})
		_ = srv.Run(context.Background(), &mcpsdk.StdioTransport{})
	case "complete-echo":
		// Prints the value it was asked to complete, and exits.
		csrv := mcptest.NewServer(nil, &mcpsdk.ServerOptions{CompletionHandler: func(_ context.Context, req *mcpsdk.CompleteRequest) (*mcpsdk.CompleteResult, error) {
			fmt.Fprintf(os.Stderr, "cannot complete %s\n", req.Params.Argument.Value)
			os.Exit(3)
			return nil, nil
		}})
		_ = csrv.Run(context.Background(), &mcpsdk.StdioTransport{})
	case "env":
		mcptest.AddText(srv, "doc://env", "env", strings.Join(os.Environ(), "\n"))
		_ = srv.Run(context.Background(), &mcpsdk.StdioTransport{})
	case "leaky":
		// A crashing server that prints its credentials on the way out.
		srv.AddResource(&mcpsdk.Resource{URI: "doc://leak", Name: "leak"},
			func(context.Context, *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
				tok := os.Getenv("LEAK_TOKEN")
				fmt.Fprintf(os.Stderr, "debug: config {\"apiKey\": %q}\n%s\n", tok, strings.Repeat("trace line\n", 200))
				fmt.Fprintf(os.Stderr, "fatal: upstream rejected token %s at https://api.example/v1?key=%s\x1b]0;owned\x07\n", tok, tok)
				os.Exit(3)
				return nil, nil
			})
		_ = srv.Run(context.Background(), &mcpsdk.StdioTransport{})
	case "leaky-long":
		// Prints its credential in a line longer than the stderr tail
		// kept, so that the tail begins inside the credential.
		srv.AddResource(&mcpsdk.Resource{URI: "doc://leak", Name: "leak"},
			func(context.Context, *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
				tok := os.Getenv("LEAK_TOKEN")
				fmt.Fprintf(os.Stderr, "fatal: token %s %s\n", tok, strings.Repeat("B", 4096-len(tok)+10-2))
				os.Exit(3)
				return nil, nil
			})
		_ = srv.Run(context.Background(), &mcpsdk.StdioTransport{})
	case "deaf":
		// Answers until the first read, then never reads stdin again (a
		// server wedged in its own work): the pipe fills.
		_ = srv.Run(context.Background(), &mcpsdk.IOTransport{Reader: &deafAfter{r: os.Stdin, word: []byte(`"resources/read"`)}, Writer: os.Stdout})
	case "spawner":
		// Starts a helper that would run for an hour, and does not stop it.
		helper := exec.Command(os.Args[0])
		helper.Env = append(os.Environ(), "CONTEXTD_FAKE_STDIO=helper")
		if err := helper.Start(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		_ = os.WriteFile(os.Getenv("HELPER_PID_FILE"), []byte(strconv.Itoa(helper.Process.Pid)), 0o600)
		_ = srv.Run(context.Background(), &mcpsdk.StdioTransport{})
	case "helper":
		time.Sleep(time.Hour)
	case "stubborn":
		signal.Ignore(syscall.SIGTERM)
		_ = srv.Run(context.Background(), &mcpsdk.StdioTransport{})
		time.Sleep(time.Hour) // stdin closed: keep running anyway
	}
}

func fakeServer(mode string) config.Server {
	return config.Server{Name: mode, Transport: config.TransportStdio, Command: os.Args[0],
		Env: map[string]string{"CONTEXTD_FAKE_STDIO": mode}}
}

func TestStdioSkipsBannerAndLogLinesOnStdout(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	sess, err := mcp.Connect(ctx, fakeServer("banner"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	l, err := sess.ListResources(ctx)
	if err != nil || len(l.Items) != 1 {
		t.Fatalf("ListResources = %+v, %v; want doc://a", l, err)
	}
	c, err := sess.Read(ctx, "doc://a")
	if err != nil || len(c) != 1 || c[0].Text != "alpha" {
		t.Fatalf("Read = %+v, %v", c, err)
	}
}

func TestStdioCloseStopsAServerThatIgnoresStdinAndSIGTERM(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	var logs logBuffer
	sess, err := mcp.Connect(ctx, fakeServer("stubborn"), &mcp.Options{TerminateDuration: 50 * time.Millisecond, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sess.ListResources(ctx); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- sess.Close() }()
	select {
	case <-done:
	case <-ctx.Done():
		t.Fatal("Close did not return: the server was not killed")
	}
	// Each stage that waits says so: a shutdown is not silent for seconds.
	for _, want := range []string{"of its stdin closing: sending SIGTERM", "of SIGTERM: killing it"} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("log does not say %q:\n%s", want, logs.String())
		}
	}
}

func TestStdioServerExitingMidReadFailsThatReadWithItsStderr(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	sess, err := mcp.Connect(ctx, fakeServer("crash"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	_, err = sess.Read(ctx, "doc://boom")
	if err == nil || !strings.Contains(err.Error(), "server exited (exit status 3)") || !strings.Contains(err.Error(), "out of memory") {
		t.Fatalf("Read = %v; want the exit status and the stderr tail", err)
	}
	if ctx.Err() != nil {
		t.Fatal("the read waited for the test deadline instead of failing when the server exited")
	}
}

func TestStdioOversizedResponseFailsOnlyItsRead(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	sess, err := mcp.Connect(ctx, fakeServer("big"), &mcp.Options{MaxMessageBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	if c, err := sess.Read(ctx, "doc://200k"); err != nil || len(c[0].Text) != 200_000 {
		t.Fatalf("a 200 KB message (one JSON line over 64 KiB): %v", err)
	}
	_, err = sess.Read(ctx, "doc://2m")
	if err == nil || !strings.Contains(err.Error(), "exceeds max_message_bytes (1048576)") {
		t.Fatalf("Read of a 2 MB resource with a 1 MiB cap = %v, want a size error", err)
	}
	if c, err := sess.Read(ctx, "doc://a"); err != nil || c[0].Text != "alpha" {
		t.Fatalf("the session did not survive the oversized response: %v", err)
	}
}

func TestStdioAnswerBeforeExitIsNotLost(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	for range 5 {
		sess, err := mcp.Connect(ctx, fakeServer("answer-and-exit"), nil)
		if err != nil {
			t.Fatal(err)
		}
		c, err := sess.Read(ctx, "doc://last")
		if err != nil || len(c) != 1 || len(c[0].Text) != 330_000 {
			t.Fatalf("the answer written just before exiting was lost: %v", err)
		}
		sess.Close()
	}
}

func TestStdioServerExitingDuringInitializeSaysHow(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	srv := config.Server{Name: "dying", Transport: config.TransportStdio, Command: "sh",
		Args: []string{"-c", "read line; echo 'dying now' >&2; exit 4"}}
	_, err := mcp.Connect(ctx, srv, nil)
	if err == nil || !strings.Contains(err.Error(), "server exited (exit status 4); stderr: dying now") || !strings.Contains(err.Error(), `server "dying": initialize`) {
		t.Fatalf("Connect = %v; want the exit status, the stderr tail and the server's name", err)
	}
}

// A missing working directory is named as such: the child's chdir fails
// as a missing program does, and would name the program.
func TestStdioMissingWorkingDirectoryIsNamed(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{filepath.Join(t.TempDir(), "missing"), file} {
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		_, err := mcp.Connect(ctx, config.Server{Name: "s", Transport: config.TransportStdio, Command: "sh", Args: []string{"-c", "exit 0"}, Cwd: dir}, nil)
		cancel()
		if !errors.Is(err, mcp.ErrWorkingDir) {
			t.Errorf("cwd %s: Connect = %v; want ErrWorkingDir", dir, err)
		}
	}
}

// A server that never answers initialize is stopped at the deadline; the
// error says it did not answer, not that it exited (contextd stopped it).
func TestStdioServerSilentAtInitializeSaysItDidNotAnswer(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	srv := config.Server{Name: "mute", Transport: config.TransportStdio, Command: "sh", Args: []string{"-c", "exec sleep 100"}}
	_, err := mcp.Connect(ctx, srv, &mcp.Options{TerminateDuration: 50 * time.Millisecond})
	if err == nil || !strings.Contains(err.Error(), `server "mute": initialize: no answer before the connect deadline`) || strings.Contains(err.Error(), "server exited") {
		t.Fatalf("Connect = %v; want no answer, not an exit", err)
	}
}

// readLeaky reads doc://leak from the fake server of mode, which prints
// secret (its LEAK_TOKEN) to stderr and exits, and returns the read's
// error message and the debug log, both masked as the daemon masks them.
func readLeaky(t *testing.T, mode, secret string) (msg string, logs *bytes.Buffer) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	srv := fakeServer(mode)
	srv.Env["LEAK_TOKEN"] = secret
	logs = &bytes.Buffer{}
	log := slog.New(redact.Handler(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}), redact.New(srv.Secrets()...)))
	sess, err := mcp.Connect(ctx, srv, &mcp.Options{Redact: redact.New(srv.Secrets()...), Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	_, err = sess.Read(ctx, "doc://leak")
	if err == nil {
		t.Fatal("Read of a crashing server succeeded")
	}
	return err.Error(), logs
}

func TestStdioStderrReachesCallersAsOneMaskedLine(t *testing.T) {
	const secret = "ghp_leak0123456789abcdef"
	msg, logs := readLeaky(t, "leaky", secret)
	if strings.Contains(msg, "leak0123") || strings.Contains(msg, "trace line") || strings.Contains(msg, "apiKey") || strings.ContainsRune(msg, 0x1b) {
		t.Fatalf("Read error carries more than one masked stderr line: %q", msg)
	}
	if !strings.Contains(msg, "stderr: fatal: upstream rejected token REDACTED at https://api.example/v1?key=REDACTED") {
		t.Fatalf("Read error = %q; want the last stderr line, masked", msg)
	}
	if !strings.Contains(logs.String(), "trace line") || strings.Contains(logs.String(), "leak0123") {
		t.Fatalf("debug log does not hold the masked stderr tail:\n%s", logs.String())
	}
}

// The stderr tail kept (4 KiB) may begin inside a secret the server
// printed on a longer line: the piece left is no whole secret, and is
// masked as one, in what callers see and in the log.
func TestStdioStderrTailCutInsideASecretIsMasked(t *testing.T) {
	const secret = "ghp_leak0123456789abcdef"
	msg, logs := readLeaky(t, "leaky-long", secret)
	piece := secret[10:]
	if strings.Contains(msg, piece) || !strings.Contains(msg, "stderr: …"+redact.Mask+" BBB") {
		t.Fatalf("Read error = %q; want the stderr line with the piece of the secret it begins with masked", msg)
	}
	if !strings.Contains(logs.String(), "BBBB") || strings.Contains(logs.String(), piece) {
		t.Fatalf("debug log holds the piece of the secret %q:\n%.300s", piece, logs.String())
	}
}

// A value to complete is a caller's text, which a server may print to
// stderr before it exits: the error withholds the line rather than show it
// masked for pieces of secrets (which would say whether a guess begins
// one).
func TestStdioStderrAfterACallersTextIsWithheld(t *testing.T) {
	const secret = "ghp_T9kLmN2pQ7rS4vW8xY1zA3bC5dE6fG0h"
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	srv := fakeServer("complete-echo")
	srv.Env["LEAK_TOKEN"] = secret
	sess, err := mcp.Connect(ctx, srv, &mcp.Options{Redact: redact.New(srv.Secrets()...)})
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	_, err = sess.Complete(ctx, "doc://{x}", "x", secret[:12], nil)
	if err == nil || strings.Contains(err.Error(), "cannot complete") || !strings.Contains(err.Error(), "stderr: "+mcp.StderrWithheld) {
		t.Fatalf("Complete = %v; want the exit, its stderr line withheld", err)
	}
}

// A server an earlier session sent a caller's words may have kept them:
// with Options.CallerText, its stderr is withheld from the start.
func TestStdioStderrWithheldWhenAnEarlierSessionCarriedCallerText(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	sess, err := mcp.Connect(ctx, fakeServer("crash"), &mcp.Options{CallerText: true})
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	_, err = sess.Read(ctx, "doc://boom")
	if err == nil || strings.Contains(err.Error(), "out of memory") || !strings.Contains(err.Error(), mcp.StderrWithheld) {
		t.Fatalf("Read = %v; want the exit, its stderr withheld", err)
	}
}
