package sync_test

import (
	"context"
	"errors"
	gosync "sync"
	"testing"
	"testing/synctest"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

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
	for _, proto := range []string{"2025-11-25", "2026-07-28"} {
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

// A read that comes while the mirror reconnects after a lost session waits
// for the new session (a backoff shorter than ReconnectWait) and is served
// on it, instead of failing as "server not connected".
func TestReadDuringReconnectWaitsForTheNewSession(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := mcptest.NewServer(map[string]string{"doc://a": "a"}, nil)
		var mu gosync.Mutex
		var sessions []*mcpsdk.ServerSession
		dial := dialWith(t, srv, func(ss *mcpsdk.ServerSession) {
			mu.Lock()
			defer mu.Unlock()
			sessions = append(sessions, ss)
		})
		m := ctxsync.New(ctxsync.Options{Server: "s", Index: newIndex(t), Dial: dial, ContentMaxResources: noContentIndex,
			MinBackoff: 700 * time.Millisecond, MaxBackoff: 700 * time.Millisecond})
		start(t, m)
		<-m.Ready()
		synctest.Wait()
		mu.Lock()
		sessions[0].Close()
		mu.Unlock()
		synctest.Wait() // the mirror is backing off, with no session
		t0 := time.Now()
		c, _, err := m.ReadFetch(t.Context(), "doc://a")
		if err != nil || len(c) != 1 || c[0].Text != "a" {
			t.Fatalf("read during the reconnect: %+v, %v; want it served on the new session", c, err)
		}
		if waited := time.Since(t0); waited > ctxsync.DefaultReconnectWait {
			t.Errorf("waited %v, more than the bound %v", waited, ctxsync.DefaultReconnectWait)
		}
	})
}

// The wait is bounded: a reconnect that does not come within ReconnectWait
// fails the read then, and one due later than that fails it at once.
func TestReadDuringReconnectWaitIsBounded(t *testing.T) {
	for _, tc := range []struct {
		name    string
		backoff time.Duration
		want    time.Duration
	}{
		{"connect hangs", time.Millisecond, ctxsync.DefaultReconnectWait},
		{"backoff longer than the bound", time.Hour, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := mcptest.NewServer(map[string]string{"doc://a": "a"}, nil)
				var mu gosync.Mutex
				var sessions []*mcpsdk.ServerSession
				inner := dialWith(t, srv, func(ss *mcpsdk.ServerSession) {
					mu.Lock()
					defer mu.Unlock()
					sessions = append(sessions, ss)
				})
				dials := 0
				dial := func(ctx context.Context, o *mcp.Options) (*mcp.Session, error) {
					mu.Lock()
					dials++
					n := dials
					mu.Unlock()
					if n > 1 {
						<-ctx.Done() // the server never answers again
						return nil, ctx.Err()
					}
					return inner(ctx, o)
				}
				m := ctxsync.New(ctxsync.Options{Server: "s", Index: newIndex(t), Dial: dial, ContentMaxResources: noContentIndex,
					MinBackoff: tc.backoff, MaxBackoff: tc.backoff})
				start(t, m)
				<-m.Ready()
				synctest.Wait()
				mu.Lock()
				sessions[0].Close()
				mu.Unlock()
				synctest.Wait()
				t0 := time.Now()
				_, _, err := m.ReadFetch(t.Context(), "doc://a")
				if !errors.Is(err, ctxsync.ErrUnavailable) {
					t.Fatalf("read with no session coming: %v, want ErrUnavailable", err)
				}
				if waited := time.Since(t0); waited != tc.want {
					t.Errorf("failed after %v, want %v", waited, tc.want)
				}
				t0 = time.Now()
				if _, _, err := m.ReadFetch(t.Context(), "doc://a"); !errors.Is(err, ctxsync.ErrUnavailable) || time.Since(t0) != 0 {
					t.Errorf("the next read, same outage: %v after %v; want ErrUnavailable at once", err, time.Since(t0))
				}
			})
		})
	}
}

// A resource read (and cached) after the server listed it but before a
// re-list showed it to the mirror has no indexed version to compare with:
// the re-list that first shows it drops the copy, and one that shows it gone
// drops it too, though the index never had it. (Found by the property test,
// seeds 90 and 132.)
func TestCopyReadBeforeTheMirrorKnewTheResource(t *testing.T) {
	for _, proto := range []string{"2025-11-25", "2026-07-28"} {
		t.Run(proto, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := subscribableServer()
				mcptest.AddText(srv, "doc://a", "a", "a")
				m := ctxsync.New(ctxsync.Options{Server: "s", Index: newIndex(t), ContentMaxResources: noContentIndex,
					Dial: era(proto, mcptest.Dial(t, "s", srv))})
				start(t, m)
				<-m.Ready()
				synctest.Wait()
				mcptest.AddText(srv, "doc://new", "new", "v1")
				mcptest.AddText(srv, "doc://brief", "brief", "here")
				read(t, m, "doc://new") // before the re-list: cached, subscribed
				read(t, m, "doc://brief")
				mcptest.AddText(srv, "doc://new", "new", "v2, longer")
				srv.RemoveResources("doc://brief")
				time.Sleep(time.Second)
				synctest.Wait()
				c, f, err := m.ReadFetch(t.Context(), "doc://new")
				if err != nil || len(c) != 1 || c[0].Text != "v2, longer" {
					t.Errorf("doc://new after the re-list that first showed it: %+v (%s), %v; want the new text", c, f.Freshness(), err)
				}
				c, f, err = m.ReadFetch(t.Context(), "doc://brief")
				var nf *mcp.NotFoundError
				if !errors.As(err, &nf) {
					t.Errorf("doc://brief, listed and removed between two re-lists: %+v (%s), %v; want the server's not-found", c, f.Freshness(), err)
				}
			})
		})
	}
}
