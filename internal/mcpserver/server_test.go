package mcpserver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/contextd/contextd/internal/budget"
	"github.com/contextd/contextd/internal/config"
	"github.com/contextd/contextd/internal/engine"
	"github.com/contextd/contextd/internal/index/indextest"
	"github.com/contextd/contextd/internal/mcp"
	"github.com/contextd/contextd/internal/mcp/mcptest"
	"github.com/contextd/contextd/internal/mcpserver"
	"github.com/contextd/contextd/internal/resource"
	ctxsync "github.com/contextd/contextd/internal/sync"
)

// An awkward upstream URI: spaces, a percent-escape, non-ASCII, "#" and "?".
const oddURI = "file:///srv/My Notes/Überblick 50%25 fertig #1?.md"

// startFacade runs an engine over upstreams (go-sdk servers over in-memory
// transports; a nil server is one that cannot be reached) and the MCP
// server in front of it.
type facade struct {
	eng  *engine.Engine
	srv  *mcpserver.Server
	stop func() // ends both Runs and closes the engine; once
}

func startFacade(t *testing.T, upstreams map[string]*mcpsdk.Server, opts *mcpserver.Options, eopts engine.Options) *facade {
	t.Helper()
	// Each upstream is configured as a stdio server (never started), as
	// eopts.Config says if it names it (args telling it apart). The index
	// is in memory unless eopts.Config names a data_dir.
	cfg := &config.Config{}
	for name := range upstreams {
		srv := config.Server{Name: name, Transport: config.TransportStdio, Command: "unused"}
		if eopts.Config != nil {
			if given, ok := eopts.Config.Server(name); ok {
				srv = given
			}
		}
		cfg.Servers = append(cfg.Servers, srv)
	}
	slices.SortFunc(cfg.Servers, func(a, b config.Server) int { return strings.Compare(a.Name, b.Name) })
	relay := &mcpserver.Relay{}
	if eopts.Config != nil {
		cfg.DataDir = eopts.Config.DataDir // the index kept there across restarts
	}
	eopts.Config, eopts.InMemory = cfg, cfg.DataDir == ""
	if eopts.Embedder == nil {
		eopts.Embedder = &indextest.BagEmbedder{}
	}
	custom := eopts.Dial
	eopts.Dial = func(s config.Server) ctxsync.DialFunc {
		if custom != nil {
			if d := custom(s); d != nil {
				return d
			}
		}
		if upstreams[s.Name] == nil {
			return func(context.Context, *mcp.Options) (*mcp.Session, error) {
				return nil, errors.New("connection refused")
			}
		}
		return mcptest.Dial(t, s.Name, upstreams[s.Name])
	}
	mirror := eopts.Mirror
	eopts.Mirror = func(o *ctxsync.Options) {
		if mirror != nil {
			mirror(o)
		}
		o.Debounce, o.MinBackoff, o.MaxBackoff = 20*time.Millisecond, time.Hour, time.Hour
		relay.WrapMirror(o)
	}
	eng, err := engine.New(t.Context(), eopts)
	if err != nil {
		t.Fatal(err)
	}
	o := &mcpserver.Options{}
	if opts != nil {
		*o = *opts
	}
	o.Relay = relay
	if o.CheckInterval == 0 {
		o.CheckInterval = 20 * time.Millisecond
	}
	srv := mcpserver.New(eng, o)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = eng.Run(ctx) })
	wg.Go(func() { _ = srv.Run(ctx) })
	stop := sync.OnceFunc(func() { cancel(); wg.Wait(); eng.Close() })
	t.Cleanup(stop)
	return &facade{eng: eng, srv: srv, stop: stop}
}

// newFacade is startFacade, returning once every mirror is ready.
func newFacade(t *testing.T, upstreams map[string]*mcpsdk.Server, opts *mcpserver.Options, eopts engine.Options) *facade {
	t.Helper()
	f := startFacade(t, upstreams, opts, eopts)
	if err := f.eng.WaitReady(t.Context()); err != nil {
		t.Fatal(err)
	}
	return f
}

// connect opens a go-sdk client session to the facade.
func (f *facade) connect(t *testing.T, opts *mcpsdk.ClientOptions) *mcpsdk.ClientSession {
	t.Helper()
	return f.connectVersion(t, opts, "")
}

// connectVersion is connect offering protocol version v ("" = the latest).
func (f *facade) connectVersion(t *testing.T, opts *mcpsdk.ClientOptions, v string) *mcpsdk.ClientSession {
	t.Helper()
	ct, st := mcpsdk.NewInMemoryTransports()
	ss, err := f.srv.MCP().Connect(t.Context(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ss.Close() })
	cs, err := mcpsdk.NewClient(&mcpsdk.Implementation{Name: "test-host", Version: "v0"}, opts).Connect(t.Context(), ct, &mcpsdk.ClientSessionOptions{ProtocolVersion: v})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// listAll lists every resource, page by page, and returns them and the
// number of pages.
func listAll(t *testing.T, cs *mcpsdk.ClientSession) ([]*mcpsdk.Resource, int) {
	t.Helper()
	var out []*mcpsdk.Resource
	cursor, pages := "", 0
	for {
		res, err := cs.ListResources(t.Context(), &mcpsdk.ListResourcesParams{Cursor: cursor})
		if err != nil {
			t.Fatal(err)
		}
		pages++
		out = append(out, res.Resources...)
		if res.NextCursor == "" {
			return out, pages
		}
		cursor = res.NextCursor
	}
}

// listedURIs returns the URIs of every resource cs is listed, prefix cut.
func listedURIs(t *testing.T, cs *mcpsdk.ClientSession, prefix string) map[string]bool {
	t.Helper()
	rs, _ := listAll(t, cs)
	out := make(map[string]bool, len(rs))
	for _, r := range rs {
		out[strings.TrimPrefix(r.URI, prefix)] = true
	}
	return out
}

// waitList lists until ok holds, for up to 5 s.
func waitList(t *testing.T, cs *mcpsdk.ClientSession, ok func([]*mcpsdk.Resource) bool) []*mcpsdk.Resource {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		rs, _ := listAll(t, cs)
		if ok(rs) {
			return rs
		}
		if time.Now().After(deadline) {
			t.Fatalf("the resource list did not get there within 5s: %v", uris(rs))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func uris(rs []*mcpsdk.Resource) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.URI)
	}
	return out
}

func hasURI(u string) func([]*mcpsdk.Resource) bool {
	return func(rs []*mcpsdk.Resource) bool { return slices.Contains(uris(rs), u) }
}

// oddServer serves oddURI with a text and a blob item, with every
// descriptor field set, and docs as markdown.
func oddServer(docs map[string]string, opts *mcpsdk.ServerOptions) *mcpsdk.Server {
	s := mcptest.NewServer(docs, opts)
	s.AddResource(&mcpsdk.Resource{
		URI: oddURI, Name: "überblick", Title: "Überblick", Description: "the overview of the notes",
		MIMEType: "text/markdown", Size: 1234,
		Annotations: &mcpsdk.Annotations{Audience: []mcpsdk.Role{"assistant"}, Priority: 0.7, LastModified: "2026-11-30T10:00:00Z"},
	}, func(_ context.Context, req *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
		return &mcpsdk.ReadResourceResult{Contents: []*mcpsdk.ResourceContents{
			{URI: req.Params.URI, MIMEType: "text/markdown", Text: "# Überblick\n\nnotes about the overview 50% done\n"},
			{URI: req.Params.URI + "/figure", MIMEType: "image/png", Blob: []byte{0x89, 'P', 'N', 'G', 0, 1, 2, 0xff}},
		}}, nil
	})
	return s
}

func TestResourcesReExposeEveryDescriptorUnderOneSchemeAndPaginate(t *testing.T) {
	docs := map[string]string{}
	for i := range 5 {
		docs[fmt.Sprintf("doc://a/%d", i)] = fmt.Sprintf("document %d", i)
	}
	f := newFacade(t, map[string]*mcpsdk.Server{"odd": oddServer(docs, nil), "plain": mcptest.NewServer(map[string]string{"doc://a/0": "same URI, other server"}, nil)},
		&mcpserver.Options{PageSize: 2}, engine.Options{})
	cs := f.connect(t, nil)
	oddNS := mcpserver.ResourceURI(resource.Key{Server: "odd", URI: oddURI})
	rs := waitList(t, cs, func(rs []*mcpsdk.Resource) bool { return len(rs) == 7 })
	_, pages := listAll(t, cs)
	if pages != 4 {
		t.Errorf("7 resources at 2 a page came in %d pages, want 4", pages)
	}
	want := []string{oddNS, "contextd:resource/odd/doc://a/0", "contextd:resource/plain/doc://a/0"}
	for _, u := range want {
		if !slices.Contains(uris(rs), u) {
			t.Errorf("list lacks %s: %v", u, uris(rs))
		}
	}
	i := slices.IndexFunc(rs, func(r *mcpsdk.Resource) bool { return r.URI == oddNS })
	got := rs[i]
	wantRes := &mcpsdk.Resource{
		URI: oddNS, Name: "überblick", Title: "Überblick", Description: "the overview of the notes", MIMEType: "text/markdown", Size: 1234,
		Annotations: &mcpsdk.Annotations{Audience: []mcpsdk.Role{"assistant"}, Priority: 0.7, LastModified: "2026-11-30T10:00:00Z"},
		Meta:        mcpsdk.Meta{mcpserver.MetaServer: "odd", mcpserver.MetaURI: oddURI, mcp.InstanceMetaKey: mcp.Instance()},
	}
	if d := cmp.Diff(wantRes, got); d != "" {
		t.Errorf("descriptor (-want +got):\n%s", d)
	}
}

func TestReadReturnsExactlyTheUpstreamContents(t *testing.T) {
	up := oddServer(nil, nil)
	f := newFacade(t, map[string]*mcpsdk.Server{"odd": up}, nil, engine.Options{})
	cs := f.connect(t, nil)
	oddNS := mcpserver.ResourceURI(resource.Key{Server: "odd", URI: oddURI})
	waitList(t, cs, hasURI(oddNS))

	// What the upstream itself answers, through a plain client.
	direct := mcptest.Connect(t, "odd", up, nil)
	wantItems, err := direct.Read(t.Context(), oddURI)
	if err != nil {
		t.Fatal(err)
	}
	res, err := cs.ReadResource(t.Context(), &mcpsdk.ReadResourceParams{URI: oddNS})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Contents) != len(wantItems) || len(res.Contents) != 2 {
		t.Fatalf("read %d items, upstream has %d (want 2): %+v", len(res.Contents), len(wantItems), res.Contents)
	}
	for i, c := range res.Contents {
		w := wantItems[i]
		k, err := mcpserver.ParseResourceURI(c.URI)
		if err != nil || k.Server != "odd" || k.URI != w.URI {
			t.Errorf("item %d URI %q decodes to %q, %v; want server odd, URI %q", i, c.URI, k, err, w.URI)
		}
		if c.MIMEType != w.MIMEType || c.Text != w.Text || !bytes.Equal(c.Blob, w.Blob) || (c.Blob != nil) != w.IsBlob {
			t.Errorf("item %d = {%q %q %v}, upstream {%q %q %v (blob %v)}", i, c.MIMEType, c.Text, c.Blob, w.MIMEType, w.Text, w.Blob, w.IsBlob)
		}
	}
	// The same URI encoded otherwise (lower-case hex, "~" escaped) is not
	// the listed one, but the template reads it, from the same resource.
	other := regexp.MustCompile(`%[0-9A-F]{2}`).ReplaceAllStringFunc(strings.TrimPrefix(oddNS, "contextd:resource/odd/"), strings.ToLower)
	other = strings.Replace(other, "file:", "%66ile:", 1)
	res2, err := cs.ReadResource(t.Context(), &mcpsdk.ReadResourceParams{URI: "contextd:resource/%6Fdd/" + other})
	if err != nil || len(res2.Contents) != 2 || res2.Contents[0].Text != res.Contents[0].Text {
		t.Errorf("read of %s encoded otherwise: %v, %v", oddNS, res2, err)
	}
	// An upstream URI that is not listed is read through the template.
	nope := mcpserver.ResourceURI(resource.Key{Server: "odd", URI: "file:///missing"})
	_, err = cs.ReadResource(t.Context(), &mcpsdk.ReadResourceParams{URI: nope})
	checkCode(t, "read of a URI the upstream does not have", err, mcpsdk.CodeResourceNotFound, "not found")
	_, err = cs.ReadResource(t.Context(), &mcpsdk.ReadResourceParams{URI: "contextd:resource/nope/doc://x"})
	checkCode(t, "read on an unknown server", err, jsonrpc.CodeInvalidParams, `unknown server "nope"`)
	_, err = cs.ReadResource(t.Context(), &mcpsdk.ReadResourceParams{URI: "doc://not-namespaced"})
	checkCode(t, "read of a URI outside the scheme", err, mcpsdk.CodeResourceNotFound, "")
}

func checkCode(t *testing.T, what string, err error, code int64, msg string) {
	t.Helper()
	var je *jsonrpc.Error
	if !errors.As(err, &je) {
		t.Errorf("%s: err = %v, want a JSON-RPC error %d", what, err, code)
		return
	}
	if je.Code != code || !strings.Contains(je.Message, msg) {
		t.Errorf("%s: error %d %q, want %d containing %q", what, je.Code, je.Message, code, msg)
	}
}

func TestListChangedAndUpdatedReachSubscribedClients(t *testing.T) {
	subOpts := &mcpsdk.ServerOptions{
		SubscribeHandler:   func(context.Context, *mcpsdk.SubscribeRequest) error { return nil },
		UnsubscribeHandler: func(context.Context, *mcpsdk.UnsubscribeRequest) error { return nil },
		// From 2026-07-28 subscriptions are subscriptions/listen streams,
		// which the mirrors do not hold; 2025-11-25 has resources/subscribe.
		SupportedProtocolVersions: []string{"2025-11-25"},
	}
	up := oddServer(map[string]string{"doc://a": "alpha"}, subOpts)
	modern := mcptest.NewServer(map[string]string{"doc://m": "modern"}, &mcpsdk.ServerOptions{
		SubscribeHandler: subOpts.SubscribeHandler, UnsubscribeHandler: subOpts.UnsubscribeHandler,
	})
	f := newFacade(t, map[string]*mcpsdk.Server{"odd": up, "plain": mcptest.NewServer(map[string]string{"doc://p": "plain"}, nil), "modern": modern}, nil, engine.Options{})
	listChanged := make(chan struct{}, 16)
	updated := make(chan string, 16)
	cs := f.connect(t, &mcpsdk.ClientOptions{
		ResourceListChangedHandler: func(context.Context, *mcpsdk.ResourceListChangedRequest) { listChanged <- struct{}{} },
		ResourceUpdatedHandler: func(_ context.Context, r *mcpsdk.ResourceUpdatedNotificationRequest) {
			updated <- r.Params.URI
		},
	})
	oddNS := mcpserver.ResourceURI(resource.Key{Server: "odd", URI: oddURI})
	waitList(t, cs, hasURI(oddNS))
	time.Sleep(100 * time.Millisecond) // past the SDK's 10ms batching of the initial fill
	for len(listChanged) > 0 {
		<-listChanged
	}

	// An upstream's list change reaches the client as list_changed, and the
	// list then holds the new resource.
	start := time.Now()
	mcptest.AddText(up, "doc://new/one two", "new", "a new document")
	select {
	case <-listChanged:
	case <-time.After(5 * time.Second):
		t.Fatal("no notifications/resources/list_changed within 5s of the upstream's change")
	}
	t.Logf("list_changed after %v (upstream debounce 20ms + check interval 20ms)", time.Since(start))
	rs, _ := listAll(t, cs)
	if !slices.Contains(uris(rs), "contextd:resource/odd/doc://new/one%20two") {
		t.Errorf("after list_changed the list lacks the new resource: %v", uris(rs))
	}

	// A subscription relays the upstream's resources/updated. A client on
	// MCP 2026-07-28 subscribes with a subscriptions/listen stream whose
	// Subscribe returns before the server has subscribed upstream, so the
	// upstream repeats its update until one comes through.
	if err := cs.Subscribe(t.Context(), &mcpsdk.SubscribeParams{URI: oddNS}); err != nil {
		t.Fatal(err)
	}
	relayed := func(what string) {
		t.Helper()
		deadline := time.After(5 * time.Second)
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			if err := up.ResourceUpdated(t.Context(), &mcpsdk.ResourceUpdatedNotificationParams{URI: oddURI}); err != nil {
				t.Fatal(err)
			}
			select {
			case u := <-updated:
				if u != oddNS {
					t.Errorf("%s: updated %q, want %q", what, u, oddNS)
				}
				return
			case <-tick.C:
			case <-deadline:
				t.Fatalf("%s: no notifications/resources/updated within 5s", what)
			}
		}
	}
	relayed("first update")
	time.Sleep(100 * time.Millisecond) // the re-read after the first settles
	for len(updated) > 0 {
		<-updated
	}
	relayed("a later update") // the upstream subscription is kept

	// A server without subscriptions refuses them, saying why (to a client
	// on 2025-11-25, whose resources/subscribe has an answer).
	legacy := f.connectVersion(t, nil, "2025-11-25")
	err := legacy.Subscribe(t.Context(), &mcpsdk.SubscribeParams{URI: "contextd:resource/plain/doc://p"})
	checkCode(t, "subscribe on a server without subscriptions", err, jsonrpc.CodeInvalidParams, "does not offer resource subscriptions")
	err = legacy.Subscribe(t.Context(), &mcpsdk.SubscribeParams{URI: "contextd:resource/modern/doc://m"})
	checkCode(t, "subscribe on a server whose subscriptions are listen streams", err, jsonrpc.CodeInvalidParams, "speaks MCP 2026-07-28")
}

func TestCapabilitiesAreDeclaredExactlyAsServed(t *testing.T) {
	f := newFacade(t, map[string]*mcpsdk.Server{"a": mcptest.NewServer(map[string]string{"doc://a": "alpha"}, nil)}, nil, engine.Options{})
	cs := f.connect(t, nil)
	got := cs.InitializeResult().Capabilities
	want := &mcpsdk.ServerCapabilities{
		Tools:       &mcpsdk.ToolCapabilities{},
		Prompts:     &mcpsdk.PromptCapabilities{},
		Resources:   &mcpsdk.ResourceCapabilities{ListChanged: true, Subscribe: true},
		Completions: &mcpsdk.CompletionCapabilities{},
	}
	if d := cmp.Diff(want, got, cmp.FilterPath(func(p cmp.Path) bool { return p.Last().String() == ".Extensions" }, cmp.Ignore())); d != "" {
		t.Errorf("capabilities (-want +got):\n%s", d)
	}
	tools, err := cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range tools.Tools {
		names = append(names, tl.Name)
		if tl.OutputSchema == nil {
			t.Errorf("tool %s publishes no outputSchema", tl.Name)
		}
		if !tl.Annotations.ReadOnlyHint {
			t.Errorf("tool %s is not marked read-only", tl.Name)
		}
		// Portable to single-type schema dialects (Gemini): no "type" arrays.
		for what, sc := range map[string]any{"input": tl.InputSchema, "output": tl.OutputSchema} {
			b, err := json.Marshal(sc)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(string(b), `"type":[`) {
				t.Errorf("tool %s: %s schema has a type array: %s", tl.Name, what, b)
			}
		}
	}
	if d := cmp.Diff([]string{"assemble_context", "search_resources"}, names); d != "" {
		t.Errorf("tools (-want +got):\n%s", d)
	}
	tpls, err := cs.ListResourceTemplates(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var tnames []string
	for _, tp := range tpls.ResourceTemplates {
		tnames = append(tnames, tp.URITemplate)
	}
	if !slices.Contains(tnames, mcpserver.ContextTemplate) {
		t.Errorf("templates %v lack %s", tnames, mcpserver.ContextTemplate)
	}
}

// count re-counts texts with the engine's tokenizer.
func count(t *testing.T, texts ...string) int {
	t.Helper()
	tok, err := budget.NewTokenizer("cl100k_base")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, s := range texts {
		n += tok.Count(s)
	}
	return n
}

func TestAssembleContextEmbedsWhatFitsAndMatchesItsOutputSchema(t *testing.T) {
	docs := map[string]string{
		"doc://arch":  "# Architecture\n\nThe architecture of the billing service: retries, queues and the ledger.\n",
		"doc://other": "# Gardening\n\nTomatoes need sun.\n",
	}
	f := newFacade(t, map[string]*mcpsdk.Server{"a": oddServer(docs, nil), "down": nil}, nil, engine.Options{})
	cs := f.connect(t, nil)
	waitList(t, cs, func(rs []*mcpsdk.Resource) bool { return len(rs) == 3 })

	res, err := cs.CallTool(t.Context(), &mcpsdk.CallToolParams{Name: "assemble_context", Arguments: map[string]any{
		"task": "billing service architecture", "budget": 60,
		"pins": []string{mcpserver.ResourceURI(resource.Key{Server: "a", URI: oddURI})},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if res.IsError {
		t.Fatalf("tool error: %v", res.Content)
	}
	var texts, got []string
	for _, c := range res.Content {
		if e, ok := c.(*mcpsdk.EmbeddedResource); ok {
			got = append(got, e.Resource.URI)
			texts = append(texts, e.Resource.Text)
			if e.Resource.Blob != nil {
				t.Errorf("a blob came back without include_binary: %s", e.Resource.URI)
			}
		}
	}
	if len(got) < 2 || got[0] != mcpserver.ResourceURI(resource.Key{Server: "a", URI: oddURI}) || !slices.Contains(got, "contextd:resource/a/doc://arch") {
		t.Errorf("embedded %v, want the pin first and doc://arch", got)
	}
	if n := count(t, texts...); n > 60 {
		t.Errorf("returned texts re-count to %d tokens, over the budget of 60", n)
	}
	last, ok := res.Content[len(res.Content)-1].(*mcpsdk.TextContent)
	if !ok || !strings.Contains(last.Text, "of 60 tokens") {
		t.Errorf("the result does not end with the summary text: %v", res.Content[len(res.Content)-1])
	}
	sc, ok := res.StructuredContent.(map[string]any)
	if !ok {
		t.Fatalf("structuredContent = %T, want an object", res.StructuredContent)
	}
	items, _ := sc["items"].([]any)
	if len(items) != 2 || sc["token_budget"] != float64(60) {
		t.Errorf("structuredContent = %v, want 2 items and token_budget 60", sc)
	}

	// With include_binary the pinned resource's blob comes back as bytes.
	res, err = cs.CallTool(t.Context(), &mcpsdk.CallToolParams{Name: "assemble_context", Arguments: map[string]any{
		"task": "overview", "budget": 200, "include_binary": true,
		"pins": []string{mcpserver.ResourceURI(resource.Key{Server: "a", URI: oddURI})},
	}})
	if err != nil || res.IsError {
		t.Fatalf("include_binary: %v %v", err, res)
	}
	var blobs [][]byte
	for _, c := range res.Content {
		if e, ok := c.(*mcpsdk.EmbeddedResource); ok && e.Resource.Blob != nil {
			blobs = append(blobs, e.Resource.Blob)
			if e.Resource.MIMEType != "image/png" {
				t.Errorf("blob MIME type %q, want image/png", e.Resource.MIMEType)
			}
		}
	}
	if len(blobs) != 1 || !bytes.Equal(blobs[0], []byte{0x89, 'P', 'N', 'G', 0, 1, 2, 0xff}) {
		t.Errorf("include_binary returned blobs %x, want the upstream's one", blobs)
	}

	// Bad input comes back as a tool error the model can act on.
	for args, want := range map[string]map[string]any{
		`unknown server "nope"`:      {"task": "x", "servers": []string{"nope"}},
		"query is empty":             {"task": " "},
		"token budget -5 is below 1": {"task": "x", "budget": -5},
		"not a contextd resource":    {"task": "x", "pins": []string{"doc://arch"}},
	} {
		res, err := cs.CallTool(t.Context(), &mcpsdk.CallToolParams{Name: "assemble_context", Arguments: want})
		if err != nil {
			t.Errorf("%v: protocol error %v, want a tool error", want, err)
			continue
		}
		text := ""
		if len(res.Content) > 0 {
			text = res.Content[0].(*mcpsdk.TextContent).Text
		}
		if !res.IsError || !strings.Contains(text, args) {
			t.Errorf("%v: isError %v, %q; want an error containing %q", want, res.IsError, text, args)
		}
	}
}

func TestSearchResourcesLinksRankedResourcesWithScores(t *testing.T) {
	docs := map[string]string{"doc://arch": "architecture of the billing service", "doc://other": "gardening"}
	f := newFacade(t, map[string]*mcpsdk.Server{"a": mcptest.NewServer(docs, nil)}, nil, engine.Options{})
	cs := f.connect(t, nil)
	waitList(t, cs, func(rs []*mcpsdk.Resource) bool { return len(rs) == 2 })
	res, err := cs.CallTool(t.Context(), &mcpsdk.CallToolParams{Name: "search_resources", Arguments: map[string]any{"query": "doc://arch", "limit": 1}})
	if err != nil || res.IsError {
		t.Fatalf("search: %v %v", err, res)
	}
	if len(res.Content) != 1 {
		t.Fatalf("%d results for limit 1", len(res.Content))
	}
	l, ok := res.Content[0].(*mcpsdk.ResourceLink)
	if !ok || l.URI != "contextd:resource/a/doc://arch" || l.Meta["contextd/score"] == nil {
		t.Errorf("first result = %#v, want a resource_link to doc://arch with a score", res.Content[0])
	}
}

func TestContextTemplatePromptAndCompletions(t *testing.T) {
	docs := map[string]string{"doc://arch": "# Architecture\n\nThe architecture of the billing service.\n", "doc://other": "# Gardening\n"}
	f := newFacade(t, map[string]*mcpsdk.Server{"good": mcptest.NewServer(docs, nil), "gone": nil}, nil, engine.Options{})
	cs := f.connect(t, nil)
	other := f.connect(t, nil)
	waitList(t, cs, func(rs []*mcpsdk.Resource) bool { return len(rs) == 2 })

	rr, err := cs.ReadResource(t.Context(), &mcpsdk.ReadResourceParams{URI: "contextd:context?task=billing%20architecture&budget=30"})
	if err != nil {
		t.Fatal(err)
	}
	var texts []string
	for _, c := range rr.Contents {
		texts = append(texts, c.Text)
	}
	if len(rr.Contents) == 0 || rr.Contents[0].URI != "contextd:resource/good/doc://arch" || count(t, texts...) > 30 {
		t.Errorf("assembled-context read = %v, want doc://arch first within 30 tokens", rr.Contents)
	}
	_, err = cs.ReadResource(t.Context(), &mcpsdk.ReadResourceParams{URI: "contextd:context?task=x&budget=lots"})
	checkCode(t, "a budget that is not a number", err, jsonrpc.CodeInvalidParams, `budget "lots"`)

	pr, err := cs.GetPrompt(t.Context(), &mcpsdk.GetPromptParams{Name: "context", Arguments: map[string]string{"task": "billing architecture", "budget": "50"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(pr.Messages) < 2 {
		t.Fatalf("prompt has %d messages, want the context and the task", len(pr.Messages))
	}
	if e, ok := pr.Messages[0].Content.(*mcpsdk.EmbeddedResource); !ok || e.Resource.URI != "contextd:resource/good/doc://arch" || pr.Messages[0].Role != "user" {
		t.Errorf("first prompt message = %+v, want doc://arch embedded in a user message", pr.Messages[0])
	}
	if tc, ok := pr.Messages[len(pr.Messages)-1].Content.(*mcpsdk.TextContent); !ok || !strings.HasPrefix(tc.Text, "billing architecture") {
		t.Errorf("last prompt message = %+v, want the task", pr.Messages[len(pr.Messages)-1].Content)
	}
	_, err = cs.GetPrompt(t.Context(), &mcpsdk.GetPromptParams{Name: "context", Arguments: map[string]string{"task": ""}})
	checkCode(t, "a prompt without a task", err, jsonrpc.CodeInvalidParams, "query is empty")
	for _, b := range []string{"12 junk", "0x7fffffffffffffff", "1e3"} {
		_, err = cs.GetPrompt(t.Context(), &mcpsdk.GetPromptParams{Name: "context", Arguments: map[string]string{"task": "billing", "budget": b}})
		checkCode(t, "a prompt's budget of "+b, err, jsonrpc.CodeInvalidParams, fmt.Sprintf("budget %q", b))
	}

	complete := func(cs *mcpsdk.ClientSession, ref *mcpsdk.CompleteReference, arg, value string) []string {
		t.Helper()
		res, err := cs.Complete(t.Context(), &mcpsdk.CompleteParams{Ref: ref, Argument: mcpsdk.CompleteParamsArgument{Name: arg, Value: value}})
		if err != nil {
			t.Fatal(err)
		}
		return res.Completion.Values
	}
	resRef := &mcpsdk.CompleteReference{Type: "ref/resource", URI: "contextd:resource/{server}/{+uri}"}
	if got := complete(cs, resRef, "server", "goo"); !slices.Equal(got, []string{"good"}) {
		t.Errorf("server completions for goo = %v, want [good]", got)
	}
	if got := complete(cs, resRef, "server", ""); !slices.Equal(got, []string{"gone", "good"}) {
		t.Errorf("server completions = %v, want both servers", got)
	}
	uriComplete := func(server, value string) []string {
		t.Helper()
		res, err := cs.Complete(t.Context(), &mcpsdk.CompleteParams{Ref: resRef, Argument: mcpsdk.CompleteParamsArgument{Name: "uri", Value: value},
			Context: &mcpsdk.CompleteContext{Arguments: map[string]string{"server": server}}})
		if err != nil {
			t.Fatal(err)
		}
		return res.Completion.Values
	}
	if got := uriComplete("good", "doc://a"); !slices.Equal(got, []string{"doc://arch"}) {
		t.Errorf("uri completions on good for doc://a = %v, want [doc://arch]", got)
	}
	if got := uriComplete("gone", ""); len(got) != 0 {
		t.Errorf("uri completions on a server with nothing mirrored = %v", got)
	}
	promptRef := &mcpsdk.CompleteReference{Type: "ref/prompt", Name: "context"}
	if got := complete(cs, promptRef, "task", "bill"); !slices.Equal(got, []string{"billing architecture"}) {
		t.Errorf("task completions = %v, want the recent task", got)
	}
	if got := complete(other, promptRef, "task", ""); len(got) != 0 {
		t.Errorf("another session sees tasks %v, want none", got)
	}
}

func TestOneMisbehavingUpstreamDoesNotBreakTheOthers(t *testing.T) {
	slow := mcptest.NewServer(nil, nil)
	slow.AddResource(&mcpsdk.Resource{URI: "doc://slow", Name: "billing architecture (slow)"},
		func(ctx context.Context, _ *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
			<-ctx.Done() // never answers
			return nil, ctx.Err()
		})
	raw := &mcptest.RawServer{Results: map[string]string{
		// One good entry among malformed ones.
		"resources/list": `{"resources":[{"uri":"doc://raw","name":"raw billing notes"},{"name":"no uri"},{"uri":42}]}`,
		"resources/read": `{"contents":[{"uri":"doc://raw","text":"raw billing notes"},{"uri":"doc://raw","blob":"!!not base64!!"}]}`,
	}}
	rawServer := mcpsdk.NewServer(&mcpsdk.Implementation{Name: "placeholder"}, nil) // replaced by the raw dial below
	good := mcptest.NewServer(map[string]string{"doc://good": "# Billing architecture\n\ngood notes\n"}, nil)
	ups := map[string]*mcpsdk.Server{"good": good, "slow": slow, "raw": rawServer, "down": nil}
	f := newFacadeRaw(t, ups, map[string]*mcptest.RawServer{"raw": raw})
	cs := f.connect(t, nil)
	waitList(t, cs, func(rs []*mcpsdk.Resource) bool {
		return hasURI("contextd:resource/good/doc://good")(rs) && hasURI("contextd:resource/raw/doc://raw")(rs) && hasURI("contextd:resource/slow/doc://slow")(rs)
	})

	rr, err := cs.ReadResource(t.Context(), &mcpsdk.ReadResourceParams{URI: "contextd:resource/raw/doc://raw"})
	if err != nil || len(rr.Contents) != 1 || rr.Contents[0].Text != "raw billing notes" {
		t.Errorf("read of the raw server = %v, %v; want its one good item", rr, err)
	}
	_, err = cs.ReadResource(t.Context(), &mcpsdk.ReadResourceParams{URI: "contextd:resource/slow/doc://slow"})
	checkCode(t, "read of a server that never answers", err, jsonrpc.CodeInternalError, "no answer within")
	_, err = cs.ReadResource(t.Context(), &mcpsdk.ReadResourceParams{URI: "contextd:resource/down/doc://x"})
	checkCode(t, "read of a server that is down", err, jsonrpc.CodeInternalError, "upstream unavailable")

	res, err := cs.CallTool(t.Context(), &mcpsdk.CallToolParams{Name: "assemble_context", Arguments: map[string]any{"task": "architecture", "budget": 500}})
	if err != nil || res.IsError {
		t.Fatalf("assemble: %v %v", err, res)
	}
	var got []string
	for _, c := range res.Content {
		if e, ok := c.(*mcpsdk.EmbeddedResource); ok {
			got = append(got, e.Resource.URI)
		}
	}
	if !slices.Contains(got, "contextd:resource/good/doc://good") {
		t.Errorf("assemble returned %v, want the good server's document despite the others", got)
	}
	rr, err = cs.ReadResource(t.Context(), &mcpsdk.ReadResourceParams{URI: "contextd:resource/good/doc://good"})
	if err != nil || len(rr.Contents) != 1 {
		t.Errorf("read of the good server after the others failed: %v, %v", rr, err)
	}
}

func TestAnUpstreamsReadErrorReachesCallersMaskedAndWithoutItsData(t *testing.T) {
	const code = -32099
	up := mcptest.NewServer(nil, nil)
	up.AddResource(&mcpsdk.Resource{URI: "doc://leaky", Name: "leaky"},
		func(context.Context, *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
			return nil, &jsonrpc.Error{Code: code, Message: "backend refused Authorization: Bearer sk-live-0123456789abcdef",
				Data: json.RawMessage(`{"request":{"headers":{"x-internal":"opaque-9f8e7d6c5b4a"}}}`)}
		})
	// Shown (a one-shot owner's run): masked, without its data. By
	// default the message is withheld altogether.
	f := newFacade(t, map[string]*mcpsdk.Server{"up": up}, nil, engine.Options{ShowServerText: true})
	cs := f.connect(t, nil)
	_, err := cs.ReadResource(t.Context(), &mcpsdk.ReadResourceParams{URI: "contextd:resource/up/doc://leaky"})
	checkCode(t, "read of a resource whose server fails", err, code, "backend refused")
	var je *jsonrpc.Error
	if errors.As(err, &je) {
		if strings.Contains(je.Message, "0123456789abcdef") {
			t.Errorf("the upstream's credential reached the caller: %q", je.Message)
		}
		if len(je.Data) != 0 {
			t.Errorf("the upstream's error data reached the caller: %s", je.Data)
		}
	}
	def := newFacade(t, map[string]*mcpsdk.Server{"up": up}, nil, engine.Options{})
	_, err = def.connect(t, nil).ReadResource(t.Context(), &mcpsdk.ReadResourceParams{URI: "contextd:resource/up/doc://leaky"})
	if err == nil || strings.Contains(err.Error(), "backend refused") || !strings.Contains(err.Error(), "error -32099") {
		t.Errorf("by default: %v; want what failed, not what the server said", err)
	}
}

// newFacadeRaw is newFacade with some upstreams answered by RawServers.
func newFacadeRaw(t *testing.T, ups map[string]*mcpsdk.Server, raws map[string]*mcptest.RawServer) *facade {
	t.Helper()
	return newFacade(t, ups, &mcpserver.Options{ReadyWait: time.Second}, engine.Options{
		ReadTimeout: 300 * time.Millisecond,
		// The content pass would wait out its own read timeout on the
		// server that never answers before the mirrors are ready.
		Mirror: func(o *ctxsync.Options) { o.ContentMaxResources = -1 },
		Dial: func(s config.Server) ctxsync.DialFunc {
			if r := raws[s.Name]; r != nil {
				return func(ctx context.Context, o *mcp.Options) (*mcp.Session, error) {
					return mcp.ConnectTransport(ctx, s.Name, r.Transport(t), o)
				}
			}
			return nil
		},
	})
}

func TestReadsFollowTheMirrorsCacheRulesAndAreMarkedPrivate(t *testing.T) {
	var mu sync.Mutex
	reads := map[string]int{}
	up := mcptest.NewServer(nil, &mcpsdk.ServerOptions{
		// The upstream marks doc://private private and doc://public public,
		// both fresh for a minute (MCP 2026-07-28 caching hints).
		SetCacheable: func(_ context.Context, req mcpsdk.Request, c *mcpsdk.Cacheable) {
			if r, ok := req.(*mcpsdk.ReadResourceRequest); ok {
				c.TTLMs, c.CacheScope = 60000, strings.TrimPrefix(r.Params.URI, "doc://")
			}
		},
	})
	for _, u := range []string{"doc://private", "doc://public"} {
		up.AddResource(&mcpsdk.Resource{URI: u, Name: u, MIMEType: "text/plain"},
			func(_ context.Context, req *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
				mu.Lock()
				reads[req.Params.URI]++
				mu.Unlock()
				return &mcpsdk.ReadResourceResult{Contents: []*mcpsdk.ResourceContents{{URI: req.Params.URI, MIMEType: "text/plain", Text: "secret of " + req.Params.URI}}}, nil
			})
	}
	f := newFacade(t, map[string]*mcpsdk.Server{"up": up}, nil, engine.Options{})
	cs := f.connect(t, nil)
	waitList(t, cs, func(rs []*mcpsdk.Resource) bool { return len(rs) == 2 })
	mu.Lock()
	before := maps.Clone(reads) // the content pass reads too
	mu.Unlock()
	for range 2 {
		for _, u := range []string{"doc://private", "doc://public"} {
			res, err := cs.ReadResource(t.Context(), &mcpsdk.ReadResourceParams{URI: "contextd:resource/up/" + u})
			if err != nil {
				t.Fatal(err)
			}
			if res.CacheScope != "private" || res.TTLMs != 0 {
				t.Errorf("read %s: cacheScope %q, ttlMs %d; want private, 0", u, res.CacheScope, res.TTLMs)
			}
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if n := reads["doc://private"] - before["doc://private"]; n != 2 {
		t.Errorf("two reads of the private resource reached the upstream %d times, want 2 (never cached)", n)
	}
	if n := reads["doc://public"] - before["doc://public"]; n != 1 {
		t.Errorf("two reads of the public resource reached the upstream %d times, want 1 (the mirror's TTL cache)", n)
	}
}

func TestTheFirstListWaitsForTheMirrorsFirstSync(t *testing.T) {
	up := mcptest.NewServer(map[string]string{"doc://a": "alpha", "doc://b": "beta"}, nil)
	f := startFacade(t, map[string]*mcpsdk.Server{"slow-start": up}, &mcpserver.Options{CheckInterval: time.Hour}, engine.Options{
		Dial: func(s config.Server) ctxsync.DialFunc {
			dial := mcptest.Dial(t, s.Name, up)
			return func(ctx context.Context, o *mcp.Options) (*mcp.Session, error) {
				time.Sleep(300 * time.Millisecond) // a server that takes a while to start
				return dial(ctx, o)
			}
		},
	})
	cs := f.connect(t, nil) // at once, as a host does
	res, err := cs.ListResources(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Resources) != 2 {
		t.Errorf("the first list has %v, want both resources of the server still starting", uris(res.Resources))
	}
}

func TestASlowFirstContentPassDelaysOneRequestOnly(t *testing.T) {
	// The server lists at once, but its reads do not answer while the
	// test runs: its first content pass outlasts any wait.
	slow := mcptest.NewServer(map[string]string{"doc://slow": "slow reads of the billing notes"}, nil)
	stop := make(chan struct{})
	slow.AddReceivingMiddleware(func(next mcpsdk.MethodHandler) mcpsdk.MethodHandler {
		return func(ctx context.Context, method string, req mcpsdk.Request) (mcpsdk.Result, error) {
			if method == "resources/read" {
				select {
				case <-stop:
				case <-ctx.Done():
				}
				return nil, errors.New("not reading")
			}
			return next(ctx, method, req)
		}
	})
	fast := mcptest.NewServer(map[string]string{"doc://arch": "architecture of the billing service"}, nil)
	// Waits are told apart by a margin of seconds: a request that waits
	// takes ReadyWait, one that does not takes milliseconds.
	const wait = 2 * time.Second
	f := startFacade(t, map[string]*mcpsdk.Server{"fast": fast, "slow": slow}, &mcpserver.Options{ReadyWait: wait},
		engine.Options{ReadTimeout: time.Hour})
	t.Cleanup(func() { close(stop) })
	synced := func() bool {
		for _, st := range f.eng.Servers() {
			if st.Server == "slow" {
				return st.Syncs > 0
			}
		}
		return false
	}
	for deadline := time.Now().Add(10 * time.Second); !synced(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the slow server did not sync its list within 10 s")
		}
	}
	cs := f.connect(t, nil)
	search := func(ctx context.Context) error {
		res, err := cs.CallTool(ctx, &mcpsdk.CallToolParams{Name: "search_resources", Arguments: map[string]any{"query": "billing"}})
		if err == nil && res.IsError {
			err = fmt.Errorf("tool error: %v", res.Content)
		}
		return err
	}
	start := time.Now()
	if err := search(t.Context()); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < wait*3/4 {
		t.Fatalf("the first search answered after %v: it did not wait for the slow server's content pass (ReadyWait %v)", d, wait)
	}
	select {
	case <-f.eng.Ready("slow"):
		t.Fatal("the slow server's content pass ended; the test needs it running")
	default:
	}
	// Later requests are answered without waiting again: each would
	// reach its deadline if it waited ReadyWait.
	for i := range 3 {
		ctx, cancel := context.WithTimeout(t.Context(), wait/2)
		err := search(ctx)
		cancel()
		if err != nil {
			t.Fatalf("search %d after one wait ran out: %v; want an answer without waiting again", i+2, err)
		}
	}
	if _, err := cs.GetPrompt(t.Context(), &mcpsdk.GetPromptParams{Name: "context", Arguments: map[string]string{"task": "billing"}}); err != nil {
		t.Fatal(err)
	}
}

func TestAnUpstreamStormReachesHostsAsAtMostOneListChangedPerCheck(t *testing.T) {
	up := mcptest.NewServer(map[string]string{"doc://base": "base"}, nil)
	f := newFacade(t, map[string]*mcpsdk.Server{"storm": up}, &mcpserver.Options{CheckInterval: 100 * time.Millisecond}, engine.Options{})
	var mu sync.Mutex
	notified := 0
	cs := f.connect(t, &mcpsdk.ClientOptions{ResourceListChangedHandler: func(context.Context, *mcpsdk.ResourceListChangedRequest) {
		mu.Lock()
		notified++
		mu.Unlock()
	}})
	waitList(t, cs, hasURI("contextd:resource/storm/doc://base"))
	time.Sleep(200 * time.Millisecond)
	mu.Lock()
	notified = 0
	mu.Unlock()

	// 200 changes in about a second, each with its own list_changed.
	start := time.Now()
	for i := range 200 {
		mcptest.AddText(up, fmt.Sprintf("doc://storm/%d", i), "storm", "storm")
		time.Sleep(5 * time.Millisecond)
	}
	// Every change is listed once all are embedded: the last one listed
	// need not be the last one embedded (under load a host may list in
	// between, and gets the rest with the next list_changed).
	rs := waitList(t, cs, func(rs []*mcpsdk.Resource) bool { return len(rs) == 201 })
	took := time.Since(start)
	time.Sleep(300 * time.Millisecond) // the last notification
	mu.Lock()
	n := notified
	mu.Unlock()
	if len(rs) != 201 {
		t.Errorf("after the storm the list has %d resources, want 201", len(rs))
	}
	if limit := int(took/(100*time.Millisecond)) + 4; n == 0 || n > limit {
		t.Errorf("%d list_changed for 200 upstream changes over %v, want 1 to %d (one per 100ms check)", n, took, limit)
	}
	t.Logf("%d list_changed downstream for 200 upstream changes over %v", n, took)
}

// A server a reload removes leaves the resource list: hosts are not shown
// resources they can no longer read.
func TestAServerRemovedByAReloadLeavesTheList(t *testing.T) {
	f := newFacade(t, map[string]*mcpsdk.Server{
		"keep": mcptest.NewServer(map[string]string{"doc://k": "kept"}, nil),
		"drop": mcptest.NewServer(map[string]string{"doc://d": "dropped"}, nil),
	}, &mcpserver.Options{CheckInterval: 50 * time.Millisecond}, engine.Options{})
	cs := f.connect(t, nil)
	waitList(t, cs, func(rs []*mcpsdk.Resource) bool {
		return hasURI("contextd:resource/keep/doc://k")(rs) && hasURI("contextd:resource/drop/doc://d")(rs)
	})
	cfg := &config.Config{Servers: []config.Server{{Name: "keep", Transport: config.TransportStdio, Command: "unused"}}}
	if _, err := f.eng.Reload(t.Context(), cfg); err != nil {
		t.Fatal(err)
	}
	waitList(t, cs, func(rs []*mcpsdk.Resource) bool {
		return hasURI("contextd:resource/keep/doc://k")(rs) && !hasURI("contextd:resource/drop/doc://d")(rs)
	})
}

// A read of a URI holding a control or other unprintable character is
// answered "not found" with its URI as JSON data, and the session goes on:
// the go-sdk writes that data with Go's quoting, which JSON cannot hold,
// and the answer could not be sent (a stdio host lost contextd).
func TestReadOfAURIWithAControlCharacterKeepsTheSession(t *testing.T) {
	f := newFacade(t, map[string]*mcpsdk.Server{"odd": oddServer(nil, nil)}, nil, engine.Options{})
	cs := f.connect(t, nil)
	for _, uri := range []string{
		mcpserver.ResourceURI(resource.Key{Server: "odd", URI: "file:///a\x01b"}),
		"contextd:resource/odd/file:///a\x00b",
		"contextd:context?task=a\x07b",
		"a\x0bb",
		"doc://x/\x7f",
		"doc://x/\U0001D173",
	} {
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		_, err := cs.ReadResource(ctx, &mcpsdk.ReadResourceParams{URI: uri})
		var je *jsonrpc.Error
		if !errors.As(err, &je) {
			t.Errorf("read of %q: %v; want a JSON-RPC error", uri, err)
		} else if je.Data != nil {
			var d struct{ URI string }
			if jerr := json.Unmarshal(je.Data, &d); jerr != nil || d.URI != uri {
				t.Errorf("read of %q: data %s (%v); want the URI", uri, je.Data, jerr)
			}
		}
		if err := cs.Ping(ctx, nil); err != nil {
			t.Fatalf("after a read of %q the session is gone: %v", uri, err)
		}
		cancel()
	}
}

// A mirror a reload starts (a server added, or a name pointed elsewhere)
// does not hold up requests that do not name its server: hosts already
// have a list, and get the new entries with the next list_changed. A
// server whose list reads contextd's own list (a bridge configured
// against contextd) otherwise stalled every host's list for ReadyWait at
// each reload, waiting on itself.
func TestAMirrorAReloadStartsHoldsUpOnlyRequestsNamingIt(t *testing.T) {
	stuck := make(chan struct{})
	defer close(stuck) // before any cleanup: sessions close once their calls end
	var blocking atomic.Bool
	hold := func(s *mcpsdk.Server) *mcpsdk.Server {
		s.AddReceivingMiddleware(func(next mcpsdk.MethodHandler) mcpsdk.MethodHandler {
			return func(ctx context.Context, method string, req mcpsdk.Request) (mcpsdk.Result, error) {
				if method == "resources/list" && blocking.Load() {
					select {
					case <-stuck:
					case <-ctx.Done():
					}
				}
				return next(ctx, method, req)
			}
		})
		return s
	}
	a := mcptest.NewServer(map[string]string{"doc://a": "architecture of the billing service"}, nil)
	b := hold(mcptest.NewServer(map[string]string{"doc://b": "billing runbook"}, nil))
	added := hold(mcptest.NewServer(map[string]string{"doc://c": "billing glossary"}, nil))
	f := newFacade(t, map[string]*mcpsdk.Server{"a": a, "b": b}, &mcpserver.Options{ReadyWait: time.Hour}, engine.Options{
		Dial: func(s config.Server) ctxsync.DialFunc {
			if s.Name == "added" {
				return mcptest.Dial(t, s.Name, added)
			}
			return nil
		},
	})
	cs := f.connect(t, nil)
	waitList(t, cs, func(rs []*mcpsdk.Resource) bool {
		return hasURI("contextd:resource/a/doc://a")(rs) && hasURI("contextd:resource/b/doc://b")(rs)
	})
	blocking.Store(true)
	cfg := &config.Config{Servers: []config.Server{
		{Name: "a", Transport: config.TransportStdio, Command: "unused"},
		// Another token: a new mirror under the same name.
		{Name: "b", Transport: config.TransportStdio, Command: "unused", Env: map[string]string{"API_TOKEN": "tok_rotated"}},
		{Name: "added", Transport: config.TransportStdio, Command: "unused"},
	}}
	if _, err := f.eng.Reload(t.Context(), cfg); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"b", "added"} {
		select {
		case <-f.eng.Ready(name):
			t.Fatalf("%s's new mirror is ready; the test needs its first list stuck", name)
		default:
		}
	}
	// Each would wait out its context if it waited for b or added.
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	res, err := cs.ListResources(ctx, nil)
	if err != nil {
		t.Fatalf("a host's list after the reload: %v; want an answer without waiting for the new mirrors", err)
	}
	if !hasURI("contextd:resource/a/doc://a")(res.Resources) || !hasURI("contextd:resource/b/doc://b")(res.Resources) {
		t.Errorf("the list after the reload lost what was mirrored before it: %d resources", len(res.Resources))
	}
	for _, args := range []map[string]any{
		{"query": "billing"},
		{"query": "billing", "servers": []string{"a"}},
	} {
		r, err := cs.CallTool(ctx, &mcpsdk.CallToolParams{Name: "search_resources", Arguments: args})
		if err != nil || r.IsError {
			t.Fatalf("search %v after the reload: %v %v; want an answer without waiting for the new mirrors", args, err, r)
		}
	}
	// A request naming the new server still waits for its first sync.
	short, cancel2 := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel2()
	if _, err := cs.CallTool(short, &mcpsdk.CallToolParams{Name: "search_resources", Arguments: map[string]any{"query": "billing", "servers": []string{"added"}}}); err == nil {
		t.Error("a search naming the added server answered before its first sync; want it to wait")
	}
}
