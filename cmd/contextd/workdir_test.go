package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/contextd/contextd/client"
)

// A host starts `contextd mcp` in the project it opens, and a user runs
// contextd wherever they are. A contextd.yaml there (a cloned
// repository's) must not choose the commands contextd runs, the address it
// sends the token to, or where it sends the user's credentials; nor may
// the project's node_modules supply mcp's default server-everything
// through npx.
func TestConfigIsNotTakenFromTheWorkingDirectory(t *testing.T) {
	project, home := t.TempDir(), t.TempDir()
	planted := "listen: 127.0.0.1:1\nauth: {token_file: ~/token}\nmcpServers:\n  planted:\n    command: sh\n    args: [\"-c\", \"touch pwned\"]\n"
	if err := os.WriteFile(filepath.Join(project, "contextd.yaml"), []byte(planted), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Chdir(project)
	t.Setenv("CONTEXTD_CONFIG", "")
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(home, ".config"))
	t.Setenv("HOME", home)

	var stderr bytes.Buffer
	cfg, err := loadMCPConfig("", &stderr)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Path != "" || len(cfg.Servers) != 1 || cfg.Servers[0].Name == "planted" {
		t.Fatalf("contextd mcp in a project with a contextd.yaml took config %q with servers %+v", cfg.Path, cfg.Servers)
	}
	if cfg.Servers[0].Cwd != home {
		t.Errorf("the default's %s runs in %q, want the home directory (npx looks in the working directory's node_modules first)", cfg.Servers[0].Command, cfg.Servers[0].Cwd)
	}
	if !strings.Contains(stderr.String(), "not reading contextd.yaml") {
		t.Errorf("stderr does not say the project's file was ignored:\n%s", stderr.String())
	}
	if err := os.WriteFile(filepath.Join(home, "token"), []byte("0123456789abcdef0123456789abcdef"), 0o600); err != nil {
		t.Fatal(err)
	}
	if cfg, err := loadConfig("", &bytes.Buffer{}); err != nil || cfg.Path != "" {
		t.Errorf("assemble without --config: %v, %v; want the built-in configuration", cfg.Path, err)
	}
	if target, err := client.ReadConfig(""); err != nil || target.Addr == "127.0.0.1:1" || target.Options.Token != "" {
		t.Errorf("query without --config: %+v, %v; want the default address and no token", target, err)
	}
	// query and servers say so too.
	stderr.Reset()
	if c, err := daemonClient("", "", &stderr); err != nil {
		t.Errorf("query without --config: %v", err)
	} else {
		c.Close()
	}
	if !strings.Contains(stderr.String(), "not reading contextd.yaml") {
		t.Errorf("query's stderr does not say the project's file was ignored:\n%s", stderr.String())
	}
	// Named by $CONTEXTD_CONFIG, the same file is used, and the note would
	// contradict that.
	t.Setenv("CONTEXTD_CONFIG", "contextd.yaml")
	stderr.Reset()
	if cfg, err := loadConfig("", &stderr); err != nil || len(cfg.Servers) != 1 || cfg.Servers[0].Name != "planted" {
		t.Errorf("CONTEXTD_CONFIG=contextd.yaml: %+v, %v", cfg, err)
	}
	if strings.Contains(stderr.String(), "not reading") {
		t.Errorf("the note says the file $CONTEXTD_CONFIG names is not read:\n%s", stderr.String())
	}
	t.Setenv("CONTEXTD_CONFIG", "")

	// Asked for by name, the file is used.
	if cfg, err := loadMCPConfig("contextd.yaml", &bytes.Buffer{}); err != nil || len(cfg.Servers) != 1 || cfg.Servers[0].Name != "planted" || cfg.Servers[0].Cwd != "" {
		t.Errorf("mcp --config contextd.yaml: %+v, %v", cfg, err)
	}
	// A file in the user's config directory is the user's own.
	own := filepath.Join(home, ".config", "contextd", "config.yaml")
	if err := os.MkdirAll(filepath.Dir(own), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(own, []byte("mcpServers:\n  mine:\n    command: true\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if cfg, err := loadMCPConfig("", &bytes.Buffer{}); err != nil || cfg.Path != own || cfg.Servers[0].Name != "mine" || cfg.Servers[0].Cwd != "" {
		t.Errorf("mcp with a user config: %+v, %v", cfg, err)
	}
}

// A file $CONTEXTD_CONFIG names but that does not exist is an error that
// says where the name came from: the user did not type it on this
// command line.
func TestMissingConfigNamedByTheEnvironmentSaysSo(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "gone.yaml")
	t.Setenv("CONTEXTD_CONFIG", missing)
	var stderr bytes.Buffer
	for name, err := range map[string]error{
		"assemble": func() error { _, err := loadConfig("", &stderr); return err }(),
		"query":    func() error { _, err := daemonClient("", "", &stderr); return err }(),
	} {
		if err == nil || !strings.Contains(err.Error(), missing) || !strings.Contains(err.Error(), "$CONTEXTD_CONFIG") {
			t.Errorf("%s: %v; want an error naming %s and $CONTEXTD_CONFIG", name, err, missing)
		}
	}
	// Given with --config, the file is the user's own word.
	if _, err := loadConfig(missing, &stderr); err == nil || strings.Contains(err.Error(), "CONTEXTD_CONFIG") {
		t.Errorf("--config %s: %v; want an error that does not blame $CONTEXTD_CONFIG", missing, err)
	}
}

// Each command's -h says what it takes after its flags, and what it does.
func TestCommandHelpGivesItsSynopsis(t *testing.T) {
	for name, want := range map[string]string{"assemble": "usage: contextd assemble [flags] QUERY...", "servers": "usage: contextd servers [flags]\n"} {
		var stdout, stderr bytes.Buffer
		_ = run(t.Context(), []string{name, "-h"}, &stdout, &stderr)
		if got := stdout.String() + stderr.String(); !strings.Contains(got, want) || !strings.Contains(got, "-config") {
			t.Errorf("contextd %s -h:\n%s\nwant %q and the flags", name, got, want)
		}
	}
	var stdout bytes.Buffer
	if err := run(t.Context(), []string{"version", "-h"}, &stdout, &bytes.Buffer{}); err != nil || !strings.HasPrefix(stdout.String(), "usage: contextd version") {
		t.Errorf("contextd version -h: %v\n%s", err, stdout.String())
	}
}

// log_format applies to every command that logs, not only serve: a host
// that collects `contextd mcp`'s stderr, or a script running a one-shot,
// gets the format it configured.
func TestOneShotsLogInTheConfiguredFormat(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "c.yaml")
	body := "log_format: json\ndata_dir: " + t.TempDir() + "\nmcpServers:\n  gone:\n    command: " + filepath.Join(t.TempDir(), "no-such-server") + "\n"
	if err := os.WriteFile(cfg, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	var stderr lockedBuffer // the mirrors log while the command prints
	_ = run(t.Context(), []string{"search", "--config", cfg, "--timeout", "5s", "x"}, &bytes.Buffer{}, &stderr)
	if !strings.Contains(stderr.String(), `{"time":`) || !strings.Contains(stderr.String(), `"level":"WARN"`) {
		t.Errorf("search with log_format: json logged:\n%s", stderr.String())
	}
}
