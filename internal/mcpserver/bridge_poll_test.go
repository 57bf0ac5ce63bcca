package mcpserver_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/contextd/contextd/internal/engine"
	"github.com/contextd/contextd/internal/mcp/mcptest"
	"github.com/contextd/contextd/internal/mcpserver"
)

// A bridge reading through contextd when read that also polls the
// originals through contextd every 4 minutes, so none is unread for 5
// minutes before a read, and renews its placeholders after the first
// polls: its placeholders turned into copies all the same (100 of 100
// stayed listed).
func TestAReadThroughBridgePollingTheOriginalsLeavesTheList(t *testing.T) {
	const n = 100
	for _, poll := range []bool{false, true} {
		t.Run(fmt.Sprintf("poll=%v", poll), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				a, b := mcptest.NewServer(nil, nil), mcptest.NewServer(nil, nil)
				for i := range n {
					addText(a, fmt.Sprintf("doc://a/%d", i), vacuumPage(i))
				}
				var through atomic.Pointer[mcpsdk.ClientSession]
				set := func(i int, lm string) {
					uri := fmt.Sprintf("doc://b/c/%d", i)
					var ann *mcpsdk.Annotations
					if lm != "" {
						ann = &mcpsdk.Annotations{LastModified: lm}
					}
					b.AddResource(&mcpsdk.Resource{URI: uri, Name: uri, MIMEType: "text/markdown", Annotations: ann}, func(ctx context.Context, _ *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
						text := "a page of b's own, on kafka consumer rebalancing and partition lag, runbook " + uri + "\n"
						if cs := through.Load(); cs != nil {
							time.Sleep(400 * time.Millisecond)
							res, err := cs.ReadResource(ctx, &mcpsdk.ReadResourceParams{URI: fmt.Sprintf("contextd:resource/a/doc://a/%d", i)})
							if err != nil {
								return nil, err
							}
							text = res.Contents[0].Text
						}
						return &mcpsdk.ReadResourceResult{Contents: []*mcpsdk.ResourceContents{{URI: uri, MIMEType: "text/markdown", Text: text}}}, nil
					})
				}
				for i := range n {
					set(i, "")
				}
				opts := &mcpserver.Options{CheckInterval: 250 * time.Millisecond, PaceBurst: 128, PaceSettle: settle}
				f := newFacade(t, map[string]*mcpsdk.Server{"a": a, "b": b}, opts, engine.Options{})
				host := f.connect(t, nil)
				time.Sleep(settle + 10*time.Second)
				synctest.Wait()
				done, stopped := make(chan struct{}), make(chan struct{})
				if poll {
					poller := f.connect(t, nil)
					go func() {
						defer close(stopped)
						for {
							for i := range n {
								poller.ReadResource(context.Background(), &mcpsdk.ReadResourceParams{URI: fmt.Sprintf("contextd:resource/a/doc://a/%d", i)})
							}
							select {
							case <-done:
								return
							case <-time.After(4 * time.Minute):
							}
						}
					}()
				} else {
					close(stopped)
				}
				time.Sleep(time.Minute)
				lm := time.Now().UTC().Format(time.RFC3339)
				for i := range n {
					set(i, lm) // placeholders read again, unchanged
				}
				time.Sleep(2 * time.Minute)
				synctest.Wait()
				through.Store(f.connect(t, nil))
				lm2 := time.Now().UTC().Format(time.RFC3339)
				for i := range n {
					set(i, lm2) // read now: through contextd
				}
				lists := f.eng.ServedLists()
				var got int
				for _, w := range []time.Duration{10 * time.Minute, time.Hour, 2 * time.Hour} {
					time.Sleep(w)
					synctest.Wait()
					got = countListed(t, host, "b", "doc://b/c/")
					t.Logf("poll=%v +%v: withheld %v, copies %d, listed %d of %d", poll, w, lists.Withheld("b"), lists.CopyCount("b"), got, n)
				}
				close(done)
				<-stopped
				if got > 0 {
					t.Errorf("poll=%v: %d of %d read-through copies listed; want 0", poll, got, n)
				}
			})
		})
	}
}
