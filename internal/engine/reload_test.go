package engine_test

import (
	"context"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/contextd/contextd/internal/config"
	"github.com/contextd/contextd/internal/engine"
	"github.com/contextd/contextd/internal/index/indextest"
	"github.com/contextd/contextd/internal/mcp"
	"github.com/contextd/contextd/internal/mcp/mcptest"
	"github.com/contextd/contextd/internal/resource"
	ctxsync "github.com/contextd/contextd/internal/sync"
)

// TestReloadAddsRemovesAndChangesServers reloads a running engine with one
// server kept, one removed (while an Assemble is reading from it), one
// changed and one added: the Assemble finishes with the removed server's
// content, the kept server keeps its session, the changed one reconnects,
// the added one syncs, and the removed one leaves the index.
func TestReloadAddsRemovesAndChangesServers(t *testing.T) {
	readStarted := make(chan struct{})
	release := make(chan struct{})
	removed := mcptest.NewServer(nil, nil)
	removed.AddResource(&mcpsdk.Resource{URI: "doc://ledger", Name: "walrus ledger", MIMEType: "text/plain"},
		func(ctx context.Context, req *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
			close(readStarted)
			select {
			case <-release:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			return &mcpsdk.ReadResourceResult{Contents: []*mcpsdk.ResourceContents{{URI: req.Params.URI, MIMEType: "text/plain", Text: "the walrus ledger of invoices"}}}, nil
		})
	// A second resource of the removed server, read after the first: it
	// needs the removed server's mirror to outlive the reload too.
	mcptest.AddText(removed, "doc://ledger-appendix", "walrus ledger appendix", "the walrus ledger appendix")
	servers := map[string]*mcpsdk.Server{
		"kept":    mcptest.NewServer(map[string]string{"doc://kept": "narwhal notes"}, nil),
		"removed": removed,
		"changed": mcptest.NewServer(map[string]string{"doc://changed": "dugong notes"}, nil),
		"added":   mcptest.NewServer(map[string]string{"doc://added": "manatee notes"}, nil),
	}
	var dials sync.Map // server name → *atomic.Int32
	dial := func(s config.Server) ctxsync.DialFunc {
		inner := mcptest.Dial(t, s.Name, servers[s.Name])
		return func(ctx context.Context, o *mcp.Options) (*mcp.Session, error) {
			n, _ := dials.LoadOrStore(s.Name, new(atomic.Int32))
			n.(*atomic.Int32).Add(1)
			return inner(ctx, o)
		}
	}
	dialsOf := func(name string) int32 {
		n, ok := dials.Load(name)
		if !ok {
			return 0
		}
		return n.(*atomic.Int32).Load()
	}
	entry := func(name string, env ...string) config.Server {
		s := config.Server{Name: name, Transport: config.TransportStdio, Command: "unused", NoContentIndex: true}
		if len(env) > 0 {
			s.Env = map[string]string{env[0]: env[1]}
		}
		return s
	}
	cfg := &config.Config{Servers: []config.Server{entry("changed"), entry("kept"), entry("removed")}}
	eng, err := engine.New(t.Context(), engine.Options{Config: cfg, InMemory: true, Embedder: &indextest.BagEmbedder{}, Dial: dial})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = eng.Run(ctx) })
	t.Cleanup(func() { cancel(); wg.Wait(); eng.Close() })
	if err := eng.WaitReady(t.Context()); err != nil {
		t.Fatal(err)
	}

	type answer struct {
		res *engine.AssembleResult
		err error
	}
	assembled := make(chan answer, 1)
	go func() {
		res, err := eng.Assemble(t.Context(), engine.AssembleRequest{Query: "walrus ledger", TokenBudget: 500, Filter: engine.Filter{Servers: []string{"removed"}}})
		assembled <- answer{res, err}
	}()
	<-readStarted

	next := &config.Config{Servers: []config.Server{entry("added"), entry("changed", "MODE", "new"), entry("kept")}}
	type reload struct {
		ch  engine.Changes
		err error
	}
	reloaded := make(chan reload, 1)
	go func() {
		ch, err := eng.Reload(t.Context(), next)
		reloaded <- reload{ch, err}
	}()
	// The new set is served at once, while the Assemble still reads.
	waitFor(t, "the added server in Servers", func() bool { return slices.Contains(names(eng.Servers()), "added") })
	select {
	case r := <-reloaded:
		t.Fatalf("Reload returned %+v before the request in flight finished", r)
	case <-time.After(50 * time.Millisecond):
	}
	close(release)
	a := <-assembled
	if a.err != nil {
		t.Fatalf("in-flight Assemble failed across the reload: %v", a.err)
	}
	var got []string
	for _, it := range a.res.Items {
		got = append(got, it.URI)
	}
	slices.Sort(got)
	if diff := cmp.Diff([]string{"doc://ledger", "doc://ledger-appendix"}, got); diff != "" {
		t.Errorf("in-flight Assemble items (-want +got):\n%s\nomitted %+v", diff, a.res.Omitted)
	}
	r := <-reloaded
	if r.err != nil {
		t.Fatal(r.err)
	}
	want := engine.Changes{Added: []string{"added"}, Removed: []string{"removed"}, Changed: []string{"changed"}, Kept: 1}
	if diff := cmp.Diff(want, r.ch); diff != "" {
		t.Errorf("Changes mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"added", "changed", "kept"}, names(eng.Servers())); diff != "" {
		t.Errorf("servers after reload (-want +got):\n%s", diff)
	}
	if got := dialsOf("kept"); got != 1 {
		t.Errorf("kept server dialled %d times; want its one session kept", got)
	}
	waitFor(t, "the changed server to reconnect", func() bool { return dialsOf("changed") == 2 })
	waitFor(t, "the added server to sync", func() bool {
		hits, err := eng.Search(t.Context(), engine.SearchRequest{Query: "manatee"})
		return err == nil && len(hits) > 0 && hits[0].Server == "added"
	})
	descs, err := eng.Descriptors("")
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range descs {
		if d.Server == "removed" {
			t.Errorf("removed server's descriptor still served: %+v", d)
		}
	}
	if st := eng.IndexStats(); st.Descriptors != 3 {
		t.Errorf("index holds %d descriptors; want 3 (the removed server's two dropped)", st.Descriptors)
	}
	if _, err := eng.Assemble(t.Context(), engine.AssembleRequest{Query: "walrus", TokenBudget: 100, Filter: engine.Filter{Servers: []string{"removed"}}}); err == nil {
		t.Error("Assemble scoped to the removed server succeeded; want an unknown-server error")
	}
}

// TestReloadKeepsRestartOnlySettings: data_dir, tokenizer and embedder are
// reported, not applied.
func TestReloadKeepsRestartOnlySettings(t *testing.T) {
	a := mcptest.NewServer(map[string]string{"doc://a": "alpha"}, nil)
	eng := newEngine(t, "", map[string]*mcpsdk.Server{"a": a}, 0)
	next := *eng.Config()
	next.Tokenizer, next.Embedder, next.DataDir = "o200k_base", config.EmbedderGloVe, "/elsewhere"
	next.Auth.Token = "a-token-serve-does-not-use-yet-0123"
	next.Limits.MaxPins = 2
	ch, err := eng.Reload(t.Context(), &next)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"data_dir", "tokenizer", "embedder"}, ch.Restart); diff != "" {
		t.Errorf("Restart (-want +got):\n%s", diff)
	}
	if !ch.Empty() || ch.Kept != 1 {
		t.Errorf("changes = %+v; want the server kept", ch)
	}
	if got := eng.Config(); got.Tokenizer == "o200k_base" || got.DataDir == "/elsewhere" || got.Auth.Token != "" {
		t.Errorf("restart-only settings applied: %+v", got)
	}
	if eng.Tokenizer() != "cl100k_base" {
		t.Errorf("tokenizer = %s", eng.Tokenizer())
	}
	// Limits apply at once.
	_, err = eng.Assemble(t.Context(), engine.AssembleRequest{Query: "alpha", TokenBudget: 100, Pinned: []resource.Key{{Server: "a", URI: "doc://a"}, {Server: "a", URI: "doc://a2"}, {Server: "a", URI: "doc://a3"}}})
	if err == nil {
		t.Error("three pins accepted after max_pins was reloaded to 2")
	}
}

func names(st []engine.ServerStatus) []string {
	var out []string
	for _, s := range st {
		out = append(out, s.Server)
	}
	return out
}

func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A reload that removes a server keeps its credentials withheld from the
// other stdio servers (its ${VAR} value stays in the daemon's
// environment): a server restarted by the reload inherited it.
func TestReloadKeepsARemovedServersCredentialsWithheld(t *testing.T) {
	const secret = "blue-river-stone-lamp!7"
	t.Setenv("CONTEXTD_TEST_X_API_KEY", secret) // what ${X_API_KEY} took it from
	servers := map[string]*mcpsdk.Server{
		"x": mcptest.NewServer(map[string]string{"doc://x": "x notes"}, nil),
		"y": mcptest.NewServer(map[string]string{"doc://y": "y notes"}, nil),
	}
	var mu sync.Mutex
	hidden := map[string][]string{} // server → HiddenEnv of its last dial
	dial := func(s config.Server) ctxsync.DialFunc {
		inner := mcptest.Dial(t, s.Name, servers[s.Name])
		return func(ctx context.Context, o *mcp.Options) (*mcp.Session, error) {
			mu.Lock()
			hidden[s.Name] = slices.Clone(o.HiddenEnv)
			mu.Unlock()
			return inner(ctx, o)
		}
	}
	entry := func(name, k, v string) config.Server {
		return config.Server{Name: name, Transport: config.TransportStdio, Command: "unused", NoContentIndex: true, Env: map[string]string{k: v}}
	}
	cfg := &config.Config{Servers: []config.Server{entry("x", "X_API_KEY", secret), entry("y", "MODE", "a")}}
	eng := newEngineOpts(t, "", servers, engine.Options{Config: cfg, Dial: dial})
	next := &config.Config{Servers: []config.Server{entry("y", "MODE", "b")}}
	if _, err := eng.Reload(t.Context(), next); err != nil {
		t.Fatal(err)
	}
	if err := eng.WaitReady(t.Context()); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		mu.Lock()
		h := hidden["y"]
		mu.Unlock()
		if slices.Contains(h, secret) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("y restarted withholding %q, not the removed server's credential", h)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A reload that adds a secret a kept server may already hold (inherited
// before it was one) masks it in that server's text from then on.
func TestReloadMasksAddedSecretsInKeptServersText(t *testing.T) {
	const token = "ghp_Zq8mT3kLw9PxR2vN7bYc0123"
	evil := mcpsdk.NewServer(&mcpsdk.Implementation{Name: "evil-" + token, Version: "1"}, &mcpsdk.ServerOptions{Capabilities: &mcpsdk.ServerCapabilities{Resources: &mcpsdk.ResourceCapabilities{}}})
	evil.AddResource(&mcpsdk.Resource{URI: "doc://e", Name: "e"}, func(context.Context, *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
		return nil, &jsonrpc.Error{Code: -32603, Message: "cfg value " + token}
	})
	servers := map[string]*mcpsdk.Server{"fs": evil, "gh": mcptest.NewServer(map[string]string{"doc://g": "g"}, nil)}
	cfg := &config.Config{Servers: []config.Server{{Name: "fs", Transport: config.TransportStdio, Command: "unused"}}}
	eng := newEngineOpts(t, "", servers, engine.Options{Config: cfg, ShowServerText: true})
	detail := func() string {
		t.Helper()
		res, err := eng.Assemble(t.Context(), engine.AssembleRequest{Query: "e", TokenBudget: 1000, Pinned: []resource.Key{{Server: "fs", URI: "doc://e"}}})
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range res.Omitted {
			if o.URI == "doc://e" {
				return o.Detail
			}
		}
		t.Fatalf("doc://e not omitted: %+v", res.Omitted)
		return ""
	}
	if d := detail(); !strings.Contains(d, token) {
		t.Fatalf("before the reload: %q; want the value, which is no secret yet", d)
	}
	next := *cfg
	next.Servers = append(slices.Clone(cfg.Servers), config.Server{Name: "gh", Transport: config.TransportHTTP, URL: "https://gh.example/mcp", Headers: map[string]string{"Authorization": "Bearer " + token}})
	ch, err := eng.Reload(t.Context(), &next)
	if err != nil || ch.Kept != 1 {
		t.Fatalf("reload: %+v, %v; want fs kept", ch, err)
	}
	if d := detail(); strings.Contains(d, token) || !strings.Contains(d, "cfg value REDACTED") {
		t.Errorf("after the reload: %q; want the added secret masked", d)
	}
	for _, st := range eng.Servers() {
		if strings.Contains(st.ServerName+st.ServerVersion+st.LastError+strings.Join(st.Problems, ""), "Zq8m") {
			t.Errorf("after the reload, %s's status holds the secret: %+v", st.Server, st)
		}
	}
}

// A reload that changes auth.token keeps serving with the old one (auth
// is restart-only), but the new one is a secret from then on: a server
// that prints it has it masked.
func TestReloadMasksTheNextAuthToken(t *testing.T) {
	const token = "daemon-token-next-4471-kestrel"
	evil := mcpsdk.NewServer(&mcpsdk.Implementation{Name: "evil", Version: "1"}, &mcpsdk.ServerOptions{Capabilities: &mcpsdk.ServerCapabilities{Resources: &mcpsdk.ResourceCapabilities{}}})
	evil.AddResource(&mcpsdk.Resource{URI: "doc://e", Name: "e"}, func(context.Context, *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
		return nil, &jsonrpc.Error{Code: -32603, Message: "cfg value " + token}
	})
	cfg := &config.Config{Auth: config.Auth{Token: "daemon-token-running-0923"}, Servers: []config.Server{{Name: "fs", Transport: config.TransportStdio, Command: "unused"}}}
	eng := newEngineOpts(t, "", map[string]*mcpsdk.Server{"fs": evil}, engine.Options{Config: cfg, ShowServerText: true})
	detail := func() string {
		t.Helper()
		res, err := eng.Assemble(t.Context(), engine.AssembleRequest{Query: "e", TokenBudget: 1000, Pinned: []resource.Key{{Server: "fs", URI: "doc://e"}}})
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range res.Omitted {
			if o.URI == "doc://e" {
				return o.Detail
			}
		}
		t.Fatalf("doc://e not omitted: %+v", res.Omitted)
		return ""
	}
	if d := detail(); !strings.Contains(d, token) {
		t.Fatalf("before the reload: %q; want the value, which is no secret yet", d)
	}
	next := *cfg
	next.Auth.Token = token
	if _, err := eng.Reload(t.Context(), &next); err != nil {
		t.Fatal(err)
	}
	if got := eng.Config().Auth.Token; got != cfg.Auth.Token {
		t.Errorf("after the reload the engine runs with token %q; want the one it started with", got)
	}
	if d := detail(); strings.Contains(d, token) || !strings.Contains(d, "cfg value REDACTED") {
		t.Errorf("after the reload: %q; want the next token masked", d)
	}
}

// A server that was sent a caller's words may quote them later: a reload
// that replaces its mirror (its entry changed, or its name) keeps what it
// says withheld, as the mirror before did.
func TestReloadKeepsWithholdingAServerSentCallerWords(t *testing.T) {
	for _, rename := range []bool{false, true} {
		t.Run(map[bool]string{false: "changed", true: "renamed"}[rename], func(t *testing.T) { reloadKeepsWithholding(t, rename) })
	}
}

func reloadKeepsWithholding(t *testing.T, rename bool) {
	const password = "correcthorse"
	var mu sync.Mutex
	var seen []string
	mem := mcptest.NewServer(nil, nil)
	mem.AddReceivingMiddleware(func(next mcpsdk.MethodHandler) mcpsdk.MethodHandler {
		return func(ctx context.Context, method string, req mcpsdk.Request) (mcpsdk.Result, error) {
			r, ok := req.(*mcpsdk.ReadResourceRequest)
			if !ok {
				return next(ctx, method, req)
			}
			mu.Lock()
			defer mu.Unlock()
			if r.Params.URI != "doc://e" {
				seen = append(seen, r.Params.URI)
				return nil, &jsonrpc.Error{Code: -32002, Message: "not found"}
			}
			return nil, &jsonrpc.Error{Code: -32603, Message: "cannot replay " + strings.Join(seen, " ")}
		}
	})
	mem.AddResource(&mcpsdk.Resource{URI: "doc://e", Name: "e"}, nil)
	cfg := &config.Config{Servers: []config.Server{
		{Name: "mem", Transport: config.TransportStdio, Command: "mem-server", AllowUnlistedPins: true, Env: map[string]string{"MODE": "a"}},
		{Name: "mail", Transport: config.TransportStdio, Command: "unused", Env: map[string]string{"SMTP_PASSWORD": password}},
	}}
	eng := newEngineOpts(t, "", map[string]*mcpsdk.Server{"mem": mem, "notes": mem, "mail": mcptest.NewServer(map[string]string{"doc://m": "m"}, nil)}, engine.Options{Config: cfg, ShowServerText: true})
	name := "mem"
	shown := func(pins ...string) string {
		t.Helper()
		req := engine.AssembleRequest{Query: "e", TokenBudget: 1000}
		for _, p := range pins {
			req.Pinned = append(req.Pinned, resource.Key{Server: name, URI: p})
		}
		res, err := eng.Assemble(t.Context(), req)
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		for _, o := range res.Omitted {
			b.WriteString(o.URI + " " + o.Detail + "\n")
		}
		return b.String()
	}
	shown("x://a/horse", "x://a/"+password)
	if got := shown("doc://e"); strings.Contains(got, "horse") || strings.Contains(got, "REDACTED") {
		t.Fatalf("before the reload: %q; want the error withheld", got)
	}
	next := *cfg
	next.Servers = slices.Clone(cfg.Servers)
	next.Servers[0].Env = map[string]string{"MODE": "b"}
	if rename {
		next.Servers[0].Name, name = "notes", "notes"
	}
	ch, err := eng.Reload(t.Context(), &next)
	if err != nil || len(ch.Changed)+len(ch.Added) != 1 {
		t.Fatalf("reload: %+v, %v; want mem changed or added anew", ch, err)
	}
	if err := eng.WaitReady(t.Context()); err != nil {
		t.Fatal(err)
	}
	got := shown("doc://e")
	if strings.Contains(got, "horse") || strings.Contains(got, "REDACTED") || !strings.Contains(got, "doc://e") {
		t.Errorf("after the reload: %q; want the read failure, with what the server said withheld", got)
	}
}

// A reload that makes a value of contextd's environment a secret restarts
// the stdio servers kept running: they inherited it, and would hold it.
func TestReloadRestartsStdioServersThatInheritedANewSecret(t *testing.T) {
	t.Setenv("CONTEXTD_TEST_NEW_TOKEN", "ghp_Zq8mT3kLw9PxR2vN7bYc0123")
	servers := map[string]*mcpsdk.Server{"fs": mcptest.NewServer(map[string]string{"doc://a": "a"}, nil), "gh": mcptest.NewServer(map[string]string{"doc://g": "g"}, nil)}
	cfg := &config.Config{Servers: []config.Server{{Name: "fs", Transport: config.TransportStdio, Command: "unused"}}}
	eng := newEngineOpts(t, "", servers, engine.Options{Config: cfg})
	same := *cfg
	if ch, err := eng.Reload(t.Context(), &same); err != nil || ch.Kept != 1 || len(ch.Changed) != 0 {
		t.Fatalf("reload of the same configuration: %+v, %v; want fs kept", ch, err)
	}
	next := *cfg
	next.Servers = append(slices.Clone(cfg.Servers), config.Server{Name: "gh", Transport: config.TransportStdio, Command: "unused", Env: map[string]string{"GITHUB_TOKEN": "ghp_Zq8mT3kLw9PxR2vN7bYc0123"}})
	ch, err := eng.Reload(t.Context(), &next)
	if err != nil || !slices.Equal(ch.Changed, []string{"fs"}) {
		t.Fatalf("reload adding gh's token: %+v, %v; want fs restarted", ch, err)
	}
}

// A server withheld from contextd's MCP list, held or frozen, whose entry
// a reload changes (its environment: the same server) stays so: a rotated
// credential forgot a bridge's withholding, and 128 of its copies were
// listed at once. One the reload removes is forgotten: its name, if it
// comes back, may stand for another server. (One pointed at another
// endpoint is the MCP server's to judge: see mcp.ServedLists.Repointed.)
func TestReloadKeepsWhatAChangedServerWasWithheldFor(t *testing.T) {
	servers := map[string]*mcpsdk.Server{
		"wiki": mcptest.NewServer(map[string]string{"doc://wiki/1": "wiki notes"}, nil),
		"gone": mcptest.NewServer(map[string]string{"doc://gone/1": "gone notes"}, nil),
	}
	entry := func(name, mode string) config.Server {
		return config.Server{Name: name, Transport: config.TransportStdio, Command: "unused", NoContentIndex: true, Env: map[string]string{"MODE": mode}}
	}
	cfg := &config.Config{Servers: []config.Server{entry("wiki", "a"), entry("gone", "a")}}
	eng := newEngineOpts(t, "", servers, engine.Options{Config: cfg})
	lists := eng.ServedLists()
	for _, s := range []string{"wiki", "gone"} {
		lists.Withhold(s)
		lists.Freeze(s, time.Now().Add(time.Hour))
	}
	next := &config.Config{Servers: []config.Server{entry("wiki", "b")}}
	ch, err := eng.Reload(t.Context(), next)
	if err != nil || !slices.Equal(ch.Changed, []string{"wiki"}) || !slices.Equal(ch.Removed, []string{"gone"}) {
		t.Fatalf("reload: %+v, %v; want wiki changed, gone removed", ch, err)
	}
	if !lists.Withheld("wiki") || !lists.Frozen("wiki") {
		t.Errorf("wiki, changed: withheld %v, frozen %v; want both still", lists.Withheld("wiki"), lists.Frozen("wiki"))
	}
	if lists.Withheld("gone") || lists.Frozen("gone") {
		t.Errorf("gone, removed: withheld %v, frozen %v; want neither", lists.Withheld("gone"), lists.Frozen("gone"))
	}
}
