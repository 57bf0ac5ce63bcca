package mcpserver_test

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"testing/synctest"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/contextd/contextd/internal/engine"
	"github.com/contextd/contextd/internal/mcp/mcptest"
	"github.com/contextd/contextd/internal/mcpserver"
)

// A bridge listing placeholders from the start that renews them (a new
// descriptor, the same text) after a host read another server's pages,
// so that the content pass reads them again after that read, and only
// then answers them with those pages: turned into copies all the same
// (40 of 40 stayed listed when the rule went by when the placeholder was
// last read).
func TestPlaceholdersRenewedBeforeTurningIntoCopiesLeaveTheList(t *testing.T) {
	ph := func(i int) string {
		return fmt.Sprintf("b's placeholder %d, on kafka consumer rebalancing and partition lag, runbook %d\n", i, i)
	}
	for _, bump := range []bool{false, true} {
		t.Run("bump="+strconv.FormatBool(bump), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				a, b := mcptest.NewServer(nil, nil), mcptest.NewServer(nil, nil)
				set := func(i int, text, desc string) {
					uri := fmt.Sprintf("doc://b/c/%d", i)
					var ann *mcpsdk.Annotations
					if desc == "v2" {
						ann = &mcpsdk.Annotations{LastModified: time.Now().UTC().Format(time.RFC3339)}
					}
					b.AddResource(&mcpsdk.Resource{URI: uri, Name: uri, MIMEType: "text/markdown", Size: int64(len(text)), Description: desc, Annotations: ann},
						func(context.Context, *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
							return &mcpsdk.ReadResourceResult{Contents: []*mcpsdk.ResourceContents{{URI: uri, MIMEType: "text/markdown", Text: text}}}, nil
						})
				}
				for i := range 40 {
					addText(a, fmt.Sprintf("doc://a/%d", i), vacuumPage(i))
					set(i, ph(i), "v1")
				}
				for i := range 10 {
					addText(b, fmt.Sprintf("doc://b/own/%d", i), fmt.Sprintf("b's own page %d, on terraform state locking and drift detection, runbook %d\n", i, i))
				}
				opts := &mcpserver.Options{CheckInterval: 250 * time.Millisecond, PaceBurst: 128, PaceSettle: settle}
				f := newFacade(t, map[string]*mcpsdk.Server{"a": a, "b": b}, opts, engine.Options{})
				host := f.connect(t, nil)
				time.Sleep(settle + 10*time.Second)
				synctest.Wait()
				for i := range 40 {
					if _, err := host.ReadResource(t.Context(), &mcpsdk.ReadResourceParams{URI: fmt.Sprintf("contextd:resource/a/doc://a/%d", i)}); err != nil {
						t.Fatal(err)
					}
				}
				time.Sleep(time.Second)
				if bump {
					for i := range 40 {
						set(i, ph(i), "v2") // same placeholder text, new descriptor
					}
					time.Sleep(time.Minute)
					synctest.Wait()
				}
				for i := range 40 {
					set(i, vacuumPage(i), "page "+strconv.Itoa(i))
				}
				lists := f.eng.ServedLists()
				var n int
				for _, w := range []time.Duration{time.Minute, 10 * time.Minute, time.Hour, 2 * time.Hour} {
					time.Sleep(w)
					synctest.Wait()
					n = countListed(t, host, "b", "doc://b/c/")
					t.Logf("bump=%v +%v: withheld %v, copies %d, b copies listed %d of 40, own %d", bump, w, lists.Withheld("b"), lists.CopyCount("b"), n, countListed(t, host, "b", "doc://b/own/"))
				}
				if n > 0 {
					t.Errorf("bump=%v: %d of 40 turned copies listed at the end; want 0", bump, n)
				}
			})
		})
	}
}
