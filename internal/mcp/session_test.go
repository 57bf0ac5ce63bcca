package mcp_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/contextd/contextd/internal/mcp"
	"github.com/contextd/contextd/internal/mcp/mcptest"
	"github.com/contextd/contextd/internal/resource"
)

func TestListResourcesWalksEveryPage(t *testing.T) {
	docs := map[string]string{}
	for i := range 7 {
		docs[fmt.Sprintf("test://doc/%02d", i)] = fmt.Sprintf("body %d", i)
	}
	var rec mcptest.Recorder
	srv := mcptest.NewServer(docs, &mcpsdk.ServerOptions{PageSize: 3})
	srv.AddReceivingMiddleware(rec.Middleware())
	sess := mcptest.Connect(t, "s", srv, nil)

	l, err := sess.ListResources(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if !l.Complete || l.Pages != 3 {
		t.Errorf("Complete=%v Pages=%d, want true 3", l.Complete, l.Pages)
	}
	var got []string
	for _, d := range l.Items {
		got = append(got, d.URI)
		if d.Server != "s" {
			t.Errorf("%s: Server=%q, want s", d.URI, d.Server)
		}
	}
	want := []string{"test://doc/00", "test://doc/01", "test://doc/02", "test://doc/03", "test://doc/04", "test://doc/05", "test://doc/06"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("URIs (-want +got):\n%s", diff)
	}
	if n := strings.Count(strings.Join(rec.Methods(), " "), "resources/list"); n != 3 {
		t.Errorf("server saw %d resources/list requests, want 3", n)
	}
}

// cursorServer answers resources/list with the given pages; pages[i] holds
// the URIs and the nextCursor to send.
func cursorServer(t *testing.T, pages []struct {
	uris []string
	next string
}) *mcpsdk.Server {
	srv := mcptest.NewServer(nil, nil)
	calls := 0
	srv.AddReceivingMiddleware(func(next mcpsdk.MethodHandler) mcpsdk.MethodHandler {
		return func(ctx context.Context, method string, req mcpsdk.Request) (mcpsdk.Result, error) {
			if method != "resources/list" {
				return next(ctx, method, req)
			}
			p := pages[min(calls, len(pages)-1)]
			calls++
			res := &mcpsdk.ListResourcesResult{NextCursor: p.next}
			for _, u := range p.uris {
				res.Resources = append(res.Resources, &mcpsdk.Resource{URI: u, Name: u})
			}
			return res, nil
		}
	})
	return srv
}

func TestListResourcesStopsOnRepeatedCursor(t *testing.T) {
	srv := cursorServer(t, []struct {
		uris []string
		next string
	}{
		{[]string{"a://1"}, "c1"},
		{[]string{"a://2", "a://1"}, "c2"},
		{[]string{"a://3"}, "c1"}, // back to c1: would loop forever
	})
	sess := mcptest.Connect(t, "s", srv, nil)
	l, err := sess.ListResources(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if l.Complete || !strings.Contains(l.Incomplete, "repeated cursor") {
		t.Errorf("Complete=%v Incomplete=%q, want false and a repeated-cursor reason", l.Complete, l.Incomplete)
	}
	if l.Pages != 3 {
		t.Errorf("Pages=%d, want 3", l.Pages)
	}
	var got []string
	for _, d := range l.Items {
		got = append(got, d.URI)
	}
	if diff := cmp.Diff([]string{"a://1", "a://2", "a://3"}, got); diff != "" {
		t.Errorf("URIs (duplicates dropped) (-want +got):\n%s", diff)
	}
	if l.Duplicates != 1 || len(l.Problems) != 1 || !strings.Contains(l.Problems[0], `page 2: "a://1" listed again`) {
		t.Errorf("Duplicates=%d Problems=%q; want the repeat on page 2 reported", l.Duplicates, l.Problems)
	}
}

func TestListResourcesKeepsValidEntriesAndReportsMalformed(t *testing.T) {
	srv := cursorServer(t, []struct {
		uris []string
		next string
	}{
		{[]string{"a://1", "", "a://2"}, ""},
	})
	sess := mcptest.Connect(t, "s", srv, nil)
	l, err := sess.ListResources(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Items) != 2 || l.Rejected != 1 || !l.Complete || len(l.Problems) != 1 || !strings.Contains(l.Problems[0], "page 1, entry 1: no uri") {
		t.Errorf("got %d items, Rejected=%d, Problems=%q; want 2 kept and entry 1 of page 1 reported", len(l.Items), l.Rejected, l.Problems)
	}
}

func TestListResourcesPageCap(t *testing.T) {
	pages := make([]struct {
		uris []string
		next string
	}, 50)
	for i := range pages {
		pages[i].uris = []string{fmt.Sprintf("a://%d", i)}
		pages[i].next = fmt.Sprintf("c%d", i) // never repeats, never ends
	}
	sess := mcptest.Connect(t, "s", cursorServer(t, pages), &mcp.Options{MaxPages: 5})
	l, err := sess.ListResources(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if l.Complete || l.Pages != 5 || len(l.Items) != 5 || !strings.Contains(l.Incomplete, "page cap") {
		t.Errorf("got Complete=%v Pages=%d Items=%d Incomplete=%q; want false 5 5 page cap", l.Complete, l.Pages, len(l.Items), l.Incomplete)
	}
}

func TestNoResourcesCapabilityMeansNoResourceRequests(t *testing.T) {
	var rec mcptest.Recorder
	srv := mcpsdk.NewServer(&mcpsdk.Implementation{Name: "tools-only", Version: "v0"},
		&mcpsdk.ServerOptions{Capabilities: &mcpsdk.ServerCapabilities{Tools: &mcpsdk.ToolCapabilities{}}})
	srv.AddReceivingMiddleware(rec.Middleware())
	sess := mcptest.Connect(t, "tools", srv, nil)

	if sess.Capabilities().Resources {
		t.Fatal("Capabilities().Resources = true for a server that did not declare it")
	}
	l, err := sess.ListResources(t.Context())
	if err != nil || !l.Complete || len(l.Items) != 0 || l.Pages != 0 {
		t.Errorf("ListResources = %+v, %v; want empty, complete, 0 pages, nil", l, err)
	}
	tl, err := sess.ListTemplates(t.Context())
	if err != nil || !tl.Complete || len(tl.Items) != 0 {
		t.Errorf("ListTemplates = %+v, %v; want empty and complete", tl, err)
	}
	if _, err := sess.Read(t.Context(), "file:///x"); !errors.Is(err, mcp.ErrNoResources) {
		t.Errorf("Read error = %v, want ErrNoResources", err)
	}
	if err := sess.Subscribe(t.Context(), "file:///x"); !errors.Is(err, mcp.ErrNoResources) {
		t.Errorf("Subscribe error = %v, want ErrNoResources", err)
	}
	for _, m := range rec.Methods() {
		if strings.HasPrefix(m, "resources/") {
			t.Errorf("server received %q although it declared no resources capability", m)
		}
	}
}

func TestReadReturnsEveryContentItem(t *testing.T) {
	srv := mcptest.NewServer(nil, nil)
	srv.AddResource(&mcpsdk.Resource{URI: "multi://x", Name: "x"},
		func(context.Context, *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
			return &mcpsdk.ReadResourceResult{Contents: []*mcpsdk.ResourceContents{
				{URI: "multi://x#a", MIMEType: "text/plain", Text: "hello"},
				{URI: "multi://x#b", Blob: []byte{0, 1, 2, 255}},
				{URI: "multi://x#c", Text: "no mime"},
			}}, nil
		})
	sess := mcptest.Connect(t, "s", srv, nil)
	got, err := sess.Read(t.Context(), "multi://x")
	if err != nil {
		t.Fatal(err)
	}
	want := []resource.Content{
		{URI: "multi://x#a", MIMEType: "text/plain", Text: "hello"},
		{URI: "multi://x#b", Blob: []byte{0, 1, 2, 255}, IsBlob: true},
		{URI: "multi://x#c", Text: "no mime"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("contents (-want +got):\n%s", diff)
	}
}

func TestReadNotFoundIsTyped(t *testing.T) {
	for _, code := range []int64{-32002, -32602} {
		t.Run(fmt.Sprint(code), func(t *testing.T) {
			srv := mcptest.NewServer(map[string]string{"a://1": "x"}, nil)
			srv.AddReceivingMiddleware(func(next mcpsdk.MethodHandler) mcpsdk.MethodHandler {
				return func(ctx context.Context, method string, req mcpsdk.Request) (mcpsdk.Result, error) {
					if method == "resources/read" {
						return nil, &jsonrpc.Error{Code: code, Message: "Resource not found"}
					}
					return next(ctx, method, req)
				}
			})
			sess := mcptest.Connect(t, "s", srv, nil)
			got, err := sess.Read(t.Context(), "a://missing")
			var nf *mcp.NotFoundError
			if !errors.As(err, &nf) || nf.URI != "a://missing" || nf.Code != code {
				t.Fatalf("Read = %v, %v; want *NotFoundError for a://missing with code %d", got, err, code)
			}
		})
	}
}

// A server answering reads (or lists) with errors of megabytes cannot put
// them in what callers see: the message is cut, and the code kept.
func TestServerErrorMessagesAreBounded(t *testing.T) {
	huge := strings.Repeat("é", 4<<20) // 8 MiB
	srv := mcptest.NewServer(map[string]string{"a://1": "x"}, nil)
	srv.AddReceivingMiddleware(func(next mcpsdk.MethodHandler) mcpsdk.MethodHandler {
		return func(ctx context.Context, method string, req mcpsdk.Request) (mcpsdk.Result, error) {
			switch method {
			case "resources/read":
				return nil, &jsonrpc.Error{Code: -32002, Message: huge}
			case "resources/list":
				return nil, &jsonrpc.Error{Code: -32603, Message: huge, Data: json.RawMessage(`"` + huge + `"`)}
			}
			return next(ctx, method, req)
		}
	})
	sess := mcptest.Connect(t, "s", srv, nil)
	_, err := sess.Read(t.Context(), "a://1")
	var nf *mcp.NotFoundError
	if !errors.As(err, &nf) || nf.Code != -32002 {
		t.Errorf("Read: %v; want *NotFoundError with code -32002", err)
	}
	_, lerr := sess.ListResources(t.Context())
	for _, e := range []error{err, lerr} {
		if e == nil || len(e.Error()) > mcp.MaxErrorMessageBytes+200 || !utf8.ValidString(e.Error()) {
			t.Errorf("error of %d bytes (valid UTF-8: %v); want at most about %d", len(fmt.Sprint(e)), utf8.ValidString(fmt.Sprint(e)), mcp.MaxErrorMessageBytes)
		}
	}
	var we *jsonrpc.Error
	if errors.As(lerr, &we) && len(we.Data) > mcp.MaxErrorMessageBytes {
		t.Errorf("list error keeps %d bytes of data", len(we.Data))
	}
}

func TestTemplatesMethodNotFoundMeansNoTemplates(t *testing.T) {
	srv := mcptest.NewServer(map[string]string{"a://1": "x"}, nil)
	srv.AddReceivingMiddleware(func(next mcpsdk.MethodHandler) mcpsdk.MethodHandler {
		return func(ctx context.Context, method string, req mcpsdk.Request) (mcpsdk.Result, error) {
			if method == "resources/templates/list" {
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "Method not found"}
			}
			return next(ctx, method, req)
		}
	})
	sess := mcptest.Connect(t, "s", srv, nil)
	tl, err := sess.ListTemplates(t.Context())
	if err != nil || !tl.Complete || len(tl.Items) != 0 {
		t.Errorf("ListTemplates = %+v, %v; want empty, complete, no error", tl, err)
	}
	if l, err := sess.ListResources(t.Context()); err != nil || len(l.Items) != 1 {
		t.Errorf("session unusable after -32601: %+v, %v", l, err)
	}
}
