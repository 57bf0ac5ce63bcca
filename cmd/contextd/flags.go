package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"

	"github.com/contextd/contextd/internal/config"
	"github.com/contextd/contextd/internal/redact"
)

// stringList is a repeatable string flag.
type stringList []string

func (s *stringList) String() string { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error {
	if strings.TrimSpace(v) == "" {
		return fmt.Errorf("empty value")
	}
	*s = append(*s, v)
	return nil
}

// A flagError is a flag the flag package rejected; it has already printed
// the error and the usage, so main exits 2 without printing it again.
type flagError struct{ err error }

func (e flagError) Error() string { return e.err.Error() }
func (e flagError) Unwrap() error { return e.err }

// parse parses flags that may appear before, after or between positional
// arguments ("assemble QUERY --budget 500" works) and returns the positional
// arguments. "--" ends flag parsing.
func parse(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, err
			}
			return nil, flagError{err}
		}
		rest := fs.Args()
		if used := len(args) - len(rest); used > 0 && args[used-1] == "--" {
			return append(pos, rest...), nil // flag consumed the "--" itself
		}
		if len(rest) == 0 {
			return pos, nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// synopses gives each command's arguments after its flags, and what it
// does, for its -h.
var synopses = map[string][2]string{
	"serve":    {"", "Run the daemon: mirror every configured server and answer gRPC (and MCP over HTTP)."},
	"mcp":      {"", "Serve MCP on stdin/stdout, for an MCP host's mcpServers entry."},
	"assemble": {"QUERY...", "One-shot, in-process: connect, mirror, then select and read what the query needs within --budget."},
	"search":   {"QUERY...", "One-shot, in-process: rank the resources for the query; assemble nothing."},
	"query":    {"QUERY...", "Ask a running daemon to assemble for the query."},
	"servers":  {"", "List a running daemon's upstream servers and their state."},
}

func newFlagSet(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("contextd "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		syn := synopses[name]
		args := ""
		if syn[0] != "" {
			args = " " + syn[0]
		}
		fmt.Fprintf(fs.Output(), "usage: contextd %s [flags]%s\n\n", name, args)
		if syn[1] != "" {
			fmt.Fprintf(fs.Output(), "%s\n\n", syn[1])
		}
		fmt.Fprintln(fs.Output(), "flags:")
		fs.PrintDefaults()
	}
	return fs
}

// loadConfig loads path, or the file Find returns, or the built-in default,
// and says on stderr which one it used and which of its keys it ignores.
func loadConfig(path string, stderr io.Writer) (*config.Config, error) {
	path, from := findConfig(path, stderr)
	if path == "" {
		fmt.Fprintln(stderr, "contextd: no config file found; using the built-in configuration (server-everything via npx)")
		return config.Default(), nil
	}
	fmt.Fprintf(stderr, "contextd: config %s%s\n", path, from)
	cfg, err := config.Load(path)
	if err != nil {
		if from != "" {
			err = fmt.Errorf("%w%s", err, from)
		}
		// The error may quote the value it refused: a URL with its
		// password, a connection string. Mask what is credential-shaped.
		return nil, redact.New().Error(err)
	}
	for _, w := range cfg.Warnings {
		fmt.Fprintln(stderr, "contextd: warning:", w)
	}
	return cfg, nil
}

// findConfig returns path, or when it is empty the file config.Find
// returns, with a note for messages naming the file when
// $CONTEXTD_CONFIG chose it (" (named by $CONTEXTD_CONFIG)", else "").
func findConfig(path string, stderr io.Writer) (string, string) {
	if path != "" {
		return path, ""
	}
	path = config.Find()
	noteWorkingDirConfig(path, stderr)
	if path != "" && path == os.Getenv("CONTEXTD_CONFIG") {
		return path, " (named by $CONTEXTD_CONFIG)"
	}
	return path, ""
}

// noteWorkingDirConfig says on stderr that a contextd.yaml or
// contextd.json in the working directory is not read, unless it is the
// file found (named by $CONTEXTD_CONFIG) at path.
func noteWorkingDirConfig(found string, stderr io.Writer) {
	p := config.InWorkingDir()
	if p == "" || sameFile(p, found) {
		return
	}
	fmt.Fprintf(stderr, "contextd: not reading %s from the working directory (a file there may be anyone's); pass --config %s to use it\n", p, p)
}

// sameFile reports whether a and b name one existing file.
func sameFile(a, b string) bool {
	if b == "" {
		return false
	}
	fa, err := os.Stat(a)
	if err != nil {
		return false
	}
	fb, err := os.Stat(b)
	return err == nil && os.SameFile(fa, fb)
}

// newLogger writes text logs at level to w.
func newLogger(w io.Writer, level string) (*slog.Logger, error) {
	return newLoggerFormat(w, level, config.LogText)
}

// newLoggerFormat writes logs at level to w, as text or JSON
// (config.LogText, config.LogJSON: one object per line, with the keys
// time, level, msg and the record's own). The passwords of the proxy URLs
// in the environment are masked (config.ProxySecrets): a proxy may quote
// them in an error an upstream's connection logs.
func newLoggerFormat(w io.Writer, level, format string) (*slog.Logger, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level: %w", err)
	}
	o := &slog.HandlerOptions{Level: l}
	var h slog.Handler = slog.NewTextHandler(w, o)
	if format == config.LogJSON {
		h = slog.NewJSONHandler(w, o)
	}
	if p := config.ProxySecrets(os.Environ()); len(p) > 0 {
		h = redact.Handler(h, redact.New(p...))
	}
	return slog.New(h), nil
}
