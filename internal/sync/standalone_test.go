package sync_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/contextd/contextd/internal/config"
	"github.com/contextd/contextd/internal/mcp"
	ctxsync "github.com/contextd/contextd/internal/sync"
)

// End to end over Streamable HTTP on 2025-11-25: a read is cached under
// its subscription, and the resources/updated the server sends on the
// standalone stream evicts it, so the next read has the new text.
func TestUpdatesOnTheStandaloneStreamEvictCachedReads(t *testing.T) {
	var text atomic.Value
	text.Store("first")
	srv := mcpsdk.NewServer(&mcpsdk.Implementation{Name: "web", Version: "1"}, &mcpsdk.ServerOptions{
		SubscribeHandler:   func(context.Context, *mcpsdk.SubscribeRequest) error { return nil },
		UnsubscribeHandler: func(context.Context, *mcpsdk.UnsubscribeRequest) error { return nil },
	})
	srv.AddResource(&mcpsdk.Resource{URI: "doc://a", Name: "a", MIMEType: "text/plain"},
		func(_ context.Context, req *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
			return &mcpsdk.ReadResourceResult{Contents: []*mcpsdk.ResourceContents{{URI: req.Params.URI, MIMEType: "text/plain", Text: text.Load().(string)}}}, nil
		})
	hs := httptest.NewServer(mcpsdk.NewStreamableHTTPHandler(func(*http.Request) *mcpsdk.Server { return srv }, nil))
	t.Cleanup(hs.Close)
	m := ctxsync.New(ctxsync.Options{Server: "web", Index: newIndex(t), Dial: func(ctx context.Context, o *mcp.Options) (*mcp.Session, error) {
		o.ProtocolVersion = "2025-11-25"
		return mcp.Connect(ctx, config.Server{Name: "web", Transport: config.TransportHTTP, URL: hs.URL}, o)
	}})
	start(t, m)
	<-m.Ready()
	if st := m.Status(); st.State != ctxsync.StateReady || st.Protocol != "2025-11-25" || !st.Capabilities.Subscribe {
		t.Fatalf("status: %+v", st)
	}
	if f := read(t, m, "doc://a"); f.Freshness() != "subscription" {
		t.Fatalf("doc://a: %s, want cached under its subscription", f.Freshness())
	}
	text.Store("second")
	if err := srv.ResourceUpdated(t.Context(), &mcpsdk.ResourceUpdatedNotificationParams{URI: "doc://a"}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the new text after resources/updated", func() bool {
		c, _, err := m.ReadFetch(t.Context(), "doc://a")
		return err == nil && len(c) == 1 && c[0].Text == "second"
	})
}
