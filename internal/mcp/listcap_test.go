package mcp_test

import (
	"context"
	"fmt"
	"net/url"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/contextd/contextd/internal/mcp"
	"github.com/contextd/contextd/internal/mcp/mcptest"
	"github.com/contextd/contextd/internal/redact"
)

// endlessServer answers every resources/list and resources/templates/list
// page with perPage fresh entries and a fresh cursor, forever.
func endlessServer(perPage int) *mcpsdk.Server {
	srv := mcptest.NewServer(nil, nil)
	srv.AddReceivingMiddleware(func(next mcpsdk.MethodHandler) mcpsdk.MethodHandler {
		return func(ctx context.Context, method string, req mcpsdk.Request) (mcpsdk.Result, error) {
			page := func(cursor string) int { n, _ := strconv.Atoi(strings.TrimPrefix(cursor, "c")); return n }
			switch r := req.(type) {
			case *mcpsdk.ListResourcesRequest:
				n := page(r.Params.Cursor)
				res := &mcpsdk.ListResourcesResult{NextCursor: fmt.Sprintf("c%d", n+1)}
				for i := range perPage {
					res.Resources = append(res.Resources, &mcpsdk.Resource{URI: fmt.Sprintf("x://%d/%d", n, i), Name: "x"})
				}
				return res, nil
			case *mcpsdk.ListResourceTemplatesRequest:
				n := page(r.Params.Cursor)
				res := &mcpsdk.ListResourceTemplatesResult{NextCursor: fmt.Sprintf("c%d", n+1)}
				for i := range perPage {
					res.ResourceTemplates = append(res.ResourceTemplates, &mcpsdk.ResourceTemplate{URITemplate: fmt.Sprintf("x://%d/%d/{id}", n, i), Name: "x"})
				}
				return res, nil
			}
			return next(ctx, method, req)
		}
	})
	return srv
}

// A server listing without end (fresh entries, fresh cursors) cannot make
// the daemon hold more than the entries one server may have: the walk
// stops there and says so, by default too.
func TestListWalksStopAtTheEntryCap(t *testing.T) {
	const perPage = 500
	sess := mcptest.Connect(t, "s", endlessServer(perPage), nil)
	l, err := sess.ListResources(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Items) != mcp.DefaultMaxResources || !l.Capped || l.Complete || l.Pages != mcp.DefaultMaxResources/perPage ||
		!strings.Contains(l.Incomplete, "100000 entries") {
		t.Errorf("resources: %d items in %d pages, capped %v, complete %v, %q; want %d in %d pages, capped",
			len(l.Items), l.Pages, l.Capped, l.Complete, l.Incomplete, mcp.DefaultMaxResources, mcp.DefaultMaxResources/perPage)
	}
	tl, err := sess.ListTemplates(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(tl.Items) != mcp.DefaultMaxTemplates || !tl.Capped || tl.Pages != mcp.DefaultMaxTemplates/perPage {
		t.Errorf("templates: %d items in %d pages, capped %v; want %d in %d pages, capped", len(tl.Items), tl.Pages, tl.Capped, mcp.DefaultMaxTemplates, mcp.DefaultMaxTemplates/perPage)
	}

	small := mcptest.Connect(t, "s", endlessServer(100), &mcp.Options{MaxResources: 250, MaxTemplates: 100})
	if l, err := small.ListResources(t.Context()); err != nil || len(l.Items) != 250 || l.Pages != 3 || !l.Capped {
		t.Errorf("MaxResources 250: %d items in %d pages, capped %v, %v", len(l.Items), l.Pages, l.Capped, err)
	}
	// A page that fills the cap with more to come is capped too.
	if l, err := small.ListTemplates(t.Context()); err != nil || len(l.Items) != 100 || !l.Capped {
		t.Errorf("MaxTemplates 100: %d items, capped %v, %v", len(l.Items), l.Capped, err)
	}

	// The text the entries hold is capped too, in the middle of a page.
	const maxBytes = 10_000
	narrow := mcptest.Connect(t, "s", endlessServer(100), &mcp.Options{MaxResourceBytes: maxBytes})
	l, err = narrow.ListResources(t.Context())
	held := 0
	for _, d := range l.Items {
		held += d.TextBytes()
	}
	// Entries hold 8 to 10 bytes ("x://3/45" and the name "x").
	if err != nil || !l.Capped || l.Complete || held > maxBytes || held < maxBytes-10 || !strings.Contains(l.Incomplete, "10000 bytes") {
		t.Errorf("MaxResourceBytes %d: %d items holding %d bytes in %d pages, capped %v, %q, %v", maxBytes, len(l.Items), held, l.Pages, l.Capped, l.Incomplete, err)
	}
}

// A server listing entries with megabytes in every field cannot make the
// daemon keep them: text fields are cut (at a character boundary), and an
// entry whose URI or URI template is too long to be real is dropped.
func TestListedFieldsAreBounded(t *testing.T) {
	huge := strings.Repeat("é", 1<<19) // 1 MiB, two bytes a character
	srv := mcptest.NewServer(nil, nil)
	srv.AddReceivingMiddleware(func(next mcpsdk.MethodHandler) mcpsdk.MethodHandler {
		return func(ctx context.Context, method string, req mcpsdk.Request) (mcpsdk.Result, error) {
			switch req.(type) {
			case *mcpsdk.ListResourcesRequest:
				roles := make([]mcpsdk.Role, 100000)
				for i := range roles {
					roles[i] = "user"
				}
				return &mcpsdk.ListResourcesResult{Resources: []*mcpsdk.Resource{
					{URI: "x://big", Name: "n" + huge, Title: "t" + huge, Description: "d" + huge, MIMEType: "text/" + huge,
						Annotations: &mcpsdk.Annotations{Audience: roles, LastModified: huge}},
					{URI: "x://" + strings.Repeat("a", mcp.MaxURIBytes), Name: "long"},
					{URI: "x://ok", Name: "ok"},
				}}, nil
			case *mcpsdk.ListResourceTemplatesRequest:
				return &mcpsdk.ListResourceTemplatesResult{ResourceTemplates: []*mcpsdk.ResourceTemplate{
					{URITemplate: "x://t/{id}", Name: "n" + huge, Title: "t" + huge, Description: "d" + huge, MIMEType: huge},
					{URITemplate: "x://" + strings.Repeat("a", mcp.MaxURIBytes) + "{id}", Name: "long"},
				}}, nil
			}
			return next(ctx, method, req)
		}
	})
	sess := mcptest.Connect(t, "s", srv, nil)
	l, err := sess.ListResources(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Items) != 2 || l.Items[0].URI != "x://big" || l.Items[1].URI != "x://ok" || l.Rejected != 1 {
		t.Fatalf("resources: %d items, %d rejected (%q); want x://big and x://ok, the long URI rejected", len(l.Items), l.Rejected, l.Problems)
	}
	d := l.Items[0]
	for _, f := range []struct {
		name, v string
		max     int
	}{{"name", d.Name, mcp.MaxNameBytes}, {"title", d.Title, mcp.MaxNameBytes}, {"description", d.Description, mcp.MaxDescriptionBytes},
		{"mimeType", d.MIMEType, 256}} {
		if len(f.v) > f.max || len(f.v) < f.max/2 || !utf8.ValidString(f.v) {
			t.Errorf("%s: %d bytes (valid UTF-8: %v); want at most %d, cut at a character", f.name, len(f.v), utf8.ValidString(f.v), f.max)
		}
	}
	if d.LastModified != "" {
		t.Errorf("lastModified: %d bytes kept; want none (it is no time)", len(d.LastModified))
	}
	if len(d.Audience) > 4 {
		t.Errorf("audience: %d roles kept", len(d.Audience))
	}
	tl, err := sess.ListTemplates(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(tl.Items) != 1 || tl.Rejected != 1 {
		t.Fatalf("templates: %d items, %d rejected; want 1 and 1", len(tl.Items), tl.Rejected)
	}
	if tp := tl.Items[0]; len(tp.Name) > mcp.MaxNameBytes || len(tp.Title) > mcp.MaxNameBytes || len(tp.Description) > mcp.MaxDescriptionBytes || len(tp.MIMEType) > 256 {
		t.Errorf("template fields of %d, %d, %d, %d bytes", len(tp.Name), len(tp.Title), len(tp.Description), len(tp.MIMEType))
	}
}

// A server naming itself with megabytes cannot make every connect log, and
// every ListServers answer, carry them: its name and version are cut.
func TestServerInfoIsBounded(t *testing.T) {
	huge := strings.Repeat("é", 1<<19) // 1 MiB, two bytes a character
	srv := mcpsdk.NewServer(&mcpsdk.Implementation{Name: "n" + huge, Version: "v" + huge}, &mcpsdk.ServerOptions{
		Capabilities: &mcpsdk.ServerCapabilities{Resources: &mcpsdk.ResourceCapabilities{}}})
	sess := mcptest.Connect(t, "s", srv, nil)
	name, version, proto := sess.ServerInfo()
	for _, f := range []struct{ what, v string }{{"name", name}, {"version", version}} {
		if len(f.v) > mcp.MaxServerInfoBytes || len(f.v) < mcp.MaxServerInfoBytes/2 || !utf8.ValidString(f.v) {
			t.Errorf("%s: %d bytes (valid UTF-8: %v); want at most %d, cut at a character", f.what, len(f.v), utf8.ValidString(f.v), mcp.MaxServerInfoBytes)
		}
	}
	if proto == "" {
		t.Error("no protocol version")
	}
}

// The problems a list walk reports (shown by every ListServers and logged)
// quote a rejected entry's name cut as a listed name is.
func TestListProblemsAreBounded(t *testing.T) {
	huge := strings.Repeat("n", 3<<20)
	srv := mcptest.NewServer(nil, nil)
	srv.AddReceivingMiddleware(func(next mcpsdk.MethodHandler) mcpsdk.MethodHandler {
		return func(ctx context.Context, method string, req mcpsdk.Request) (mcpsdk.Result, error) {
			if _, ok := req.(*mcpsdk.ListResourcesRequest); ok {
				res := &mcpsdk.ListResourcesResult{}
				for range 5 {
					res.Resources = append(res.Resources, &mcpsdk.Resource{Name: huge})
				}
				return res, nil
			}
			return next(ctx, method, req)
		}
	})
	l, err := mcptest.Connect(t, "s", srv, nil).ListResources(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, p := range l.Problems {
		n += len(p)
	}
	if l.Rejected != 5 || len(l.Problems) == 0 || n > 5*(mcp.MaxNameBytes+100) {
		t.Errorf("%d rejected, %d problems of %d bytes in all; want 5 rejected, each problem under %d bytes", l.Rejected, len(l.Problems), n, mcp.MaxNameBytes+100)
	}
}

// A server handing out cursors of a megabyte cannot make a list walk hold
// them all: the walk remembers the cursors it followed by a hash, and
// quotes a repeated one cut. Before, each page's cursor stayed in memory
// until the walk ended (up to 1,000 pages of max_message_bytes).
func testLongCursorsAreNotKept(t *testing.T) {
	// The go-sdk caches list pages with 2026-07-28 (the default), not before.
	for _, proto := range []string{"", "2025-11-25"} {
		t.Run("protocol "+proto, func(t *testing.T) { testLongCursors(t, proto) })
	}
}

func testLongCursors(t *testing.T, proto string) {
	const pages, size = 60, 1 << 20
	var heap [2]uint64
	srv := mcptest.NewServer(nil, nil)
	srv.AddReceivingMiddleware(func(next mcpsdk.MethodHandler) mcpsdk.MethodHandler {
		return func(ctx context.Context, method string, req mcpsdk.Request) (mcpsdk.Result, error) {
			r, ok := req.(*mcpsdk.ListResourcesRequest)
			if !ok {
				return next(ctx, method, req)
			}
			n := 0
			if c := r.Params.Cursor; c != "" {
				n, _ = strconv.Atoi(c[:strings.IndexByte(c, 'c')])
			}
			if n == 10 || n == pages {
				var ms runtime.MemStats
				runtime.GC()
				runtime.ReadMemStats(&ms)
				heap[n/pages] = ms.HeapAlloc
			}
			cursor := fmt.Sprint(n+1) + strings.Repeat("c", size)
			if n == pages {
				cursor = r.Params.Cursor // repeated: the walk stops
			}
			return &mcpsdk.ListResourcesResult{Resources: []*mcpsdk.Resource{{URI: fmt.Sprintf("x://%d", n), Name: "x"}}, NextCursor: cursor}, nil
		}
	})
	l, err := mcptest.Connect(t, "s", srv, &mcp.Options{ProtocolVersion: proto}).ListResources(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Items) != pages+1 || !strings.Contains(l.Incomplete, "repeated cursor") || len(l.Incomplete) > 1024 {
		t.Fatalf("%d items, incomplete %.100q (%d bytes); want %d, a repeated cursor quoted in under 1 KiB", len(l.Items), l.Incomplete, len(l.Incomplete), pages+1)
	}
	if grew := int64(heap[1]) - int64(heap[0]); grew > (pages-10)*size/2 {
		t.Errorf("heap grew by %d MiB over %d pages of 1 MiB cursors; want the cursors not kept", grew>>20, pages-10)
	}
}

// A server name or version cut inside a secret ends with redact.Cut, so
// that the redactor masks the piece the cut left: cut bare, 16 of a
// 17-byte password reached ListServers.
func TestServerInfoCutInsideASecretIsMasked(t *testing.T) {
	const secret = "Misty-Books-Jade!"
	pad := strings.Repeat("n", mcp.MaxServerInfoBytes-10)
	srv := mcpsdk.NewServer(&mcpsdk.Implementation{Name: pad + secret, Version: pad + "v" + secret}, &mcpsdk.ServerOptions{
		Capabilities: &mcpsdk.ServerCapabilities{Resources: &mcpsdk.ResourceCapabilities{}}})
	sess := mcptest.Connect(t, "s", srv, nil)
	name, version, _ := sess.ServerInfo()
	red := redact.New(secret)
	for _, v := range []string{name, version} {
		if !strings.HasSuffix(v, redact.Cut) {
			t.Errorf("%q: cut without the mark", v)
		}
		if got := red.String(v); strings.Contains(got, secret[:4]) {
			t.Errorf("masked, %q still shows a piece of the secret", got[len(pad)-4:])
		}
	}
}

// A URI holding a control character (a NUL, a newline) is no URI: the entry
// is rejected, the others kept.
func TestURIsWithControlCharactersAreRejected(t *testing.T) {
	srv := mcptest.NewServer(nil, nil)
	srv.AddReceivingMiddleware(func(next mcpsdk.MethodHandler) mcpsdk.MethodHandler {
		return func(ctx context.Context, method string, req mcpsdk.Request) (mcpsdk.Result, error) {
			switch req.(type) {
			case *mcpsdk.ListResourcesRequest:
				return &mcpsdk.ListResourcesResult{Resources: []*mcpsdk.Resource{
					{URI: "x://a\x00b", Name: "nul"}, {URI: "x://a\nb", Name: "newline"}, {URI: "x://ok", Name: "ok\x00name"},
				}}, nil
			case *mcpsdk.ListResourceTemplatesRequest:
				return &mcpsdk.ListResourceTemplatesResult{ResourceTemplates: []*mcpsdk.ResourceTemplate{
					{URITemplate: "x://t/\x00{id}", Name: "nul"}, {URITemplate: "x://t/{id}", Name: "ok"},
				}}, nil
			}
			return next(ctx, method, req)
		}
	})
	sess := mcptest.Connect(t, "s", srv, nil)
	l, err := sess.ListResources(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Items) != 1 || l.Items[0].URI != "x://ok" || l.Rejected != 2 || !strings.Contains(strings.Join(l.Problems, "|"), "control character") {
		t.Errorf("resources: %d items, %d rejected (%q); want x://ok, two rejected", len(l.Items), l.Rejected, l.Problems)
	}
	tl, err := sess.ListTemplates(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(tl.Items) != 1 || tl.Items[0].URITemplate != "x://t/{id}" || tl.Rejected != 1 {
		t.Errorf("templates: %d items, %d rejected; want x://t/{id}, one rejected", len(tl.Items), tl.Rejected)
	}
}

// lastModified is kept when it reads as an ISO 8601 time, and dropped
// otherwise: a host shows it as a time.
func TestLastModifiedIsKeptOnlyAsATime(t *testing.T) {
	values := map[string]bool{
		"2026-12-01T10:00:00Z": true, "2026-12-01T10:00:00.123+02:00": true, "2026-12-01": true, "2026-12-01T10:00:00": true,
		"yesterday": false, "sk-live-planted-0123456789": false, "2026-12-01T10:00:00Z\x1b]0;title\x07": false, "Tue, 01 Dec 2026 10:00:00 GMT": false,
	}
	srv := mcptest.NewServer(nil, nil)
	srv.AddReceivingMiddleware(func(next mcpsdk.MethodHandler) mcpsdk.MethodHandler {
		return func(ctx context.Context, method string, req mcpsdk.Request) (mcpsdk.Result, error) {
			if _, ok := req.(*mcpsdk.ListResourcesRequest); ok {
				var rs []*mcpsdk.Resource
				for v := range values {
					rs = append(rs, &mcpsdk.Resource{URI: "x://" + url.PathEscape(v), Name: "n", Annotations: &mcpsdk.Annotations{LastModified: v}})
				}
				return &mcpsdk.ListResourcesResult{Resources: rs}, nil
			}
			return next(ctx, method, req)
		}
	})
	l, err := mcptest.Connect(t, "s", srv, nil).ListResources(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Items) != len(values) {
		t.Fatalf("%d items; want %d", len(l.Items), len(values))
	}
	for _, d := range l.Items {
		v, _ := url.PathUnescape(strings.TrimPrefix(d.URI, "x://"))
		if keep := values[v]; keep != (d.LastModified == v) || !keep && d.LastModified != "" {
			t.Errorf("lastModified %q kept as %q; want it kept: %v", v, d.LastModified, keep)
		}
	}
}
