package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/contextd/contextd/internal/config"
	"github.com/contextd/contextd/internal/engine"
	"github.com/contextd/contextd/internal/index/indextest"
	"github.com/contextd/contextd/internal/mcp/mcptest"
)

const profileTemplate = "users://{id}/profile"

// templateServer returns a server listing two unrelated documents and
// serving the template users://{id}/profile. complete, when not nil, is its
// completion handler (the server then declares completions).
func templateServer(complete func(context.Context, *mcpsdk.CompleteRequest) (*mcpsdk.CompleteResult, error)) (*mcpsdk.Server, *mcptest.Recorder) {
	srv := mcptest.NewServer(map[string]string{
		"doc://billing": "Invoices and payments.",
		"doc://guide":   "How to use the admin console.",
	}, &mcpsdk.ServerOptions{CompletionHandler: complete})
	srv.AddResourceTemplate(&mcpsdk.ResourceTemplate{
		URITemplate: profileTemplate, Name: "user-profile", Title: "User profile",
		Description: "The profile of one user: name, email and settings.", MIMEType: "text/plain",
	}, func(_ context.Context, req *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
		id := strings.TrimSuffix(strings.TrimPrefix(req.Params.URI, "users://"), "/profile")
		return &mcpsdk.ReadResourceResult{Contents: []*mcpsdk.ResourceContents{{URI: req.Params.URI, MIMEType: "text/plain", Text: "profile of user " + id}}}, nil
	})
	rec := &mcptest.Recorder{}
	srv.AddReceivingMiddleware(rec.Middleware())
	return srv, rec
}

// knownIDs completes the id variable of users://{id}/profile from ids.
func knownIDs(ids ...string) func(context.Context, *mcpsdk.CompleteRequest) (*mcpsdk.CompleteResult, error) {
	return func(_ context.Context, req *mcpsdk.CompleteRequest) (*mcpsdk.CompleteResult, error) {
		var vals []string
		if req.Params.Ref.URI == profileTemplate && req.Params.Argument.Name == "id" {
			for _, id := range ids {
				if strings.HasPrefix(id, req.Params.Argument.Value) {
					vals = append(vals, id)
				}
			}
		}
		return &mcpsdk.CompleteResult{Completion: mcpsdk.CompletionResultDetails{Values: vals, Total: len(vals)}}, nil
	}
}

func search(t *testing.T, eng *engine.Engine, q string) []engine.Ranked {
	t.Helper()
	res, err := eng.Search(t.Context(), engine.SearchRequest{Query: q})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func uris(rs []engine.Ranked) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.Server+" "+r.URI)
	}
	return out
}

func TestTemplateExpansionConfirmedByCompletionIsRankedAndRead(t *testing.T) {
	srv, rec := templateServer(knownIDs("42", "7"))
	eng := newEngine(t, "", map[string]*mcpsdk.Server{"s": srv}, 0)

	got := search(t, eng, "show the profile of user 42")
	if len(got) == 0 || got[0].URI != "users://42/profile" {
		t.Fatalf("Search = %v, want users://42/profile first", uris(got))
	}
	if g := got[0]; g.Name != "user-profile" || g.Title != "User profile" || g.MIMEType != "text/plain" || g.Rank != 1 || !(g.Score > 0) {
		t.Errorf("expanded descriptor = %+v, want the template's name, title and MIME type, rank 1, a positive score", g)
	}
	if rec.Count("completion/complete") == 0 {
		t.Error("the server offers completions but was not asked to confirm 42")
	}

	res, err := eng.Assemble(t.Context(), engine.AssembleRequest{Query: "show the profile of user 42", TokenBudget: 500})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Items) == 0 || res.Items[0].URI != "users://42/profile" || len(res.Items[0].Contents) != 1 || res.Items[0].Contents[0].Text != "profile of user 42" {
		t.Fatalf("Assemble items = %+v, want users://42/profile read first", res.Items)
	}
}

func TestTemplateExpansionRankedByRelevanceNotAlwaysFirst(t *testing.T) {
	srv, _ := templateServer(knownIDs("42"))
	eng := newEngine(t, "", map[string]*mcpsdk.Server{"s": srv}, 0)
	got := search(t, eng, "billing invoices and payments for 42")
	i := slices.Index(uris(got), "s users://42/profile")
	if i < 0 {
		t.Fatalf("Search = %v, want the expansion ranked too", uris(got))
	}
	if got[0].URI != "doc://billing" || i == 0 || got[i].Score >= got[0].Score {
		t.Errorf("Search = %v (scores %v, %v): a query about billing must rank doc://billing above a weakly related expansion", uris(got), got[0].Score, got[i].Score)
	}
}

func TestTemplateExpansionRejectedByCompletion(t *testing.T) {
	srv, rec := templateServer(knownIDs("7"))
	eng := newEngine(t, "", map[string]*mcpsdk.Server{"s": srv}, 0)
	got := search(t, eng, "show the profile of user 42")
	if slices.Contains(uris(got), "s users://42/profile") {
		t.Errorf("Search = %v: 42 is not a user the server knows, yet it was expanded", uris(got))
	}
	if rec.Count("completion/complete") == 0 {
		t.Error("completion was not asked; the test would pass for the wrong reason")
	}
}

func TestTemplateWithoutCompletionsExpandsOnlyByShape(t *testing.T) {
	srv, rec := templateServer(nil)
	srv.AddResourceTemplate(&mcpsdk.ResourceTemplate{URITemplate: "accounts://{username}", Name: "account", Title: "User account"},
		func(context.Context, *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
			return nil, errors.New("unused")
		})
	eng := newEngine(t, "", map[string]*mcpsdk.Server{"s": srv}, 0)

	if got := search(t, eng, "show the profile of user 42"); !slices.Contains(uris(got), "s users://42/profile") {
		t.Errorf("Search = %v, want users://42/profile: 42 has an id's shape", uris(got))
	}
	// "alice" has a name's shape, but so has every word: unconfirmed, no expansion.
	for _, r := range search(t, eng, "the account of user alice") {
		if strings.HasPrefix(r.URI, "accounts://") {
			t.Errorf("expanded %s from a plain word without a completion to confirm it", r.URI)
		}
	}
	// Nothing fits a numeric id here.
	for _, r := range search(t, eng, "show the profile of user alice") {
		if strings.HasPrefix(r.URI, "users://") {
			t.Errorf("expanded %s without a value of an id's shape", r.URI)
		}
	}
	if n := rec.Count("completion/complete"); n != 0 {
		t.Errorf("server without completions got %d completion/complete requests", n)
	}
}

func TestCompletionConfirmsAWordAndSuggestsForAPrefix(t *testing.T) {
	srv := mcptest.NewServer(nil, &mcpsdk.ServerOptions{CompletionHandler: func(_ context.Context, req *mcpsdk.CompleteRequest) (*mcpsdk.CompleteResult, error) {
		var vals []string
		for _, u := range []string{"alice", "bob"} {
			if strings.HasPrefix(u, strings.ToLower(req.Params.Argument.Value)) {
				vals = append(vals, u)
			}
		}
		return &mcpsdk.CompleteResult{Completion: mcpsdk.CompletionResultDetails{Values: vals}}, nil
	}})
	srv.AddResourceTemplate(&mcpsdk.ResourceTemplate{URITemplate: "accounts://{username}", Name: "account", Title: "User account"},
		func(context.Context, *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
			return nil, errors.New("unused")
		})
	mcptest.AddText(srv, "doc://x", "x", "unrelated")
	eng := newEngine(t, "", map[string]*mcpsdk.Server{"s": srv}, 0)

	if got := search(t, eng, "the account of user alice"); !slices.Contains(uris(got), "s accounts://alice") {
		t.Errorf("Search = %v, want accounts://alice (the server confirms alice)", uris(got))
	}
	if got := search(t, eng, "the account of user Bo"); !slices.Contains(uris(got), "s accounts://bob") {
		t.Errorf("Search = %v, want accounts://bob (the server's one completion of Bo)", uris(got))
	}
	if got := search(t, eng, "the account of user carol"); slices.ContainsFunc(got, func(r engine.Ranked) bool { return strings.HasPrefix(r.URI, "accounts://") }) {
		t.Errorf("Search = %v, want no account: the server does not know carol", uris(got))
	}
}

func TestListedResourceWinsOverItsExpansion(t *testing.T) {
	srv, _ := templateServer(nil)
	srv.AddResource(&mcpsdk.Resource{URI: "users://42/profile", Name: "listed profile of 42"},
		func(context.Context, *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
			return nil, errors.New("unused")
		})
	eng := newEngine(t, "", map[string]*mcpsdk.Server{"s": srv}, 0)
	var hits []engine.Ranked
	for _, r := range search(t, eng, "show the profile of user 42") {
		if r.URI == "users://42/profile" {
			hits = append(hits, r)
		}
	}
	if len(hits) != 1 || hits[0].Name != "listed profile of 42" {
		t.Errorf("users://42/profile appears as %+v, want once, as listed", hits)
	}
}

func TestExpansionsRespectFilters(t *testing.T) {
	srv, _ := templateServer(nil)
	eng := newEngine(t, "", map[string]*mcpsdk.Server{"s": srv}, 0)
	res, err := eng.Search(t.Context(), engine.SearchRequest{Query: "show the profile of user 42", Filter: engine.Filter{URIPrefixes: []string{"doc://"}}})
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(uris(res), "s users://42/profile") {
		t.Errorf("Search with URI prefix doc:// = %v, want no users:// expansion", uris(res))
	}
}

func TestExpansionsAndCompletionCallsAreCapped(t *testing.T) {
	srv, rec := templateServer(func(_ context.Context, req *mcpsdk.CompleteRequest) (*mcpsdk.CompleteResult, error) {
		// Every value is a known id, for every template.
		return &mcpsdk.CompleteResult{Completion: mcpsdk.CompletionResultDetails{Values: []string{req.Params.Argument.Value}}}, nil
	})
	aspects := []string{"settings", "orders", "invoices", "sessions", "devices", "groups"}
	for _, a := range aspects {
		srv.AddResourceTemplate(&mcpsdk.ResourceTemplate{URITemplate: "users://{id}/" + a, Name: "user " + a, Title: "User " + a},
			func(context.Context, *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
				return nil, errors.New("unused")
			})
	}
	eng := newEngine(t, "", map[string]*mcpsdk.Server{"s": srv}, 0)
	// 7 templates × 2 proposals each: more than the caps allow.
	res, err := eng.Search(t.Context(), engine.SearchRequest{Query: "user 11 and user 12: profile " + strings.Join(aspects, " "), Limit: 50})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, r := range res {
		if strings.HasPrefix(r.URI, "users://") {
			n++
		}
	}
	if n != engine.MaxExpansions {
		t.Errorf("%d expansions, want the cap, %d", n, engine.MaxExpansions)
	}
	if c := rec.Count("completion/complete"); c != engine.MaxCompletionCalls {
		t.Errorf("%d completion calls, want the cap, %d", c, engine.MaxCompletionCalls)
	}
}

func TestCompletionCallsAreCappedForMultiVariableTemplates(t *testing.T) {
	srv, rec := templateServer(func(_ context.Context, req *mcpsdk.CompleteRequest) (*mcpsdk.CompleteResult, error) {
		return &mcpsdk.CompleteResult{Completion: mcpsdk.CompletionResultDetails{Values: []string{req.Params.Argument.Value}}}, nil
	})
	aspects := []string{"settings", "orders", "invoices", "sessions", "devices", "groups"}
	for _, a := range aspects {
		srv.AddResourceTemplate(&mcpsdk.ResourceTemplate{URITemplate: "orgs://{org_id}/users/{user_id}/" + a, Name: "member " + a},
			func(context.Context, *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
				return nil, errors.New("unused")
			})
	}
	eng := newEngine(t, "", map[string]*mcpsdk.Server{"s": srv}, 0)
	// Each proposal needs two calls (org_id, then user_id): the call cap binds first.
	if _, err := eng.Search(t.Context(), engine.SearchRequest{Query: "org 5 user 11: member " + strings.Join(aspects, " ")}); err != nil {
		t.Fatal(err)
	}
	if c := rec.Count("completion/complete"); c != engine.MaxCompletionCalls {
		t.Errorf("%d completion calls, want the cap, %d", c, engine.MaxCompletionCalls)
	}
}

func TestListedResourceWinsEvenWhenRankedLow(t *testing.T) {
	srv, _ := templateServer(nil)
	// Listed under a description that says nothing of profiles, it ranks
	// below these two; its expansion, described by the template, would not.
	srv.AddResource(&mcpsdk.Resource{URI: "users://42/profile", Name: "zzz", Description: "quarterly tax ledger archive"},
		func(context.Context, *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
			return nil, errors.New("unused")
		})
	mcptest.AddText(srv, "doc://profiles", "show the profile of a user", "")
	mcptest.AddText(srv, "doc://users", "user profile overview", "")
	eng := newEngine(t, "", map[string]*mcpsdk.Server{"s": srv}, 0)
	res, err := eng.Search(t.Context(), engine.SearchRequest{Query: "show the profile of user 42", Limit: 2})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		if r.URI == "users://42/profile" && r.Name != "zzz" {
			t.Errorf("Search = %v: the expansion of a listed URI took a place", uris(res))
		}
	}
}

func TestFailingOrSlowCompletionFailsOnlyItsExpansion(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		hung, _ := templateServer(func(ctx context.Context, _ *mcpsdk.CompleteRequest) (*mcpsdk.CompleteResult, error) {
			<-ctx.Done() // never answers
			return nil, ctx.Err()
		})
		broken, _ := templateServer(func(context.Context, *mcpsdk.CompleteRequest) (*mcpsdk.CompleteResult, error) {
			return nil, errors.New("completion backend down")
		})
		good, _ := templateServer(knownIDs("42"))
		eng := newEngine(t, "", map[string]*mcpsdk.Server{"hung": hung, "broken": broken, "good": good}, 0)
		start := time.Now()
		got := search(t, eng, "show the profile of user 42")
		if el := time.Since(start); el > engine.CompletionTimeout {
			t.Errorf("Search took %v, want at most the completion timeout %v", el, engine.CompletionTimeout)
		}
		u := uris(got)
		if !slices.Contains(u, "good users://42/profile") {
			t.Errorf("Search = %v, want good's expansion", u)
		}
		if slices.Contains(u, "hung users://42/profile") || slices.Contains(u, "broken users://42/profile") {
			t.Errorf("Search = %v: an unconfirmed expansion was used", u)
		}
	})
}

// BenchmarkSearchTemplates measures what template expansion adds to a
// Search over 1,000 listed descriptors (512-d stand-in vectors, as in
// BenchmarkSearch) from a server with 10 templates and completions over an
// in-memory transport: "none" has no value that fits a variable (the
// common case: extraction only), "expand" expands users://42/profile after
// one completion call, and "listed-only" is the same server without
// templates, the baseline.
func BenchmarkSearchTemplates(b *testing.B) {
	for _, bc := range []struct {
		name, query string
		templates   bool
	}{
		{"listed-only", "show the profile of user 42", false},
		{"none", "show the profile of the current user", true},
		{"expand", "show the profile of user 42", true},
	} {
		b.Run(bc.name, func(b *testing.B) {
			srv, _ := templateServer(knownIDs("42"))
			if !bc.templates {
				srv.RemoveResourceTemplates(profileTemplate)
			}
			for i := range 1000 {
				mcptest.AddText(srv, fmt.Sprintf("doc://%d", i), fmt.Sprintf("note %d about billing and accounts", i), "x")
			}
			for i := range 9 {
				if bc.templates {
					srv.AddResourceTemplate(&mcpsdk.ResourceTemplate{URITemplate: fmt.Sprintf("t%d://{name}/item", i), Name: fmt.Sprintf("item %d", i)},
						func(context.Context, *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
							return nil, errors.New("unused")
						})
				}
			}
			eng := newEngineOpts(b, "", map[string]*mcpsdk.Server{"s": srv}, engine.Options{Embedder: indextest.RandomEmbedder{Dims: 512}})
			req := engine.SearchRequest{Query: bc.query, Limit: 10}
			b.ResetTimer()
			for b.Loop() {
				hits, err := eng.Search(b.Context(), req)
				if err != nil {
					b.Fatal(err)
				}
				if got := slices.Contains(uris(hits), "s users://42/profile"); got != (bc.name == "expand") {
					b.Fatalf("expansion present = %v in %v", got, uris(hits))
				}
			}
		})
	}
}

func TestExpansionNeverClimbsOutOfTheTemplate(t *testing.T) {
	srv := mcptest.NewServer(map[string]string{"doc://x": "unrelated"}, nil) // no completions: shape only
	for _, uri := range []string{"file:///srv/docs/{+rest}", "file:///notes/{+path}.md"} {
		srv.AddResourceTemplate(&mcpsdk.ResourceTemplate{URITemplate: uri, Name: "docs", Title: "Docs"},
			func(context.Context, *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
				return nil, errors.New("unused")
			})
	}
	eng := newEngine(t, "", map[string]*mcpsdk.Server{"s": srv}, 0)

	if got := search(t, eng, "docs rest guides/intro.md"); !slices.Contains(uris(got), "s file:///srv/docs/guides/intro.md") {
		t.Fatalf("Search = %v, want file:///srv/docs/guides/intro.md: the control", uris(got))
	}
	for _, q := range []string{
		"docs rest ../../etc/passwd",
		"docs rest guides/../../../etc/passwd",
		"docs rest %2e%2e/%2e%2e/etc/passwd",
		`notes path "secret#"`,
		`notes path "secret?raw=1"`,
	} {
		for _, r := range search(t, eng, q) {
			if strings.HasPrefix(r.URI, "file://") {
				t.Errorf("Search(%q) expanded %s", q, r.URI)
			}
		}
	}
}

// A value Expand would refuse (one adding a root: an absolute path, an
// empty segment, a network path, a drive) is not sent to the server in a
// completion either: only the read was refused, and the server still saw
// "/etc/shadow".
func TestValuesAddingARootAreNotSentInCompletions(t *testing.T) {
	var mu sync.Mutex
	var asked []string
	srv := mcptest.NewServer(map[string]string{"doc://x": "unrelated"}, &mcpsdk.ServerOptions{
		CompletionHandler: func(_ context.Context, req *mcpsdk.CompleteRequest) (*mcpsdk.CompleteResult, error) {
			mu.Lock()
			asked = append(asked, req.Params.Argument.Value)
			mu.Unlock()
			return &mcpsdk.CompleteResult{Completion: mcpsdk.CompletionResultDetails{Values: []string{req.Params.Argument.Value}, Total: 1}}, nil
		}})
	for _, uri := range []string{"file:///srv/docs/{+rest}", "notes://{+path}"} {
		srv.AddResourceTemplate(&mcpsdk.ResourceTemplate{URITemplate: uri, Name: "docs notes", Title: "Docs"},
			func(context.Context, *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
				return nil, errors.New("unused")
			})
	}
	eng := newEngine(t, "", map[string]*mcpsdk.Server{"s": srv}, 0)
	search(t, eng, "docs rest guides/intro.md")
	mu.Lock()
	control := slices.Contains(asked, "guides/intro.md")
	mu.Unlock()
	if !control {
		t.Fatalf("completions asked %q, want guides/intro.md: the control", asked)
	}
	for _, q := range []string{
		"docs notes rest path /etc/shadow",
		`docs notes rest path \\host\share\x.md`,
		"docs notes rest path a//b/c.md",
		"docs notes rest path C:/Windows/win.ini",
	} {
		search(t, eng, q)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, v := range asked {
		if strings.Contains(v, "etc/shadow") || strings.Contains(v, "share") || strings.Contains(v, "//") || strings.Contains(v, "Windows") {
			t.Errorf("completion asked for %q", v)
		}
	}
}

func TestExpansionsScoredWithTheRequestsRanking(t *testing.T) {
	srv, _ := templateServer(knownIDs("42"))
	eng := newEngine(t, "", map[string]*mcpsdk.Server{"s": srv}, 0) // engine: DefaultRanking, convex
	for _, how := range []engine.Ranking{
		{Dense: 1, Lexical: 1, Fusion: engine.FusionRRF},
		{Dense: 1, Lexical: 1, Fusion: engine.FusionRRF, Clauses: 0.3},
		{Lexical: 1, Fusion: engine.FusionConvex},
	} {
		res, err := eng.Search(t.Context(), engine.SearchRequest{Query: "billing invoices and payments for 42", Ranking: &how})
		if err != nil {
			t.Fatal(err)
		}
		i := slices.Index(uris(res), "s users://42/profile")
		if i < 0 {
			t.Errorf("%+v: Search = %v, want the expansion ranked too", how, uris(res))
			continue
		}
		if res[0].URI != "doc://billing" || i == 0 || res[i].Score >= res[0].Score {
			t.Errorf("%+v: Search = %v (scores %v, %v): doc://billing must stay above a weakly related expansion, on the same scale",
				how, uris(res), res[0].Score, res[i].Score)
		}
	}
}

func TestExpansionUnderBM25DoesNotDependOnTheEmbedder(t *testing.T) {
	// With the lexical list alone every listed score is the same whatever
	// the embedder; so must the expansion's be, or it is not on their scale.
	how := engine.Ranking{Lexical: 1, Fusion: engine.FusionConvex, Clauses: 0.3}
	var scores []map[string]float64
	for _, emb := range []engine.Options{{}, {Embedder: indextest.RandomEmbedder{Dims: 64}}} {
		srv, _ := templateServer(knownIDs("42"))
		eng := newEngineOpts(t, "", map[string]*mcpsdk.Server{"s": srv}, emb)
		res, err := eng.Search(t.Context(), engine.SearchRequest{Query: "billing invoices and payments for user 42", Ranking: &how})
		if err != nil {
			t.Fatal(err)
		}
		m := map[string]float64{}
		for _, r := range res {
			m[r.URI] = r.Score
		}
		if _, ok := m["users://42/profile"]; !ok {
			t.Fatalf("Search = %v, want the expansion", uris(res))
		}
		scores = append(scores, m)
	}
	for uri, s := range scores[0] {
		if d := math.Abs(s - scores[1][uri]); d > 1e-9 {
			t.Errorf("%s scores %v with one embedder, %v with another, under a lexical-only ranking", uri, s, scores[1][uri])
		}
	}
}

func TestExpansionsKeepTheDiversifiedOrder(t *testing.T) {
	// TestCompoundQueryServesEachClause's resources and query: the default
	// ranking lifts the stock quote above a weather resource with a higher
	// score. A template that expands for the query must not undo that.
	listed := func(templates bool) []string {
		srv := mcptest.NewServer(nil, &mcpsdk.ServerOptions{PageSize: 500, CompletionHandler: func(_ context.Context, req *mcpsdk.CompleteRequest) (*mcpsdk.CompleteResult, error) {
			return &mcpsdk.CompleteResult{Completion: mcpsdk.CompletionResultDetails{Values: []string{req.Params.Argument.Value}}}, nil
		}})
		for uri, desc := range map[string]string{
			"w://forecast": "weather forecast for a city, rain and sun tomorrow",
			"w://radar":    "weather radar map of rain over the city",
			"w://alerts":   "severe weather alerts for a city: storm, rain, wind",
			"w://climate":  "climate and average weather of a city by month",
			"s://quote":    "stock quote: the share price of a company",
			"x://recipes":  "recipes for dinner",
		} {
			mcptest.AddText(srv, uri, desc, desc)
		}
		if templates {
			srv.AddResourceTemplate(&mcpsdk.ResourceTemplate{URITemplate: "city://{city}/weather", Name: "city weather", Title: "Weather of a city"},
				func(context.Context, *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
					return nil, errors.New("unused")
				})
		}
		eng := newEngine(t, "", map[string]*mcpsdk.Server{"s": srv}, 0)
		res := search(t, eng, "What will the weather forecast, weather radar and weather alerts say about rain, sun and storm in the city tomorrow? Also the share price of the company")
		var out []string
		expanded := false
		for _, r := range res {
			if strings.HasPrefix(r.URI, "city://") {
				expanded = true
				continue
			}
			out = append(out, r.URI)
		}
		if templates && !expanded {
			t.Fatalf("Search = %v, want an expansion of city://{city}/weather", uris(res))
		}
		return out
	}
	without := listed(false)
	if i := slices.Index(without, "s://quote"); i < 0 || i >= 3 {
		t.Fatalf("without templates the quote is not lifted into the top 3 (%v): the test shows nothing", without)
	}
	if with := listed(true); !slices.Equal(with, without) {
		t.Errorf("listed order with an expansion = %v, want %v (as without templates)", with, without)
	}
}

// fullwidth spells s in fullwidth forms, which read as s.
func fullwidth(s string) string {
	var b strings.Builder
	for _, c := range s {
		if c > ' ' && c < 0x7f {
			c += 0xfee0
		}
		b.WriteRune(c)
	}
	return b.String()
}

// paramsLog records the params of every request a server receives.
type paramsLog struct {
	mu   sync.Mutex
	sent []string // "method params-JSON"
}

func (l *paramsLog) middleware(next mcpsdk.MethodHandler) mcpsdk.MethodHandler {
	return func(ctx context.Context, method string, req mcpsdk.Request) (mcpsdk.Result, error) {
		b, _ := json.Marshal(req.GetParams())
		l.mu.Lock()
		l.sent = append(l.sent, method+" "+string(b))
		l.mu.Unlock()
		return next(ctx, method, req)
	}
}

func (l *paramsLog) with(s string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, x := range l.sent {
		if strings.Contains(x, s) {
			out = append(out, x)
		}
	}
	return out
}

// A server's templates are filled with values from the task, which go to it
// in completion calls and reads; credentials in the task never do, nor do
// any values when the server has expand_templates: false or the request's
// URI prefixes leave it out.
func TestTemplateValuesNeverCarryCredentials(t *testing.T) {
	const (
		daemonToken = "dtok-9Qz81LmXw02VbNc7"
		otherToken  = "ghp_4kP0vQ9zXa7LmB2nR8sT"
	)
	hostile := func() (*mcpsdk.Server, *paramsLog) {
		echo := func(_ context.Context, req *mcpsdk.CompleteRequest) (*mcpsdk.CompleteResult, error) {
			return &mcpsdk.CompleteResult{Completion: mcpsdk.CompletionResultDetails{Values: []string{req.Params.Argument.Value}}}, nil
		}
		srv := mcptest.NewServer(map[string]string{"doc://readme": "About these notes."}, &mcpsdk.ServerOptions{CompletionHandler: echo})
		for _, tmpl := range []string{"notes://{+path}", "fetch://{+url}", "quote://{+text}"} {
			srv.AddResourceTemplate(&mcpsdk.ResourceTemplate{URITemplate: tmpl, Name: "notes", Description: "notes, pages and quotes"},
				func(_ context.Context, req *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
					return &mcpsdk.ReadResourceResult{Contents: []*mcpsdk.ResourceContents{{URI: req.Params.URI, Text: "notes"}}}, nil
				})
		}
		log := &paramsLog{}
		srv.AddReceivingMiddleware(log.middleware)
		return srv, log
	}
	// One credential a task, each where a value is taken from.
	tasks := []string{
		"notes path keys/" + daemonToken + ".pem",
		"fetch url https://bob:hunter2pass@git.example/r.git",
		`quote text "` + otherToken + `"`,
		`quote text "Bearer abcdef0123456789"`,
		"quote text Authorization: Bearer S3cretPassw0rdLL",
		"quote text Authorization: Bearer S3cretPassw0rdLL (copy Ѕ3cretPassw0rdLL)",
		`quote text {"password": "Pa55wordInJson"}`,
		"quote text " + fullwidth(daemonToken),
	}
	leaks := []string{daemonToken, "dtok-9Qz8", otherToken, "ghp_4kP0", "hunter2pass", "abcdef0123456789", "S3cretPassw0rdLL", "Pa55wordInJson", fullwidth(daemonToken)}
	// And values that are none, which must reach it (else the test
	// proves nothing).
	harmless := []string{"notes path guides/intro.md", "notes path engineering/roadmap.md", `quote text "Quarterly plan 2026"`}

	for _, tc := range []struct {
		name     string
		expand   bool
		prefixes []string
	}{{"expanding", true, nil}, {"expand_templates false", false, nil}, {"outside the URI prefixes", true, []string{"doc://"}}} {
		t.Run(tc.name, func(t *testing.T) {
			srv, log := hostile()
			other := mcptest.NewServer(map[string]string{"doc://other": "other"}, nil)
			cfg := &config.Config{Auth: config.Auth{Token: daemonToken}, Servers: []config.Server{
				{Name: "github", Transport: config.TransportHTTP, URL: "https://api.example/mcp?workspace=engineering", Headers: map[string]string{"Authorization": "Bearer " + otherToken}},
				{Name: "notes", Transport: config.TransportStdio, Command: "unused", NoTemplateExpansion: !tc.expand},
			}}
			eng := newEngineOpts(t, "", map[string]*mcpsdk.Server{"notes": srv, "github": other}, engine.Options{Config: cfg})
			for _, q := range append(tasks, harmless...) {
				if _, err := eng.Assemble(t.Context(), engine.AssembleRequest{Query: q, TokenBudget: 2000, Filter: engine.Filter{URIPrefixes: tc.prefixes}}); err != nil {
					t.Fatal(err)
				}
			}
			for _, s := range leaks {
				if got := log.with(s); len(got) > 0 {
					t.Errorf("the server received %q: %v", s, got)
				}
			}
			// engineering is a word another server's configuration holds
			// (a query value): no credential.
			for _, v := range []string{"guides/intro.md", "engineering/roadmap.md", "Quarterly plan 2026"} {
				asked := log.with(v)
				if tc.expand && tc.prefixes == nil && len(asked) == 0 {
					t.Errorf("the harmless value %q was not expanded: the test proves nothing", v)
				}
				if (!tc.expand || tc.prefixes != nil) && len(asked) > 0 {
					t.Errorf("the server received the task's values: %v", asked)
				}
			}
		})
	}
}

// Whether a task's value expands does not depend on whether it holds a
// piece of a configured secret: a caller told so would recover the secret
// a byte at a time.
func TestTemplateValuesAreNoOracleForSecrets(t *testing.T) {
	const daemonToken = "dtok-9Qz81LmXw02VbNc7"
	echo := func(_ context.Context, req *mcpsdk.CompleteRequest) (*mcpsdk.CompleteResult, error) {
		return &mcpsdk.CompleteResult{Completion: mcpsdk.CompletionResultDetails{Values: []string{req.Params.Argument.Value}}}, nil
	}
	srv := mcptest.NewServer(map[string]string{"doc://readme": "About these notes."}, &mcpsdk.ServerOptions{CompletionHandler: echo})
	srv.AddResourceTemplate(&mcpsdk.ResourceTemplate{URITemplate: "notes://{+path}", Name: "notes", Description: "notes by path"},
		func(_ context.Context, req *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
			return &mcpsdk.ReadResourceResult{Contents: []*mcpsdk.ResourceContents{{URI: req.Params.URI, Text: "notes"}}}, nil
		})
	cfg := &config.Config{Auth: config.Auth{Token: daemonToken}, Servers: []config.Server{{Name: "notes", Transport: config.TransportStdio, Command: "unused"}}}
	eng := newEngineOpts(t, "", map[string]*mcpsdk.Server{"notes": srv}, engine.Options{Config: cfg})
	for _, guess := range []string{daemonToken[3:11], "ok-9QzZZ"} {
		if got := uris(search(t, eng, "notes path keys/"+guess+".md")); !slices.Contains(got, "notes notes://keys/"+guess+".md") {
			t.Errorf("guess %q: results %v, want its expansion", guess, got)
		}
	}
}

// BenchmarkSearchManyWideTemplates measures Search against a server with
// 1,000 templates of 8 variables each and a completion that confirms every
// value, for a task with values that fit them: the work per query that
// depends on the number and width of templates.
func BenchmarkSearchManyWideTemplates(b *testing.B) {
	echo := func(_ context.Context, req *mcpsdk.CompleteRequest) (*mcpsdk.CompleteResult, error) {
		return &mcpsdk.CompleteResult{Completion: mcpsdk.CompletionResultDetails{Values: []string{req.Params.Argument.Value}}}, nil
	}
	srv := mcptest.NewServer(nil, &mcpsdk.ServerOptions{CompletionHandler: echo})
	for i := range 200 {
		mcptest.AddText(srv, fmt.Sprintf("doc://%d", i), fmt.Sprintf("note %d about billing and accounts", i), "x")
	}
	for i := range 1000 {
		srv.AddResourceTemplate(&mcpsdk.ResourceTemplate{
			URITemplate: fmt.Sprintf("t%d://{org}/{project}/{id}/{name}/{+path}{?page,lang,user}", i),
			Name:        fmt.Sprintf("item %d", i), Description: "project items by org, id, name and path",
		}, func(context.Context, *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
			return nil, errors.New("unused")
		})
	}
	eng := newEngineOpts(b, "", map[string]*mcpsdk.Server{"s": srv}, engine.Options{Embedder: indextest.RandomEmbedder{Dims: 512}})
	req := engine.SearchRequest{Query: `org acme project billing id 42 name "Q3 plan" path src/main.go page 2 lang go user alice`, Limit: 10}
	b.ResetTimer()
	for b.Loop() {
		if _, err := eng.Search(b.Context(), req); err != nil {
			b.Fatal(err)
		}
	}
}

// Parsed templates are kept between requests, and replaced when the
// server's template list changes.
func TestExpansionsFollowTheTemplateList(t *testing.T) {
	srv, _ := templateServer(func(_ context.Context, req *mcpsdk.CompleteRequest) (*mcpsdk.CompleteResult, error) {
		return &mcpsdk.CompleteResult{Completion: mcpsdk.CompletionResultDetails{Values: []string{"42"}}}, nil // any template's
	})
	eng := newEngine(t, "", map[string]*mcpsdk.Server{"s": srv}, 0)
	if got := uris(search(t, eng, "show the profile of user 42")); !slices.Contains(got, "s users://42/profile") {
		t.Fatalf("Search = %v, want the profile expansion", got)
	}
	srv.RemoveResourceTemplates(profileTemplate)
	srv.AddResourceTemplate(&mcpsdk.ResourceTemplate{URITemplate: "users://{id}/account", Name: "user-account", Title: "User profile"},
		func(context.Context, *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
			return nil, errors.New("unused")
		})
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := uris(search(t, eng, "show the profile of user 42"))
		if slices.Contains(got, "s users://42/account") && !slices.Contains(got, "s users://42/profile") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("Search = %v 10 s after the templates changed, want users://42/account only", got)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
