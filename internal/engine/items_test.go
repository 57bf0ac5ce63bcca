package engine_test

import (
	"context"
	"fmt"
	"strings"
	gosync "sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/contextd/contextd/internal/config"
	"github.com/contextd/contextd/internal/engine"
	"github.com/contextd/contextd/internal/mcp/mcptest"
	"github.com/contextd/contextd/internal/redact"
	"github.com/contextd/contextd/internal/resource"
	"github.com/contextd/contextd/internal/selector"
)

// itemsSecret is a credential configured for the server in
// TestItemsClaimingAnotherURIAreDropped.
const itemsSecret = "Qx7vR2mK9pL4wZ8nT3jH6cF1"

// A server answering a read with items that claim other URIs (another
// server's, say) has those items dropped, each saying what it claimed,
// masked as errors are; a sub-resource of a directory URI is kept.
func TestItemsClaimingAnotherURIAreDropped(t *testing.T) {
	srv := mcptest.NewServer(nil, nil)
	srv.AddResource(&mcpsdk.Resource{URI: "doc://notes", Name: "architecture notes"},
		func(context.Context, *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
			return &mcpsdk.ReadResourceResult{Contents: []*mcpsdk.ResourceContents{
				{URI: "doc://notes", Text: "the real architecture notes"},
				{URI: "vault://other-server/api-keys", Text: "injected text passed off as another server's"},
				{URI: "vault://other-server/" + strings.Repeat("k", 10000), Text: "injected under a long claim"},
				// Claims holding credentials: a configured secret, user
				// info, a signed URL's query.
				{URI: "other://x/" + itemsSecret, Text: "injected with a secret"},
				{URI: "https://x-access-token:ghp_Zx81kQ0pLm27vB4nT9aa@github.com/o/r", Text: "injected with user info"},
				{URI: "https://bucket.s3.amazonaws.com/k?X-Amz-Signature=9f86d081884c7d659a2feaa0c55ad015", Text: "injected signed"},
			}}, nil
		})
	srv.AddResource(&mcpsdk.Resource{URI: "file:///docs/", Name: "architecture directory"},
		func(context.Context, *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
			return &mcpsdk.ReadResourceResult{Contents: []*mcpsdk.ResourceContents{
				{URI: "file:///docs/a.md", Text: "architecture a"},
				{URI: "file:///docs/../etc/passwd", Text: "root:x:0:0"},
				{URI: "file:///docs/.%2e/etc/shadow", Text: "root:x:0:0 shadow"},
				{URI: "file:///docs/%252e%252e/etc/group", Text: "root:x:0:0 group"},
				{URI: `file:///docs/..\etc\hosts`, Text: "root:x:0:0 hosts"},
			}}, nil
		})
	// A URI with no path ("file:", "https:") has nothing under it: what
	// follows is another authority.
	srv.AddResource(&mcpsdk.Resource{URI: "file:", Name: "architecture root"},
		func(context.Context, *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
			return &mcpsdk.ReadResourceResult{Contents: []*mcpsdk.ResourceContents{
				{URI: "file:///home/user/.ssh/config", Text: "root:x:0:0 ssh"},
			}}, nil
		})
	srv.AddResource(&mcpsdk.Resource{URI: "https://", Name: "architecture web"},
		func(context.Context, *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
			return &mcpsdk.ReadResourceResult{Contents: []*mcpsdk.ResourceContents{
				{URI: "https://raw.example.com/victim/repo/main/README.md", Text: "root:x:0:0 web"},
			}}, nil
		})
	srv.AddResource(&mcpsdk.Resource{URI: "doc://x", Name: "architecture x"},
		func(context.Context, *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
			return &mcpsdk.ReadResourceResult{Contents: []*mcpsdk.ResourceContents{
				{URI: "doc://x/figure", Text: "architecture figure"},
				{URI: "doc://x//evil.example/keys", Text: "root:x:0:0 evil"},
			}}, nil
		})
	cfg := &config.Config{Servers: []config.Server{{Name: "s", Transport: config.TransportStdio, Command: "unused", Env: map[string]string{"TOKEN": itemsSecret}}}}
	eng := newEngineOpts(t, "", map[string]*mcpsdk.Server{"s": srv}, engine.Options{Config: cfg, ShowServerText: true})
	res, err := eng.Assemble(t.Context(), engine.AssembleRequest{Query: "architecture", TokenBudget: 1000, ValueFloor: new(float64)})
	if err != nil {
		t.Fatal(err)
	}
	var texts []string
	dropped := map[string]string{}
	for _, o := range res.Omitted { // a read whose every item was dropped
		if i := strings.Index(o.Detail, "claims URI "); i >= 0 {
			dropped[strings.Trim(strings.Fields(o.Detail[i+len("claims URI "):])[0], `",`)] = string(o.Reason) + ": " + o.Detail
		}
	}
	for _, it := range res.Items {
		for _, c := range it.Contents {
			texts = append(texts, c.Text)
		}
		for _, d := range it.Dropped {
			dropped[d.URI] = string(d.Reason) + ": " + d.Detail
		}
	}
	all := strings.Join(texts, "|")
	if !strings.Contains(all, "the real architecture notes") || !strings.Contains(all, "architecture a") || !strings.Contains(all, "architecture figure") ||
		strings.Contains(all, "injected") || strings.Contains(all, "root:x") {
		t.Errorf("returned texts %q", texts)
	}
	for u, d := range dropped {
		for _, secret := range []string{itemsSecret, "ghp_Zx81", "9f86d081884c"} {
			if strings.Contains(u, secret) || strings.Contains(d, secret) {
				t.Errorf("dropped item %q (%q) shows a credential of its claim", u, d)
			}
		}
	}
	if d := dropped[redact.Clip("vault://other-server/"+strings.Repeat("k", 10000), 256)]; !strings.Contains(d, "claims URI") || len(d) > 1024 {
		t.Errorf("a 10 KB claim: dropped with %d bytes of detail, want the claim quoted in under 1 KiB", len(d))
	}
	for _, u := range []string{"vault://other-server/api-keys", "file:///docs/../etc/passwd", "file:///docs/.%2e/etc/shadow",
		"file:///docs/%252e%252e/etc/group", `file:///docs/..\etc\hosts`, "file:///home/user/.ssh/config", "doc://x//evil.example/keys",
		"https://raw.example.com/victim/repo/main/README.md"} {
		if d := dropped[u]; !strings.HasPrefix(d, string(selector.OmitInvalid)) || !strings.Contains(d, "claims URI") {
			t.Errorf("item %s: dropped %q, want invalid_content naming the claim", u, d)
		}
	}
}

// A read over max_message_bytes is not made again for the same version of
// the resource by later requests.
func TestTooLargeReadIsRememberedPerVersion(t *testing.T) {
	srv := mcptest.NewServer(map[string]string{"doc://huge-architecture": "x"}, nil)
	var mu gosync.Mutex
	reads := 0
	srv.AddReceivingMiddleware(func(next mcpsdk.MethodHandler) mcpsdk.MethodHandler {
		return func(ctx context.Context, method string, req mcpsdk.Request) (mcpsdk.Result, error) {
			if r, ok := req.(*mcpsdk.ReadResourceRequest); ok && r.Params.URI == "doc://huge-architecture" {
				mu.Lock()
				reads++
				mu.Unlock()
				// What contextd's transports answer in place of an oversized response.
				return nil, &jsonrpc.Error{Code: -32603, Message: "response of 40000000 bytes exceeds max_message_bytes (16777216)"}
			}
			return next(ctx, method, req)
		}
	})
	eng := newEngine(t, "", map[string]*mcpsdk.Server{"s": srv}, 0)
	mu.Lock()
	before := reads // the content pass may have tried it
	mu.Unlock()
	for i := range 3 {
		res, err := eng.Assemble(t.Context(), engine.AssembleRequest{Query: "architecture", TokenBudget: 100, Pinned: []resource.Key{{Server: "s", URI: "doc://huge-architecture"}}})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Omitted) != 1 || res.Omitted[0].Reason != selector.OmitReadFailed || !strings.Contains(res.Omitted[0].Detail, "max_message_bytes") {
			t.Fatalf("assemble %d: omitted %+v", i, res.Omitted)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if reads-before != 1 {
		t.Errorf("%d reads of the oversized resource by 3 requests, want 1", reads-before)
	}
}

// A read bigger than max_response_bytes on its own, which no request can
// use, is not downloaded again by every request that ranks it either.
func TestReadOverTheResponseBytesIsRemembered(t *testing.T) {
	srv := mcptest.NewServer(nil, nil)
	var mu gosync.Mutex
	reads := 0
	big := strings.Repeat("architecture ", 1<<20/13*9) // about 9 MiB
	srv.AddResource(&mcpsdk.Resource{URI: "doc://big-architecture", Name: "architecture"}, func(_ context.Context, req *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
		mu.Lock()
		reads++
		mu.Unlock()
		return &mcpsdk.ReadResourceResult{Contents: []*mcpsdk.ResourceContents{{URI: req.Params.URI, Text: big}}}, nil
	})
	eng := newEngine(t, "", map[string]*mcpsdk.Server{"s": srv}, 0)
	mu.Lock()
	before := reads // the content pass may have read it
	mu.Unlock()
	for i := range 3 {
		res, err := eng.Assemble(t.Context(), engine.AssembleRequest{Query: "architecture", TokenBudget: 100, Pinned: []resource.Key{{Server: "s", URI: "doc://big-architecture"}}})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Omitted) != 1 || res.Omitted[0].Reason != selector.OmitReadFailed || !strings.Contains(res.Omitted[0].Detail, "max_response_bytes") {
			t.Fatalf("assemble %d: omitted %+v", i, res.Omitted)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if reads-before != 1 {
		t.Errorf("%d reads of a resource over max_response_bytes by 3 requests, want 1", reads-before)
	}
}

// A server that was sent a caller's words (an unlisted pin) may repeat them
// in the URIs its answers' items claim, even for a listed resource: those
// claims are not quoted, since masking them would tell the caller which of
// its words are another server's secret.
func TestClaimsOfAServerSentCallerWordsAreNotQuoted(t *testing.T) {
	const password = "correcthorse"
	var mu gosync.Mutex
	var seen []string
	mem := mcptest.NewServer(nil, nil)
	mem.AddReceivingMiddleware(func(next mcpsdk.MethodHandler) mcpsdk.MethodHandler {
		return func(ctx context.Context, method string, req mcpsdk.Request) (mcpsdk.Result, error) {
			if r, ok := req.(*mcpsdk.ReadResourceRequest); ok && r.Params.URI != "note://recent" {
				mu.Lock()
				seen = append(seen, r.Params.URI)
				mu.Unlock()
				return nil, &jsonrpc.Error{Code: -32002, Message: "not found"}
			}
			return next(ctx, method, req)
		}
	})
	// A "recently requested" digest: one item per URI it was asked for.
	mem.AddResource(&mcpsdk.Resource{URI: "note://recent", Name: "recent notes"},
		func(context.Context, *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
			mu.Lock()
			defer mu.Unlock()
			out := []*mcpsdk.ResourceContents{{URI: "note://recent", Text: "recent notes"}}
			for i, u := range seen {
				out = append(out, &mcpsdk.ResourceContents{URI: fmt.Sprintf("recent:%d.%s", i, u), Text: "x"})
			}
			return &mcpsdk.ReadResourceResult{Contents: out}, nil
		})
	cfg := &config.Config{Servers: []config.Server{
		{Name: "mem", Transport: config.TransportStdio, Command: "unused", AllowUnlistedPins: true},
		{Name: "mail", Transport: config.TransportStdio, Command: "unused", Env: map[string]string{"SMTP_PASSWORD": password}},
	}}
	eng := newEngineOpts(t, "", map[string]*mcpsdk.Server{"mem": mem, "mail": mcptest.NewServer(map[string]string{"doc://m": "m"}, nil)}, engine.Options{Config: cfg, ShowServerText: true})
	shown := func(pins ...string) string {
		t.Helper()
		req := engine.AssembleRequest{Query: "recent notes", TokenBudget: 1000}
		for _, p := range pins {
			req.Pinned = append(req.Pinned, resource.Key{Server: "mem", URI: p})
		}
		res, err := eng.Assemble(t.Context(), req)
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		for _, it := range res.Items {
			for _, d := range it.Dropped {
				b.WriteString(d.URI + " " + d.Detail + "\n")
			}
		}
		for _, o := range res.Omitted {
			b.WriteString(o.URI + " " + o.Detail + "\n")
		}
		return b.String()
	}
	shown("x://a/horse", "x://a/"+password)
	got := shown("note://recent")
	if !strings.Contains(got, "not quoted") {
		t.Fatalf("the digest's claims were not dropped as unquoted: %q", got)
	}
	if strings.Contains(got, "REDACTED") || strings.Contains(got, "horse") {
		t.Errorf("a claim repeating the caller's words was quoted: %q", got)
	}
}
