package mcp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

func filterLines(t testing.TB, in string, bufSize int) string {
	t.Helper()
	out, err := io.ReadAll(&jsonLines{r: bufio.NewReaderSize(strings.NewReader(in), bufSize)})
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

func TestJSONLines(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"Server running on stdio\n{\"jsonrpc\":\"2.0\"}\n", "{\"jsonrpc\":\"2.0\"}\n"},
		{"[INFO] x\n  {\"a\":1}\r\n[{\"b\":2}]\n[]\n{}\n", "  {\"a\":1}\r\n{\"b\":2}\n[]\n{}\n"},
		// A batch of messages comes out a message a line; anything else
		// in brackets is passed as it is, for the decoder to judge.
		{" [ {\"a\":1} , {\"b\":[2]} ]\r\n[[1]]\n[{\"a\":1},2]\n[{\"a\":1}", "{\"a\":1}\n{\"b\":[2]}\n[[1]]\n[{\"a\":1},2]\n[{\"a\":1}"},
		{"{level=info}\n{\"ok\":true}\n\n", "{\"ok\":true}\n\n"},
		{"no newline at end", ""},
		{"{\"partial\":", "{\"partial\":"},
		{strings.Repeat("x", 100) + "\n{\"z\":1}\n", "{\"z\":1}\n"},
		// A message whose id is not a string, a number or null is dropped
		// before anything decodes it, alone or in a batch.
		{"{\"id\":[[],[]],\"method\":\"m\"}\n{\"id\":7}\n[{\"id\":{}},{\"id\":\"a\"}]\n", "{\"id\":7}\n{\"id\":\"a\"}\n"},
	} {
		for _, size := range []int{16, 4096} {
			if got := filterLines(t, tc.in, size); got != tc.want {
				t.Errorf("filter(%q) with %d-byte buffer = %q, want %q", tc.in, size, got, tc.want)
			}
		}
	}
}

func FuzzJSONLines(f *testing.F) {
	f.Add("banner\n{\"jsonrpc\":\"2.0\",\"id\":1}\n[warn]\n")
	f.Add("   \n\t{}\n[[1]]\n")
	f.Fuzz(func(t *testing.T, in string) {
		got := filterLines(t, in, 16)
		// Every line passed is a whole input line, in order; every dropped
		// line starts with something that cannot begin a JSON-RPC message.
		lines := strings.SplitAfter(in, "\n")
		var want strings.Builder
		for _, l := range lines {
			var nb []byte // the line's first two non-blank bytes
			for i := 0; i < len(l) && l[i] != '\n' && len(nb) < 2; i++ {
				if c := l[i]; c != ' ' && c != '\t' && c != '\r' {
					nb = append(nb, c)
				}
			}
			var keep bool
			switch {
			case len(nb) == 0:
				keep = true // blank
			case nb[0] != '{' && nb[0] != '[':
				keep = false
			case len(nb) == 1:
				keep = true // the line ends before a second byte decides: let the decoder judge
			default:
				p := string(nb)
				keep = p == "{\"" || p == "{}" || p == "[{" || p == "[]" || p == "[["
			}
			if keep {
				want.WriteString(batchLines(l))
			}
		}
		if !bytes.Equal([]byte(got), []byte(want.String())) {
			t.Fatalf("filter(%q) = %q, want %q", in, got, want.String())
		}
	})
}

// batchLines is what a kept line becomes: a whole line holding a JSON array
// of objects, one line per object (compacted as written); any other line
// as it is.
func batchLines(l string) string {
	var elems []json.RawMessage
	if !strings.HasSuffix(l, "\n") || !strings.HasPrefix(strings.TrimLeft(l, " \t\r"), "[") ||
		json.Unmarshal([]byte(l), &elems) != nil || len(elems) == 0 {
		return l
	}
	var b strings.Builder
	for _, e := range elems {
		if !strings.HasPrefix(string(e), "{") {
			return l
		}
		b.Write(e)
		b.WriteByte('\n')
	}
	return b.String()
}

func TestJSONLinesAnswersAnOversizedMessageWithAnError(t *testing.T) {
	big := strings.Repeat("x", 500)
	first := `{"jsonrpc":"2.0","id":7,"result":{"contents":[{"text":"` + big + `"}]}}` + "\n"
	second := `{"result":{"contents":[{"text":"` + big + `"}]},"jsonrpc":"2.0","id":"req-8"}` + "\n"
	in := first + second +
		`{"method":"notifications/message","params":{"data":"` + big + `"}}` + "\n" + // no id: dropped
		`{"jsonrpc":"2.0","id":9,"result":{}}` + "\n"
	out, err := io.ReadAll(&jsonLines{r: bufio.NewReaderSize(strings.NewReader(in), 64), max: 200})
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf(`{"jsonrpc":"2.0","id":7,"error":{"code":-32603,"message":"response of %d bytes exceeds max_message_bytes (200)"}}`+"\n", len(first)) +
		fmt.Sprintf(`{"jsonrpc":"2.0","id":"req-8","error":{"code":-32603,"message":"response of %d bytes exceeds max_message_bytes (200)"}}`+"\n", len(second)) +
		`{"jsonrpc":"2.0","id":9,"result":{}}` + "\n"
	if string(out) != want {
		t.Errorf("got\n%s\nwant\n%s", out, want)
	}
}

func TestJSONLinesOversizedRegressions(t *testing.T) {
	big := strings.Repeat("y", 5000)
	for _, tc := range []struct{ name, in, want string }{
		// The whole message arrives in the first chunk, past the cap: the
		// id must still come from its head.
		{"head in first chunk", `{"jsonrpc":"2.0","id":7,"result":{"text":"` + big + `"}}` + "\n", `"id":7,"error"`},
		// A response whose result mentions "method" is still answered.
		{"method inside result", `{"jsonrpc":"2.0","id":8,"result":{"method":"` + big + `"}}` + "\n", `"id":8,"error"`},
		// An oversized request from the server is dropped, not answered.
		{"server request", `{"jsonrpc":"2.0","id":9,"method":"sampling/createMessage","params":{"x":"` + big + `"}}` + "\n", ""},
	} {
		out, err := io.ReadAll(&jsonLines{r: bufio.NewReaderSize(strings.NewReader(tc.in), 64<<10), max: 1000})
		if err != nil {
			t.Fatal(err)
		}
		if tc.want == "" && len(out) != 0 || tc.want != "" && !strings.Contains(string(out), tc.want) {
			t.Errorf("%s: got %q, want %q", tc.name, out, tc.want)
		}
	}
}

func TestMarkInvalidWithNullMeta(t *testing.T) {
	raw := []byte(`{"contents":[{"uri":"a","blob":"!!!","_meta":null},{"uri":"b","blob":"AA==","_meta":"weird"}]}`)
	out := repairList(raw, "contents", repairContent) // must not panic
	if !strings.Contains(string(out), metaInvalid) {
		t.Errorf("bad blob not marked: %s", out)
	}
}

// TestExitedDoesNotWaitOnAnAnswer checks that an error the server answered
// (or the caller's deadline) is returned at once, while a transport failure
// gives a running process a moment to be reaped. Fake time (synctest) makes
// the wait observable without timing the test.
func TestExitedDoesNotWaitOnAnAnswer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &Session{proc: &process{exited: make(chan struct{})}, stderr: &tailBuffer{}}
		for _, tc := range []struct {
			name string
			err  error
			wait bool
		}{
			{"error answer", fmt.Errorf("read: %w", &jsonrpc.Error{Code: -32603, Message: "permission denied"}), false},
			{"deadline", fmt.Errorf("read: %w", context.DeadlineExceeded), false},
			{"broken pipe", errors.New("connection closed"), true},
		} {
			start := time.Now()
			if got := s.exited(tc.err); got != tc.err {
				t.Errorf("%s: exited = %v, want the error as it was", tc.name, got)
			}
			if waited := time.Since(start) > 0; waited != tc.wait {
				t.Errorf("%s: waited %v, want a wait: %v", tc.name, time.Since(start), tc.wait)
			}
		}
	})
}
