package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"syscall"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/contextd/contextd/internal/config"
	"github.com/contextd/contextd/internal/engine"
	"github.com/contextd/contextd/internal/mcpserver"
	"github.com/contextd/contextd/internal/redact"
	"github.com/contextd/contextd/internal/service"
	ctxsync "github.com/contextd/contextd/internal/sync"
)

// mcpStdio serves MCP on stdin/stdout for an MCP host's mcpServers entry.
// stdout carries the protocol only: every log line goes to stderr.
func mcpStdio(ctx context.Context, args []string, stderr io.Writer) error {
	// A hangup (the terminal or the host's pty going away) stops it as
	// SIGTERM does, closing its upstream sessions and stdio servers,
	// rather than killing it on the spot.
	// Not under nohup, which asks for hangups to be ignored.
	if !signal.Ignored(syscall.SIGHUP) {
		var stopHUP context.CancelFunc
		ctx, stopHUP = signal.NotifyContext(ctx, syscall.SIGHUP)
		defer stopHUP()
	}
	fs := newFlagSet("mcp", stderr)
	cfgPath := fs.String("config", "", "config file (YAML or JSON)")
	logLevel := fs.String("log-level", "warn", "debug, info, warn or error (logs go to stderr, the host's; below debug they hold no text of the servers' or the embedder's)")
	readyWait := fs.Duration("ready-wait", mcpserver.DefaultReadyWait, "how long a request waits for servers still on their first sync")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return errUsage(fmt.Sprintf("mcp takes no arguments, got %q (the host sends the tasks over MCP)", pos))
	}
	if _, err := newLogger(io.Discard, *logLevel); err != nil {
		return err // a bad --log-level before the config's errors
	}
	cfg, err := loadMCPConfig(*cfgPath, stderr)
	if err != nil {
		return err
	}
	log, err := newLoggerFormat(stderr, *logLevel, cfg.Ops.LogFormat)
	if err != nil {
		return err
	}
	if !log.Enabled(ctx, slog.LevelDebug) {
		log = slog.New(hostLog{log.Handler()})
	}
	// Credentials masked and controls escaped from the start; once the
	// engine runs, as its configuration says after each reload.
	log = slog.New(redact.Handler(log.Handler(), redact.New(cfg.Secrets()...)))
	dropSelf(cfg, log)
	if len(cfg.Servers) == 0 {
		log.Warn("no servers configured: every request will fail until some are added", "config", cfg.Path)
	}
	relay := &mcpserver.Relay{}
	// Next to a daemon on the same data_dir, the host's contextd keeps its
	// index in memory.
	eng, err := engine.New(ctx, engine.Options{Config: cfg, Logger: log, SharedDataDir: true, Mirror: relay.WrapMirror})
	if err != nil {
		return err
	}
	log = slog.New(eng.WrapLog(log.Handler()))
	fac := mcpserver.New(eng, &mcpserver.Options{Version: version, Logger: log.With("component", "mcpserver"), Relay: relay, ReadyWait: *readyWait,
		StateFile: mcpserver.StateFileIn(eng.DataDir())})

	mirrorCtx, stopMirrors := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		runBeside(mirrorCtx, eng, fac)
	}()
	// A host's messages are held to what mcp_listen takes in a body (the
	// go-sdk's default line is 16 MiB, and a query of that size is refused
	// only after it is read and decoded), and one it sends malformed is
	// answered with an error rather than ending the session.
	// Calls in flight end with the process: a signal cancels them, where
	// the session would otherwise wait for each to finish (a read of a
	// hung server: its whole timeout).
	fac.MCP().AddReceivingMiddleware(func(next mcpsdk.MethodHandler) mcpsdk.MethodHandler {
		return func(c context.Context, method string, req mcpsdk.Request) (mcpsdk.Result, error) {
			c, cancel := context.WithCancel(c)
			defer cancel()
			defer context.AfterFunc(ctx, cancel)()
			return next(c, method, req)
		}
	})
	err = fac.MCP().Run(ctx, mcpserver.StdioTransport(os.Stdin, os.Stdout, log.With("component", "mcpserver")))
	stopMirrors() // closes upstream sessions; stdio servers are stopped in stages
	<-done
	if cerr := eng.Close(); cerr != nil && err == nil {
		err = cerr
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, io.EOF) {
		return nil // the host closed stdin, or a signal: how mcp stops
	}
	return err
}

// loadMCPConfig is loadConfig, except that the built-in default's stdio
// servers run in the home directory: a host starts contextd mcp in the
// project it opens, and npx looks for the default's server-everything in
// the working directory's node_modules first.
func loadMCPConfig(path string, stderr io.Writer) (*config.Config, error) {
	cfg, err := loadConfig(path, stderr)
	if err != nil || cfg.Path != "" {
		return cfg, err
	}
	if home, herr := os.UserHomeDir(); herr == nil {
		for i := range cfg.Servers {
			if cfg.Servers[i].Transport == config.TransportStdio && cfg.Servers[i].Cwd == "" {
				cfg.Servers[i].Cwd = home
			}
		}
	}
	return cfg, nil
}

// dropSelf removes from cfg the servers that are contextd's own MCP server
// (command contextd, or this executable, with the mcp argument): a host's
// config file, which contextd can read as it is, lists contextd itself once
// it fronts the host, and mirroring it would start contextd inside contextd.
func dropSelf(cfg *config.Config, log *slog.Logger) {
	self, _ := os.Executable()
	cfg.KeepServers(func(s config.Server) bool {
		isSelf := s.Transport == config.TransportStdio && slices.Contains(s.Args, "mcp") &&
			(filepath.Base(s.Command) == "contextd" || (self != "" && s.Command == self))
		if isSelf {
			log.Warn("not mirroring a server that is contextd's own MCP server", "server", s.Name, "command", s.Command)
		}
		return !isSelf
	})
}

// runBeside runs the engine's mirrors and the MCP server's list upkeep until
// ctx ends.
func runBeside(ctx context.Context, eng *engine.Engine, fac *mcpserver.Server) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = fac.Run(ctx)
	}()
	_ = eng.Run(ctx)
	<-done
	fac.SaveState() // with what the mirrors stored as they stopped
}

// mcpHTTP is serve's Streamable HTTP endpoint.
type mcpHTTP struct {
	srv *http.Server
	lis net.Listener
}

// newMCPHTTP listens on cfg.MCPListen (loopback only) and serves fac at
// cfg.MCPPath, to requests with the token held by token when one is set,
// holding at most maxConns connections at once.
func newMCPHTTP(cfg *config.Config, token *service.Token, fac *mcpserver.Server, maxConns int, log *slog.Logger) (*mcpHTTP, error) {
	if err := config.CheckLoopback(cfg.MCPListen); err != nil {
		return nil, fmt.Errorf("--mcp-listen: %w", err)
	}
	lis, err := listenTCP(cfg.MCPListen, mcpListenWhat)
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	// The endpoint asks for the daemon's token as the gRPC one does: on a
	// shared machine every local user can reach a loopback port.
	mux.Handle(cfg.MCPPath, service.RequireBearerOf(token, trustConn(fac.HTTPHandler())))
	lis = withWriteStall(limitConns(lis, maxConns, silentGrace(cfg.Conns), "mcp_listen", log), cfg.Conns.IdleTimeout)
	// Answers waiting for clients that do not read them are bounded as
	// gRPC's are (32 × max_response_bytes).
	lis = withWriteBound(lis, unsentAnswersMax(cfg.Limits))
	return &mcpHTTP{lis: lis, srv: newHTTPServer(mux, cfg.Conns, log)}, nil
}

// relayMirror returns the engine's Mirror option that installs relay.
func relayMirror(relay *mcpserver.Relay) func(*ctxsync.Options) { return relay.WrapMirror }
