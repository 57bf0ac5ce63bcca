// Package metrics exposes contextd's Prometheus metrics: what each
// upstream server's mirror does (state, syncs, list and read requests,
// cache lookups), the index's size and embedding queue, Assemble and Search
// latency, the tokens answers return, gRPC calls, config reloads and
// readiness.
//
// Everything is registered on the Metrics' own registry, never the global
// one, so tests and several engines in one process do not share counters.
// Counters move as events happen (a [Metrics] is the engine's Observer);
// gauges about state (server state, index size) are read from a [Source]
// at each scrape.
//
// The names, labels and meanings are listed in docs/operations.md.
package metrics

import (
	"fmt"
	"mime/multipart"
	"net/http"
	"net/http/pprof"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"google.golang.org/grpc/codes"

	"github.com/contextd/contextd/internal/engine"
	ctxsync "github.com/contextd/contextd/internal/sync"
)

const namespace = "contextd"

// A Source is what the scrape-time gauges read: an *engine.Engine.
type Source interface {
	Servers() []engine.ServerStatus
	IndexStats() engine.IndexStats
}

// Metrics holds contextd's metrics and their registry. Its methods are safe
// for concurrent use.
type Metrics struct {
	reg *prometheus.Registry

	syncs       *prometheus.CounterVec   // server, result
	calls       *prometheus.CounterVec   // server, method, result
	cache       *prometheus.CounterVec   // server, result
	latency     *prometheus.HistogramVec // method, result
	tokens      prometheus.Histogram
	grpc        *prometheus.CounterVec // method, code
	grpcRefused *prometheus.CounterVec // reason
	reloads     *prometheus.CounterVec // result
	reloadOK    prometheus.Gauge
	reloadAt    prometheus.Gauge
}

var _ engine.Observer = (*Metrics)(nil)

// New returns the metrics on a new registry, with the Go runtime and
// process collectors.
func New() *Metrics {
	m := &Metrics{reg: prometheus.NewRegistry()}
	f := func(c prometheus.Collector) { m.reg.MustRegister(c) }
	m.syncs = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: "syncs_total",
		Help: "Full syncs of a server's lists, by result (ok: both lists walked and stored; error: one failed)."}, []string{"server", "result"})
	m.calls = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: "upstream_requests_total",
		Help: "Requests to upstream servers: resources/list and resources/templates/list (one per walk, all pages), resources/read (for answers and the content index), by result."},
		[]string{"server", "method", "result"})
	m.cache = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: "read_cache_requests_total",
		Help: "Reads through a mirror, by whether its read cache answered (hit) or the server was asked (miss)."}, []string{"server", "result"})
	m.latency = prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: namespace, Name: "request_duration_seconds",
		Help:    "Time to answer Assemble and Search (gRPC and MCP alike), by result.",
		Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60}}, []string{"method", "result"})
	m.tokens = prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: namespace, Name: "assemble_tokens",
		Help:    "Tokens an Assemble returned (total_tokens); the sum is all tokens returned.",
		Buckets: prometheus.ExponentialBuckets(64, 2, 12)}) // 64 … 131072
	m.grpc = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: "grpc_requests_total",
		Help: "Unary gRPC calls, by full method and status code (refused calls included)."}, []string{"method", "code"})
	m.grpcRefused = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: "grpc_refused_at_headers_total",
		Help: "gRPC calls (of any method, streams too) refused as their headers arrived, by reason: unauthenticated, busy (too many calls waiting to start), malformed (method name)."}, []string{"reason"})
	m.reloads = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: "config_reloads_total",
		Help: "Configuration reloads (SIGHUP or a change of the file), by result; error: the new file was refused and the old configuration kept."}, []string{"result"})
	m.reloadOK = prometheus.NewGauge(prometheus.GaugeOpts{Namespace: namespace, Name: "config_last_reload_successful",
		Help: "1 when the last reload was applied (or none was tried), 0 when the file on disk was refused."})
	m.reloadAt = prometheus.NewGauge(prometheus.GaugeOpts{Namespace: namespace, Name: "config_last_reload_success_timestamp_seconds",
		Help: "When the configuration in use was loaded (start or reload), Unix time."})
	for _, c := range []prometheus.Collector{m.syncs, m.calls, m.cache, m.latency, m.tokens, m.grpc, m.grpcRefused, m.reloads, m.reloadOK, m.reloadAt,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})} {
		f(c)
	}
	m.reloadOK.Set(1)
	m.reloadAt.SetToCurrentTime()
	return m
}

// Registry returns the registry the metrics are on.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Watch registers the scrape-time gauges read from src. Call it once.
func (m *Metrics) Watch(src Source) { m.reg.MustRegister(&stateCollector{src: src}) }

func result(err error) string {
	if err != nil {
		return "error"
	}
	return "ok"
}

// Synced implements ctxsync.Observer.
func (m *Metrics) Synced(server string, ok bool) {
	r := "ok"
	if !ok {
		r = "error"
	}
	m.syncs.WithLabelValues(server, r).Inc()
}

// Called implements ctxsync.Observer.
func (m *Metrics) Called(server, method string, err error) {
	m.calls.WithLabelValues(server, method, result(err)).Inc()
}

// Cached implements ctxsync.Observer.
func (m *Metrics) Cached(server string, hit bool) {
	r := "miss"
	if hit {
		r = "hit"
	}
	m.cache.WithLabelValues(server, r).Inc()
}

// Assembled implements engine.Observer.
func (m *Metrics) Assembled(took time.Duration, tokens int, err error) {
	m.latency.WithLabelValues("assemble", result(err)).Observe(took.Seconds())
	if err == nil {
		m.tokens.Observe(float64(tokens))
	}
}

// Searched implements engine.Observer.
func (m *Metrics) Searched(took time.Duration, err error) {
	m.latency.WithLabelValues("search", result(err)).Observe(took.Seconds())
}

// Forget drops the counters of servers no longer configured, so that a
// removed server's series end instead of staying at their last values.
func (m *Metrics) Forget(servers ...string) {
	for _, s := range servers {
		l := prometheus.Labels{"server": s}
		m.syncs.DeletePartialMatch(l)
		m.calls.DeletePartialMatch(l)
		m.cache.DeletePartialMatch(l)
	}
}

// GRPC counts one unary gRPC call; it fits service.Instrument.
func (m *Metrics) GRPC(method string, code codes.Code, _ time.Duration) {
	m.grpc.WithLabelValues(strings.TrimPrefix(method, "/"), code.String()).Inc()
}

// GRPCRefused counts one gRPC call refused as its headers arrived, for
// reason; it fits service.GuardOptions.OnRefused.
func (m *Metrics) GRPCRefused(reason string) {
	m.grpcRefused.WithLabelValues(reason).Inc()
}

// Reloaded records a configuration reload: err is nil when it was applied.
func (m *Metrics) Reloaded(err error) {
	m.reloads.WithLabelValues(result(err)).Inc()
	if err != nil {
		m.reloadOK.Set(0)
		return
	}
	m.reloadOK.Set(1)
	m.reloadAt.SetToCurrentTime()
}

// WatchServing registers contextd_serving, read from serving at each
// scrape (the gRPC health status). Call it once.
func (m *Metrics) WatchServing(serving func() bool) {
	m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: namespace, Name: "serving",
		Help: "1 while gRPC health is SERVING (a server has synced and the daemon is not stopping), else 0."},
		func() float64 {
			if serving() {
				return 1
			}
			return 0
		}))
}

// Handler serves the metrics at /metrics, and with pprof the runtime
// profiles at /debug/pprof/ (net/http/pprof).
func (m *Metrics) Handler(withPprof bool) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg}))
	if withPprof {
		b := &profileBounds{sem: make(chan struct{}, MaxProfiles)}
		mux.Handle("/debug/pprof/", b.bound(http.HandlerFunc(pprof.Index)))
		mux.Handle("/debug/pprof/cmdline", b.bound(http.HandlerFunc(pprof.Cmdline)))
		mux.Handle("/debug/pprof/profile", b.bound(http.HandlerFunc(pprof.Profile)))
		mux.Handle("/debug/pprof/symbol", b.bound(http.HandlerFunc(pprof.Symbol)))
		mux.Handle("/debug/pprof/trace", b.bound(http.HandlerFunc(pprof.Trace)))
	}
	return mux
}

// Bounds on pprof requests. net/http/pprof takes any seconds (a delta
// heap profile, a CPU profile or a trace for an hour), and serves any
// number at once: 1,100 connections each asking for an hour's heap delta
// held every metrics_listen slot and grew the daemon to 3 GB, and one
// trace read slower than it was made grew it 0.6 MB/s.
const (
	// MaxProfileSeconds is the longest profile or trace served, in
	// seconds ("?seconds=" above it gets 400 Bad Request).
	MaxProfileSeconds = 60
	// MaxProfiles is how many pprof requests are served at once; others
	// get 429 Too Many Requests at once.
	MaxProfiles = 2
	// MaxSymbolBody bounds the addresses a symbol lookup reads, in bytes
	// of its body (about 6,000 addresses; Go profiles carry their own
	// symbols, so go tool pprof rarely asks).
	MaxSymbolBody = 64 << 10
)

// DumpInterval is the least time between two dumps of every goroutine's
// stack (/debug/pprof/goroutine?debug=2 and above): each stops the
// world for as long as it takes, 1.3 s at 15,000 goroutines, and two
// loops of them slowed honest calls from 1 ms to 0.3 s (p50).
const DumpInterval = 10 * time.Second

// profileBounds holds the state of the pprof bounds.
type profileBounds struct {
	sem chan struct{} // MaxProfiles slots

	mu       sync.Mutex
	lastDump time.Time // the last goroutine text dump began
}

// bound serves h within MaxProfileSeconds, MaxProfiles and DumpInterval.
// Only GET and HEAD are served, but for symbol's POST of addresses: a
// POSTed form would be read whole before any bound applied (1,000 held
// 1 MiB bodies grew the daemon by 2 GB).
func (b *profileBounds) bound(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		symbol := strings.HasSuffix(r.URL.Path, "/symbol")
		if r.Method != http.MethodGet && r.Method != http.MethodHead && !(r.Method == http.MethodPost && symbol) {
			w.Header().Set("Allow", map[bool]string{false: "GET, HEAD", true: "GET, HEAD, POST"}[symbol])
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		q := r.URL.Query()
		if symbol {
			// Symbol answers a line per address, up to the function's
			// whole name (408 bytes for some generic functions' equality):
			// 1 MiB of one such address made a 48 MB answer, buffered.
			r.Body = http.MaxBytesReader(w, r.Body, MaxSymbolBody)
		} else {
			// pprof reads its parameters with FormValue, which would
			// read a form from any request's body (a GET with a
			// multipart body of seconds=3600): it gets the query only.
			r.Body = http.NoBody
			r.Form, r.PostForm = q, url.Values{}
			r.MultipartForm = &multipart.Form{Value: map[string][]string{}, File: map[string][]*multipart.FileHeader{}}
		}
		if v := q.Get("seconds"); v != "" {
			if n, err := strconv.ParseFloat(v, 64); err != nil || !(n <= MaxProfileSeconds) {
				http.Error(w, fmt.Sprintf("seconds: %q is not a number of seconds up to %d", v, MaxProfileSeconds), http.StatusBadRequest)
				return
			}
		}
		select {
		case b.sem <- struct{}{}:
			defer func() { <-b.sem }()
		default:
			w.Header().Set("Retry-After", "1")
			http.Error(w, fmt.Sprintf("%d profiles are being served; try again when one ends", MaxProfiles), http.StatusTooManyRequests)
			return
		}
		if d, _ := strconv.Atoi(q.Get("debug")); strings.HasSuffix(r.URL.Path, "/goroutine") && d >= 2 {
			b.mu.Lock()
			wait := DumpInterval - time.Since(b.lastDump)
			if wait <= 0 {
				b.lastDump = time.Now()
			}
			b.mu.Unlock()
			if wait > 0 {
				w.Header().Set("Retry-After", strconv.Itoa(int(wait.Seconds())+1))
				http.Error(w, fmt.Sprintf("a goroutine dump stops the daemon while it runs: one every %v", DumpInterval), http.StatusTooManyRequests)
				return
			}
		}
		h.ServeHTTP(w, r)
	})
}

// States are the values of contextd_server_state's state label.
var states = []ctxsync.State{ctxsync.StateConnecting, ctxsync.StateReady, ctxsync.StateDegraded, ctxsync.StateStale, ctxsync.StateFailed}

var (
	descState = prometheus.NewDesc(namespace+"_server_state",
		"1 for each server's current mirror state (connecting, ready, degraded, stale, failed), 0 for the others.", []string{"server", "state"}, nil)
	descResources = prometheus.NewDesc(namespace+"_server_resources",
		"Descriptors of the server in the index.", []string{"server"}, nil)
	descTemplates = prometheus.NewDesc(namespace+"_server_templates",
		"Resource templates from the server's last sync.", []string{"server"}, nil)
	descContents = prometheus.NewDesc(namespace+"_server_contents",
		"Resources of the server whose text is in the content index.", []string{"server"}, nil)
	descLastSync = prometheus.NewDesc(namespace+"_server_last_sync_timestamp_seconds",
		"When the server's last successful sync ended, Unix time; absent before the first.", []string{"server"}, nil)
	descDescriptors = prometheus.NewDesc(namespace+"_index_descriptors",
		"Descriptors in the index, all servers.", nil, nil)
	descContentTexts = prometheus.NewDesc(namespace+"_content_index_texts",
		"Resources whose text is in the content index, all servers.", nil, nil)
	descContentBytes = prometheus.NewDesc(namespace+"_content_index_bytes",
		"Bytes of text the content index holds, all servers.", nil, nil)
	descQueue = prometheus.NewDesc(namespace+"_embedding_queue_passages",
		"Passages of indexed texts waiting to be embedded.", nil, nil)
)

// stateCollector reads the scrape-time gauges from a Source.
type stateCollector struct{ src Source }

func (c *stateCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descState, descResources, descTemplates, descContents, descLastSync, descDescriptors, descContentTexts, descContentBytes, descQueue} {
		ch <- d
	}
}

func (c *stateCollector) Collect(ch chan<- prometheus.Metric) {
	for _, s := range c.src.Servers() {
		for _, st := range states {
			v := 0.0
			if s.State == st {
				v = 1
			}
			ch <- prometheus.MustNewConstMetric(descState, prometheus.GaugeValue, v, s.Server, st.String())
		}
		ch <- prometheus.MustNewConstMetric(descResources, prometheus.GaugeValue, float64(s.Resources), s.Server)
		ch <- prometheus.MustNewConstMetric(descTemplates, prometheus.GaugeValue, float64(s.Templates), s.Server)
		ch <- prometheus.MustNewConstMetric(descContents, prometheus.GaugeValue, float64(s.Contents), s.Server)
		if !s.LastSync.IsZero() {
			ch <- prometheus.MustNewConstMetric(descLastSync, prometheus.GaugeValue, float64(s.LastSync.UnixNano())/1e9, s.Server)
		}
	}
	st := c.src.IndexStats()
	ch <- prometheus.MustNewConstMetric(descDescriptors, prometheus.GaugeValue, float64(st.Descriptors))
	ch <- prometheus.MustNewConstMetric(descContentTexts, prometheus.GaugeValue, float64(st.Contents))
	ch <- prometheus.MustNewConstMetric(descContentBytes, prometheus.GaugeValue, float64(st.ContentBytes))
	ch <- prometheus.MustNewConstMetric(descQueue, prometheus.GaugeValue, float64(st.PendingPassages))
}
