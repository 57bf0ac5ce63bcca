package mcpserver_test

import (
	"context"
	"fmt"
	"strings"
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
				readPages(t, host, "a", 20)
				readPages(t, host, "b", 20)
				time.Sleep(time.Minute)
				publish(a, "a", "second")
				time.Sleep(5 * time.Minute)
				synctest.Wait()
				if touch {
					publish(b, "b", "first") // b's hourly sync: same text, new lastModified
					time.Sleep(5 * time.Minute)
					synctest.Wait()
				}
				readPages(t, host, "a", 20)
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

// An honest mirror bringing its pages to the original's new edition, a
// host having read the original's: pages rewritten at each edition
// (status numbers, news, a stub filled later) share next to none of their
// runs of words with the edition before, and stay listed all the same
// (0 of 20 when a page whose text before was no version of a copy was
// taken for a bridge's turned placeholder).
func TestAMirrorOfRewrittenEditionsKeepsItsPagesListed(t *testing.T) {
	kinds := map[string]func(i, ed int) string{
		"prose": func(i, ed int) string { // the repo's own edition page (control)
			return fmt.Sprintf("Page %d on postgres vacuum tuning, edition %d: autovacuum settings,\nthe monitoring queries and the runbook steps an engineer follows %d.\n", i, ed, i)
		},
		"numbers": func(i, ed int) string {
			var sb strings.Builder
			fmt.Fprintf(&sb, "Status of cluster %d\n", i)
			for r := range 12 {
				fmt.Fprintf(&sb, "node %d cpu %d mem %d disk %d\n", r, (i*31+r*17+ed*53)%97, (i*7+r*29+ed*41)%89, (i*13+r*3+ed*71)%83)
			}
			return sb.String()
		},
		"news": func(i, ed int) string {
			stories := []string{"The city council approved the new budget for road repairs after a long debate",
				"Local bakery wins regional award for its sourdough bread and rye loaves",
				"Heavy rain expected over the weekend with flooding possible near the river",
				"The football club signed a young striker from the second division on a loan",
				"A new library branch opens downtown with extended hours and a maker space",
				"Scientists at the university publish findings on urban heat islands and trees"}
			return fmt.Sprintf("Front page %d\n%s.\n%s.\n", i, stories[(ed*2+i)%6], stories[(ed*2+i+1)%6])
		},
		"stub": func(i, ed int) string {
			if ed == 1 {
				return "Coming soon."
			}
			return fmt.Sprintf("Page %d on postgres vacuum tuning, edition %d: autovacuum settings,\nthe monitoring queries and the runbook steps an engineer follows %d.\n", i, ed, i)
		},
	}
	for _, kind := range []string{"prose", "numbers", "news", "stub"} {
		page := kinds[kind]
		t.Run(kind, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				a, b := mcptest.NewServer(nil, nil), mcptest.NewServer(nil, nil)
				publish := func(srv *mcpsdk.Server, name string, ed int) {
					for i := range 20 {
						uri, text := fmt.Sprintf("doc://%s/%d", name, i), page(i, ed)
						if kind == "stub" && name == "a" && ed == 1 {
							continue // a has no page yet
						}
						srv.AddResource(&mcpsdk.Resource{URI: uri, Name: uri, MIMEType: "text/markdown", Size: int64(len(text))}, func(context.Context, *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
							return &mcpsdk.ReadResourceResult{Contents: []*mcpsdk.ResourceContents{{URI: uri, MIMEType: "text/markdown", Text: text}}}, nil
						})
					}
				}
				publish(a, "a", 1)
				publish(b, "b", 1)
				for i := range 5 {
					addText(b, fmt.Sprintf("doc://own/%d", i), fmt.Sprintf("b's own page %d, on terraform state locking and drift detection, runbook %d\n", i, i))
				}
				opts := &mcpserver.Options{CheckInterval: 250 * time.Millisecond, PaceBurst: 128, PaceSettle: settle}
				f := newFacade(t, map[string]*mcpsdk.Server{"a": a, "b": b}, opts, engine.Options{})
				host := f.connect(t, nil)
				time.Sleep(settle + 10*time.Second)
				synctest.Wait()
				if kind != "stub" {
					readPages(t, host, "a", 20)
				}
				readPages(t, host, "b", 20)
				time.Sleep(time.Minute)
				publish(a, "a", 2)
				time.Sleep(10 * time.Second)
				synctest.Wait()
				readPages(t, host, "a", 20)
				time.Sleep(time.Second)
				publish(b, "b", 2)
				lists := f.eng.ServedLists()
				var n int
				for _, w := range []time.Duration{time.Minute, 10 * time.Minute, time.Hour} {
					time.Sleep(w)
					synctest.Wait()
					n = countListed(t, host, "b", "doc://b/")
					t.Logf("%s +%v: b withheld %v, copies %d, b mirror pages listed %d of 20, a %d", kind, w, lists.Withheld("b"), lists.CopyCount("b"), n, countListed(t, host, "a", ""))
				}
				if n != 20 {
					t.Errorf("%s: honest mirror lists %d of 20 after the new edition; want 20", kind, n)
				}
			})
		})
	}
}
