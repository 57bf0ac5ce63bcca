package mcp_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/contextd/contextd/internal/mcp"
	"github.com/contextd/contextd/internal/mcp/mcptest"
	"github.com/contextd/contextd/internal/resource"
)

func rawSession(t *testing.T, results map[string]string) *mcp.Session {
	t.Helper()
	srv := &mcptest.RawServer{Results: results}
	sess, err := mcp.ConnectTransport(t.Context(), "raw", srv.Transport(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sess.Close() })
	return sess
}

func TestReadSurvivesOneBadItem(t *testing.T) {
	// "AAEC/w==" is 00 01 02 ff; "AAEC_w" is the same in the URL-safe
	// alphabet without padding; the MIME-style one has a line break.
	sess := rawSession(t, map[string]string{"resources/read": `{"contents":[
		{"uri":"x://std","blob":"AAEC/w=="},
		{"uri":"x://url","blob":"AAEC_w"},
		{"uri":"x://mime","blob":"AAEC\r\n/w=="},
		{"uri":"x://garbage","mimeType":"image/png","blob":"not base64 at all!"},
		{"uri":"x://surrogate","mimeType":"text/plain","text":"a\ud800b"},
		{"uri":"x://empty","text":""},
		{"uri":"x://empty-blob","blob":""}
	]}`})
	got, err := sess.Read(t.Context(), "x://any")
	if err != nil {
		t.Fatalf("Read failed whole: %v", err)
	}
	bytes := []byte{0, 1, 2, 255}
	want := []resource.Content{
		{URI: "x://std", Blob: bytes, IsBlob: true},
		{URI: "x://url", Blob: bytes, IsBlob: true},
		{URI: "x://mime", Blob: bytes, IsBlob: true},
		{URI: "x://garbage", MIMEType: "image/png", IsBlob: true},
		{URI: "x://surrogate", MIMEType: "text/plain", Text: "a\uFFFDb"},
		{URI: "x://empty"},
		{URI: "x://empty-blob", Blob: []byte{}, IsBlob: true},
	}
	if len(got) == len(want) {
		if !strings.HasPrefix(got[3].Error, "blob is not base64") {
			t.Errorf("garbage item Error = %q, want a base64 error", got[3].Error)
		}
		got[3].Error = ""
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("contents (-want +got):\n%s", diff)
	}
}

func TestListSurvivesMalformedEntries(t *testing.T) {
	sess := rawSession(t, map[string]string{"resources/list": `{"resources":[
		{"uri":"x://ok","name":"ok"},
		{"uri":"x://bad-annotations","name":"ann","annotations":{"priority":"high"}},
		{"uri":42,"name":"numeric uri"},
		{"uri":"x://bad-size","name":"size","size":"big","description":"kept"}
	]}`})
	l, err := sess.ListResources(t.Context())
	if err != nil {
		t.Fatalf("ListResources failed whole: %v", err)
	}
	var uris []string
	for _, d := range l.Items {
		uris = append(uris, d.URI)
	}
	if diff := cmp.Diff([]string{"x://ok", "x://bad-annotations", "x://bad-size"}, uris); diff != "" {
		t.Errorf("kept (-want +got):\n%s", diff)
	}
	if len(l.Items) == 3 && l.Items[2].Description != "kept" {
		t.Errorf("repairing the size dropped other fields: %+v", l.Items[2])
	}
	if l.Rejected != 1 || len(l.Problems) != 1 || !strings.Contains(l.Problems[0], `entry 2: no uri (name "numeric uri")`) {
		t.Errorf("Rejected=%d Problems=%q; want entry 2 reported", l.Rejected, l.Problems)
	}
}

func TestURIsAreKeptByteForByte(t *testing.T) {
	uris := []string{"file:///notes/a b.md", "x://dir/%41%2f", "x://café/ü#section-2", "x://q?a=1&b=%20"}
	list := `{"resources":[`
	for i, u := range uris {
		if i > 0 {
			list += ","
		}
		b, _ := json.Marshal(u)
		list += `{"uri":` + string(b) + `,"name":"n"}`
	}
	list += `]}`
	srv := &mcptest.RawServer{Results: map[string]string{
		"resources/list": list,
		"resources/read": `{"contents":[{"uri":"echo","text":"ok"}]}`,
	}}
	sess, err := mcp.ConnectTransport(t.Context(), "raw", srv.Transport(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	l, err := sess.ListResources(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, d := range l.Items {
		got = append(got, d.URI)
		if _, err := sess.Read(t.Context(), d.URI); err != nil {
			t.Fatal(err)
		}
	}
	if diff := cmp.Diff(uris, got); diff != "" {
		t.Errorf("listed URIs (-want +got):\n%s", diff)
	}
	var sent []string
	for _, r := range srv.Requests() {
		if r.Method == "resources/read" {
			var p struct{ URI string }
			if err := json.Unmarshal(r.Params, &p); err != nil {
				t.Fatal(err)
			}
			sent = append(sent, p.URI)
		}
	}
	if diff := cmp.Diff(uris, sent); diff != "" {
		t.Errorf("URIs sent in resources/read (-want +got):\n%s", diff)
	}
}

func TestEveryProtocolVersionLists(t *testing.T) {
	for _, v := range []string{"2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"} {
		t.Run(v, func(t *testing.T) {
			srv := mcptest.NewServer(map[string]string{"doc://a": "alpha"}, nil)
			sess, err := mcptest.Dial(t, "s", srv)(t.Context(), &mcp.Options{ProtocolVersion: v})
			if err != nil {
				t.Fatal(err)
			}
			if _, _, got := sess.ServerInfo(); got != v {
				t.Errorf("negotiated %q, want %q", got, v)
			}
			l, err := sess.ListResources(t.Context())
			if err != nil || len(l.Items) != 1 {
				t.Fatalf("ListResources = %+v, %v", l, err)
			}
			c, err := sess.Read(t.Context(), "doc://a")
			if err != nil || c[0].Text != "alpha" {
				t.Fatalf("Read = %+v, %v", c, err)
			}
		})
	}
}
