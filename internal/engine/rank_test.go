package engine_test

import (
	"testing"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/contextd/contextd/internal/engine"
	"github.com/contextd/contextd/internal/mcp/mcptest"
	ctxsync "github.com/contextd/contextd/internal/sync"
)

// TestCompoundQueryServesEachClause checks that the default ranking
// diversifies the head of a compound query's ranking: the whole query
// leans to the weather (more of its words), and without diversification
// the weather resources fill the first three places. Scores must stay
// non-increasing, or Assemble, which orders by score, would undo it.
func TestCompoundQueryServesEachClause(t *testing.T) {
	srv := mcptest.NewServer(nil, &mcpsdk.ServerOptions{PageSize: 500})
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
	// Descriptors only: each body repeats its description, and the test is
	// about how the descriptor ranking is diversified.
	eng := newEngineOpts(t, "", map[string]*mcpsdk.Server{"s": srv}, engine.Options{
		Mirror: func(o *ctxsync.Options) { o.ContentMaxResources = -1 },
	})
	const query = "What will the weather forecast, weather radar and weather alerts say about rain, sun and storm in the city tomorrow? Also the share price of the company"

	top := func(how engine.Ranking) []string {
		t.Helper()
		// One more than the top 3, so a result moved up into them is
		// compared with the one it passed.
		got, err := eng.Search(t.Context(), engine.SearchRequest{Query: query, Limit: 4, Ranking: &how})
		if err != nil {
			t.Fatal(err)
		}
		var uris []string
		for i, r := range got {
			uris = append(uris, r.URI)
			if i > 0 && r.Score > got[i-1].Score {
				// Assemble's selector orders by score: a rising score
				// would undo the diversification there.
				t.Errorf("result %d (%s) scores %v, above result %d's %v", i+1, r.URI, r.Score, i, got[i-1].Score)
			}
		}
		return uris[:3]
	}
	flat := engine.DefaultRanking
	flat.Diversify = 0
	for _, u := range top(flat) {
		if u == "s://quote" {
			t.Fatalf("without diversification the stock quote is already in the top 3 (%v): the test shows nothing", top(flat))
		}
	}
	got := top(engine.DefaultRanking)
	found := false
	for _, u := range got {
		found = found || u == "s://quote"
	}
	if !found {
		t.Errorf("default ranking top 3 = %v, want the stock quote among them", got)
	}
}
