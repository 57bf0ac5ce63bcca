package mcp

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// defaultTerminateDuration is the go-sdk's: how long each stage of a stdio
// shutdown (stdin closed, then SIGTERM) may take before the next.
const defaultTerminateDuration = 5 * time.Second

// stdioTransport runs a stdio MCP server as a subprocess. It differs from
// mcpsdk.CommandTransport in one way: lines on the server's stdout that
// cannot begin a JSON-RPC message (banners, log lines printed before or
// between messages) are skipped and logged instead of ending the session;
// the go-sdk decodes stdout as one JSON stream and fails on the first such
// line. Shutdown is staged as the MCP specification asks ("Lifecycle >
// Shutdown > stdio"): close stdin, wait; SIGTERM, wait; SIGKILL.
type stdioTransport struct {
	cmd               *exec.Cmd
	terminateDuration time.Duration
	log               *slog.Logger

	proc *process // set by Connect
}

func (t *stdioTransport) Connect(ctx context.Context) (mcpsdk.Connection, error) {
	stdout, err := t.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	stdin, err := t.cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	if err := t.cmd.Start(); err != nil {
		return nil, err
	}
	td := t.terminateDuration
	if td <= 0 {
		td = defaultTerminateDuration
	}
	p := &process{cmd: t.cmd, stdin: stdin, td: td, exited: make(chan struct{})}
	go p.wait()
	t.proc = p
	iot := &mcpsdk.IOTransport{
		Reader: io.NopCloser(&jsonLines{r: bufio.NewReaderSize(stdout, 64<<10), log: t.log}),
		Writer: p,
	}
	return iot.Connect(ctx)
}

// process is the server's stdin; closing it stops the server in stages.
type process struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	td    time.Duration

	exited  chan struct{} // closed when the process has been waited for
	waitErr error

	closeOnce sync.Once
	closeErr  error
}

func (p *process) wait() {
	p.waitErr = p.cmd.Wait()
	close(p.exited)
}

func (p *process) Write(b []byte) (int, error) { return p.stdin.Write(b) }

// exitStatus reports whether the process has exited, and how.
func (p *process) exitStatus() (bool, string) {
	select {
	case <-p.exited:
	default:
		return false, ""
	}
	if p.waitErr != nil {
		return true, p.waitErr.Error()
	}
	return true, "exit status 0"
}

// Close closes stdin and waits for the server to exit, escalating to SIGTERM
// and then SIGKILL after td each. Safe to call more than once.
func (p *process) Close() error {
	p.closeOnce.Do(func() { p.closeErr = p.stop() })
	return p.closeErr
}

func (p *process) stop() error {
	if err := p.stdin.Close(); err != nil && !errors.Is(err, os.ErrClosed) {
		return fmt.Errorf("closing stdin: %v", err)
	}
	exited := func() bool {
		t := time.NewTimer(p.td)
		defer t.Stop()
		select {
		case <-p.exited:
			return true
		case <-t.C:
			return false
		}
	}
	if exited() {
		return exitErr(p.waitErr)
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err == nil && exited() {
		return exitErr(p.waitErr)
	}
	if err := p.cmd.Process.Kill(); err != nil && !errors.Is(err, syscall.ESRCH) {
		return err
	}
	if exited() {
		return exitErr(p.waitErr)
	}
	return errors.New("unresponsive subprocess")
}

// exitErr keeps a signal-induced exit (our own SIGTERM) from being an error.
func exitErr(err error) error {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return nil
		}
	}
	return err
}

// jsonLines passes through the lines of r that may begin a JSON-RPC message
// (first non-blank bytes `{"`, `{}`, `[{`, `[]` or `[[`) and drops every
// other line whole. It decides on a line's first bytes, so a message line of
// any length streams through without being buffered.
type jsonLines struct {
	r   *bufio.Reader
	log *slog.Logger

	mode    int // atLineStart, passing or dropping
	dropped []byte
}

const (
	atLineStart = iota
	passing
	dropping
)

// maxDecide bounds how much of a line may be blank before it is passed as is.
const maxDecide = 4096

func (j *jsonLines) Read(p []byte) (int, error) {
	for {
		switch j.mode {
		case atLineStart:
			pass, err := j.decide()
			if err != nil {
				return 0, err
			}
			if pass {
				j.mode = passing
			} else {
				j.mode = dropping
			}
		case passing:
			n := 0
			for n < len(p) {
				chunk, err := j.r.Peek(min(len(p)-n, max(j.r.Buffered(), 1)))
				if len(chunk) == 0 {
					if n > 0 {
						return n, nil
					}
					return 0, err
				}
				if i := bytes.IndexByte(chunk, '\n'); i >= 0 {
					n += copy(p[n:], chunk[:i+1])
					j.r.Discard(i + 1)
					j.mode = atLineStart
					return n, nil
				}
				n += copy(p[n:], chunk)
				j.r.Discard(len(chunk))
				if j.r.Buffered() == 0 {
					return n, nil // don't block for more while holding data
				}
			}
			return n, nil
		case dropping:
			line, err := j.r.ReadSlice('\n')
			if len(j.dropped) < 200 {
				j.dropped = append(j.dropped, line[:min(len(line), 200-len(j.dropped))]...)
			}
			if errors.Is(err, bufio.ErrBufferFull) {
				continue
			}
			if err != nil {
				return 0, err
			}
			if j.log != nil {
				j.log.Warn("skipped a non-JSON line on the server's stdout", "line", string(bytes.TrimSpace(j.dropped)))
			}
			j.dropped = j.dropped[:0]
			j.mode = atLineStart
		}
	}
}

// decide looks at the start of the next line, waiting only for bytes of that
// same line, and reports whether to pass it.
func (j *jsonLines) decide() (bool, error) {
	want := 1
	for {
		buf, err := j.r.Peek(want)
		if len(buf) == 0 {
			return false, err
		}
		var nb [2]byte // the line's first non-blank bytes
		n := 0
		for _, c := range buf {
			if c == ' ' || c == '\t' || c == '\r' {
				continue
			}
			if c == '\n' {
				break
			}
			nb[n] = c
			if n++; n == 2 {
				break
			}
		}
		ended := bytes.IndexByte(buf, '\n') >= 0
		switch {
		case n == 0 && ended:
			return true, nil // a blank line is harmless
		case n >= 1 && nb[0] != '{' && nb[0] != '[':
			return false, nil
		case n == 2:
			return nb[0] == '{' && (nb[1] == '"' || nb[1] == '}') ||
				nb[0] == '[' && (nb[1] == '{' || nb[1] == ']' || nb[1] == '['), nil
		case ended, err != nil, len(buf) >= maxDecide:
			return true, nil // let the decoder report what it makes of it
		}
		want = len(buf) + 1
	}
}
