package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"
	"google.golang.org/grpc"

	"github.com/contextd/contextd/internal/config"
	"github.com/contextd/contextd/internal/engine"
	"github.com/contextd/contextd/internal/mcpserver"
	"github.com/contextd/contextd/internal/metrics"
	"github.com/contextd/contextd/internal/redact"
	"github.com/contextd/contextd/internal/service"
)

// shutdownGrace is how long in-flight requests get before a hard stop.
const shutdownGrace = 10 * time.Second

func serve(ctx context.Context, args []string, stderr io.Writer) error {
	fs := newFlagSet("serve", stderr)
	cfgPath := fs.String("config", "", "config file (YAML or JSON)")
	listen := fs.String("listen", "", "address to listen on: host:port or unix:///path (default from config, else 127.0.0.1:7878)")
	mcpListen := fs.String("mcp-listen", "", "also serve MCP over Streamable HTTP on this loopback host:port (default from config mcp_listen, else none)")
	logLevel := fs.String("log-level", "info", "debug, info, warn or error")
	logFormat := fs.String("log-format", "", "text or json (default from config log_format, else text)")
	metricsListen := fs.String("metrics-listen", "", "serve Prometheus /metrics on this loopback host:port (default from config metrics_listen, else none)")
	if _, err := parse(fs, args); err != nil {
		return err
	}
	if err := config.CheckLogFormat(*logFormat); err != nil {
		return fmt.Errorf("--log-format: %w", err)
	}
	cfg, err := loadConfig(*cfgPath, stderr)
	if err != nil {
		return err
	}
	loaded := fileHash(cfg.Path) // taken once the file is read: later edits are changes
	// Flags win over the file, at start and at every reload.
	overrides := func(c *config.Config) {
		if *listen != "" {
			c.Listen = *listen
		}
		if *mcpListen != "" {
			c.MCPListen = *mcpListen
		}
		if *metricsListen != "" {
			c.Ops.MetricsListen = *metricsListen
		}
		if *logFormat != "" {
			c.Ops.LogFormat = *logFormat
		}
	}
	overrides(cfg)
	log, err := newLoggerFormat(stderr, *logLevel, cfg.Ops.LogFormat)
	if err != nil {
		return err
	}
	// From here on SIGHUP reloads the file; it no longer stops the process.
	watch := startWatch(cfg.Path, log)
	defer watch.Close()
	if err := cfg.Auth.CheckListen(cfg.Listen); err != nil {
		return err
	}
	if err := cfg.Auth.CheckHTTPEndpoints(cfg.Listen, cfg.MCPListen, cfg.Ops.Pprof); err != nil {
		return err
	}
	// The service's log masks credentials as the engine's does.
	var secrets []string
	for _, srv := range cfg.Servers {
		secrets = append(secrets, srv.Secrets()...)
	}
	secrets = append(secrets, cfg.EmbedderSecrets()...)
	log = slog.New(redact.Handler(log.Handler(), redact.New(append(secrets, cfg.Auth.Token)...)))
	if cfg.Auth.Token != "" && !cfg.Auth.TLS.Enabled() && !strings.HasPrefix(cfg.Listen, "unix://") && (config.Auth{}).CheckListen(cfg.Listen) != nil {
		log.Warn("the token crosses the network in clear text: set tls.cert_file and tls.key_file", "listen", cfg.Listen)
	}
	creds, notAfter, err := serverTLS(cfg.Auth.TLS)
	if err != nil {
		return err
	}
	if w := certWarning(notAfter, time.Now()); w != "" {
		log.Warn(w, "not_after", notAfter.UTC().Format(time.RFC3339))
	}
	if n := clientCAs(cfg.Auth.TLS); n > maxClientCAs && cfg.Auth.Token == "" && (config.Auth{}).CheckListen(cfg.Listen) != nil {
		log.Warn("tls.client_ca_file holds many CAs (a system bundle?) and no auth.token is set: a client certificate from any of them is let in; name your own CA", "cas", n, "listen", cfg.Listen)
	}
	if cfg.Ops.MetricsListen != "" {
		if err := cfg.Ops.CheckMetricsListen(cfg.Ops.MetricsListen); err != nil {
			return fmt.Errorf("metrics_listen: %w", err)
		}
	}
	dropSelf(cfg, log)
	if len(cfg.Servers) == 0 {
		log.Warn("no servers configured: every request will fail until some are added", "config", cfg.Path)
	}
	lis, err := listenOn(cfg.Listen)
	if err != nil {
		return err
	}
	nofile := openFileLimit()
	nconns := maxConns(cfg.Conns, nofile)
	if n := uint64(nconns) * uint64(1+btoi(cfg.MCPListen != "")+btoi(cfg.Ops.MetricsListen != "")); nofile > 0 && n >= nofile*3/4 {
		log.Warn("max_connections on every listener adds up to most of the open-file limit: held connections could still starve the daemon of descriptors; lower max_connections or raise the limit (ulimit -n, LimitNOFILE=)",
			"max_connections", nconns, "open_file_limit", nofile)
	}
	lis = limitConns(lis, nconns, silentGrace(cfg.Conns), "listen", log)
	answers := newUnsentAnswers(unsentAnswersMax(cfg.Limits), cfg.Conns.IdleTimeout)
	lis.(*limitListener).answers = answers
	lis = withWriteStall(lis, cfg.Conns.IdleTimeout)
	relay := &mcpserver.Relay{}
	met := metrics.New()
	eng, err := engine.New(ctx, engine.Options{Config: cfg, Logger: log, Mirror: relayMirror(relay), Observer: met})
	if err != nil {
		lis.Close()
		return err
	}
	met.Watch(eng)
	// Instrument first, so the calls Guard refuses are counted too.
	// gRPC and the MCP endpoint take their turns from one admission.
	adm := service.NewAdmission(cfg.Limits.MaxConcurrent, cfg.Limits.MaxQueued, 0)
	var busyWarned atomic.Int64
	onRefused := func(reason string) {
		met.GRPCRefused(reason)
		if now := time.Now().UnixNano(); reason == "busy" && now-busyWarned.Load() > int64(time.Minute) {
			busyWarned.Store(now)
			log.Warn("gRPC calls refused busy as they arrive: too many calls wait for the daemon to start them (the CPU is far behind, or a client floods calls); see contextd_grpc_refused_at_headers_total")
		}
	}
	// The token a reload may rotate (see reloader.rotate): every guard
	// reads it at each call.
	token := service.NewToken(cfg.Auth.Token)
	sopts := append([]grpc.ServerOption{service.Instrument(met.GRPC)}, service.Guard(service.GuardOptions{Tokens: token, Admission: adm,
		MaxUnstarted: cfg.Limits.MaxConcurrent + cfg.Limits.MaxQueued, OnRefused: onRefused, OnAuthenticated: trustGRPC,
		RequestWait: cfg.Conns.HandshakeTimeout})...)
	sopts = append(sopts, grpcConnOptions(cfg.Conns)...)
	sopts = append(sopts, answers.options()...)
	sopts = append(sopts, answers.transport(creds))
	svc := service.New(eng, log.With("component", "service"))
	met.WatchServing(svc.Health().Serving)
	srv := service.NewServer(svc, sopts...)
	var metricsWeb *http.Server
	var metricsLis net.Listener
	if cfg.Ops.MetricsListen != "" {
		if metricsLis, err = net.Listen("tcp", cfg.Ops.MetricsListen); err != nil {
			lis.Close()
			eng.Close()
			return fmt.Errorf("metrics_listen: %w", err)
		}
		metricsLis = withWriteStall(limitConns(metricsLis, nconns, silentGrace(cfg.Conns), "metrics_listen", log), cfg.Conns.IdleTimeout)
		metricsWeb = newHTTPServer(guardMetrics(token, met.Handler(cfg.Ops.Pprof)), cfg.Conns, log)
		log.Info("contextd serving metrics", "url", "http://"+metricsLis.Addr().String()+"/metrics", "pprof", cfg.Ops.Pprof)
	}
	fac := mcpserver.New(eng, &mcpserver.Options{Version: version, Logger: slog.New(eng.WrapLog(log.Handler())).With("component", "mcpserver"), Relay: relay, Admit: adm.Admit,
		StateFile: mcpserver.StateFileIn(eng.DataDir())})
	var web *mcpHTTP
	if cfg.MCPListen != "" {
		svc.NoteAnswers(fac.NoteAnswered) // a bridge may take texts from gRPC too
		if web, err = newMCPHTTP(cfg, token, fac, nconns, log); err != nil {
			lis.Close()
			if metricsLis != nil {
				metricsLis.Close()
			}
			eng.Close()
			return err
		}
		log.Info("contextd serving MCP (Streamable HTTP)", "url", "http://"+web.lis.Addr().String()+cfg.MCPPath)
	}
	log.Info("contextd serving", "listen", lis.Addr().String(), "servers", len(cfg.Servers), "data_dir", cfg.DataDir, "tokenizer", eng.Tokenizer(),
		"token", cfg.Auth.Token != "", "tls", cfg.Auth.TLS.Enabled(), "client_certs", cfg.Auth.TLS.ClientCAFile != "",
		"max_connections", nconns, "idle_timeout", cfg.Conns.IdleTimeout)

	// Mirrors outlive the gRPC server so in-flight requests can still read.
	mirrorCtx, stopMirrors := context.WithCancel(context.Background())
	defer stopMirrors()
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { runBeside(mirrorCtx, eng, fac); return nil })
	g.Go(func() error { answers.run(gctx); return nil })
	if metricsWeb != nil {
		g.Go(func() error {
			if err := metricsWeb.Serve(metricsLis); err != nil && !errors.Is(err, http.ErrServerClosed) {
				return fmt.Errorf("metrics http: %w", err)
			}
			return nil
		})
	}
	if cfg.Path != "" {
		r := &reloader{path: cfg.Path, cur: cfg, running: cfg, flags: overrides, eng: eng, m: met, log: log.With("component", "reload"), token: token,
			refused: svc.SetConfigError, loaded: loaded, tlsRead: tlsDigests(cfg.Auth.TLS)}
		g.Go(func() error { r.watch(gctx, watch); return nil })
	} else {
		g.Go(func() error { ignoreHangup(gctx, watch, log); return nil })
	}
	if web != nil {
		g.Go(func() error {
			if err := web.srv.Serve(web.lis); err != nil && !errors.Is(err, http.ErrServerClosed) {
				return fmt.Errorf("mcp http: %w", err)
			}
			return nil
		})
	}
	g.Go(func() error {
		// ErrServerStopped: a signal arrived before Serve started.
		if err := srv.Serve(lis); err != nil && !errors.Is(err, net.ErrClosed) && !errors.Is(err, grpc.ErrServerStopped) {
			return fmt.Errorf("grpc: %w", err)
		}
		return nil
	})
	g.Go(func() error {
		<-gctx.Done()
		// Health turns NOT_SERVING before anything closes, so probes and
		// balancers stop sending work while requests in flight finish.
		svc.Health().Shutdown()
		log.Info("shutting down: finishing in-flight requests")
		t := time.AfterFunc(shutdownGrace, srv.Stop)
		if web != nil {
			sctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
			if web.srv.Shutdown(sctx) != nil {
				web.srv.Close() // streams still open at the deadline
			}
			cancel()
		}
		srv.GracefulStop()
		t.Stop()
		stopMirrors() // closes upstream sessions; stdio servers are stopped in stages
		if metricsWeb != nil {
			// Last, so a scrape sees the drain.
			sctx, cancel := context.WithTimeout(context.Background(), time.Second)
			if metricsWeb.Shutdown(sctx) != nil {
				metricsWeb.Close()
			}
			cancel()
		}
		return nil
	})
	err = g.Wait()
	if cerr := eng.Close(); cerr != nil && err == nil {
		err = cerr
	}
	if errors.Is(err, context.Canceled) {
		return nil // cancellation is how serve stops
	}
	log.Info("stopped")
	return err
}

// dialProbe bounds the check for a live daemon on an existing socket.
const dialProbe = time.Second

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// maxMetricsBody bounds a request body on the metrics listener (bytes):
// pprof's symbol lookup (POST /debug/pprof/symbol, what go tool pprof sends
// to symbolize a profile) reads its body to the end and buffers a line of
// answer per address, about ten times the body (up to 46 times, for a
// long generic name): 90 MB of addresses made an 850 MB answer and took
// the daemon to 2.2 GB. The symbol lookup itself reads at most
// metrics.MaxSymbolBody.
const maxMetricsBody = 1 << 20

// guardMetrics returns the metrics listener's handler h with everything
// but /metrics (that is, pprof's profiles, which expose the process's
// memory) asking for the daemon's token when one is set. /metrics stays
// open to scrapers: it is loopback-only unless allow_insecure_metrics.
// Request bodies are cut at maxMetricsBody.
//
// A request past the token check marks its connection trusted (see
// limitConn.trusted); with a token, an open /metrics scrape does not, so
// that scrapes without it cannot keep a full listener's connections.
func guardMetrics(token *service.Token, h http.Handler) http.Handler {
	inner := h
	h = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body != nil {
			r.Body = http.MaxBytesReader(w, r.Body, maxMetricsBody)
		}
		inner.ServeHTTP(w, r)
	})
	if token.Get() == "" {
		h = trustConn(h)
	} else {
		open, guarded := h, service.RequireBearerOf(token, trustConn(h))
		h = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/metrics" {
				open.ServeHTTP(w, r)
				return
			}
			guarded.ServeHTTP(w, r)
		})
	}
	return loopbackHostOnly(h)
}

// loopbackHostOnly refuses (403) a request that reached a loopback address
// under a Host header that is not a loopback name or address: a web page
// whose DNS name was rebound to 127.0.0.1 would otherwise read the listener
// from the user's browser (the go-sdk's MCP handler checks the same).
func loopbackHostOnly(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if local, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok && isLoopback(local.String()) && !isLoopback(r.Host) {
			http.Error(w, "Forbidden: the Host header does not name a loopback address", http.StatusForbidden)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// isLoopback reports whether addr (host or host:port) is "localhost" or a
// loopback IP address.
func isLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = strings.Trim(addr, "[]")
	}
	return config.IsLoopbackHost(host)
}
