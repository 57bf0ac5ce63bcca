package service_test

import (
	"context"
	"net"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/test/bufconn"

	"github.com/contextd/contextd/internal/budget"
	"github.com/contextd/contextd/internal/config"
	"github.com/contextd/contextd/internal/engine"
	"github.com/contextd/contextd/internal/index/indextest"
	"github.com/contextd/contextd/internal/mcp"
	"github.com/contextd/contextd/internal/mcp/mcptest"
	"github.com/contextd/contextd/internal/mcpserver"
	"github.com/contextd/contextd/internal/resource"
	"github.com/contextd/contextd/internal/service"
	ctxsync "github.com/contextd/contextd/internal/sync"
	contextdv1 "github.com/contextd/contextd/proto/contextd/v1"
)

var docs = map[string]string{
	"doc://architecture.md": "# Architecture\n\nThe server is organised in layers.\n" + strings.Repeat("Each layer talks to the next one through a narrow interface.\n", 40),
	"doc://billing.md":      "# Billing\n\nInvoices are sent monthly.\n",
	"doc://calendar.md":     "# Calendar\n\nMeetings and dates.\n",
}

// newClient runs the service over bufconn with two upstreams: "docs" (a
// go-sdk server in memory) and "broken" (whose connect always fails).
func newClient(t *testing.T) contextdv1.ContextServiceClient {
	t.Helper()
	return newClientWith(t, nil)
}

// newClientWith is newClient, with setup called on the engine and the
// service before it serves.
func newClientWith(t *testing.T, setup func(*engine.Engine, *service.Service)) contextdv1.ContextServiceClient {
	t.Helper()
	cfg := &config.Config{Tokenizer: "cl100k_base", Servers: []config.Server{
		{Name: "broken", Transport: config.TransportStdio, Command: "does-not-exist"},
		{Name: "docs", Transport: config.TransportStdio, Command: "unused"},
	}}
	srv := mcptest.NewServer(docs, nil)
	eng, err := engine.New(t.Context(), engine.Options{
		Config: cfg, InMemory: true, Embedder: &indextest.BagEmbedder{},
		Dial: func(s config.Server) ctxsync.DialFunc {
			if s.Name == "broken" {
				return func(context.Context, *mcp.Options) (*mcp.Session, error) {
					return nil, &exec.Error{Name: "does-not-exist", Err: exec.ErrNotFound}
				}
			}
			return mcptest.Dial(t, s.Name, srv)
		},
		Mirror: func(o *ctxsync.Options) { o.MinBackoff, o.MaxBackoff = time.Hour, time.Hour },
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = eng.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done; eng.Close() })
	wctx, wcancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer wcancel()
	if err := eng.WaitReady(wctx); err != nil {
		t.Fatal(err)
	}

	lis := bufconn.Listen(1 << 20)
	svc := service.New(eng, nil)
	if setup != nil {
		setup(eng, svc)
	}
	gs := service.NewServer(svc)
	go func() { _ = gs.Serve(lis) }()
	t.Cleanup(gs.Stop)
	conn, err := grpc.NewClient("passthrough:///bufnet",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	if _, err := healthpb.NewHealthClient(conn).Check(t.Context(), &healthpb.HealthCheckRequest{}); err != nil {
		t.Fatalf("health check: %v", err)
	}
	return contextdv1.NewContextServiceClient(conn)
}

func TestAssembleOverGRPC(t *testing.T) {
	c := newClient(t)
	const budgetTokens = 60
	resp, err := c.Assemble(t.Context(), &contextdv1.AssembleRequest{Query: "how is the architecture organised", TokenBudget: budgetTokens})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.GetItems()) == 0 || resp.GetItems()[0].GetUri() != "doc://architecture.md" {
		t.Fatalf("first item = %v, want doc://architecture.md", resp.GetItems())
	}
	first := resp.GetItems()[0]
	if !first.GetTruncated() {
		t.Errorf("architecture.md is larger than the budget but not marked truncated")
	}
	tok, err := budget.NewTokenizer("cl100k_base")
	if err != nil {
		t.Fatal(err)
	}
	recount := 0
	for _, it := range resp.GetItems() {
		for _, ct := range it.GetContents() {
			recount += tok.Count(ct.GetText())
		}
	}
	if recount > budgetTokens || resp.GetTotalTokens() > budgetTokens || int(resp.GetTotalTokens()) != recount {
		t.Errorf("recounted %d tokens, total_tokens %d, budget %d", recount, resp.GetTotalTokens(), budgetTokens)
	}
	if got := len(resp.GetItems()) + len(resp.GetOmitted()); got != len(docs) {
		t.Errorf("items+omitted = %d, want every candidate (%d) accounted for", got, len(docs))
	}
	for _, o := range resp.GetOmitted() {
		if o.GetReason() == "" {
			t.Errorf("omitted %s without a reason", o.GetUri())
		}
	}
	if resp.GetReads() != int32(len(resp.GetItems())) {
		t.Errorf("reads = %d for %d items: something was read and not returned", resp.GetReads(), len(resp.GetItems()))
	}
}

// The texts an Assemble hands out are remembered as reads the MCP server
// answered, so that a bridge taking them from gRPC and passing them back
// under its own URIs is told a copy of them.
func TestTextsAnsweredOverGRPCAreRemembered(t *testing.T) {
	var eng *engine.Engine
	c := newClientWith(t, func(e *engine.Engine, svc *service.Service) {
		eng = e
		svc.NoteAnswers(mcpserver.New(e, nil).NoteAnswered)
	})
	resp, err := c.Assemble(t.Context(), &contextdv1.AssembleRequest{Query: "billing invoices", TokenBudget: 4000,
		Pinned: []*contextdv1.ResourceRef{{Server: "docs", Uri: "doc://architecture.md"}}})
	if err != nil {
		t.Fatal(err)
	}
	var text string
	for _, it := range resp.GetItems() {
		if it.GetUri() == "doc://architecture.md" && len(it.GetContents()) == 1 {
			text = it.GetContents()[0].GetText()
		}
	}
	if text != docs["doc://architecture.md"] {
		t.Fatalf("the pinned page came back as %q; want it whole", text)
	}
	c2 := eng.ServedLists().ServedBack(resource.Key{Server: "hub", URI: "hub://up/1"}, []resource.Content{{Text: text}})
	if want := (resource.Key{Server: "docs", URI: "doc://architecture.md"}); !slices.Contains(c2.Of, want) {
		t.Errorf("a bridge passing the answered text back: %+v; want a copy of %v", c2, want)
	}
}

func TestBadRequestsAreInvalidArgument(t *testing.T) {
	c := newClient(t)
	for _, tc := range []struct {
		name string
		req  *contextdv1.AssembleRequest
		msg  string
	}{
		{"empty query", &contextdv1.AssembleRequest{Query: "  ", TokenBudget: 10}, "query is empty"},
		{"zero budget", &contextdv1.AssembleRequest{Query: "x", TokenBudget: 0}, "below 1"},
		{"negative budget", &contextdv1.AssembleRequest{Query: "x", TokenBudget: -5}, "below 1"},
		{"unknown server", &contextdv1.AssembleRequest{Query: "x", TokenBudget: 10, Servers: []string{"nope"}}, `unknown server "nope"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := c.Assemble(t.Context(), tc.req)
			if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("err = %v, want InvalidArgument containing %q", err, tc.msg)
			}
		})
	}
	_, err := c.Search(t.Context(), &contextdv1.SearchRequest{Query: ""})
	if status.Code(err) != codes.InvalidArgument {
		t.Errorf("Search with empty query: %v, want InvalidArgument", err)
	}
}

func TestListServersShowsTheBrokenOneAndServesTheRest(t *testing.T) {
	c := newClient(t)
	resp, err := c.ListServers(t.Context(), &contextdv1.ListServersRequest{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]*contextdv1.ServerStatus{}
	for _, s := range resp.GetServers() {
		got[s.GetName()] = s
	}
	if b := got["broken"]; b.GetState() != contextdv1.ServerStatus_STATE_FAILED || !strings.Contains(b.GetLastError(), "does-not-exist") || b.GetLastErrorTime() == nil {
		t.Errorf("broken = %v, want FAILED with its error and time", b)
	}
	if d := got["docs"]; d.GetState() != contextdv1.ServerStatus_STATE_READY || d.GetResourceCount() != 3 || d.GetContentCount() != 3 || !d.GetResourcesCapability() {
		t.Errorf("docs = %v, want READY with 3 resources, their text indexed", d)
	}
	sr, err := c.Search(t.Context(), &contextdv1.SearchRequest{Query: "billing invoices", Limit: 2})
	if err != nil {
		t.Fatal(err)
	}
	if len(sr.GetResults()) != 2 || sr.GetResults()[0].GetUri() != "doc://billing.md" || sr.GetResults()[0].GetRank() != 1 {
		t.Errorf("Search = %v, want billing first of 2", sr.GetResults())
	}
}

// The daemon's own UNAVAILABLE (every server in scope failed) carries an
// ErrorInfo, so a client can tell it from no daemon answering at all.
func TestUpstreamUnavailableSaysItIsTheDaemons(t *testing.T) {
	c := newClient(t)
	var trailer metadata.MD
	_, err := c.Assemble(t.Context(), &contextdv1.AssembleRequest{Query: "x", TokenBudget: 10, Servers: []string{"broken"}}, grpc.Trailer(&trailer))
	st := status.Convert(err)
	// Retrying at once would get the same answer: a retry policy is told not to.
	if got := trailer.Get("grpc-retry-pushback-ms"); len(got) != 1 || got[0] != "-1" {
		t.Errorf("trailer grpc-retry-pushback-ms = %q, want -1", got)
	}
	if st.Code() != codes.Unavailable || !strings.Contains(st.Message(), "broken") {
		t.Fatalf("err = %v, want UNAVAILABLE naming the broken server", err)
	}
	// The code says "unavailable"; the message does not say it again
	// (the CLI printed "Unavailable: unavailable: …").
	if strings.HasPrefix(st.Message(), "unavailable") {
		t.Errorf("message %q repeats the code", st.Message())
	}
	var info *errdetails.ErrorInfo
	for _, d := range st.Details() {
		if i, ok := d.(*errdetails.ErrorInfo); ok {
			info = i
		}
	}
	if info.GetDomain() != service.ErrorDomain || info.GetReason() != service.ReasonUpstreamUnavailable {
		t.Errorf("details = %v, want ErrorInfo{%s, %s}", st.Details(), service.ErrorDomain, service.ReasonUpstreamUnavailable)
	}
}
