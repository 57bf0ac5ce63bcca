package mcp_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/contextd/contextd/internal/cputime"
	"github.com/contextd/contextd/internal/mcp"
	"github.com/contextd/contextd/internal/mcp/mcptest"
)

// repeatJSON returns a JSON array of n copies of unit.
func repeatJSON(unit string, n int) string {
	return "[" + strings.TrimSuffix(strings.Repeat(unit+",", n), ",") + "]"
}

// A server's _meta (on a read result, its content items, a list result and
// its entries) and a read's inputRequests are decoded by the go-sdk into
// interface values, which cost far more than their text and than the same
// values in a typed field: a 0.5 MB read result whose item's _meta held
// 261,000 empty arrays took about 58 MB once decoded. contextd reads none
// of them, so they are dropped before anything decodes them, whatever they
// hold, and the read keeps its text (before, the read failed: its values
// passed MaxReadValues). BenchmarkReadWithHeavyMeta measures the memory.
func TestUnreadMetaIsDroppedBeforeItIsDecoded(t *testing.T) {
	const n = 60_000
	for _, unit := range []string{`[]`, `{}`, `""`, `1`} {
		t.Run(unit, func(t *testing.T) {
			heavy := repeatJSON(unit, n)
			raw := &mcptest.RawServer{Results: map[string]string{
				"resources/read": `{"_meta":{"a":` + heavy + `},"inputRequests":{"r":{"method":"elicitation/create","params":{"message":"m","requestedSchema":{"x":` + heavy + `}}}},` +
					`"contents":[{"uri":"x://a","text":"alpha","_meta":{"b":` + heavy + `}},{"uri":"x://a","\u005fmeta":{"c":` + heavy + `},"text":"beta"}]}`,
			}}
			sess, err := mcp.ConnectTransport(t.Context(), "raw", raw.Transport(t), nil)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { sess.Close() })

			items, err := sess.Read(t.Context(), "x://a")
			if err != nil {
				t.Fatal(err)
			}
			if len(items) != 2 || items[0].Text != "alpha" || items[1].Text != "beta" || items[0].Error != "" {
				t.Fatalf("read: %+v, want the two texts", items)
			}
		})
	}
}

// A list page's entries may carry _meta of any size without costing the
// entries: before it was dropped, 10,000 entries with 100 values of _meta
// each passed MaxResultValues, and the page was cut to the entries that fit.
func TestListEntriesKeepTheirFieldsWithoutTheirMeta(t *testing.T) {
	const entries = 10_000
	for _, unit := range []string{`[]`, `{}`, `""`, `1`} {
		t.Run(unit, func(t *testing.T) {
			meta := repeatJSON(unit, 100)
			var b strings.Builder
			b.WriteString(`{"_meta":{"x":` + meta + `},"resources":[`)
			for i := range entries {
				if i > 0 {
					b.WriteByte(',')
				}
				fmt.Fprintf(&b, `{"uri":"x://%d","name":"n%d","_meta":{"m":%s},"description":"about %d","mimeType":"text/plain","annotations":{"audience":["user"],"priority":0.5}}`, i, i, meta, i)
			}
			b.WriteString(`]}`)
			raw := &mcptest.RawServer{Results: map[string]string{"resources/list": b.String()}}
			sess, err := mcp.ConnectTransport(t.Context(), "raw", raw.Transport(t), nil)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { sess.Close() })
			list, err := sess.ListResources(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			if len(list.Items) != entries || len(list.Problems) != 0 {
				t.Fatalf("listed %d entries, problems %q; want all %d", len(list.Items), list.Problems, entries)
			}
			last := list.Items[entries-1]
			if last.URI != fmt.Sprintf("x://%d", entries-1) || last.Name != fmt.Sprintf("n%d", entries-1) || last.Description != fmt.Sprintf("about %d", entries-1) ||
				last.MIMEType != "text/plain" || last.Priority != 0.5 || len(last.Audience) != 1 {
				t.Errorf("last entry %+v, want its fields as sent", last)
			}
		})
	}
}

// Legitimate large results are untouched by the bounds on decoded values: a
// 4 MB text resource reads whole, and a 10,000-entry page of ordinary
// descriptors lists whole (the list test above covers the page).
func TestALargeTextResourceReadsWhole(t *testing.T) {
	text := strings.Repeat(`0123456789abcdef \u00e9 \"_meta\" `, 4<<20/32) // JSON, with escapes
	raw := &mcptest.RawServer{Results: map[string]string{
		"resources/read": `{"contents":[{"uri":"x://big","mimeType":"text/plain","text":"` + text + `","_meta":{"k":"v"}}]}`,
	}}
	sess, err := mcp.ConnectTransport(t.Context(), "raw", raw.Transport(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sess.Close() })
	items, err := sess.Read(t.Context(), "x://big")
	if err != nil {
		t.Fatal(err)
	}
	want := strings.ReplaceAll(strings.ReplaceAll(text, `\u00e9`, "é"), `\"`, `"`)
	if len(items) != 1 || items[0].Text != want || items[0].MIMEType != "text/plain" {
		t.Fatalf("read %d items (first %d bytes), want one of %d bytes", len(items), len(items[0].Text), len(want))
	}
}

// BenchmarkReadWithHeavyMeta reads a result whose one item's _meta holds
// 30,000 values of each kind (within MaxReadValues, so the value bound alone
// lets it through): B/op is what one read allocates; cpu-ns/op the
// process's CPU time per read.
func BenchmarkReadWithHeavyMeta(b *testing.B) {
	for _, unit := range []string{`[]`, `{}`, `""`, `1`} {
		b.Run(unit, func(b *testing.B) {
			raw := &mcptest.RawServer{Results: map[string]string{
				"resources/read": `{"contents":[{"uri":"x://a","text":"alpha","_meta":{"b":` + repeatJSON(unit, 30_000) + `}}]}`,
			}}
			sess, err := mcp.ConnectTransport(b.Context(), "raw", raw.Transport(b), nil)
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { sess.Close() })
			b.ReportAllocs()
			cpu0 := cputime.Used()
			for b.Loop() {
				if items, err := sess.Read(b.Context(), "x://a"); err != nil || len(items) != 1 || items[0].Text != "alpha" {
					b.Fatalf("read: %+v, %v", items, err)
				}
			}
			b.ReportMetric(float64(cputime.Used()-cpu0)/float64(b.N), "cpu-ns/op")
		})
	}
}

// An initialize result's _meta, experimental capabilities and extensions
// are decoded by the go-sdk into interface values (and dropped by contextd
// once decoded): they are dropped before, so they cost a connect nothing
// and do not count against MaxReadValues, while the server's name stays.
func TestInitializeDropsUnreadMembersBeforeTheyAreDecoded(t *testing.T) {
	heavy := repeatJSON(`[]`, 50_000)
	raw := &mcptest.RawServer{Results: map[string]string{
		"initialize": `{"protocolVersion":"2025-06-18","_meta":{"x":` + heavy + `},"capabilities":{"resources":{},"experimental":{"x":` + heavy +
			`},"extensions":{"y":` + heavy + `}},"serverInfo":{"name":"raw","version":"7"}}`,
	}}
	sess, err := mcp.ConnectTransport(t.Context(), "raw", raw.Transport(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sess.Close() })
	if name, version, _ := sess.ServerInfo(); name != "raw" || version != "7" {
		t.Errorf("server info %q %q, want raw 7", name, version)
	}
}

// BenchmarkReadLargeTextWithMeta reads a 4 MB text whose result carries a
// small _meta (as go-sdk servers put their serverInfo on every result on
// 2026-07-28 sessions), so the result is rewritten before it is decoded:
// the cost of dropping _meta for an ordinary large read.
func BenchmarkReadLargeTextWithMeta(b *testing.B) {
	text := strings.Repeat("0123456789abcdef lorem ipsum, dolor. ", 4<<20/37)
	raw := &mcptest.RawServer{Results: map[string]string{
		"resources/read": `{"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"s","version":"1"}},"contents":[{"uri":"x://big","mimeType":"text/plain","text":"` + text + `","_meta":{"k":"v"}}]}`,
	}}
	sess, err := mcp.ConnectTransport(b.Context(), "raw", raw.Transport(b), nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { sess.Close() })
	b.ReportAllocs()
	b.SetBytes(int64(len(text)))
	cpu0 := cputime.Used()
	for b.Loop() {
		if items, err := sess.Read(b.Context(), "x://big"); err != nil || len(items) != 1 || len(items[0].Text) != len(text) {
			b.Fatalf("read: %d items, %v", len(items), err)
		}
	}
	b.ReportMetric(float64(cputime.Used()-cpu0)/float64(b.N), "cpu-ns/op")
}
