// Command contextd is a context-assembly daemon for AI agents: it mirrors the
// resources of the MCP servers you configure and answers "what does the agent
// need for this task, in at most N tokens?".
//
// Usage:
//
//	contextd serve    [--config F] [--listen ADDR] [--mcp-listen ADDR]
//	contextd mcp      [--config F]
//	contextd assemble [--config F] [--budget N] [--server S]... [--json] QUERY
//	contextd search   [--config F] [--limit N] [--server S]... [--json] QUERY
//	contextd query    [--config F] [--addr A] [--budget N] [--server S]... [--json] QUERY
//	contextd servers  [--config F] [--addr A] [--json]
//	contextd eval     --dataset DIR [--split NAME] [--json] [--out DIR]
//
// Run "contextd help" for details.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/contextd/contextd/internal/mcp"
	"github.com/contextd/contextd/internal/redact"
)

func main() {
	hideEnviron()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	var (
		code exitCode
		fe   flagError
	)
	switch {
	case errors.As(err, &code):
		os.Exit(int(code))
	case errors.As(err, &fe):
		os.Exit(2) // the flag package printed why, and the usage
	case err != nil:
		fmt.Fprintln(os.Stderr, "contextd:", redact.ControlText(err.Error()))
		os.Exit(1)
	}
}

// run dispatches a subcommand.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	err := dispatch(ctx, args, stdout, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return nil // "COMMAND -h" printed its flags, as asked
	}
	return err
}

func dispatch(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		usage(stderr)
		return errUsage("no command given")
	}
	cmd, rest := args[0], args[1:]
	switch cmd {
	case "serve", "mcp", "assemble", "search":
		if os.Getenv(mcp.UpstreamOfEnv) != "" {
			// A configuration listing contextd itself (a symlink, a
			// renamed binary, a shell wrapper dropSelf cannot see
			// through): every contextd would start the next.
			return fmt.Errorf("%s: this contextd was started, directly or through a wrapper, by another contextd as one of its servers (%s is set); a contextd inside a contextd would start the servers of its own configuration, and may start the next without end: not starting (remove that entry from the other contextd's configuration)", cmd, mcp.UpstreamOfEnv)
		}
	}
	switch cmd {
	case "serve":
		return serve(ctx, rest, stderr)
	case "mcp":
		return mcpStdio(ctx, rest, stderr)
	case "assemble":
		return assemble(ctx, rest, stdout, stderr)
	case "search":
		return search(ctx, rest, stdout, stderr)
	case "query":
		return query(ctx, rest, stdout, stderr)
	case "servers":
		return servers(ctx, rest, stdout, stderr)
	case "eval":
		return runEval(ctx, rest, os.Stdin, stdout, stderr)
	case "help", "-h", "--help":
		usage(stdout)
		return nil
	case "version", "--version":
		if len(rest) > 0 && (rest[0] == "-h" || rest[0] == "--help" || rest[0] == "-help") {
			fmt.Fprintln(stdout, "usage: contextd version\n\nPrint the version, the VCS revision it was built from (and whether the tree was dirty), the commit time and the Go version.")
			return nil
		}
		printVersion(stdout, readBuildInfo())
		return nil
	}
	usage(stderr)
	return errUsage(fmt.Sprintf("unknown command %q", cmd))
}

type errUsage string

func (e errUsage) Error() string { return string(e) }

func usage(w io.Writer) {
	fmt.Fprint(w, `contextd assembles context for AI agents from the resources of MCP servers.

Commands:
  serve      run the daemon: mirror every configured server, answer gRPC on --listen
             (and MCP over Streamable HTTP on --mcp-listen)
  mcp        serve MCP on stdin/stdout, for an MCP host's mcpServers entry
  assemble   one-shot, in-process: connect, mirror, select and read within --budget, print, exit
  search     one-shot, in-process: rank resources (descriptors and indexed text); assemble nothing
  query      ask a running daemon to assemble (gRPC client)
  servers    list a running daemon's upstream servers and their state
  eval       measure ranking quality on a BEIR-layout dataset (runs contextd-eval)
  version    print the version, VCS revision (and whether it was dirty) and Go version

Configuration: --config FILE, else $CONTEXTD_CONFIG, else contextd/config.yaml
in the user config directory ($XDG_CONFIG_HOME or ~/.config on Linux; never the
working directory's); with none of these, a built-in configuration mirrors
@modelcontextprotocol/server-everything (via npx). The file may be a Claude
Desktop or VS Code MCP config ("mcpServers" or "servers").

Run "contextd COMMAND -h" for a command's flags.
`)
}
