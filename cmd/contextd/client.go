package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"strings"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/contextd/contextd/internal/config"
	"github.com/contextd/contextd/internal/service"
	contextdv1 "github.com/contextd/contextd/proto/contextd/v1"
)

// dial connects to a running daemon at addr (host:port or unix:///path),
// with auth's TLS and token.
func dial(addr string, auth config.Auth) (*grpc.ClientConn, contextdv1.ContextServiceClient, error) {
	target := addr
	if p, ok := strings.CutPrefix(addr, "unix://"); ok {
		target = "unix:" + p
	} else if !strings.Contains(addr, "://") {
		target = "passthrough:///" + addr
	}
	opts, err := clientCreds(auth)
	if err != nil {
		return nil, nil, err
	}
	conn, err := grpc.NewClient(target, append(opts,
		// An answer holds up to the token budget of text plus any blobs asked for.
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(math.MaxInt32)))...)
	if err != nil {
		return nil, nil, fmt.Errorf("dial %s: %w", addr, err)
	}
	return conn, contextdv1.NewContextServiceClient(conn), nil
}

// rpcError makes a gRPC status readable: "INVALID_ARGUMENT: ...". An
// UNAVAILABLE without the daemon's ErrorInfo means nothing answered.
func rpcError(addr string, err error) error {
	if st, ok := status.FromError(err); ok {
		if st.Code() == codes.Unavailable && !fromDaemon(st) {
			return fmt.Errorf("no daemon answering at %s (start one with `contextd serve`): %s", addr, esc(st.Message()))
		}
		return fmt.Errorf("daemon at %s: %s: %s", addr, st.Code(), esc(st.Message()))
	}
	return err
}

// fromDaemon reports whether st carries the ErrorInfo the daemon puts on
// its own errors.
func fromDaemon(st *status.Status) bool {
	for _, d := range st.Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok && info.GetDomain() == service.ErrorDomain {
			return true
		}
	}
	return false
}

func query(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("query", stderr)
	addr := fs.String("addr", "", "daemon address: host:port or unix:///path (default: the config's listen, else "+config.DefaultListen+")")
	cfgPath := fs.String("config", "", "config file to read the daemon's address, auth and tls from")
	var a assembleFlags
	a.register(fs)
	var servers stringList
	fs.Var(&servers, "server", "only use this configured server (repeatable)")
	asJSON := fs.Bool("json", false, "print the protojson of the response")
	timeout := fs.Duration("timeout", 60*time.Second, "request deadline")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	q, err := a.validate(pos)
	if err != nil {
		return err
	}
	cfg, err := clientConfig(*cfgPath, stderr)
	if err != nil {
		return err
	}
	if *addr == "" {
		*addr = cfg.Listen
	}
	conn, client, err := dial(*addr, cfg.Auth)
	if err != nil {
		return err
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	in, err := a.request(q, servers)
	if err != nil {
		return err
	}
	resp, err := client.Assemble(ctx, in)
	if err != nil {
		return rpcError(*addr, err)
	}
	noMatch(stderr, resp)
	if *asJSON {
		return printJSON(stdout, resp)
	}
	printAssemble(stdout, resp, a.content)
	return nil
}

func servers(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("servers", stderr)
	addr := fs.String("addr", "", "daemon address: host:port or unix:///path (default: the config's listen, else "+config.DefaultListen+")")
	cfgPath := fs.String("config", "", "config file to read the daemon's address, auth and tls from")
	asJSON := fs.Bool("json", false, "print the protojson of the response")
	if _, err := parse(fs, args); err != nil {
		return err
	}
	cfg, err := clientConfig(*cfgPath, stderr)
	if err != nil {
		return err
	}
	if *addr == "" {
		*addr = cfg.Listen
	}
	conn, client, err := dial(*addr, cfg.Auth)
	if err != nil {
		return err
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	resp, err := client.ListServers(ctx, &contextdv1.ListServersRequest{})
	if err != nil {
		return rpcError(*addr, err)
	}
	if *asJSON {
		return printJSON(stdout, resp)
	}
	for _, s := range resp.GetServers() {
		state := strings.ToLower(strings.TrimPrefix(s.GetState().String(), "STATE_"))
		if a := s.GetActivity(); a != "" && s.GetState() == contextdv1.ServerStatus_STATE_CONNECTING {
			state = esc(a) // connected: say what it is doing
		} else if a != "" {
			state += " (" + esc(a) + ")"
		}
		fmt.Fprintf(stdout, "%-16s %-10s %-5s %4d resources (%d with content indexed) %3d templates", esc(s.GetName()), state, esc(s.GetTransport()), s.GetResourceCount(), s.GetContentCount(), s.GetTemplateCount())
		if s.GetLastSync() != nil && !s.GetResourcesCapability() {
			fmt.Fprint(stdout, " (no resources capability)") // as the one-shot commands say
		}
		if w := s.GetContentWaiting(); w > 0 {
			fmt.Fprintf(stdout, "  %d waiting for content", w)
			if b := s.GetContentBound(); b != "" {
				fmt.Fprintf(stdout, " (%s bound reached; the most useful indexed first)", esc(b))
			}
		}
		if n := s.GetDescriptorsPending(); n > 0 {
			fmt.Fprintf(stdout, "  %d descriptors not embedded yet", n)
		}
		if n, d := s.GetRejectedEntries(), s.GetDuplicateEntries(); n+d > 0 {
			fmt.Fprintf(stdout, "  dropped %d malformed and %d repeated list entries", n, d)
		}
		if e := s.GetLastError(); e != "" {
			fmt.Fprintf(stdout, "  last error: %s", esc(firstLine(e)))
		}
		fmt.Fprintln(stdout)
	}
	return nil
}
