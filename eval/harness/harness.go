// Package harness measures contextd's ranking on a BEIR-layout dataset
// (Thakur et al. 2021, arXiv:2104.08663) the way the daemon ranks: the
// corpus is served as resources by real go-sdk MCP servers (one per distinct
// `server` field), each mirrored by the engine's own mirror → index →
// ranking pipeline over in-memory MCP transports, and every query is a
// Search through that engine.
//
// Each strategy ranks the whole corpus for every query of the split; the
// metrics (hit@k, recall@k, MRR, nDCG@10) come from package metrics. The
// ranking is deterministic: the same dataset gives the same numbers on every
// run. Latency is the wall time of one ranking call, query embedding
// included (the index's query-vector cache is off).
package harness

import (
	"cmp"
	"context"
	"fmt"
	"hash/fnv"
	"io"
	"log/slog"
	"maps"
	"math/rand/v2"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/contextd/contextd/eval/beir"
	"github.com/contextd/contextd/eval/metrics"
	"github.com/contextd/contextd/eval/report"
	"github.com/contextd/contextd/internal/config"
	"github.com/contextd/contextd/internal/embed"
	"github.com/contextd/contextd/internal/embed/glove"
	"github.com/contextd/contextd/internal/embed/use"
	"github.com/contextd/contextd/internal/engine"
	"github.com/contextd/contextd/internal/mcp"
	"github.com/contextd/contextd/internal/rank"
	"github.com/contextd/contextd/internal/resource"
	ctxsync "github.com/contextd/contextd/internal/sync"
)

// Depth is how many documents each strategy ranks per query: enough for
// the recall@k curve.
const Depth = metrics.CurveDepth

// Options configures Run.
type Options struct {
	// Dataset is the dataset directory (corpus.jsonl, queries.jsonl, qrels/).
	Dataset string
	// Split names the qrels file, e.g. "test".
	Split string
	// Strategies limits the run to these names (see StrategyNames); nil
	// runs them all.
	Strategies []string
	// Progress receives progress lines; nil is silent.
	Progress io.Writer
	// DataDir keeps the index of RunAnswers in this directory, so that a
	// second run over the same dataset embeds nothing again; "" keeps it in
	// memory.
	DataDir string
}

// StrategyNames lists every strategy, in report order.
func StrategyNames() []string {
	out := make([]string, len(strategies))
	for i, s := range strategies {
		out[i] = s.name
	}
	return out
}

// A strategy ranks one query. It returns corpus ids, best first.
type strategy struct {
	name string
	// needs lists the embedders whose engines the strategy uses.
	needs []string
	rank  func(ctx context.Context, r *runner, query beir.Query) ([]string, error)
}

const (
	embGloVe   = "glove"
	embUSE     = "use"
	embDefault = "default"
	// embDescriptors is the default embedder with the content-level index
	// off: what the daemon ranked before it indexed resources' text.
	embDescriptors = "default, descriptors only"
)

var strategies = []strategy{
	{name: "default", needs: []string{embDefault}, rank: func(ctx context.Context, r *runner, q beir.Query) ([]string, error) {
		return r.search(ctx, embDefault, q.Text, nil)
	}},
	{name: "default, descriptors only", needs: []string{embDescriptors}, rank: func(ctx context.Context, r *runner, q beir.Query) ([]string, error) {
		return r.search(ctx, embDescriptors, q.Text, nil)
	}},
	// BM25 needs no vectors; it runs on the GloVe engine, which indexes the
	// same descriptors and contents in a fraction of USE-lite's time, so
	// --strategy bm25 alone is quick.
	{name: "bm25", needs: []string{embGloVe}, rank: func(ctx context.Context, r *runner, q beir.Query) ([]string, error) {
		return r.search(ctx, embGloVe, q.Text, &engine.Ranking{Lexical: 1})
	}},
	{name: "glove", needs: []string{embGloVe}, rank: func(ctx context.Context, r *runner, q beir.Query) ([]string, error) {
		return r.search(ctx, embGloVe, q.Text, &engine.Ranking{Dense: 1})
	}},
	{name: "use", needs: []string{embUSE}, rank: func(ctx context.Context, r *runner, q beir.Query) ([]string, error) {
		return r.search(ctx, embUSE, q.Text, &engine.Ranking{Dense: 1})
	}},
	{name: "bm25+glove rrf", needs: []string{embGloVe}, rank: func(ctx context.Context, r *runner, q beir.Query) ([]string, error) {
		return r.search(ctx, embGloVe, q.Text, &engine.Ranking{Dense: 1, Lexical: 1, Fusion: engine.FusionRRF})
	}},
	{name: "bm25+glove convex", needs: []string{embGloVe}, rank: func(ctx context.Context, r *runner, q beir.Query) ([]string, error) {
		how := engine.DefaultRanking
		return r.search(ctx, embGloVe, q.Text, &how)
	}},
	{name: "bm25+use rrf", needs: []string{embUSE}, rank: func(ctx context.Context, r *runner, q beir.Query) ([]string, error) {
		return r.search(ctx, embUSE, q.Text, &engine.Ranking{Dense: 1, Lexical: 1, Fusion: engine.FusionRRF})
	}},
	{name: "bm25+use convex", needs: []string{embUSE}, rank: func(ctx context.Context, r *runner, q beir.Query) ([]string, error) {
		how := engine.DefaultRanking
		how.Clauses, how.Diversify = 0, 0
		return r.search(ctx, embUSE, q.Text, &how)
	}},
	{name: "bm25+use convex+clauses", needs: []string{embUSE}, rank: func(ctx context.Context, r *runner, q beir.Query) ([]string, error) {
		how := engine.DefaultRanking
		return r.search(ctx, embUSE, q.Text, &how)
	}},
	{name: "bm25+use+glove rrf", needs: []string{embUSE, embGloVe}, rank: func(ctx context.Context, r *runner, q beir.Query) ([]string, error) {
		var lists [][]string
		for _, l := range []struct {
			emb string
			how engine.Ranking
		}{{embUSE, engine.Ranking{Dense: 1}}, {embGloVe, engine.Ranking{Dense: 1}}, {embGloVe, engine.Ranking{Lexical: 1}}} {
			l.how.Fusion = engine.FusionRRF
			ids, err := r.searchDepth(ctx, l.emb, q.Text, &l.how, 100)
			if err != nil {
				return nil, err
			}
			lists = append(lists, ids)
		}
		fused := rank.Fuse(0, lists...)
		out := make([]string, 0, Depth)
		for _, f := range fused[:min(len(fused), Depth)] {
			out = append(out, f.ID)
		}
		return out, nil
	}},
	{name: "bm25 okapi baseline", rank: func(_ context.Context, r *runner, q beir.Query) ([]string, error) {
		return r.okapi.search(q.Text, Depth), nil
	}},
	{name: "list-order", rank: func(_ context.Context, r *runner, _ beir.Query) ([]string, error) {
		return r.listOrder[:min(len(r.listOrder), Depth)], nil
	}},
	{name: "random", rank: func(_ context.Context, r *runner, q beir.Query) ([]string, error) {
		h := fnv.New64a()
		h.Write([]byte(q.ID))
		ids := slices.Clone(r.listOrder)
		rand.New(rand.NewPCG(h.Sum64(), 42)).Shuffle(len(ids), func(i, j int) { ids[i], ids[j] = ids[j], ids[i] })
		return ids[:min(len(ids), Depth)], nil
	}},
}

// runner holds the engines of one run.
type runner struct {
	engines   map[string]*engine.Engine // by embedder key
	ids       map[resource.Key]string   // (server, uri) → corpus id
	listOrder []string                  // corpus ids in the order the servers list them
	okapi     *okapi                    // the textbook baseline over name and description
}

func (r *runner) search(ctx context.Context, emb, query string, how *engine.Ranking) ([]string, error) {
	return r.searchDepth(ctx, emb, query, how, Depth)
}

func (r *runner) searchDepth(ctx context.Context, emb, query string, how *engine.Ranking, n int) ([]string, error) {
	ranked, err := r.engines[emb].Search(ctx, engine.SearchRequest{Query: query, Limit: n, Ranking: how})
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(ranked))
	for _, d := range ranked {
		out = append(out, r.ids[d.Key()])
	}
	return out, nil
}

// Run evaluates the strategies on one split and returns the results, in
// the order of StrategyNames.
func Run(ctx context.Context, opts Options) (*report.Results, error) {
	progress := func(format string, args ...any) {
		if opts.Progress != nil {
			fmt.Fprintf(opts.Progress, "eval: "+format+"\n", args...)
		}
	}
	var run []strategy
	for _, s := range strategies {
		if opts.Strategies == nil || slices.Contains(opts.Strategies, s.name) {
			run = append(run, s)
		}
	}
	for _, name := range opts.Strategies {
		if !slices.Contains(StrategyNames(), name) {
			return nil, fmt.Errorf("unknown strategy %q (have: %s)", name, strings.Join(StrategyNames(), ", "))
		}
	}
	ds, err := beir.Load(opts.Dataset, opts.Split)
	if err != nil {
		return nil, err
	}
	name := filepath.Base(filepath.Clean(opts.Dataset))
	progress("%s/%s: %d documents, %d queries", name, opts.Split, len(ds.Corpus), len(ds.Queries))

	servers, ids, order, err := serve(ds, name)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", opts.Dataset, err)
	}
	var docIDs, texts []string
	for _, d := range ds.Corpus {
		docIDs = append(docIDs, d.ID)
		texts = append(texts, cmp.Or(d.Name, d.ID)+" "+d.Text)
	}
	r := &runner{engines: map[string]*engine.Engine{}, ids: ids, listOrder: order, okapi: newOkapi(docIDs, texts)}
	defer func() {
		for _, e := range r.engines {
			e.Close() // closing twice is harmless
		}
	}()
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() { cancel(); wg.Wait() }()
	byName := map[string]*engine.Engine{} // one engine per distinct embedder
	for _, s := range run {
		for _, key := range s.needs {
			if r.engines[key] != nil {
				continue
			}
			emb, err := newEmbedder(key)
			if err != nil {
				return nil, err
			}
			contents := key != embDescriptors
			engineKey := fmt.Sprintf("%s, contents %v", emb.Name(), contents)
			if e := byName[engineKey]; e != nil {
				r.engines[key] = e
				continue
			}
			what := "descriptors and contents"
			if !contents {
				what = "descriptors"
			}
			progress("indexing %d %s with %s", len(ds.Corpus), what, emb.Name())
			start := time.Now()
			e, err := startEngine(ctx, &wg, servers, emb, contents)
			if err != nil {
				return nil, err
			}
			r.engines[key], byName[engineKey] = e, e
			progress("indexed in %v", time.Since(start).Round(time.Millisecond))
		}
	}

	res := &report.Results{Dataset: name, Split: opts.Split, Queries: len(ds.Queries)}
	for _, s := range run {
		qs := make([]metrics.Query, 0, len(ds.Queries))
		last := time.Now()
		for i, q := range ds.Queries {
			start := time.Now()
			ranking, err := s.rank(ctx, r, q)
			lat := time.Since(start)
			if err != nil {
				return nil, fmt.Errorf("strategy %s, query %s: %w", s.name, q.ID, err)
			}
			qs = append(qs, metrics.Query{ID: q.ID, Ranking: ranking, Judgements: ds.Qrels[q.ID], Latency: lat})
			if time.Since(last) > 15*time.Second {
				progress("%s: %d/%d queries", s.name, i+1, len(ds.Queries))
				last = time.Now()
			}
		}
		sum := metrics.Summarize(qs)
		progress("%-20s nDCG@10 %.3f  hit@5 %.3f  recall@5 %.3f  MRR %.3f", s.name, sum.Mean.NDCGAt10, sum.Mean.HitAt5, sum.Mean.RecallAt5, sum.Mean.MRR)
		res.Strategies = append(res.Strategies, report.Strategy{Name: s.name, Summary: sum})
	}
	return res, nil
}

func newEmbedder(key string) (embed.Embedder, error) {
	switch key {
	case embGloVe:
		return glove.New()
	case embUSE:
		return use.New()
	default:
		return engine.NewEmbedder("") // the daemon's default
	}
}

// serve builds one go-sdk MCP server per distinct `server` field (the
// dataset's name when empty), each listing its documents as resources in
// corpus order. It returns the servers, the corpus id of every resource, and
// the corpus ids in listing order (servers by name).
//
// Two documents with the same uri on the same server would be one resource,
// so that is an error.
func serve(ds *beir.Dataset, name string) (map[string]*mcpsdk.Server, map[resource.Key]string, []string, error) {
	servers := map[string]*mcpsdk.Server{}
	ids := map[resource.Key]string{}
	byServer := map[string][]string{}
	for _, d := range ds.Corpus {
		srvName := cmp.Or(d.Server, name)
		s := servers[srvName]
		if s == nil {
			s = mcpsdk.NewServer(&mcpsdk.Implementation{Name: srvName, Version: "eval"}, &mcpsdk.ServerOptions{
				Capabilities: &mcpsdk.ServerCapabilities{Resources: &mcpsdk.ResourceCapabilities{}},
			})
			servers[srvName] = s
		}
		uri := cmp.Or(d.URI, "beir://"+url.PathEscape(name)+"/"+url.PathEscape(d.ID))
		mime := cmp.Or(d.MIMEType, "text/plain")
		body := cmp.Or(d.Content, d.Text)
		var size int64
		if d.Content != "" {
			size = int64(len(body)) // as a file server declares it
		}
		s.AddResource(&mcpsdk.Resource{URI: uri, Name: cmp.Or(d.Name, d.ID), Title: d.Title, Description: d.Text, MIMEType: mime, Size: size},
			func(context.Context, *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
				return &mcpsdk.ReadResourceResult{Contents: []*mcpsdk.ResourceContents{{URI: uri, MIMEType: mime, Text: body}}}, nil
			})
		key := resource.Key{Server: srvName, URI: uri}
		if other, dup := ids[key]; dup {
			return nil, nil, nil, fmt.Errorf("corpus.jsonl: documents %q and %q have the same uri %q on server %q; a resource is identified by (server, uri)", other, d.ID, uri, srvName)
		}
		ids[key] = d.ID
		byServer[srvName] = append(byServer[srvName], d.ID)
	}
	var order []string
	for _, s := range slices.Sorted(maps.Keys(byServer)) {
		order = append(order, byServer[s]...)
	}
	return servers, ids, order, nil
}

// startEngine runs an in-memory engine that mirrors servers over in-memory
// MCP transports, and waits for the first sync (and, with contents, the
// first content pass).
func startEngine(ctx context.Context, wg *sync.WaitGroup, servers map[string]*mcpsdk.Server, emb embed.Embedder, contents bool) (*engine.Engine, error) {
	return startEngineIn(ctx, wg, servers, emb, contents, "")
}

// startEngineIn is startEngine with the index kept in dataDir ("" keeps it
// in memory), so that a later run over the same corpus and embedder loads
// its vectors instead of embedding everything again.
func startEngineIn(ctx context.Context, wg *sync.WaitGroup, servers map[string]*mcpsdk.Server, emb embed.Embedder, contents bool, dataDir string) (*engine.Engine, error) {
	cfg := &config.Config{DataDir: dataDir}
	for name := range servers {
		cfg.Servers = append(cfg.Servers, config.Server{Name: name, Transport: config.TransportStdio, Command: "(in-memory)"})
	}
	slices.SortFunc(cfg.Servers, func(a, b config.Server) int { return strings.Compare(a.Name, b.Name) })
	e, err := engine.New(ctx, engine.Options{
		Config:     cfg,
		Embedder:   emb,
		InMemory:   dataDir == "",
		QueryCache: -1,
		Logger:     slog.New(slog.DiscardHandler),
		Dial: func(srv config.Server) ctxsync.DialFunc {
			return func(ctx context.Context, o *mcp.Options) (*mcp.Session, error) {
				ct, st := mcpsdk.NewInMemoryTransports()
				if _, err := servers[srv.Name].Connect(ctx, st, nil); err != nil {
					return nil, err
				}
				return mcp.ConnectTransport(ctx, srv.Name, ct, o)
			}
		},
		Mirror: func(o *ctxsync.Options) {
			o.SyncTimeout = time.Hour // a big corpus embeds for minutes
			if !contents {
				o.ContentMaxResources = -1
			}
			o.PassagesBeforeReady = true // rank with every passage embedded
			o.ContentPassTime = -1       // and every text read, however slow the machine
		},
	})
	if err != nil {
		return nil, err
	}
	wg.Go(func() { _ = e.Run(ctx) })
	if err := e.WaitReady(ctx); err != nil {
		e.Close()
		return nil, err
	}
	for _, st := range e.Servers() {
		if st.State != ctxsync.StateReady {
			e.Close()
			return nil, fmt.Errorf("server %s did not sync: %s %s", st.Server, st.State, st.LastError)
		}
	}
	return e, nil
}
