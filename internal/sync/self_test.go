package sync_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/contextd/contextd/internal/index"
	"github.com/contextd/contextd/internal/index/indextest"
	"github.com/contextd/contextd/internal/mcp"
	"github.com/contextd/contextd/internal/mcp/mcptest"
	"github.com/contextd/contextd/internal/resource"
	ctxsync "github.com/contextd/contextd/internal/sync"
)

// A server that lists this contextd's own mirror of it back
// (contextd:resource/<its name>/<a URI this mirror holds>) is this
// contextd, reached through a bridge that answers initialize itself and so
// drops the instance name: once it does, it is not mirrored, nor are its
// templates, and what was indexed of it goes. Another contextd that has a
// server of the same name wraps that server's URIs, not this mirror's,
// and is mirrored as ever.
func TestAServerListingItsOwnMirrorBackIsNotMirrored(t *testing.T) {
	for _, c := range []struct {
		name, later string
		self        bool
	}{
		{"loop", "contextd:resource/bridge/contextd:resource/everything/demo://a", true},
		{"loop, name escaped", "contextd:resource/br%69dge/contextd:resource/everything/demo://a", true},
		{"another contextd's server of the same name", "contextd:resource/bridge/file:///srv/notes.md", false},
		// A bridge wrapping every URI (and dropping _meta): this mirror
		// holds hub://up/<the first entry>, listed back wrapped again.
		{"loop through a bridge wrapping URIs", "hub://up/" + url.QueryEscape("contextd:resource/bridge/"+ctxsyncEscape("hub://up/"+url.QueryEscape("contextd:resource/everything/demo://a"))), true},
	} {
		t.Run(c.name, func(t *testing.T) {
			ix, err := index.Open(t.Context(), index.Options{Embedder: &indextest.BagEmbedder{}})
			if err != nil {
				t.Fatal(err)
			}
			defer ix.Close()
			// First the other servers' entries come back, as this
			// contextd lists them; then its mirror of this one.
			first := "contextd:resource/everything/demo://a"
			if strings.HasPrefix(c.later, "hub://") {
				first = "hub://up/" + url.QueryEscape(first)
			}
			srv := mcptest.NewServer(map[string]string{first: "a note"}, nil)
			m := ctxsync.New(ctxsync.Options{Server: "bridge", Index: ix, Dial: mcptest.Dial(t, "bridge", srv)})
			start(t, m)
			<-m.Ready()
			srv.AddResource(&mcpsdk.Resource{URI: c.later, Name: "a note"}, func(context.Context, *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
				return &mcpsdk.ReadResourceResult{Contents: []*mcpsdk.ResourceContents{{URI: c.later, Text: "a note"}}}, nil
			})
			eventually(t, "the relist", func() bool {
				st := m.Status()
				return strings.Contains(st.LastError, mcp.ErrSelf.Error()) || len(ix.Descriptors("bridge")) == 2
			})
			st := m.Status()
			n := len(ix.Descriptors("bridge"))
			if c.self {
				if !strings.Contains(st.LastError, mcp.ErrSelf.Error()) || n != 0 || st.Templates != 0 {
					t.Errorf("error %q, %d indexed, %d templates; want ErrSelf and none", st.LastError, n, st.Templates)
				}
			} else if st.LastError != "" || n != 2 {
				t.Errorf("error %q, %d indexed; want both mirrored", st.LastError, n)
			}
		})
	}
}

// ctxsyncEscape percent-encodes a URI as contextd's MCP server does in
// contextd:resource/<server>/<uri>: "%" and what a path may not hold.
func ctxsyncEscape(u string) string {
	return strings.ReplaceAll(u, "%", "%25")
}

// A bridge that renames what it passes on (and may mix its own entries
// in, add a header line, read ahead) lists nothing this contextd can know,
// but what it passes back it read from contextd's MCP server: a resource
// whose read answers what that server answered a read of another resource
// with is a copy; so is one holding such a text rewritten (every line
// quoted, lines or words added, the text split): a near copy. Copies stay
// mirrored and answered, but two of other servers' withhold the server
// from contextd's MCP list (the loop is cut). An honest server whose text
// a host read from contextd has that one copy known, one whose very
// resource a host read through contextd none, and one whose pages are
// another's made from one template (a word changed) none.
func TestABridgeRenamingWhatItPassesOnIsKnownByItsReads(t *testing.T) {
	header := func(s string) []string { return []string{"<!-- via hub -->\n" + s} }
	quote := func(s string) []string {
		return []string{"> " + strings.ReplaceAll(strings.TrimSuffix(s, "\n"), "\n", "\n> ") + "\n"}
	}
	front := func(s string) []string {
		return []string{"---\nsource: hub\nread: 1764864000\nvia: contextd\n---\n" + s}
	}
	within := func(s string) []string { return []string{strings.Replace(s, "\n", "\n<!-- read 1764864000 -->\n", 1)} }
	midLine := func(s string) []string { return []string{s[:len(s)/2] + "\n[hub 1764864000]\n" + s[len(s)/2:]} }
	words := func(s string) []string { return []string{"read-id 1764864000 " + s} }
	split := func(s string) []string { return []string{s[:len(s)/2], s[len(s)/2:]} }
	template := func(s string) []string { return []string{strings.Replace(s, "vacuum tuning", "vacuum sizing", 1)} }
	for _, c := range []struct {
		name        string
		own, echoed int    // entries of its own, entries it reads through contextd
		origin      string // the server contextd read those from
		same        bool   // the host read the very resource contextd reads
		before      bool   // it read them from contextd ahead of time
		rewrite     func(string) []string
		copies      bool // those it passes back are known as copies
		withheld    bool
	}{
		{"renames every entry", 0, 5, "docs", false, false, nil, true, true},
		{"mixes in its own entries", 20, 5, "docs", false, false, nil, true, true},
		{"adds a header line", 20, 5, "docs", false, false, header, true, true},
		{"quotes every line", 20, 5, "docs", false, false, quote, true, true},
		{"adds front matter", 20, 5, "docs", false, false, front, true, true},
		{"adds a line within", 20, 5, "docs", false, false, within, true, true},
		{"adds a line within a line", 20, 5, "docs", false, false, midLine, true, true},
		{"adds words to the first line", 20, 5, "docs", false, false, words, true, true},
		{"splits the text", 20, 5, "docs", false, false, split, true, true},
		// A word replaced in every line reads as a template's slot filled
		// otherwise: no copy (the holds and the pace bound such a bridge).
		{"replaces a word of every line", 20, 5, "docs", false, false, func(s string) []string { return []string{wordline(s)} }, false, false},
		// Copies of the server's own resources, listed with them, say
		// nothing of other servers': a host reading one of ten stub
		// pages of one text.
		{"copies of its own resources", 20, 5, "bridge", false, false, nil, true, false},
		{"reads ahead", 20, 5, "docs", false, true, nil, true, true},
		{"reads ahead, quotes every line", 20, 5, "docs", false, true, quote, true, true},
		{"an honest server, one text read from contextd", 20, 1, "docs", false, false, nil, true, false},
		{"an honest server, its very resources read through contextd", 20, 5, "bridge", true, false, nil, false, false},
		{"an honest server, pages from another's template", 20, 5, "docs", false, false, template, false, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ix := newIndex(t)
				defer ix.Close()
				lists := &mcp.ServedLists{}
				srv := mcptest.NewServer(nil, nil)
				for i := range c.own + c.echoed {
					uri := fmt.Sprintf("hub://up/%d", i)
					text := fmt.Sprintf("%s: page %d on postgres vacuum tuning, autovacuum settings and index bloat\nIt covers the configuration knobs,\nthe monitoring queries and the runbook steps.\n", c.name, i)
					echo := i >= c.own
					from := resource.Key{Server: c.origin, URI: fmt.Sprintf("doc://%d", i)}
					if c.same {
						from = resource.Key{Server: "bridge", URI: uri}
					}
					if echo && c.before {
						lists.NoteRead(from, []resource.Content{{Text: text}})
					}
					passed := []string{text}
					if c.rewrite != nil && echo {
						passed = c.rewrite(text)
					}
					srv.AddResource(&mcpsdk.Resource{URI: uri, Name: fmt.Sprintf("up_page_%d", i), MIMEType: "text/markdown"}, func(context.Context, *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
						if echo && !c.before {
							// The bridge reads it from contextd's MCP server
							// (or a host reads it there just then).
							lists.NoteRead(from, []resource.Content{{URI: "contextd:resource/x", MIMEType: "text/markdown", Text: text}})
						}
						res := &mcpsdk.ReadResourceResult{}
						for _, p := range passed {
							res.Contents = append(res.Contents, &mcpsdk.ResourceContents{URI: uri, MIMEType: "text/markdown", Text: p})
						}
						return res, nil
					})
				}
				m := ctxsync.New(ctxsync.Options{Server: "bridge", Served: lists, Index: ix, Dial: mcptest.Dial(t, "bridge", srv)})
				start(t, m)
				<-m.Ready()
				// The content pass reads each entry; what came back goes
				// at the list that follows.
				for range 60 {
					time.Sleep(time.Second)
					synctest.Wait()
				}
				st := m.Status()
				n := len(ix.Descriptors("bridge"))
				if st.LastError != "" || n != c.own+c.echoed || lists.Withheld("bridge") != c.withheld {
					t.Errorf("error %q, %d indexed, withheld from contextd's list %v; want no error, %d, %v", st.LastError, n, lists.Withheld("bridge"), c.own+c.echoed, c.withheld)
				}
				copies := 0
				for i := c.own; i < c.own+c.echoed; i++ {
					if lists.IsCopy(resource.Key{Server: "bridge", URI: fmt.Sprintf("hub://up/%d", i)}) {
						copies++
					}
				}
				if want := map[bool]int{true: c.echoed}[c.copies]; copies != want || lists.CopyCount("bridge") != want {
					t.Errorf("%d of the %d passed back known as copies (%d in all); want %d", copies, c.echoed, lists.CopyCount("bridge"), want)
				}
				// Gone from its list, they are forgotten.
				var gone []string
				for i := c.own; i < c.own+c.echoed; i++ {
					gone = append(gone, fmt.Sprintf("hub://up/%d", i))
				}
				srv.RemoveResources(gone...)
				time.Sleep(10 * time.Second)
				synctest.Wait()
				if n, m := lists.CopyCount("bridge"), len(ix.Descriptors("bridge")); n != 0 || m != c.own {
					t.Errorf("once the %d passed back left its list: %d known as copies, %d indexed; want none and %d", c.echoed, n, m, c.own)
				}
			})
		})
	}
}

// A page holding one of its server's own before it with lines added is
// the server's own (a log, a changelog), however a bridge passed that
// page back; but not when the page it holds was itself a copy (a bridge
// adding a line to what it passes back, one level up each time), nor
// when it also holds another server's page that is no copy (a bridge
// putting its own line in front of what it passes back).
func TestOwnPagesWithLinesAddedAreOwnUnlessCopied(t *testing.T) {
	page := func(i int) string {
		return fmt.Sprintf("page %d on postgres vacuum tuning, autovacuum settings and index bloat, with the runbook steps\n", i)
	}
	const line = "passed on by the hub, read 1764864000\n"
	const own = "the hub's own note on its deployment pipeline and its release calendar, week 48\n"
	for _, c := range []struct {
		name     string
		doc      string               // docs' page 0, if not page(0)
		texts    []string             // the server's entries, listed in this order
		served   func(i int) []served // what contextd served before entry i was read
		withheld bool
	}{
		{"a log adding a line a page", "", []string{page(0), page(0) + line, page(0) + line + line, page(0) + line + line + line}, func(i int) []served {
			return []served{{"bridge", i - 1}} // a host read the page before through contextd
		}, false},
		{"a bridge adding a line at each level", "", []string{page(0) + line, page(0) + line + line, page(0) + line + line + line}, func(i int) []served {
			if i == 0 {
				return []served{{"docs", 0}}
			}
			return []served{{"bridge", i - 1}} // it read the level below through contextd
		}, true},
		// A rewritten copy of a page no copy of the server's own is its
		// own; of its own copies alone, a level up.
		{"a bridge quoting every line at each level", "", levels(quoted(page(0)), 4, quoted), func(i int) []served {
			if i == 0 {
				return []served{{"docs", 0}}
			}
			return []served{{"bridge", i - 1}}
		}, true},
		{"a bridge putting its own line in front", "", []string{own, own + page(1), own + page(2), own + page(3)}, func(i int) []served {
			return []served{{"bridge", 0}, {"docs", i}}
		}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ix := newIndex(t)
				defer ix.Close()
				lists := &mcp.ServedLists{}
				srv := mcptest.NewServer(nil, nil)
				key := func(sv served) (resource.Key, string) {
					if sv.server == "docs" {
						if sv.i == 0 && c.doc != "" {
							return resource.Key{Server: "docs", URI: "doc://0"}, c.doc
						}
						return resource.Key{Server: "docs", URI: fmt.Sprintf("doc://%d", sv.i)}, page(sv.i)
					}
					return resource.Key{Server: "bridge", URI: fmt.Sprintf("hub://up/%d", sv.i)}, c.texts[sv.i]
				}
				m := ctxsync.New(ctxsync.Options{Server: "bridge", Served: lists, Index: ix, Dial: mcptest.Dial(t, "bridge", srv)})
				start(t, m)
				<-m.Ready()
				for i, text := range c.texts {
					for _, sv := range c.served(i) {
						if sv.i >= 0 {
							k, t := key(sv)
							lists.NoteRead(k, []resource.Content{{Text: t}})
						}
					}
					uri := fmt.Sprintf("hub://up/%d", i)
					srv.AddResource(&mcpsdk.Resource{URI: uri, Name: uri, MIMEType: "text/plain"}, func(context.Context, *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
						return &mcpsdk.ReadResourceResult{Contents: []*mcpsdk.ResourceContents{{URI: uri, MIMEType: "text/plain", Text: text}}}, nil
					})
					// The content pass reads it before the next comes.
					for range 20 {
						time.Sleep(time.Second)
						synctest.Wait()
					}
				}
				if lists.Withheld("bridge") != c.withheld {
					t.Errorf("withheld %v (%d copies); want %v", lists.Withheld("bridge"), lists.CopyCount("bridge"), c.withheld)
				}
			})
		})
	}
}

// levels returns first and what f makes of it, of that, and so on: n
// texts in all.
func levels(first string, n int, f func(string) string) []string {
	out := []string{first}
	for len(out) < n {
		out = append(out, f(out[len(out)-1]))
	}
	return out
}

// quoted returns s with every line quoted.
func quoted(s string) string {
	return "> " + strings.ReplaceAll(strings.TrimSuffix(s, "\n"), "\n", "\n> ") + "\n"
}

// wordline returns s with the middle word of every line replaced by a
// nonce, fresh at each call: a bridge stamping each read it passes on.
func wordline(s string) string {
	var b strings.Builder
	for line := range strings.Lines(s) {
		fields := strings.Fields(line)
		if len(fields) > 0 {
			fields[len(fields)/2] = fmt.Sprintf("n%x", rand.Uint64())
		}
		b.WriteString(strings.Join(fields, " ") + "\n")
	}
	return b.String()
}

// An exact copy of a server's own page listed before it counts towards
// withholding the server when it came after contextd's MCP server
// answered a read of that page (a bridge passing back the server's own
// pages reads them first), or that read was answered while contextd read
// the copy (a bridge reading through when read); not when a host read
// that page after the copy was listed (a changelog's "latest", the
// newest version's text, beside that version's own page).
func TestAnOwnCopyCountsOnlyAfterWhatItCopiesWasServed(t *testing.T) {
	version := func(i int) string {
		return fmt.Sprintf("Release %d.0: autovacuum settings changed,\nthe monitoring queries rewritten, and index bloat reports added.\n", i)
	}
	for _, c := range []string{"a bridge reading ahead", "a bridge reading through", "an alias of the newest page"} {
		t.Run(c, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ix := newIndex(t)
				defer ix.Close()
				lists := &mcp.ServedLists{}
				docs := map[string]string{}
				for i := range 5 {
					docs[fmt.Sprintf("log://v/%d", i+1)] = version(i + 1)
				}
				srv := mcptest.NewServer(docs, nil)
				var latest atomic.Pointer[string]
				first := version(1)
				latest.Store(&first)
				srv.AddResource(&mcpsdk.Resource{URI: "log://latest", Name: "latest", MIMEType: "text/markdown"}, func(context.Context, *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
					return &mcpsdk.ReadResourceResult{Contents: []*mcpsdk.ResourceContents{{URI: "log://latest", MIMEType: "text/markdown", Text: *latest.Load()}}}, nil
				})
				m := ctxsync.New(ctxsync.Options{Server: "log", Served: lists, Index: ix, Dial: mcptest.Dial(t, "log", srv)})
				start(t, m)
				<-m.Ready()
				settle := func() {
					for range 20 {
						time.Sleep(time.Second)
						synctest.Wait()
					}
				}
				settle()
				for i := 1; i <= 4; i++ {
					page := resource.Key{Server: "log", URI: fmt.Sprintf("log://v/%d", i)}
					switch c {
					case "a bridge reading ahead":
						lists.NoteRead(page, []resource.Content{{Text: version(i)}})
						addText(srv, fmt.Sprintf("hub://up/%d", i), version(i))
						settle()
					case "a bridge reading through":
						uri := fmt.Sprintf("hub://up/%d", i)
						srv.AddResource(&mcpsdk.Resource{URI: uri, Name: uri, MIMEType: "text/markdown"}, func(context.Context, *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
							lists.NoteRead(page, []resource.Content{{Text: version(i)}})
							return &mcpsdk.ReadResourceResult{Contents: []*mcpsdk.ResourceContents{{URI: uri, MIMEType: "text/markdown", Text: version(i)}}}, nil
						})
						settle()
					case "an alias of the newest page":
						next := version(i + 5)
						latest.Store(&next) // "latest" is listed as before
						uri := fmt.Sprintf("log://v/%d", i+5)
						addText(srv, uri, next)
						settle()
						// A host reads "latest" through contextd, and an
						// answer reads the new version's page.
						lists.NoteRead(resource.Key{Server: "log", URI: "log://latest"}, []resource.Content{{Text: next}})
						time.Sleep(time.Second)
						if _, err := m.Read(t.Context(), uri); err != nil {
							t.Fatal(err)
						}
						if !lists.IsCopy(resource.Key{Server: "log", URI: uri}) {
							t.Fatalf("%s not known as a copy of latest", uri)
						}
					}
				}
				if want := c != "an alias of the newest page"; lists.Withheld("log") != want {
					t.Errorf("withheld %v (%d copies); want %v", lists.Withheld("log"), lists.CopyCount("log"), want)
				}
			})
		})
	}
}

// A served read in TestOwnPagesWithLinesAddedAreOwnUnlessCopied: entry i
// of server (docs, or the bridge itself).
type served struct {
	server string
	i      int
}

// A bridge passing back texts under mcp.MinDigestBytes (short notes)
// passes back copies no digest of 64 bytes tells: they stay mirrored, but
// eight that copy other servers' notes withhold it. An honest server with
// a few notes that say what another server's say is not withheld.
func TestABridgePassingBackShortNotesIsWithheld(t *testing.T) {
	for _, c := range []struct {
		name     string
		echoed   int
		withheld bool
	}{
		{"a bridge passing back twelve notes", 12, true},
		{"an honest server with four notes like another's", 4, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ix := newIndex(t)
				defer ix.Close()
				lists := &mcp.ServedLists{}
				srv := mcptest.NewServer(nil, nil)
				for i := range 20 {
					uri := fmt.Sprintf("hub://up/%d", i)
					text := fmt.Sprintf("note %d: vacuum at 2am.", i)
					echo := i < c.echoed
					srv.AddResource(&mcpsdk.Resource{URI: uri, Name: fmt.Sprintf("note_%d", i), MIMEType: "text/plain"}, func(context.Context, *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
						if echo {
							lists.NoteRead(resource.Key{Server: "notes", URI: fmt.Sprintf("note://%d", i)}, []resource.Content{{Text: text}})
						}
						return &mcpsdk.ReadResourceResult{Contents: []*mcpsdk.ResourceContents{{URI: uri, MIMEType: "text/plain", Text: text}}}, nil
					})
				}
				m := ctxsync.New(ctxsync.Options{Server: "bridge", Served: lists, Index: ix, Dial: mcptest.Dial(t, "bridge", srv)})
				start(t, m)
				<-m.Ready()
				for range 60 {
					time.Sleep(time.Second)
					synctest.Wait()
				}
				short := 0
				for i := range c.echoed {
					if lists.IsCopy(resource.Key{Server: "bridge", URI: fmt.Sprintf("hub://up/%d", i)}) {
						short++
					}
				}
				if n := len(ix.Descriptors("bridge")); n != 20 || lists.Withheld("bridge") != c.withheld || short != c.echoed || lists.CopyCount("bridge") != c.echoed {
					t.Errorf("%d indexed, withheld %v, %d of %d passed back known as copies (%d in all); want 20, %v, all", n, lists.Withheld("bridge"), short, c.echoed, lists.CopyCount("bridge"), c.withheld)
				}
			})
		})
	}
}

// A caller can have contextd's MCP server list a page of one server's
// entries alone (a list cursor is the caller's to pick): twelve
// README.md of one repository server. Another server whose list held
// twelve README.md as well, listing just then, was taken for a bridge
// passing that page back, and emptied (later, withheld): what a list
// holds is not evidence, only what a server's reads and growth show.
func TestAServerListingWhatACallerHadListedStaysMirrored(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ix := newIndex(t)
		defer ix.Close()
		lists := &mcp.ServedLists{}
		srv := mcptest.NewServer(nil, nil)
		for i := range 12 {
			uri := fmt.Sprintf("file:///repo/pkg%02d/README.md", i)
			srv.AddResource(&mcpsdk.Resource{URI: uri, Name: "README.md", MIMEType: "text/markdown"}, func(context.Context, *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
				return &mcpsdk.ReadResourceResult{Contents: []*mcpsdk.ResourceContents{{URI: uri, Text: fmt.Sprintf("package %d: build and test instructions for the repository's kubernetes operator\n", i)}}}, nil
			})
		}
		lists.NoteListed() // the page of the other server's twelve README.md
		m := ctxsync.New(ctxsync.Options{Server: "ra", Served: lists, Index: ix, Dial: mcptest.Dial(t, "ra", srv)})
		start(t, m)
		<-m.Ready()
		synctest.Wait()
		if st, n := m.Status(), len(ix.Descriptors("ra")); st.LastError != "" || n != 12 || lists.Withheld("ra") {
			t.Errorf("error %q, %d indexed, withheld %v; want none, 12, not withheld", st.LastError, n, lists.Withheld("ra"))
		}
	})
}

// A bridge that rewrites what it passes back past any copy test (a word
// changed in every line at each read) still grows with what contextd
// lists: at each of its lists (or most: it may hide what it passes back
// at every other list), after contextd's MCP server listed a page. Three
// such lists of five hold it for 30 s (contextd lists no more of it); one
// that stops growing meanwhile and grows again as soon as the hold ends,
// three times, is frozen. An honest server growing on its own goes on
// growing while held and is let be; one adding pages in bursts grows
// again later than that, and is let be too.
func TestAServerGrowingWithWhatContextdListsIsFrozen(t *testing.T) {
	for _, kind := range []string{"bridge", "lagging bridge", "hiding", "growing", "bursts", "every 40 s", "widening gaps"} {
		t.Run(kind, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ix := newIndex(t)
				defer ix.Close()
				lists := &mcp.ServedLists{}
				docs := map[string]string{}
				for i := range 10 {
					docs[fmt.Sprintf("hub://own/%d", i)] = fmt.Sprintf("the hub's own page %d, on its release calendar\n", i)
				}
				srv := mcptest.NewServer(docs, nil)
				m := ctxsync.New(ctxsync.Options{Server: "hub", Served: lists, Index: ix, Dial: mcptest.Dial(t, "hub", srv)})
				start(t, m)
				<-m.Ready()
				synctest.Wait()
				n := 0
				grow := func() { // contextd lists a page; the server lists one more entry
					time.Sleep(time.Second)
					lists.NoteListed()
					uri := fmt.Sprintf("hub://up/%d", n)
					n++
					addText(srv, uri, uri)
					time.Sleep(4 * time.Second)
					synctest.Wait()
				}
				if kind == "hiding" {
					// A bridge hiding what it passes back at every other
					// list: three of five lists grow.
					for i := range 5 {
						if i%2 == 0 {
							grow()
							continue
						}
						time.Sleep(time.Second)
						lists.NoteListed()
						srv.RemoveResources(fmt.Sprintf("hub://own/%d", i))
						time.Sleep(4 * time.Second)
						synctest.Wait()
					}
					if !lists.Held("hub") {
						t.Error("not held after three of five lists grew, each after contextd listed a page")
					}
					return
				}
				for range 3 {
					grow()
				}
				if !lists.Held("hub") {
					t.Fatal("not held after three lists that grew, each after contextd listed a page")
				}
				switch kind {
				case "growing": // every 5 s, held or not
					for range 8 {
						grow()
					}
					// Held once, its new texts are listed once read, for a
					// day.
					if !lists.Checked("hub") {
						t.Error("not checked after a hold")
					}
					time.Sleep(24 * time.Hour)
					if lists.Checked("hub") {
						t.Error("still checked a day after its hold")
					}
				case "bursts": // three, then pauses well past the hold
					time.Sleep(100 * time.Second)
					grow()
					time.Sleep(100 * time.Second)
					grow()
				case "widening gaps": // notes added 45 s, 95 s, 200 s apart
					for _, gap := range []time.Duration{45 * time.Second, 95 * time.Second, 200 * time.Second} {
						time.Sleep(gap - 5*time.Second)
						grow()
					}
					time.Sleep(5 * time.Minute) // any hold is over
				case "every 40 s": // slower than a hold, and again soon after it
					for range 10 {
						time.Sleep(35 * time.Second)
						grow()
					}
				case "bridge", "lagging bridge": // silent while held, growing again as soon as released
					for round, freeze := range []time.Duration{time.Hour, 2 * time.Hour} {
						if round > 0 {
							// Its first list after the freeze: watched
							// again; three more grown: held.
							for range 4 {
								grow()
							}
							if !lists.Held("hub") {
								t.Fatal("not held again after its freeze ran out, growing at each list")
							}
						}
						for i := range 4 {
							wait := 30 * time.Second << min(i, 2) // each hold twice the last, to 2 min
							if kind == "lagging bridge" {
								// Early in the hold, it passes back what it
								// took before.
								time.Sleep(2 * time.Second)
								grow()
								wait -= 10 * time.Second
							}
							time.Sleep(wait)
							grow()
							if frozen := lists.Frozen("hub"); frozen != (i == 3) || !lists.Held("hub") {
								t.Fatalf("round %d, hold %d over, grown again: held %v, frozen %v; want held, frozen only after the fourth", round+1, i+1, lists.Held("hub"), frozen)
							}
						}
						// Frozen a while (twice as long the second time),
						// listed again after.
						time.Sleep(freeze - 5*time.Minute)
						if !lists.Frozen("hub") {
							t.Fatalf("round %d: not frozen %v after it was", round+1, freeze-5*time.Minute)
						}
						time.Sleep(10 * time.Minute)
						if lists.Frozen("hub") || lists.Held("hub") {
							t.Fatalf("round %d: still frozen %v after it was", round+1, freeze+5*time.Minute)
						}
					}
					return
				}
				if lists.Held("hub") || lists.Frozen("hub") {
					t.Errorf("held %v, frozen %v; want neither", lists.Held("hub"), lists.Frozen("hub"))
				}
			})
		})
	}
}

// watched starts a mirror of server, served by srv with page at uri
// first, its growth watched through a fresh ServedLists; content is
// ctxsync.Options.ContentMaxResources. It returns when the mirror is
// ready.
func watched(t *testing.T, server, uri, page string, content int) (*mcp.ServedLists, *mcpsdk.Server) {
	t.Helper()
	ix := newIndex(t)
	t.Cleanup(func() { ix.Close() })
	lists := &mcp.ServedLists{}
	srv := mcptest.NewServer(map[string]string{uri: page}, nil)
	m := ctxsync.New(ctxsync.Options{Server: server, Served: lists, Index: ix, ContentMaxResources: content, Dial: mcptest.Dial(t, server, srv)})
	start(t, m)
	<-m.Ready()
	synctest.Wait()
	return lists, srv
}

// addText adds a resource at uri to srv whose read answers text.
func addText(srv *mcpsdk.Server, uri, text string) {
	srv.AddResource(&mcpsdk.Resource{URI: uri, Name: uri}, func(context.Context, *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
		return &mcpsdk.ReadResourceResult{Contents: []*mcpsdk.ResourceContents{{URI: uri, Text: text}}}, nil
	})
}

// A bridge that passes back what contextd lists a lag later than half a
// hold grows on through the hold (with what contextd listed before it),
// then pauses as long as contextd's list was still, and grows again by
// what contextd listed after: it is frozen all the same, whether its
// texts are read or not, beside a log growing at a steady pace or at
// random, with nothing else growing, beside another such bridge, or
// adding entries of its own that fill its pauses. Here contextd's MCP list
// is modelled: each list of it (a host's every 5 s, each bridge's every
// few seconds) shows the log's and the bridges' entries unless some
// server is held (a bridge's no more once frozen), and a bridge passes
// back what it listed the lag before.
func testABridgePassingBackLateIsFrozen(t *testing.T) {
	const runFor = 35 * time.Minute
	type bridge struct {
		lag  time.Duration
		poll int // seconds between its lists of contextd
		own  int // seconds between entries of its own; 0: none
		// unread: its texts are not read (ContentMaxResources -1),
		// whatever the case's content.
		unread bool
	}
	for _, tc := range []struct {
		name    string
		bridges []bridge
		log     int  // seconds between the entries of a log beside; 0: none
		random  bool // the log's gaps are drawn at random, log seconds on average
		content int  // ctxsync.Options.ContentMaxResources
	}{
		{"45 s late beside a log", []bridge{{45 * time.Second, 7, 0, false}}, 5, false, 0},
		{"90 s late beside a log", []bridge{{90 * time.Second, 3, 0, false}}, 5, false, 0},
		{"90 s late beside a log, texts not read", []bridge{{90 * time.Second, 10, 0, false}}, 5, false, -1},
		{"3 min late beside a log", []bridge{{3 * time.Minute, 7, 0, false}}, 5, false, 0},
		{"60 s late, nothing else growing", []bridge{{time.Minute, 7, 0, false}}, 0, false, -1},
		{"2 min late, nothing else growing", []bridge{{2 * time.Minute, 2, 0, false}}, 0, false, 0},
		{"90 s late, nothing else growing, texts not read", []bridge{{90 * time.Second, 2, 0, false}}, 0, false, -1},
		{"at once, adding its own every 10 s, texts not read", []bridge{{0, 2, 10, false}}, 5, false, -1},
		{"45 s late, adding its own every 10 s", []bridge{{45 * time.Second, 2, 10, false}}, 5, false, 0},
		{"90 s late beside a log growing at random", []bridge{{90 * time.Second, 2, 0, false}}, 8, true, 0},
		{"two, 45 s and 90 s late, beside a log", []bridge{{45 * time.Second, 5, 0, false}, {90 * time.Second, 7, 0, false}}, 5, false, 0},
		// The one not read is held through the other's holds in a row,
		// contextd's list growing between them.
		{"two, 45 s late not read and 90 s late, beside a log", []bridge{{45 * time.Second, 2, 0, true}, {90 * time.Second, 7, 0, false}}, 5, false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				ix := newIndex(t)
				defer ix.Close()
				lists := &mcp.ServedLists{}
				type listed struct {
					at time.Time
					n  int
				}
				type running struct {
					bridge
					name     string
					srv      *mcpsdk.Server
					n, mine  int // entries passed back, and its own
					shown    int // of them on contextd's list
					frozenAt time.Duration
					nAtFroze int
				}
				bs := make([]*running, len(tc.bridges))
				for i, b := range tc.bridges {
					r := &running{bridge: b, name: fmt.Sprintf("hub%d", i)}
					r.srv = mcptest.NewServer(map[string]string{r.name + "://own/0": "the hub's own page\n"}, nil)
					content := tc.content
					if b.unread {
						content = -1
					}
					m := ctxsync.New(ctxsync.Options{Server: r.name, Served: lists, Index: ix, ContentMaxResources: content, Dial: mcptest.Dial(t, r.name, r.srv)})
					start(t, m)
					<-m.Ready()
					bs[i] = r
				}
				synctest.Wait()
				var (
					shown    []listed // contextd's MCP list's length, each second
					logN     = 10     // the log's entries
					shownLog = 0
					nextLog  = time.Duration(tc.log) * time.Second
				)
				rnd := rand.New(rand.NewPCG(uint64(len(tc.name)), 14))
				total := func() int {
					n := shownLog
					for _, r := range bs {
						n += r.shown
					}
					return n
				}
				list := func() { // a list of contextd
					lists.NoteListed()
					if lists.Quiet() {
						return
					}
					was := total()
					shownLog = logN
					for _, r := range bs {
						if !lists.Frozen(r.name) {
							r.shown = r.n + r.mine
						}
					}
					lists.NoteAdded(total() - was)
				}
				t0 := time.Now()
				// Until runFor, or 5 minutes after the last freeze: frozen,
				// a bridge grows by what contextd lists of others at most.
				allFrozen := func() bool {
					last := time.Duration(0)
					for _, r := range bs {
						if r.frozenAt == 0 {
							return false
						}
						last = max(last, r.frozenAt)
					}
					return time.Since(t0) >= last+5*time.Minute
				}
				for sec := 1; time.Since(t0) < runFor && !allFrozen(); sec++ {
					time.Sleep(time.Second)
					if tc.log > 0 && time.Since(t0) >= nextLog {
						logN++
						gap := time.Duration(tc.log) * time.Second
						if tc.random {
							gap = time.Duration(rnd.ExpFloat64() * float64(gap))
						}
						nextLog += gap
					}
					if sec%5 == 0 { // a host lists contextd
						list()
					}
					for _, r := range bs {
						if r.own > 0 && sec%r.own == 0 {
							r.mine++
							uri := fmt.Sprintf("%s://own/%d", r.name, r.mine)
							addText(r.srv, uri, fmt.Sprintf("the bridge's own note %s, new each time\n", uri))
						}
					}
					for _, r := range bs {
						if sec%r.poll != 0 {
							continue
						}
						list()
						then := 0 // what contextd listed the lag before
						for _, l := range shown {
							if l.at.After(time.Now().Add(-r.lag)) {
								break
							}
							then = l.n
						}
						for ; r.n < then; r.n++ {
							uri := fmt.Sprintf("%s://up/%d", r.name, r.n)
							addText(r.srv, uri, fmt.Sprintf("a page made up about %s, new each time\n", uri))
						}
					}
					shown = append(shown, listed{time.Now(), total()})
					synctest.Wait()
					for _, r := range bs {
						if r.frozenAt == 0 && lists.Frozen(r.name) {
							r.frozenAt, r.nAtFroze = time.Since(t0), r.n
						}
					}
				}
				for _, r := range bs {
					if r.frozenAt == 0 {
						t.Errorf("%s not frozen in %v: it passed back %d entries", r.name, runFor, r.n)
						continue
					}
					// Frozen, it grows by what contextd lists of others
					// at most: the log's entries, and another bridge's
					// until that is frozen.
					most := logN + 30
					for _, o := range bs {
						if o != r {
							most += o.nAtFroze
						}
					}
					if grown := r.n - r.nAtFroze; grown > most {
						t.Errorf("%s frozen at %v with %d entries, it grew by %d after; want %d at most", r.name, r.frozenAt.Round(time.Second), r.nAtFroze, grown, most)
					}
					t.Logf("%s frozen at %v with %d entries passed back; %d at %v", r.name, r.frozenAt.Round(time.Second), r.nAtFroze, r.n, time.Since(t0).Round(time.Second))
				}
			})
		})
	}
}

// A bridge held while another server's holds in a row keep contextd's
// list still (a few seconds of growth between them, which it passes back
// during the next) is released when the list first grows again after its
// own hold, not at the end of the row: it echoes that stillness a lag
// later, and is held again, then frozen.
func TestABridgeHeldThroughAnotherServersHoldsIsHeldAgain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lists, srv := watched(t, "hub", "hub://own/0", "the hub's own page\n", -1)
		const lag = 45 * time.Second
		type listed struct {
			at time.Time
			n  int
		}
		var (
			shown              []listed // contextd's MCP list's length, each second
			logN, n            = 10, 0  // the log's entries, the bridge's
			shownLog, shownHub int
		)
		list := func() { // a list of contextd
			lists.NoteListed()
			if lists.Quiet() {
				return
			}
			was := shownLog + shownHub
			shownLog = logN
			if !lists.Frozen("hub") {
				shownHub = n
			}
			lists.NoteAdded(shownLog + shownHub - was)
		}
		// The other server's holds: 60, 60, 120 and 120 s, 4 s apart, from
		// 20 s after the bridge's first hold.
		other := []time.Duration{time.Minute, time.Minute, 2 * time.Minute, 2 * time.Minute}
		var firstHeld, nextHold, chainEnd, frozen time.Time
		holds, wasHeld := 0, false // holds begun by chainEnd + 2 min
		t0 := time.Now()
		for sec := 1; time.Since(t0) < time.Hour && frozen.IsZero(); sec++ {
			time.Sleep(time.Second)
			now := time.Now()
			if sec%5 == 0 {
				logN++
				list() // a host lists contextd
			}
			if len(other) > 0 && !nextHold.IsZero() && !now.Before(nextHold) {
				lists.Hold("other", now.Add(other[0]))
				nextHold = now.Add(other[0] + 4*time.Second)
				if other = other[1:]; len(other) == 0 {
					chainEnd = nextHold.Add(-4 * time.Second)
				}
			}
			if sec%2 == 0 { // the bridge lists contextd, passes back what it listed lag before
				list()
				then := 0
				for _, l := range shown {
					if l.at.After(now.Add(-lag)) {
						break
					}
					then = l.n
				}
				for ; n < then; n++ {
					uri := fmt.Sprintf("hub://up/%d", n)
					addText(srv, uri, "")
				}
			}
			shown = append(shown, listed{now, shownLog + shownHub})
			synctest.Wait()
			held := lists.Held("hub")
			if firstHeld.IsZero() && held {
				firstHeld, nextHold = now, now.Add(20*time.Second)
			}
			if held && !wasHeld && (chainEnd.IsZero() || now.Before(chainEnd.Add(2*time.Minute))) {
				holds++
			}
			wasHeld = held
			if lists.Frozen("hub") {
				frozen = now
			}
		}
		if chainEnd.IsZero() {
			t.Fatalf("after %v, the other server's holds had not all begun (held at %v, frozen at %v)", time.Since(t0), firstHeld.Sub(t0), frozen.Sub(t0))
		}
		t.Logf("held at %v, the other's holds over at %v, %d holds by 2 minutes after, frozen at %v, %d entries passed back",
			firstHeld.Sub(t0), chainEnd.Sub(t0), holds, frozen.Sub(t0), n)
		if holds < 2 {
			t.Errorf("held %d times by 2 minutes after the other server's holds ended; want held again (echoing a stillness %v late)", holds, lag)
		}
		if frozen.IsZero() || frozen.Sub(chainEnd) > 20*time.Minute {
			t.Errorf("not frozen within 20 minutes after the other server's holds ended")
		}
	})
}

// An honest server adding three entries every two minutes beside another
// server held again and again (holds in a row, a few seconds apart, as
// long as its pace): contextd's list is still most of the time, and the
// server's pauses are as long as its stillnesses, but its own holds make
// no stillness of their own that it echoes; it is not frozen in 8 hours.
func TestASteadyServerBesideAnothersHoldsInARowIsNotFrozen(t *testing.T) {
	for _, tc := range []struct {
		name  string
		holds []time.Duration // the other's holds, in a row, over and over
		gap   time.Duration   // between them
	}{
		{"60, 60, 120, 120 s, 4 s apart", []time.Duration{time.Minute, time.Minute, 2 * time.Minute, 2 * time.Minute}, 4 * time.Second},
		{"120 s, 4 s apart", []time.Duration{2 * time.Minute}, 4 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				lists, srv := watched(t, "notes", "notes://n/0", "the first note\n", -1)
				n, shown := 1, 1
				t0 := time.Now()
				nextHold, held := t0.Add(30*time.Second), 0
				for sec := 1; sec <= 8*3600; sec++ {
					time.Sleep(time.Second)
					now := time.Now()
					if sec%5 == 0 { // a host lists contextd
						lists.NoteListed()
						if !lists.Quiet() && !lists.Frozen("notes") {
							lists.NoteAdded(n - shown)
							shown = n
						}
					}
					if !now.Before(nextHold) {
						d := tc.holds[held%len(tc.holds)]
						held++
						lists.Hold("other", now.Add(d))
						nextHold = now.Add(d + tc.gap)
					}
					if sec%120 == 0 {
						for range 3 {
							uri := fmt.Sprintf("notes://n/%d", n)
							n++
							addText(srv, uri, "a note "+uri)
						}
					}
					synctest.Wait()
					if lists.Frozen("notes") {
						t.Fatalf("frozen at %v with %d entries", now.Sub(t0), n)
					}
				}
			})
		})
	}
}

// An honest server adding a page at a steady pace, each 15 to 30 s, a
// hold's length at most: a hold's second half may fall between two of its
// pages, and its next page comes soon after the hold. That says nothing
// of a server growing so seldom: it is held once at a time, never twice
// in a row (which kept contextd's whole MCP list still a minute more).
func TestAPageEachHoldsLengthIsHeldOnceAtATime(t *testing.T) {
	for _, every := range []time.Duration{16 * time.Second, 20 * time.Second, 25 * time.Second, 30 * time.Second} {
		t.Run(every.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				lists, srv := watched(t, "docs", "doc://0", "the first page\n", 0)
				n, shown, run, longest, holds := 1, 1, 0, 0, 0
				for sec := 1; sec <= 3600; sec++ {
					time.Sleep(time.Second)
					lists.NoteListed() // a host lists contextd each second
					if !lists.Quiet() {
						lists.NoteAdded(n - shown)
						shown = n
					}
					if sec%int(every/time.Second) == 0 {
						uri := fmt.Sprintf("doc://%d", n)
						n++
						addText(srv, uri, "the page "+uri+" of the docs, on the release calendar")
					}
					synctest.Wait()
					if lists.Held("docs") {
						if run == 0 {
							holds++
						}
						run++
						longest = max(longest, run)
					} else {
						run = 0
					}
				}
				if longest > 31 || holds == 0 {
					t.Errorf("held %d times, the longest %d s in a row; want once at a time, 30 s", holds, longest)
				}
			})
		})
	}
}

// An honest server adding a few entries at once at a steady pace (a CI
// job's artifacts), held as it grows, grows again a pace after the hold
// began: no echo of the hold, so it is held about as seldom as any
// server growing at each list, and never frozen.
func testABatchAtASteadyPaceIsSeldomHeld(t *testing.T) {
	for _, content := range []int{0, -1} {
		for _, every := range []time.Duration{30 * time.Second, time.Minute, 90 * time.Second, 2 * time.Minute} {
			t.Run(fmt.Sprintf("every %v, content %d", every, content), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					lists, srv := watched(t, "ci", "ci://build/0", "the first build's log\n", content)
					held, n, shown := 0, 0, 0
					const hours = 2
					for sec := 1; sec <= hours*3600; sec++ {
						time.Sleep(time.Second)
						lists.NoteListed() // a host lists contextd each second
						if !lists.Quiet() {
							lists.NoteAdded(n - shown)
							shown = n
						}
						if sec%int(every/time.Second) == 0 {
							for range 3 {
								uri := fmt.Sprintf("ci://build/%d", n)
								n++
								addText(srv, uri, "the build log of "+uri)
							}
						}
						synctest.Wait()
						if lists.Frozen("ci") {
							t.Fatalf("frozen after %v", time.Duration(sec)*time.Second)
						}
						if lists.Held("ci") {
							held++
						}
					}
					// A hold of 30 s to 2 min about every 10.5 minutes
					// (growthCool after each), or, at a pace as long as
					// a hold (growing again as it ends), three holds in
					// a row: a fifth of the time at most.
					if frac := float64(held) / (hours * 3600); frac > 0.21 {
						t.Errorf("held %d s of %d h (%.0f %%); want 21 %% at most", held, hours, 100*frac)
					}
					t.Logf("held %d s of %d h", held, hours)
				})
			})
		}
	}
}
