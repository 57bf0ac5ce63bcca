package mcpserver

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"strconv"
	"strings"
	"sync"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// StdioTransport returns the transport `contextd mcp` serves its host on:
// newline-delimited JSON-RPC read from in and written to out, as the
// go-sdk's StdioTransport, except that a message the go-sdk could not
// decode does not end the session. The go-sdk ends it (and so the process)
// on any such message: text that is not JSON, a version tag other than
// "2.0", an id that is neither a string nor a number it can hold
// (1e400, {"a":1}, 2^53+1), a line over MaxRequestBytes, JSON nested
// deeper than 1,000, a batch, a repeated key. Such a line is answered with
// a JSON-RPC error (code -32700 or -32600) and logged, and the next one is
// read. The answer carries the request's id when the line is one request
// object with one id JSON-RPC allows, even one too long to keep; id null
// otherwise.
func StdioTransport(in io.Reader, out io.Writer, log *slog.Logger) mcpsdk.Transport {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	w := &lineWriter{w: out}
	var r io.ReadCloser = io.NopCloser(&lineFilter{r: bufio.NewReaderSize(in, 64<<10), out: w, max: MaxRequestBytes, log: log})
	if c, ok := in.(io.Closer); ok {
		// Closing the session closes in, as the go-sdk's closes stdin.
		r = struct {
			io.Reader
			io.Closer
		}{r, c}
	}
	return &mcpsdk.IOTransport{
		Reader: r,
		Writer: w,
		// Every line the go-sdk reads was checked to fit.
		MaxLineLength: MaxRequestBytes + 1,
	}
}

// lineWriter serializes writes: the go-sdk writes each message with its
// newline in one Write, and lineFilter answers a rejected line between them.
type lineWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lineWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func (l *lineWriter) Close() error { return nil }

// lineFilter hands the go-sdk the lines of r that it can decode, and
// answers the others itself.
type lineFilter struct {
	r       *bufio.Reader
	out     io.Writer
	max     int
	log     *slog.Logger
	pending []byte // the rest of a checked line
	err     error  // what ended r, once pending is handed out
}

func (f *lineFilter) Read(p []byte) (int, error) {
	for len(f.pending) == 0 {
		if f.err != nil {
			return 0, f.err
		}
		var scan idScanner
		line, tooLong, err := f.readLine(&scan)
		f.err = err
		switch {
		case tooLong:
			f.reject(-32600, fmt.Sprintf("the message is over %d bytes", f.max), scan.requestID())
		case len(bytes.TrimSpace(line)) == 0:
		default:
			// Spaces after a message are valid JSON, but the go-sdk reads
			// them as trailing data and ends the session.
			line = bytes.TrimSpace(line)
			if code, problem := checkMessage(line); problem != "" {
				var id json.RawMessage
				if code != -32700 {
					id = scan.requestID()
				}
				f.reject(code, problem, id)
			} else {
				f.pending = append(line, '\n')
			}
		}
	}
	n := copy(p, f.pending)
	f.pending = f.pending[n:]
	return n, nil
}

// readLine returns the next line of r without its newline; past max bytes
// it reads on to the newline and returns tooLong. Every byte of the line
// goes through scan.
func (f *lineFilter) readLine(scan *idScanner) (line []byte, tooLong bool, err error) {
	for {
		chunk, err := f.r.ReadSlice('\n')
		scan.feed(chunk)
		if !tooLong {
			line = append(line, chunk...)
			if len(line) > f.max+2 { // max bytes, then CR LF
				line, tooLong = nil, true
			}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		line = bytes.TrimRight(line, "\r\n")
		if len(line) > f.max {
			line, tooLong = nil, true
		}
		return line, tooLong, err
	}
}

// reject answers a line the go-sdk could not decode, under the request's
// id when one could be read from it (null otherwise, as JSON-RPC asks),
// and logs it (what was wrong only: the line is the host's, not the
// log's).
func (f *lineFilter) reject(code int, problem string, id json.RawMessage) {
	f.log.Warn("a message from the host is not JSON-RPC contextd can read; answered with an error", "problem", problem)
	var answerID any
	if id != nil {
		answerID = id
	}
	answer, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": answerID, "error": map[string]any{"code": code, "message": "contextd: " + problem}})
	f.out.Write(append(answer, '\n')) //nolint:errcheck // the next read of stdin fails as well
}

// maxDepth is how deep the go-sdk decodes JSON.
const maxDepth = 1000

// checkMessage returns the JSON-RPC error code and what is wrong with
// line, a message or a batch of them, by the go-sdk's decoding rules; ""
// when it decodes.
func checkMessage(line []byte) (int, string) {
	if !json.Valid(line) {
		return -32700, "the message is not JSON"
	}
	if depth(line) > maxDepth {
		return -32600, fmt.Sprintf("the message is nested deeper than %d", maxDepth)
	}
	line = bytes.TrimSpace(line)
	if line[0] == '[' {
		// The go-sdk ends the session on a batch from 2025-06-18 on, and
		// on some before (two notifications, a repeated id); MCP no longer
		// has them.
		return -32600, "JSON-RPC batches are not accepted: send each message on its own line"
	}
	if duplicateKeys(line) {
		// The go-sdk decodes every occurrence of a key: a first value it
		// cannot read ends the session, whatever the last one is.
		return -32600, "a message may not repeat a key"
	}
	return checkOne(line)
}

// duplicateKeys reports whether the JSON object m repeats a key at its top
// level or in its "error" object (that one only: an "error" nested in
// it is not the go-sdk's, and checking each would take time quadratic in
// the nesting).
func duplicateKeys(m []byte) bool { return duplicateKeysIn(m, true) }

func duplicateKeysIn(m []byte, top bool) bool {
	dec := json.NewDecoder(bytes.NewReader(m))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return false
	}
	seen := map[string]bool{}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return false
		}
		k, _ := t.(string)
		if seen[k] {
			return true
		}
		seen[k] = true
		var v json.RawMessage
		if dec.Decode(&v) != nil {
			return false
		}
		if k == "error" && top && len(v) > 0 && v[0] == '{' && duplicateKeysIn(v, false) {
			return true
		}
	}
	return false
}

// checkOne checks one message (fields matched by exact name, as the
// go-sdk matches them).
func checkOne(m json.RawMessage) (int, string) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(m, &fields); err != nil || fields == nil {
		return -32600, "a message must be a JSON object"
	}
	var version string
	if json.Unmarshal(fields["jsonrpc"], &version) != nil || version != "2.0" {
		return -32600, `"jsonrpc" must be "2.0"`
	}
	hasID, problem := checkID(fields["id"])
	if problem != "" {
		return -32600, problem
	}
	if method, ok := fields["method"]; ok {
		var s string
		if json.Unmarshal(method, &s) != nil {
			return -32600, `"method" must be a string`
		}
		return 0, ""
	}
	if !hasID {
		return -32600, "a response must have an id"
	}
	if e := fields["error"]; e != nil && string(e) != "null" {
		var we struct {
			Code    *json.Number `json:"code"`
			Message *string      `json:"message"`
		}
		if json.Unmarshal(e, &we) != nil {
			return -32600, `"error" must be an object with a numeric code and a string message`
		}
		if we.Code != nil {
			if _, err := we.Code.Int64(); err != nil {
				return -32600, `"error" must have an integer code`
			}
		}
	}
	return 0, ""
}

// checkID reports whether id, a message's "id" as sent (nil when absent),
// is there, and what is wrong with it: the go-sdk reads a number id as a
// float64, so one that float cannot hold exactly would be answered under
// another id.
func checkID(id json.RawMessage) (hasID bool, problem string) {
	switch {
	case id == nil || string(id) == "null":
		return false, ""
	case id[0] == '"':
		var s string
		if json.Unmarshal(id, &s) != nil {
			return false, "the id is not a valid string"
		}
		if sent := bytes.Count(id, []byte("\ufffd")) + bytes.Count(bytes.ToLower(id), []byte(`\ufffd`)); strings.Count(s, "\ufffd") > sent {
			// A lone surrogate (or invalid UTF-8) is decoded as U+FFFD:
			// the answer would carry another id.
			return false, "the id is not valid UTF-8 (a lone surrogate?)"
		}
		return true, ""
	}
	f, err := strconv.ParseFloat(string(id), 64)
	if n, ierr := strconv.ParseInt(string(id), 10, 64); ierr == nil {
		err = nil
		if n > 1<<53 || n < -(1<<53) {
			err = strconv.ErrRange
		}
	}
	if err != nil || math.IsInf(f, 0) || f != math.Trunc(f) || math.Abs(f) > 1<<53 {
		return false, "the id must be a string or an integer of at most 2^53"
	}
	return true, ""
}

// depth returns how deeply arrays and objects nest in the JSON text b.
func depth(b []byte) int {
	d, most, in := 0, 0, false
	for i := 0; i < len(b); i++ {
		switch c := b[i]; {
		case in && c == '\\':
			i++
		case c == '"':
			in = !in
		case in:
		case c == '[' || c == '{':
			d++
			most = max(most, d)
		case c == ']' || c == '}':
			d--
		}
	}
	return most
}
