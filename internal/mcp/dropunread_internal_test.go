package mcp

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

func TestDropUnread(t *testing.T) {
	for _, c := range []struct{ method, in, want string }{
		{"resources/read", `{"contents":[{"uri":"a","text":"t","_meta":{"x":[]}}, {"_meta":1,"uri":"b"} ,{"uri":"c"}],"_meta":{},"inputRequests":{},"ttlMs":5}`,
			`{"contents":[{"uri":"a","text":"t"}, {"uri":"b"} ,{"uri":"c"}],"ttlMs":5}`},
		// An escaped name is the same name; another case is another name
		// (the go-sdk's decoder is case-sensitive); text is not a member.
		{"resources/read", `{"contents":[{"uri":"a","\u005fmeta":[],"_META":[],"text":"\"_meta\":[]"}]}`,
			`{"contents":[{"uri":"a","_META":[],"text":"\"_meta\":[]"}]}`},
		{"resources/list", `{"resources":[{"uri":"a","_meta":{}}],"inputRequests":{}}`, `{"resources":[{"uri":"a"}],"inputRequests":{}}`},
		{"resources/templates/list", `{"resourceTemplates":[{"uriTemplate":"a/{x}","_meta":{}}]}`, `{"resourceTemplates":[{"uriTemplate":"a/{x}"}]}`},
		{"", `{"_meta":{"a":[],"io.modelcontextprotocol/serverInfo":{"name":"n"}},"capabilities":{"resources":{},"experimental":{"x":[]},"extensions":{}}}`,
			`{"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"n"}},"capabilities":{"resources":{}}}`},
		// Nothing to drop, or not an object: as it is.
		{"resources/read", `{"contents":[{"uri":"a","text":"\u00e9"}]}`, `{"contents":[{"uri":"a","text":"\u00e9"}]}`},
		{"resources/read", `[{"_meta":{}}]`, `[{"_meta":{}}]`},
		{"resources/read", `{"contents":{"_meta":{}}}`, `{"contents":{"_meta":{}}}`},
	} {
		got := dropUnread(json.RawMessage(c.in), c.method)
		if string(got) != c.want {
			t.Errorf("%s %s:\n got %s\nwant %s", c.method, c.in, got, c.want)
		}
	}
}

// A list of many entries none of which has _meta is scanned without an
// allocation per entry (a hostile result may hold millions).
func TestDropUnreadAllocatesNothingPerEntry(t *testing.T) {
	raw := []byte(`{"contents":[{"uri":"a","text":"\u00e9"}` + strings.Repeat(`,{"uri":"a","text":"b"}`, 100_000) + `]}`)
	if n := testing.AllocsPerRun(3, func() {
		if !bytes.Equal(dropUnread(raw, "resources/read"), raw) {
			t.Fatal("changed")
		}
	}); n > 4 {
		t.Errorf("%v allocations for 100,001 entries", n)
	}
}
