package engine_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/contextd/contextd/internal/engine"
	"github.com/contextd/contextd/internal/mcp/mcptest"
	"github.com/contextd/contextd/internal/resource"
	"github.com/contextd/contextd/internal/selector"
)

// A narrow filter must find its matches even when they rank far below the
// 100 candidates each retrieval list keeps.
func TestFiltersFindMatchesBeyondThePool(t *testing.T) {
	srv := mcptest.NewServer(nil, &mcpsdk.ServerOptions{PageSize: 500})
	for i := range 250 {
		mcptest.AddText(srv, fmt.Sprintf("doc://notes/%03d", i), fmt.Sprintf("architecture notes %d", i), "architecture")
	}
	srv.AddResource(&mcpsdk.Resource{URI: "src://main.go", Name: "main.go", Description: "entry point", MIMEType: "text/x-go; charset=utf-8"},
		func(_ context.Context, req *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
			return &mcpsdk.ReadResourceResult{Contents: []*mcpsdk.ResourceContents{{URI: req.Params.URI, Text: "package main"}}}, nil
		})
	eng := newEngine(t, "", map[string]*mcpsdk.Server{"s": srv}, 0)

	for _, tc := range []struct {
		name   string
		filter engine.Filter
		want   int
	}{
		{"mime", engine.Filter{MIMETypes: []string{"text/x-go"}}, 1},
		{"prefix", engine.Filter{URIPrefixes: []string{"src://"}}, 1},
		{"wildcard", engine.Filter{MIMETypes: []string{"TEXT/*"}}, 10},
		{"parameters ignored", engine.Filter{MIMETypes: []string{"text/x-go; charset=utf-8"}}, 1},
		{"any type", engine.Filter{MIMETypes: []string{"*/*"}}, 10},
		{"nothing matches", engine.Filter{MIMETypes: []string{"image/png"}}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := eng.Search(t.Context(), engine.SearchRequest{Query: "architecture notes", Filter: tc.filter})
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != tc.want {
				t.Fatalf("%d results, want %d: %+v", len(got), tc.want, got)
			}
			if tc.want == 1 && got[0].URI != "src://main.go" {
				t.Errorf("result %q, want src://main.go", got[0].URI)
			}
		})
	}
	for _, bad := range []string{"markdown", "*/markdown", "text/", "", "text/mark*", "text/**"} {
		if _, err := eng.Search(t.Context(), engine.SearchRequest{Query: "x", Filter: engine.Filter{MIMETypes: []string{bad}}}); !errors.Is(err, engine.ErrInvalidArgument) {
			t.Errorf("MIME filter %q: %v, want ErrInvalidArgument", bad, err)
		}
	}
}

func TestPinnedComeFirstAndUserAudienceStaysOut(t *testing.T) {
	srv := mcptest.NewServer(map[string]string{
		"doc://architecture": "how the system is built",
		"doc://open-file":    "the file the user is editing",
	}, nil)
	srv.AddResourceTemplate(&mcpsdk.ResourceTemplate{URITemplate: "doc://unlisted/{name}", Name: "unlisted"},
		func(_ context.Context, req *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
			return &mcpsdk.ReadResourceResult{Contents: []*mcpsdk.ResourceContents{{URI: req.Params.URI, Text: "scratch notes"}}}, nil
		})
	srv.AddResource(&mcpsdk.Resource{URI: "doc://architecture-for-humans", Name: "architecture for humans",
		Annotations: &mcpsdk.Annotations{Audience: []mcpsdk.Role{"user"}}}, nil)
	eng := newEngine(t, "", map[string]*mcpsdk.Server{"s": srv}, 0)

	res, err := eng.Assemble(t.Context(), engine.AssembleRequest{
		Query: "architecture", TokenBudget: 500,
		Pinned: []resource.Key{{Server: "s", URI: "doc://open-file"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Items) < 2 || res.Items[0].URI != "doc://open-file" || res.Items[1].URI != "doc://architecture" {
		t.Fatalf("items = %+v, want the pinned file first, then the best match", res.Items)
	}
	for _, it := range res.Items[1:] {
		if it.URI == "doc://open-file" {
			t.Errorf("the pinned file is returned twice: %+v", res.Items)
		}
	}
	for _, it := range res.Items {
		if f, ok := res.Fetched[it.Key()]; !ok || f.At.IsZero() {
			t.Errorf("item %s has no fetch time: %+v", it.URI, res.Fetched)
		}
	}
	found := false
	for _, o := range res.Omitted {
		if o.URI == "doc://architecture-for-humans" {
			found = o.Reason == selector.OmitUserAudience && !o.Read
		}
	}
	if !found {
		t.Errorf("omitted = %+v, want the user-only resource omitted unread as audience_user", res.Omitted)
	}

	// A repeated pin counts once, and max_items applies to pins too.
	res, err = eng.Assemble(t.Context(), engine.AssembleRequest{
		Query: "architecture", TokenBudget: 500, MaxItems: 1,
		Pinned: []resource.Key{{Server: "s", URI: "doc://open-file"}, {Server: "s", URI: "doc://open-file"}, {Server: "s", URI: "doc://architecture"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Items) != 1 || res.Items[0].URI != "doc://open-file" || res.Omitted[0].URI != "doc://architecture" || res.Omitted[0].Reason != selector.OmitMaxItems {
		t.Errorf("max_items 1 with two pins: items %+v omitted %+v", res.Items, res.Omitted)
	}

	// A pin need not be listed, only readable (here through a template).
	res, err = eng.Assemble(t.Context(), engine.AssembleRequest{
		Query: "architecture", TokenBudget: 500, Pinned: []resource.Key{{Server: "s", URI: "doc://unlisted/scratch"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Items) == 0 || res.Items[0].URI != "doc://unlisted/scratch" || !strings.HasPrefix(res.Items[0].Reason, "pinned") {
		t.Errorf("unlisted pin: items %+v omitted %+v", res.Items, res.Omitted)
	}

	_, err = eng.Assemble(t.Context(), engine.AssembleRequest{Query: "x", TokenBudget: 10, Pinned: []resource.Key{{Server: "nope", URI: "doc://a"}}})
	if !errors.Is(err, engine.ErrInvalidArgument) {
		t.Errorf("pinned on an unknown server: %v, want ErrInvalidArgument", err)
	}
}
