package mcp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"regexp"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/contextd/contextd/internal/redact"
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
	maxMessage        int // bytes; see Options.MaxMessageBytes

	proc *process // set by Connect
}

// ErrWorkingDir is the failure to start a stdio server whose working
// directory (its cwd) is missing or not a directory. The child's chdir
// fails the same way a missing program does (fork/exec …: no such file or
// directory), which names the program instead.
var ErrWorkingDir = errors.New("its working directory (cwd) is missing or not a directory")

func (t *stdioTransport) Connect(ctx context.Context) (mcpsdk.Connection, error) {
	if dir := t.cmd.Dir; dir != "" {
		if fi, err := os.Stat(dir); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrWorkingDir, err)
		} else if !fi.IsDir() {
			return nil, fmt.Errorf("%w: %s", ErrWorkingDir, dir)
		}
	}
	// Our own pipe, not StdoutPipe: cmd.Wait closes a StdoutPipe as soon as
	// the child exits, losing whatever it wrote last and we had not read yet
	// (its final answer, or the error it died with). With os.Pipe the reader
	// drains to a clean EOF.
	stdout, pw, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	t.cmd.Stdout = pw
	// Our own pipe for stdin too, not StdinPipe: its write end must take a
	// write deadline (see process.Write).
	pr, stdin, err := os.Pipe()
	if err != nil {
		stdout.Close()
		pw.Close()
		return nil, err
	}
	t.cmd.Stdin = pr
	td := t.terminateDuration
	if td <= 0 {
		td = defaultTerminateDuration
	}
	// A grandchild holding stderr open must not keep Wait from returning.
	t.cmd.WaitDelay = td
	ownGroup(t.cmd)
	err = t.cmd.Start()
	pw.Close() // the child has its copies
	pr.Close()
	if err != nil {
		stdout.Close()
		stdin.Close()
		return nil, err
	}
	p := &process{cmd: t.cmd, stdin: stdin, stdout: stdout, td: td, exited: make(chan struct{}), log: t.log}
	go p.wait()
	t.proc = p
	limit := maxMessage(&Options{MaxMessageBytes: t.maxMessage})
	iot := &mcpsdk.IOTransport{
		Reader:        io.NopCloser(&jsonLines{r: bufio.NewReaderSize(stdout, 64<<10), log: t.log, max: limit}),
		Writer:        p,
		MaxLineLength: limit + 4096, // our own cap answers first, per message
	}
	return iot.Connect(ctx)
}

// process is the server's stdin; closing it stops the server in stages.
type process struct {
	cmd    *exec.Cmd
	stdin  *os.File    // our write end
	stdout *os.File    // our read end; closed once the process is gone
	wedged atomic.Bool // a write timed out: the process is being stopped
	td     time.Duration
	log    *slog.Logger // says why a stop takes longer than closing stdin; may be nil

	exited  chan struct{} // closed when the process has been waited for
	waitErr error

	closeOnce sync.Once
	closeErr  error
}

func (p *process) wait() {
	p.waitErr = p.cmd.Wait()
	close(p.exited)
}

// stdinWriteTimeout bounds one write to a stdio server's stdin. The go-sdk
// writes a call's message without heeding the call's context, and one
// write at a time, so a server that stops reading its stdin (its pipe
// full) would hold every later call to it, and the requests waiting on
// them, for good.
var stdinWriteTimeout = 30 * time.Second

// Write writes b to the server's stdin. A write that cannot finish within
// stdinWriteTimeout fails, and so does every later one, and the server is
// stopped: part of a message may have gone, so the stream is lost, and the
// session ends.
func (p *process) Write(b []byte) (int, error) {
	if p.wedged.Load() {
		return 0, errWedged
	}
	_ = p.stdin.SetWriteDeadline(time.Now().Add(stdinWriteTimeout))
	n, err := p.stdin.Write(b)
	if errors.Is(err, os.ErrDeadlineExceeded) {
		p.wedged.Store(true)
		go p.Close()
		return n, errWedged
	}
	return n, err
}

var errWedged = errors.New("the server stopped reading its stdin (its pipe stayed full for the write timeout): stopping it")

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
// and then SIGKILL after td each, sent to its whole process group on Unix;
// once it has exited, the rest of its group gets SIGTERM, and SIGKILL td
// later. Safe to call more than once.
func (p *process) Close() error {
	p.closeOnce.Do(func() {
		p.closeErr = p.stop()
		p.stdout.Close() // unblock a reader if a grandchild still holds the pipe
	})
	return p.closeErr
}

func (p *process) stop() error {
	if err := p.stdin.Close(); err != nil && !errors.Is(err, os.ErrClosed) {
		return fmt.Errorf("closing stdin: %v", err)
	}
	// Once the server has exited, what is left of its process group
	// (children it started and did not stop) is told to stop too, and
	// killed td later if it has not.
	defer func() {
		select {
		case <-p.exited:
			if signalGroup(p.cmd, syscall.SIGTERM) == nil {
				time.AfterFunc(p.td, func() { _ = signalGroup(p.cmd, syscall.SIGKILL) })
			}
		default:
		}
	}()
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
	// Each stage waits td: say so, or a shutdown waits in silence.
	p.note("the server did not exit within "+p.td.String()+" of its stdin closing: sending SIGTERM", "pid", p.cmd.Process.Pid)
	if err := signalGroup(p.cmd, syscall.SIGTERM); (err == nil || errors.Is(err, syscall.ESRCH)) && exited() {
		return exitErr(p.waitErr)
	}
	p.note("the server did not exit within "+p.td.String()+" of SIGTERM: killing it", "pid", p.cmd.Process.Pid)
	if err := signalGroup(p.cmd, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) && !errors.Is(err, os.ErrProcessDone) {
		return err
	}
	if exited() {
		return exitErr(p.waitErr)
	}
	return errors.New("unresponsive subprocess")
}

// note logs a stage of a slow stop.
func (p *process) note(msg string, args ...any) {
	if p.log != nil {
		p.log.Info(msg, args...)
	}
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
//
// A message line longer than max bytes is not passed on: it is read to its
// end keeping only its first and last bytes, and replaced by a JSON-RPC
// error answer to the same request id, so that one oversized response fails
// its own request while the session, and memory, stay intact.
type jsonLines struct {
	r   *bufio.Reader
	log *slog.Logger
	max int // bytes per message line; <= 0 means no cap

	mode        int // atLineStart, passing, emitting or dropping
	dropped     []byte
	droppedSize int    // bytes of the line being dropped so far
	line        []byte // the message line being gathered (passing)
	size        int    // its length so far, when over max
	tail        []byte // its last bytes, when over max
	out         []byte // what to hand out next (emitting)
	eof         error  // the error that ended the stream, once out is drained
	quiet       warnLimit
	badIDs      warnLimit
}

// maxQuotedLine bounds the bytes of a non-JSON stdout line the log quotes.
const maxQuotedLine = 200

// quoted returns the non-JSON line being dropped as the log quotes it: its
// first maxQuotedLine bytes, ending with redact.Cut when there were more
// (so that a secret the cut split is still masked, see redact.String).
func (j *jsonLines) quoted() string {
	q := string(bytes.TrimSpace(j.dropped))
	if j.droppedSize > len(j.dropped) {
		q = clip(string(j.dropped), maxQuotedLine) + redact.Cut
	}
	return q
}

const (
	atLineStart = iota
	passing
	emitting
	dropping
)

// DefaultMaxMessageBytes caps one JSON-RPC message from a server when
// Options.MaxMessageBytes is zero: the go-sdk's own stdio line limit, which
// would otherwise end the whole session.
const DefaultMaxMessageBytes = 16 << 20

// maxDecide bounds how much of a line may be blank before it is passed as is.
const maxDecide = 4096

// skipFactor bounds how far past the cap a message (or a line that is not
// one) is read to find its end: skipFactor × max bytes, 1 GiB at the
// default cap. A server that sends an endless line would otherwise be read
// at full speed for as long as it liked, burning a core, with every call
// behind it waiting; past the bound the stream fails (errEndless) and the
// session with it, so the server is stopped and reconnected.
const skipFactor = 64

// errEndless ends a stream whose message runs skipFactor times past the cap.
var errEndless = errors.New("mcp: a message from the server runs far past max_message_bytes without ending; closing the stream")

// skipBound returns how many bytes of one message (or dropped line) may be
// read under the cap max; 0 means no bound.
func skipBound(max int) int {
	if max <= 0 {
		return 0
	}
	return skipFactor * max
}

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
			chunk, err := j.r.ReadSlice('\n')
			if j.size == 0 && (j.max <= 0 || len(j.line)+len(chunk) <= j.max) {
				j.line = append(j.line, chunk...)
			} else {
				if j.size == 0 {
					j.size, j.tail = len(j.line), append([]byte(nil), j.line[max(0, len(j.line)-256):]...)
					if len(j.line) < 256 { // the head may still be in this chunk
						j.line = append(j.line, chunk[:min(len(chunk), 256-len(j.line))]...)
					}
					j.line = j.line[:min(len(j.line), 256)] // keep the head
				}
				j.size += len(chunk)
				j.tail = append(j.tail, chunk...)
				j.tail = j.tail[max(0, len(j.tail)-256):]
				if b := skipBound(j.max); b > 0 && j.size > b {
					if j.log != nil {
						j.log.Warn("a message from the server does not end", "bytes", j.size, "max_message_bytes", j.max)
					}
					return 0, errEndless
				}
			}
			if errors.Is(err, bufio.ErrBufferFull) {
				continue
			}
			if err != nil && len(j.line) == 0 {
				return 0, err
			}
			j.eof = err
			j.out = j.line
			if j.size > 0 {
				j.out = j.oversized()
			} else if err == nil {
				j.out = j.dropBadIDs(unbatch(j.line))
			}
			j.line, j.size, j.tail = nil, 0, nil
			j.mode = emitting
		case emitting:
			n := copy(p, j.out)
			j.out = j.out[n:]
			if len(j.out) == 0 {
				j.mode = atLineStart
				if n == 0 {
					if j.eof != nil {
						return 0, j.eof
					}
					continue // an oversized message with no id: nothing to hand out
				}
			}
			return n, nil
		case dropping:
			line, err := j.r.ReadSlice('\n')
			if len(j.dropped) < maxQuotedLine {
				j.dropped = append(j.dropped, line[:min(len(line), maxQuotedLine-len(j.dropped))]...)
			}
			j.droppedSize += len(line)
			if b := skipBound(j.max); b > 0 && j.droppedSize > b {
				if j.log != nil {
					j.log.Warn("a non-JSON line on the server's stdout does not end", "bytes", j.droppedSize, "line", j.quoted())
				}
				return 0, errEndless
			}
			if errors.Is(err, bufio.ErrBufferFull) {
				continue
			}
			if err != nil {
				return 0, err
			}
			if ok, n := j.quiet.allow(); ok && j.log != nil {
				j.log.Warn("skipped a non-JSON line on the server's stdout", "line", j.quoted(), "not_logged_since_last", n)
			}
			j.dropped, j.droppedSize = j.dropped[:0], 0
			j.mode = atLineStart
		}
	}
}

// dropBadIDs returns out (message lines) without the messages whose id
// must not be decoded (badID), warning at most once a second.
func (j *jsonLines) dropBadIDs(out []byte) []byte {
	var kept []byte // nil until a message is dropped
	at := 0
	for line := range bytes.Lines(out) {
		if !badID(line) {
			if kept != nil {
				kept = append(kept, line...)
			}
			at += len(line)
			continue
		}
		if kept == nil {
			kept = append(make([]byte, 0, len(out)-len(line)), out[:at]...)
		}
		at += len(line)
		if ok, n := j.badIDs.allow(); ok && j.log != nil {
			j.log.Warn("dropped a message from the server whose id is not a string, a number or null", "bytes", len(line), "not_logged_since_last", n)
		}
	}
	if kept == nil {
		return out
	}
	return kept
}

// unbatch returns a JSON-RPC batch line (an array of message objects,
// which servers may send before protocol 2025-06-18) as one line per
// message, and any other line as it is. contextd sends no batches, so a
// server's batch holds its own requests and notifications (or stray
// answers). The go-sdk keeps an incoming batch until every request in it
// is answered, to answer them in one array; an answer dropped because
// every answer slot was taken (see MaxAnswersInFlight) left its batch, its
// requests and the answers gathered so far held for the session's life:
// a server reading its stdin slowly while sending batches of pings grew the
// daemon's heap by about 3 MB a second without bound. Requests on lines of
// their own are answered each on its own line (JSON-RPC 2.0 says a batch
// SHOULD be answered with an array). A batch that is empty or holds
// anything but objects is passed as it is: the go-sdk rejects it as before.
func unbatch(line []byte) []byte {
	i := skipSpace(line, 0)
	if i >= len(line) || line[i] != '[' || !json.Valid(line) {
		return line
	}
	// Delimit the elements without decoding them (a batch of millions of
	// tiny objects would cost far more decoded than its bytes); the go-sdk
	// decodes each line.
	var out []byte
	for i = skipSpace(line, i+1); ; {
		if i >= len(line) || line[i] != '{' {
			return line // empty, or not an object
		}
		j := endOfValue(line, i)
		if j < 0 {
			return line
		}
		if out == nil {
			out = make([]byte, 0, len(line))
		}
		out = append(append(out, line[i:j]...), '\n')
		i = skipSpace(line, j)
		if i < len(line) && line[i] == ',' {
			i = skipSpace(line, i+1)
			continue
		}
		if i < len(line) && line[i] == ']' && skipSpace(line, i+1) == len(line) {
			return out
		}
		return line
	}
}

// idPatterns find a JSON-RPC message's id at the start of the line (the
// go-sdk writes it second) or at its end (the TypeScript SDK writes it last).
var idPatterns = []*regexp.Regexp{
	regexp.MustCompile(`^\s*\{\s*(?:"jsonrpc"\s*:\s*"2\.0"\s*,\s*)?"id"\s*:\s*("(?:[^"\\]|\\.)*"|-?\d+)`),
	regexp.MustCompile(`"id"\s*:\s*("(?:[^"\\]|\\.)*"|-?\d+)\s*\}\s*$`),
}

// oversized returns the line that replaces a message of j.size bytes: an
// error answer to its id, or nothing when no id can be found or the message
// is a request from the server (its id is in the server's id space).
func (j *jsonLines) oversized() []byte {
	var id []byte
	if isRequest(j.line) {
		j.line = nil
	}
	for i, re := range idPatterns {
		src := j.line
		if i == 1 {
			src = j.tail
		}
		if m := re.FindSubmatch(src); m != nil {
			id = m[1]
			break
		}
	}
	if j.log != nil {
		j.log.Warn("dropped a message over the size cap", "bytes", j.size, "max_message_bytes", j.max, "id", string(id))
	}
	if id == nil {
		return nil
	}
	msg, _ := json.Marshal(fmt.Sprintf("response of %d bytes exceeds max_message_bytes (%d)", j.size, j.max))
	return fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%s,"error":{"code":%d,"message":%s}}`+"\n", id, codeTooLarge, msg)
}

// isRequest reports whether a message head has a top-level "method" key,
// i.e. one that comes before the first nested object.
func isRequest(head []byte) bool {
	m := bytes.Index(head, []byte(`"method"`))
	if m < 0 {
		return false
	}
	open := bytes.IndexByte(head, '{')
	nested := bytes.IndexByte(head[open+1:], '{')
	return nested < 0 || m < open+1+nested
}

// codeTooLarge is the JSON-RPC error code of a synthesized answer to an
// oversized message (-32603, internal error: the server did answer).
const codeTooLarge = -32603

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
