package mcp_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/contextd/contextd/internal/mcp"
	"github.com/contextd/contextd/internal/mcp/mcptest"
)

// manyEmpty returns a JSON array of first followed by n empty objects.
func manyEmpty(first string, n int) string {
	return "[" + first + strings.Repeat(",{}", n) + "]"
}

// manyURIs returns a JSON array of n resources.
func manyURIs(n int) string {
	var b strings.Builder
	b.WriteByte('[')
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"uri":"x://%d"}`, i)
	}
	b.WriteByte(']')
	return b.String()
}

// The go-sdk decodes a result whole into Go values that cost far more than
// their text: a 16 MiB read result of empty items took the daemon to
// 1.2 GB while it was decoded. A result over MaxResultValues keeps the
// entries that fit and says how many it did not read; one whose values lie
// outside its list fails its call.
func TestResultsOfTooManyValuesAreCutBeforeTheyAreDecoded(t *testing.T) {
	const n = 2 * mcp.MaxResultValues
	raw := &mcptest.RawServer{Results: map[string]string{
		"resources/read":           `{"contents":` + manyEmpty(`{"uri":"x://a","text":"alpha"}`, n) + `}`,
		"resources/list":           `{"resources":` + manyURIs(mcp.MaxResultValues/2+10_000) + `}`,
		"resources/templates/list": `{"resourceTemplates":[],"x":` + manyEmpty("{}", n) + `}`,
	}}
	sess, err := mcp.ConnectTransport(t.Context(), "raw", raw.Transport(t), &mcp.Options{MaxResources: n})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sess.Close() })

	items, err := sess.Read(t.Context(), "x://a")
	if err != nil {
		t.Fatal(err)
	}
	if len(items) > mcp.MaxResultValues/2+1 {
		t.Fatalf("read: %d items decoded, want at most %d", len(items), mcp.MaxResultValues/2+1)
	}
	if items[0].Text != "alpha" {
		t.Errorf("read: first item %+v, want the text", items[0])
	}
	if last := items[len(items)-1]; !strings.Contains(last.Error, "entries not read") {
		t.Errorf("read: last item %+v, want one saying what was not read", last)
	}

	list, err := sess.ListResources(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) > mcp.MaxResultValues/2 || len(list.Items) < mcp.MaxResultValues/4 || list.Items[0].URI != "x://0" {
		t.Errorf("list: %d items, want the first of them up to %d", len(list.Items), mcp.MaxResultValues/2)
	}
	if got := strings.Join(list.Problems, "; "); !strings.Contains(got, "entries not read") {
		t.Errorf("list problems %q, want one saying what was not read", got)
	}

	if _, err := sess.ListTemplates(t.Context()); err == nil || !strings.Contains(err.Error(), "JSON values") {
		t.Errorf("templates whose values lie outside the list: err %v, want the call refused", err)
	}
}

// The result of a call other than a read or a list (initialize here) is
// held to MaxReadValues: over it, the call fails undecoded.
func TestOtherResultsOfTooManyValuesFailTheirCall(t *testing.T) {
	raw := &mcptest.RawServer{Results: map[string]string{
		"initialize": `{"protocolVersion":"2025-06-18","capabilities":{"resources":{}},"serverInfo":{"name":"raw","version":"0","icons":` +
			manyEmpty("{}", 2*mcp.MaxReadValues) + `}}`,
	}}
	_, err := mcp.ConnectTransport(t.Context(), "raw", raw.Transport(t), nil)
	if err == nil || !strings.Contains(err.Error(), "JSON values") {
		t.Fatalf("initialize with %d values: err %v, want it refused undecoded", 2*mcp.MaxReadValues, err)
	}
}
