package mcp

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// A server may acknowledge a listen stream without its URI, or refuse it,
// and end it before the subscriber that sent it looks for it: the refusal
// is remembered all the same, so the session does not ask again. A stream
// contextd cancelled is not a refusal.
func TestListenRefusalsAreRememberedWhenTheStreamEndsFirst(t *testing.T) {
	listenReq := func(id int64, uri string) *jsonrpc.Request {
		rid, _ := jsonrpc.MakeID(float64(id))
		params, _ := json.Marshal(map[string]any{"notifications": map[string]any{"resourceSubscriptions": []string{uri}}})
		return &jsonrpc.Request{ID: rid, Method: "subscriptions/listen", Params: params}
	}
	ack := func(id int64, uris ...string) *jsonrpc.Request {
		params, _ := json.Marshal(map[string]any{
			"_meta":         map[string]any{"io.modelcontextprotocol/subscriptionId": id},
			"notifications": map[string]any{"resourceSubscriptions": uris},
		})
		return &jsonrpc.Request{Method: "notifications/subscriptions/acknowledged", Params: params}
	}
	end := func(id int64, err error) *jsonrpc.Response {
		rid, _ := jsonrpc.MakeID(float64(id))
		if err != nil {
			return &jsonrpc.Response{ID: rid, Error: err}
		}
		return &jsonrpc.Response{ID: rid, Result: json.RawMessage(`{}`)}
	}

	tr := newListenTracker()
	tr.sent(listenReq(1, "doc://left-out"))
	tr.received(ack(1, "doc://other"))
	tr.received(end(1, nil))
	if why := tr.refusal("doc://left-out"); why != "left out of the acknowledgement" {
		t.Errorf("a URI left out of an acknowledgement, stream ended: refusal %q", why)
	}

	tr.sent(listenReq(2, "doc://refused"))
	tr.received(end(2, &jsonrpc.Error{Code: -32603, Message: "no"}))
	if why := tr.refusal("doc://refused"); why == "" {
		t.Error("a refused listen request is not remembered")
	}

	tr.sent(listenReq(3, "doc://honoured"))
	tr.received(ack(3, "doc://honoured"))
	tr.received(end(3, nil))
	if why := tr.refusal("doc://honoured"); why != "" {
		t.Errorf("an honoured URI whose stream ended counts as refused: %q", why)
	}

	tr.sent(listenReq(4, "doc://cancelled"))
	tr.cancel("doc://cancelled")
	tr.received(end(4, &jsonrpc.Error{Code: -32800, Message: "cancelled"}))
	if why := tr.refusal("doc://cancelled"); why != "" {
		t.Errorf("a stream contextd cancelled counts as refused: %q", why)
	}
}

// A server refusing the listens of ever new URIs (template expansions)
// cannot grow the refusals a connection remembers without end: past
// maxRefused it is taken to refuse every URI.
func TestListenRefusalsAreBounded(t *testing.T) {
	tr := newListenTracker()
	why := strings.Repeat("no ", 340)
	for i := range maxRefused + 1000 {
		rid, _ := jsonrpc.MakeID(float64(i + 1))
		uri := fmt.Sprintf("tmpl://x/%d", i)
		params, _ := json.Marshal(map[string]any{"notifications": map[string]any{"resourceSubscriptions": []string{uri}}})
		tr.sent(&jsonrpc.Request{ID: rid, Method: "subscriptions/listen", Params: params})
		tr.received(&jsonrpc.Response{ID: rid, Error: &jsonrpc.Error{Code: -32603, Message: why}})
		if got := tr.refusal(uri); got == "" {
			t.Fatalf("listen %d refused, not remembered", i)
		}
	}
	tr.mu.Lock()
	held := len(tr.refused)
	tr.mu.Unlock()
	if held > maxRefused {
		t.Errorf("%d refusals held, over %d", held, maxRefused)
	}
	if got := tr.refusal("tmpl://x/never-asked"); got == "" {
		t.Error("past the bound, a URI never asked for counts as not refused: it would be asked")
	}
}
