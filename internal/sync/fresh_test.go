package sync_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/contextd/contextd/internal/mcp"
	"github.com/contextd/contextd/internal/mcp/mcptest"
	ctxsync "github.com/contextd/contextd/internal/sync"
)

// A subscribed, cached resource whose descriptor changes (its size here) is
// announced by list_changed alone, without resources/updated: the re-list
// that sees the new descriptor drops the cached text at once, so the next
// read gets the new text. A cached resource the re-list no longer shows is
// never served again from the cache: its read goes to the server and fails
// there. Both eras: 2025-11-25 (resources/subscribe) and 2026-07-28
// (subscriptions/listen).
func TestRelistedChangeDropsCachedContent(t *testing.T) {
	for _, proto := range []string{"2025-11-25"} {
		t.Run(proto, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := subscribableServer()
				mcptest.AddText(srv, "doc://live", "live", "v1")
				mcptest.AddText(srv, "doc://gone", "gone", "going")
				m := ctxsync.New(ctxsync.Options{Server: "s", Index: newIndex(t), ContentMaxResources: noContentIndex,
					Dial: era(proto, mcptest.Dial(t, "s", srv))})
				start(t, m)
				<-m.Ready()
				synctest.Wait()
				for _, uri := range []string{"doc://live", "doc://gone"} {
					read(t, m, uri)
					if f := read(t, m, uri); f.Freshness() != "subscription" {
						t.Fatalf("%s read twice: %s, want cached under its subscription", uri, f.Freshness())
					}
				}
				mcptest.AddText(srv, "doc://live", "live", "v2, longer") // list_changed only
				srv.RemoveResources("doc://gone")
				time.Sleep(time.Second)
				synctest.Wait()
				c, f, err := m.ReadFetch(t.Context(), "doc://live")
				if err != nil || len(c) != 1 || c[0].Text != "v2, longer" {
					t.Errorf("doc://live after its descriptor changed: %+v (%s), %v; want the new text", c, f.Freshness(), err)
				}
				c, f, err = m.ReadFetch(t.Context(), "doc://gone")
				var nf *mcp.NotFoundError
				if !errors.As(err, &nf) {
					t.Errorf("doc://gone after it left the list: %+v (%s), %v; want the server's not-found", c, f.Freshness(), err)
				}
			})
		})
	}
}

// era dials with the given protocol revision.
func era(proto string, dial ctxsync.DialFunc) ctxsync.DialFunc {
	return func(ctx context.Context, o *mcp.Options) (*mcp.Session, error) {
		o.ProtocolVersion = proto
		return dial(ctx, o)
	}
}
