package config_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/contextd/contextd/internal/config"
)

// Valid JSON that YAML refuses or reads otherwise is read as JSON.parse
// reads it: what PHP (\/), Python (escaped surrogate pairs) and
// JSON.stringify (raw DEL and C1 controls, a cut emoji's lone surrogate)
// write, and keys over 1,024 characters. Each refused the whole host file,
// often in prompt history contextd never reads, and some without a line.
func TestValidJSONYAMLRefusesIsRead(t *testing.T) {
	lookup := func(string) (string, bool) { return "", false }
	long := strings.Repeat("p", 1500)
	file := "{\n" +
		`  "history": ["a cut emoji \ud83c", "del ` + "\x7f" + ` c1 ` + "\u0092" + ` nonchar ` + "\ufffe" + `"],` + "\n" +
		`  "projects": {"/home/me/` + long + `": {"allowedTools": []}, "` + strings.Repeat("\u007f", 600) + `": 1, "k"` + strings.Repeat(" ", 1100) + `: 2},` + "\n" +
		`  "mcpServers": {` + "\n" +
		`    "web": {"url": "https:\/\/mcp.example.com\/mcp", "headers": {"X-Note": "\ud83d\ude00 \u00e9"}}` + "\n" +
		"  },\n" +
		`  "numStartups": 1` + "\n" +
		"}\n"
	c, err := config.Parse("claude.json", []byte(file), lookup)
	if err != nil {
		t.Fatalf("valid JSON refused: %v", err)
	}
	web, ok := c.Server("web")
	if !ok || web.URL != "https://mcp.example.com/mcp" || web.Headers["X-Note"] != "😀 é" {
		t.Fatalf("server web = %+v", web)
	}
	// Lines keep their numbers.
	if !strings.Contains(strings.Join(c.Warnings, "\n"), `line 7: key "numStartups"`) {
		t.Fatalf("warnings %q: want the unread key at line 7", c.Warnings)
	}
}

// JSON with comments is JSON whatever comes first: a comment, a byte order
// mark. A file starting with a comment was read as YAML and refused with
// "JSON has none".
func TestJSONWithCommentsMayStartWithAComment(t *testing.T) {
	lookup := func(string) (string, bool) { return "", false }
	for _, head := range []string{"// My MCP servers\n", "/* servers\n   for work */ ", "\ufeff// with a BOM\n", "\ufeff"} {
		file := head + `{
  "servers": {
    "web": {"type": "http", "url": "https://mcp.example.com/mcp"}, // trailing comma next
  },
}
`
		c, err := config.Parse("mcp.json", []byte(file), lookup)
		if err != nil || len(c.Servers) != 1 {
			t.Errorf("%q first: %v", head, err)
		}
	}
}

// JSON nested past what any configuration needs is refused at once: hujson
// parses by recursion, and a million "[" ended the process (a daemon
// reloading it included).
func TestDeepJSONIsRefusedNotFatal(t *testing.T) {
	lookup := func(string) (string, bool) { return "", false }
	for _, deep := range []string{
		`{"a": ` + strings.Repeat("[", 1_000_000),
		`{"a": ` + strings.Repeat("[", 2000) + strings.Repeat("]", 2000) + "}",
		`{"a": ` + strings.Repeat("[", 2000) + strings.Repeat("]", 2000) + ", // a comment\n}",
		// A quote in a comment opens no string.
		"// the \"\n" + `{"a": ` + strings.Repeat("[", 1_000_000),
		"/* say \"hi */\n" + `{"a": ` + strings.Repeat("[", 1_000_000),
	} {
		_, err := config.Parse("deep.json", []byte(deep), lookup)
		if err == nil || !errors.Is(err, config.ErrInvalid) || !strings.Contains(err.Error(), "nests deeper than 1000") {
			t.Errorf("%d bytes of nesting: %v", len(deep), err)
		}
	}
}

// An invisible U+FEFF inside a file (the yaml package may then drop the
// first character of a later line, at one offset in 512, and blame that
// line): in a JSON string it is escaped and read as JSON.parse reads it; in
// a YAML file it is refused, named by its line.
func TestAByteOrderMarkInsideAFile(t *testing.T) {
	lookup := func(string) (string, bool) { return "", false }
	for pad := 400; pad < 1100; pad++ {
		file := "{\n\"x\": \"" + strings.Repeat("a", pad) + "\ufeff\",\n\"mcpServers\": {\"s\": {\"command\": \"srv\"}}\n}\n"
		c, err := config.Parse("h.json", []byte(file), lookup)
		if err != nil || len(c.Servers) != 1 {
			t.Fatalf("JSON, U+FEFF after %d bytes: %v", pad, err)
		}
	}
	yml := "x: \"ab\ufeffc\"\nmcpServers:\n  s: {command: srv}\n"
	if _, err := config.Parse("c.yaml", []byte(yml), lookup); err == nil || !strings.Contains(err.Error(), "line 1: an invisible U+FEFF") {
		t.Fatalf("YAML with a U+FEFF inside: %v", err)
	}
	if _, err := config.Parse("c.yaml", []byte("\ufeff"+"mcpServers:\n  s: {command: srv}\n"), lookup); err != nil {
		t.Fatalf("a YAML file opening with a byte order mark: %v", err)
	}
}

// A server entry that YAML aliases make huge (a 4 MB string repeated a
// hundred times: a file of 4 MB, 400 MB once decoded) is refused at once:
// each copy was checked and expanded, for over ten minutes. An entry of a
// realistic size, aliases included, loads.
func TestAServerEntryMadeHugeByAliasesIsRefused(t *testing.T) {
	lookup := func(string) (string, bool) { return "", false }
	entry := func(size, copies int) string {
		args := make([]string, copies)
		for i := range args {
			args[i] = "*b"
		}
		return "x-big: &b \"" + strings.Repeat("A", size) + "\"\nmcpServers:\n  x:\n    command: /bin/true\n    args: [" + strings.Join(args, ", ") + "]\n"
	}
	_, err := config.Parse("wide.yaml", []byte(entry(4_000_000, 100)), lookup)
	if err == nil || !errors.Is(err, config.ErrInvalid) || !strings.Contains(err.Error(), `server "x"`) || !strings.Contains(err.Error(), "400000") {
		t.Errorf("4 MB aliased 100 times: %v; want refused, naming the server and its size", err)
	}
	if c, err := config.Parse("narrow.yaml", []byte(entry(1000, 100)), lookup); err != nil || len(c.Servers) != 1 || len(c.Servers[0].Args) != 100 {
		t.Errorf("1 KB aliased 100 times: %v; want it loaded", err)
	}
	// Each server under the bound, all of them far over it.
	many := "x-big: &b \"" + strings.Repeat("A", 1_000_000) + "\"\nmcpServers:\n"
	for i := range 300 {
		many += fmt.Sprintf("  s%d:\n    command: /bin/true\n    args: [*b]\n", i)
	}
	if _, err := config.Parse("many.yaml", []byte(many), lookup); err == nil || !errors.Is(err, config.ErrInvalid) || !strings.Contains(err.Error(), "servers'") {
		t.Errorf("1 MB aliased once in each of 300 servers: %v; want refused", err)
	}
}

// The bounds hold once ${VAR} references are expanded: a string of many
// references to one large variable, aliased in each server, multiplied
// the bytes checked before expansion (under 1 MiB as written, gigabytes
// expanded).
func testAServerEntryMadeHugeByVariablesIsRefused(t *testing.T) {
	big := strings.Repeat("B", 100_000)
	lookup := func(name string) (string, bool) {
		if name == "BIG" {
			return big, true
		}
		return "", false
	}
	refs := "x-big: &b \"" + strings.Repeat("${BIG}", 20) + "\"\n"
	one := refs + "mcpServers:\n  x:\n    command: /bin/true\n    args: [*b]\n"
	if _, err := config.Parse("one.yaml", []byte(one), lookup); err == nil || !errors.Is(err, config.ErrInvalid) || !strings.Contains(err.Error(), `server "x"`) || !strings.Contains(err.Error(), "expand") {
		t.Errorf("20 references to a 100 KB variable in one server: %v; want refused, naming the server", err)
	}
	many := refs + "mcpServers:\n"
	for i := range 300 {
		many += fmt.Sprintf("  s%03d:\n    command: /bin/true\n    args: [\"${BIG}${BIG}\"]\n", i)
	}
	if _, err := config.Parse("many.yaml", []byte(many), lookup); err == nil || !errors.Is(err, config.ErrInvalid) || !strings.Contains(err.Error(), "servers'") {
		t.Errorf("two references to a 100 KB variable in each of 300 servers: %v; want refused", err)
	}
	few := "mcpServers:\n  x:\n    command: /bin/true\n    args: [\"${BIG}\", \"${BIG}\"]\n"
	if c, err := config.Parse("few.yaml", []byte(few), lookup); err != nil || len(c.Servers) != 1 || len(c.Servers[0].Args[1]) != len(big) {
		t.Errorf("two references to a 100 KB variable: %v; want it loaded", err)
	}
}

// A configuration named by a link to a device that never ends is refused
// once past MaxReloadBytes, at start as at a reload (the CLI's too): it
// filled memory until the kernel stopped the process.
func testAnEndlessConfigurationIsRefused(t *testing.T) {
	if _, err := os.Stat("/dev/zero"); err != nil {
		t.Skip("no /dev/zero on this system")
	}
	link := filepath.Join(t.TempDir(), "contextd.yaml")
	if err := os.Symlink("/dev/zero", link); err != nil {
		t.Fatal(err)
	}
	for name, load := range map[string]func(string) (*config.Config, error){"Load": config.Load, "LoadClient": config.LoadClient} {
		if _, err := load(link); err == nil || !strings.Contains(err.Error(), "over") {
			t.Errorf("%s of a link to /dev/zero: %v; want refused as too large", name, err)
		}
	}
}
