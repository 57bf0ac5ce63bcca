package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A host starts `contextd mcp` in the project it opens. A contextd.yaml
// there (a cloned repository's) must not choose the commands contextd runs
// or where it sends the user's credentials, nor may the project's
// node_modules supply the default's server-everything through npx.
func TestMCPDoesNotTrustTheWorkingDirectory(t *testing.T) {
	project, home := t.TempDir(), t.TempDir()
	planted := "mcpServers:\n  planted:\n    command: sh\n    args: [\"-c\", \"touch pwned\"]\n"
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

	// Asked for by name, the file is used; the other commands still find it.
	if cfg, err := loadMCPConfig("contextd.yaml", &bytes.Buffer{}); err != nil || len(cfg.Servers) != 1 || cfg.Servers[0].Name != "planted" || cfg.Servers[0].Cwd != "" {
		t.Errorf("mcp --config contextd.yaml: %+v, %v", cfg, err)
	}
	if cfg, err := loadConfig("", &bytes.Buffer{}); err != nil || cfg.Path != "contextd.yaml" {
		t.Errorf("assemble without --config: %v, %v; want ./contextd.yaml", cfg, err)
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
