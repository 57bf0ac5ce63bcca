package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/contextd/contextd/client"
	"github.com/contextd/contextd/internal/config"
	contextdv1 "github.com/contextd/contextd/proto/contextd/v1"
)

// daemonClient dials the daemon that the configuration at cfgPath (or the
// one found, see client.ReadConfig) describes, at addr when it is set.
// Problems with the file are printed as warnings on stderr, and so is a
// token about to go in plain text to an address off this machine.
func daemonClient(cfgPath, addr string, stderr io.Writer) (*client.Client, error) {
	cfgPath, from := findConfig(cfgPath, stderr)
	t, err := client.ReadConfig(cfgPath)
	if err != nil {
		if from != "" {
			err = fmt.Errorf("%w%s", err, from)
		}
		return nil, err
	}
	for _, w := range t.Warnings {
		fmt.Fprintln(stderr, "contextd: warning:", w)
	}
	if addr == "" {
		addr = t.Addr
	}
	if t.Options.Token != "" && t.Options.TLS == nil && !strings.HasPrefix(addr, "unix://") && !isLoopback(addr) {
		fmt.Fprintf(stderr, "contextd: warning: sending the token in plain text to %s, not a loopback address: anyone on the way can read it (set tls in the config, or use a unix socket or loopback)\n", esc(addr))
	}
	return client.Dial(addr, &t.Options)
}

// rpcError makes a call's error printable: the daemon's message may carry
// control characters.
func rpcError(err error) error {
	var ce *client.Error
	if errors.As(err, &ce) {
		return errors.New(esc(ce.Error()))
	}
	return err
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
	c, err := daemonClient(*cfgPath, *addr, stderr)
	if err != nil {
		return err
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	in, err := a.request(q, servers)
	if err != nil {
		return err
	}
	resp, err := c.Assemble(ctx, in)
	if err != nil {
		return rpcError(err)
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
	c, err := daemonClient(*cfgPath, *addr, stderr)
	if err != nil {
		return err
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	resp, err := c.ListServers(ctx)
	if err != nil {
		return rpcError(err)
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
		if l := s.GetMcpListing(); l != "" {
			fmt.Fprintf(stdout, "  MCP list: %s", esc(l))
		}
		if e := s.GetLastError(); e != "" {
			fmt.Fprintf(stdout, "  last error: %s", esc(firstLine(e)))
		}
		fmt.Fprintln(stdout)
	}
	if st := resp.GetStore(); st != nil {
		fmt.Fprintf(stdout, "store: replica %s mirrors %d server(s)", esc(st.GetReplica()), len(st.GetOwned()))
		if len(st.GetOwned()) > 0 {
			owned := make([]string, len(st.GetOwned()))
			for i, o := range st.GetOwned() {
				owned[i] = esc(o)
			}
			fmt.Fprintf(stdout, " (%s)", strings.Join(owned, ", "))
		}
		if st.GetStale() {
			fmt.Fprintf(stdout, "; STALE: the store has not answered since %s, answers come from memory", st.GetLastOk().AsTime().Local().Format(time.DateTime))
		}
		if n := st.GetPending(); n > 0 {
			fmt.Fprintf(stdout, "; %d change(s) not written yet", n)
		}
		if e := st.GetLastError(); e != "" {
			fmt.Fprintf(stdout, "; last error: %s", esc(firstLine(e)))
		}
		fmt.Fprintln(stdout)
	}
	if e := resp.GetConfigError(); e != "" {
		// One problem a line (a file may have several misspelt keys).
		lines := strings.Split(strings.TrimRight(e, "\n"), "\n")
		fmt.Fprintf(stdout, "config: the daemon refused its config file at the last reload and runs the one it loaded before: %s\n", esc(lines[0]))
		for _, l := range lines[1:min(len(lines), 12)] {
			fmt.Fprintf(stdout, "  %s\n", esc(l))
		}
	}
	return nil
}
