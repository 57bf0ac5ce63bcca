package mcpserver_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/contextd/contextd/internal/engine"
	"github.com/contextd/contextd/internal/mcpserver"
)

// A message from the host that the go-sdk could not decode ends its
// session, and with it contextd mcp: over StdioTransport each is answered
// with a JSON-RPC error (id null) and the session goes on.
func TestStdioAnswersMalformedMessagesAndGoesOn(t *testing.T) {
	f := newFacade(t, map[string]*mcpsdk.Server{"odd": oddServer(nil, nil)}, nil, engine.Options{})
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ss, err := f.srv.MCP().Connect(t.Context(), mcpserver.StdioTransport(inR, outW, nil), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { inW.Close(); _ = ss.Close(); outR.Close() })
	lines := make(chan string, 16)
	go func() {
		sc := bufio.NewScanner(outR)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	send := func(s string) {
		t.Helper()
		if _, err := io.WriteString(inW, s+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	// next returns the next answer (notifications the server sends
	// meanwhile, such as list_changed, are skipped).
	next := func() map[string]json.RawMessage {
		t.Helper()
		for {
			select {
			case l, ok := <-lines:
				if !ok {
					t.Fatal("the session ended")
				}
				var m map[string]json.RawMessage
				if err := json.Unmarshal([]byte(l), &m); err != nil {
					t.Fatalf("answer %q: %v", l, err)
				}
				if _, isAnswer := m["id"]; isAnswer {
					return m
				}
			case <-time.After(10 * time.Second):
				t.Fatal("no answer in 10 s")
			}
		}
	}
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	if m := next(); string(m["id"]) != "1" || m["result"] == nil {
		t.Fatalf("initialize: %s", m)
	}
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	// Spaces around a message are no part of it.
	send(" \t" + `{"jsonrpc":"2.0","id":2,"method":"ping"}` + " \t\r")
	if m := next(); string(m["id"]) != "2" || m["result"] == nil {
		t.Fatalf("a ping with spaces around it: %s", m)
	}
	big := strings.Repeat("a", mcpserver.MaxRequestBytes)
	// want is the id each is answered under: the request's when the line
	// is one request object with one id JSON-RPC allows, however long or
	// wrong otherwise; null when there is no such id to read.
	for i, c := range []struct{ bad, want string }{
		{"garbage", "null"},
		{`{"jsonrpc":"2.0","id":1e400,"method":"ping"}`, "null"},
		{`{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}`, "null"},
		{`{"jsonrpc":"2.0","id":99999999999999999999999,"method":"ping"}`, "null"},
		{`{"jsonrpc":"1.0","id":5,"method":"ping"}`, "5"},
		{`{"id":"five","method":"ping"}`, `"five"`},
		{`[1,2]`, "null"},
		{`[]`, "null"},
		{`{"jsonrpc":"2.0","id":78,"error":{"code":"x"}}`, "null"},
		{`{"jsonrpc":"2.0","id":5,"method":7}`, "5"},
		{strings.Repeat("[", 1500) + strings.Repeat("]", 1500), "null"},
		{`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"assemble_context","arguments":{"task":` + strings.Repeat("[", 998) + strings.Repeat("]", 998) + `}}}`, "5"},
		{"\xef\xbb\xbf" + `{"jsonrpc":"2.0","id":5,"method":"ping"}`, "null"},
		{`{"jsonrpc":"2.0","id":true,"method":"ping"}`, "null"},
		{`{"jsonrpc":"2.0","id":"\ufffd` + "\xef\xbf\xbd" + `","method":7}`, `"\ufffd` + "\xef\xbf\xbd" + `"`},
		{`{"jsonrpc":"2.0","id":"a\ud800b","method":"ping"}`, "null"},
		{"{\"jsonrpc\":\"2.0\",\"id\":\"a\xffb\",\"method\":\"ping\"}", "null"},
		{`[{"jsonrpc":"2.0","id":5,"method":"ping"}]`, "null"},
		{`[{"jsonrpc":"2.0","method":"notifications/x"},{"jsonrpc":"2.0","method":"notifications/y"}]`, "null"},
		{`{"jsonrpc":1,"jsonrpc":"2.0","id":5,"method":"ping"}`, "5"},
		{`{"jsonrpc":"2.0","id":1e400,"id":5,"method":"ping"}`, "null"},
		{`{"jsonrpc":"2.0","id":6,"error":"x","error":{"code":1,"message":"m"}}`, "null"},
		{`{"jsonrpc":"2.0","id":9007199254740993,"method":"ping"}`, "null"},
		{`{"jsonrpc":"2.0","id":6,"error":{"code":1e400,"message":"x"}}`, "null"},
		// Too long to keep: the id is read as the line goes by, first or
		// last (the TypeScript SDK writes it last).
		{`{"jsonrpc":"2.0","id":5,"method":"ping","params":{"x":"` + big + `"}}`, "5"},
		{`{"method":"tools/call","params":{"name":"assemble_context","arguments":{"task":"` + big + `","id":9}},"jsonrpc":"2.0","id":"req-\"7\""}`, `"req-\"7\""`},
		{`{"method":"ping","params":{"x":"` + big + `"},"id":12}`, "12"},
		{`{"method":"ping","params":{"x":"` + big + `"},"id":12,"id":13}`, "null"},
		{`{"method":"ping","params":{"x":"` + big + `"},"id":12`, "null"},
		{`{"params":{"x":"` + big + `"},"id":12}`, "null"},
		{`{"method":"ping","params":{"x":"` + big + `"},"id":[12]}`, "null"},
		// Keys as the go-sdk reads them: escaped, the last "id" it sees.
		{`{"method":"ping","id":14,"params":{"x":"` + big + `"},"\u0069d":666}`, "null"},
		{`{"m\u0065thod":"ping","params":{"x":"` + big + `"},"\u0069\u0064":15}`, "15"},
		// Not one request object: no id of its own.
		{`{"method":"ping","params":{"x":"` + big + `"},"id":2 0}`, "null"},
		{`["method","id":26,"` + big + `"]`, "null"},
	} {
		send(c.bad)
		m := next()
		var e struct{ Code int }
		if string(m["id"]) != c.want || json.Unmarshal(m["error"], &e) != nil || e.Code != -32700 && e.Code != -32600 {
			t.Errorf("message %d (%.60s): answered %.200s; want an error with id %s", i, c.bad, fmt.Sprint(m), c.want)
		}
		id := 100 + i
		send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"ping"}`, id))
		if m := next(); string(m["id"]) != fmt.Sprint(id) || m["result"] == nil {
			t.Fatalf("after message %d (%.60s), ping %d: %s", i, c.bad, id, m)
		}
	}
	// A message of exactly MaxRequestBytes is taken, whether its line ends
	// in LF or CR LF; one byte more is not.
	for _, end := range []string{"", "\r"} {
		head := `{"jsonrpc":"2.0","id":77,"method":"ping","params":{"x":"`
		exact := head + strings.Repeat("a", mcpserver.MaxRequestBytes-len(head)-3) + `"}}`
		send(exact + end)
		if m := next(); string(m["id"]) != "77" || m["result"] == nil {
			t.Errorf("a ping of exactly %d bytes ending %q: %.200s", len(exact), end+"\n", fmt.Sprint(m))
		}
		send(strings.Replace(exact, `"x":"`, `"x":"a`, 1) + end)
		if m := next(); string(m["id"]) != "77" || m["error"] == nil {
			t.Errorf("a ping of %d bytes ending %q: %.200s, want an error", len(exact)+1, end+"\n", fmt.Sprint(m))
		}
	}
}
