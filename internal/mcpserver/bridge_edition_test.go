package mcpserver_test

import (
	"context"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/contextd/contextd/internal/engine"
	"github.com/contextd/contextd/internal/mcp/mcptest"
	"github.com/contextd/contextd/internal/mcpserver"
	"github.com/contextd/contextd/internal/resource"
)

// An honest mirror stamping lastModified with its sync time: it syncs,
// still on the first edition, after the original published the second and
// before a host read it, and brings the second edition an hour later. Its
// pages were read again after the new edition came, but the new edition
// is a version of what they held: they stay listed (0 of 20 when the rule
// went by when the old text was last read).
func TestAMirrorTouchedBetweenEditionsKeepsItsPagesListed(t *testing.T) {
	page := func(i int, edition string) string {
		return fmt.Sprintf("Page %d on postgres vacuum tuning, %s edition: autovacuum settings,\nthe monitoring queries and the runbook steps an engineer follows %d.\n", i, edition, i)
	}
	for _, touch := range []bool{false, true} {
		t.Run(fmt.Sprintf("touch=%v", touch), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				a, b := mcptest.NewServer(nil, nil), mcptest.NewServer(nil, nil)
				publish := func(srv *mcpsdk.Server, name, edition string) {
					lm := time.Now().UTC().Format(time.RFC3339)
					for i := range 20 {
						uri, text := fmt.Sprintf("doc://%s/%d", name, i), page(i, edition)
						srv.AddResource(&mcpsdk.Resource{URI: uri, Name: uri, MIMEType: "text/markdown", Size: int64(len(text)), Annotations: &mcpsdk.Annotations{LastModified: lm}}, func(context.Context, *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
							return &mcpsdk.ReadResourceResult{Contents: []*mcpsdk.ResourceContents{{URI: uri, MIMEType: "text/markdown", Text: text}}}, nil
						})
					}
				}
				publish(a, "a", "first")
				publish(b, "b", "first")
				opts := &mcpserver.Options{CheckInterval: 250 * time.Millisecond, PaceBurst: 128, PaceSettle: settle}
				f := newFacade(t, map[string]*mcpsdk.Server{"a": a, "b": b}, opts, engine.Options{})
				host := f.connect(t, nil)
				time.Sleep(settle + 10*time.Second)
				synctest.Wait()
				readAll := func(server string) {
					for i := range 20 {
						if _, err := host.ReadResource(t.Context(), &mcpsdk.ReadResourceParams{URI: fmt.Sprintf("contextd:resource/%s/doc://%s/%d", server, server, i)}); err != nil {
							t.Fatal(err)
						}
					}
				}
				readAll("a")
				readAll("b")
				time.Sleep(time.Minute)
				publish(a, "a", "second")
				time.Sleep(5 * time.Minute)
				synctest.Wait()
				if touch {
					publish(b, "b", "first") // b's hourly sync: same text, new lastModified
					time.Sleep(5 * time.Minute)
					synctest.Wait()
				}
				readAll("a")
				time.Sleep(time.Hour)
				publish(b, "b", "second")
				lists := f.eng.ServedLists()
				pb := func() int {
					n := 0
					for i := range 20 {
						if lists.IsPassedBack(resource.Key{Server: "b", URI: fmt.Sprintf("doc://b/%d", i)}) {
							n++
						}
					}
					return n
				}
				var n int
				for _, w := range []time.Duration{time.Minute, 10 * time.Minute, time.Hour} {
					time.Sleep(w)
					synctest.Wait()
					n = countListed(t, host, "b", "")
					t.Logf("touch=%v +%v: withheld %v, copies %d, passed back %d, b listed %d of 20", touch, w, lists.Withheld("b"), lists.CopyCount("b"), pb(), n)
				}
				if n != 20 {
					t.Errorf("touch=%v: honest mirror lists %d of 20 after its late edition; want 20", touch, n)
				}
			})
		})
	}
}
