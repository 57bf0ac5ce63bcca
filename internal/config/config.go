// Package config loads contextd's configuration: where to listen, where to
// keep the index, which tokenizer to count with, and the upstream MCP servers.
//
// The server list uses the shape MCP hosts already use, so a user can point
// contextd at the file they have:
//
//   - Claude Desktop and Cursor: {"mcpServers": {NAME: {command, args, env, cwd} | {url, headers}}}
//   - VS Code: {"servers": {NAME: {"type": "stdio"|"http"|"sse", ...}}}
//   - GitHub Copilot CLI: {"mcpServers": {NAME: {"type": "local"|"http"|"sse", ...}}}
//
// Files may be YAML or JSON (JSON is read as YAML); a JSON file may have
// comments and trailing commas, as VS Code's mcp.json does. String values in command,
// args, env, cwd, url and headers may reference the environment as ${VAR} or
// ${VAR:-default}; an unset variable without a default is an error that names
// the file, the server and the field.
package config

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
	"golang.org/x/net/http/httpguts"
	"golang.org/x/text/width"

	"github.com/contextd/contextd/internal/redact"
)

// Defaults applied when a field is absent.
const (
	DefaultListen    = "127.0.0.1:7878"
	DefaultTokenizer = "cl100k_base"
	DefaultEmbedder  = EmbedderUSELite
	DefaultMCPPath   = "/mcp"
)

// Embedder names (the embedder key).
const (
	EmbedderUSELite = "use-lite" // Universal Sentence Encoder lite, 512-d (internal/embed/use)
	EmbedderGloVe   = "glove"    // GloVe 6B 100-d, SIF-weighted (internal/embed/glove): weaker, ~1000× faster
)

// Transport names.
const (
	TransportStdio = "stdio" // a subprocess speaking newline-delimited JSON-RPC on stdin/stdout
	TransportHTTP  = "http"  // Streamable HTTP (MCP 2025-03-26 and later)
	TransportSSE   = "sse"   // the deprecated HTTP+SSE transport (MCP 2024-11-05)
)

// ErrInvalid is wrapped by every validation error Load returns.
var ErrInvalid = errors.New("invalid config")

// Config is a loaded, validated and expanded configuration.
type Config struct {
	// Path is the file the configuration came from; "" for the built-in default.
	Path string
	// Listen is a TCP host:port or unix:///path. Default DefaultListen.
	Listen string
	// DataDir holds the persistent index. Default DefaultDataDir().
	DataDir string
	// Tokenizer is the tiktoken encoding used for budgets. Default DefaultTokenizer.
	Tokenizer string
	// Embedder names the embedder: EmbedderUSELite (the default),
	// EmbedderGloVe, or a remote one's provider (EmbedderOpenAI,
	// EmbedderOllama), configured by RemoteEmbedder.
	Embedder string
	// RemoteEmbedder configures the remote embedder; nil for a built-in.
	RemoteEmbedder *RemoteEmbedder
	// PollInterval is how often servers that do not declare
	// resources.listChanged are re-listed. Zero means the mirror's default
	// (5m); negative disables polling.
	PollInterval time.Duration
	// MaxMessageBytes caps one JSON-RPC message from a server (stdio, HTTP or SSE): a larger
	// response fails its own request, not the session. Zero means 16 MiB.
	MaxMessageBytes int
	// MCPListen, when set, is the loopback host:port where serve also
	// answers MCP over Streamable HTTP (at MCPPath); "" serves none.
	MCPListen string
	// MCPPath is the HTTP path of that endpoint. Default DefaultMCPPath.
	MCPPath string
	// Servers are the upstream MCP servers, sorted by name.
	Servers []Server
	// disabledSecrets are the credentials of the servers the file
	// disables (disabled: true), for Secrets.
	disabledSecrets []string
	// Limits bound each request's work and how many run at once.
	Limits Limits
	// ContentBytes (content_bytes_per_server) bounds each server's text in
	// the content index, in bytes: 0 means the default (64 MiB), negative
	// no bound per server. ContentPassTime (content_pass_time) bounds one
	// content pass: 0 means the default (10m), negative none. See
	// internal/sync's Options.ContentBytes and ContentPassTime.
	ContentBytes    int64
	ContentPassTime time.Duration
	// Auth is who may call the daemon: a token, TLS and client
	// certificates. The CLI clients (query, servers) use it too.
	Auth Auth
	// Ops is the metrics endpoint and the log format (see ops.go).
	Ops Ops
	// Conns bounds each listener's connections (see conns.go).
	Conns Conns
	// Store is where the index lives: "" (embedded, in DataDir) or a
	// PostgreSQL URL shared by several replicas (see store.go).
	Store string
	// Warnings name the keys the file has that contextd does not read, such
	// as a host's own (VS Code's inputs, a server's envFile): they are
	// ignored, and each warning says where. A key a letter or two away from
	// one contextd reads is not a warning but an error (see Parse).
	Warnings []string
}

// Server is one upstream MCP server.
type Server struct {
	Name      string
	Transport string // TransportStdio, TransportHTTP or TransportSSE

	// stdio
	Command string
	Args    []string
	Env     map[string]string // added to contextd's own environment
	Cwd     string

	// HTTP
	URL     string
	Headers map[string]string

	// AllowUnlistedPins (allow_unlisted_pins: true) lets a request pin a
	// URI the server neither lists nor offers through a template: the URI
	// goes to the server as given, read with contextd's credentials. By
	// default such a pin is refused.
	AllowUnlistedPins bool

	// NoContentIndex is set by index_content: false: the server's small
	// text resources are not read after each sync for the content-level
	// index, and it is ranked by its descriptors alone. For a server whose
	// reads are costly or have effects.
	NoContentIndex bool

	// NoTemplateExpansion is set by expand_templates: false: the server's
	// resource templates are not filled with values from the task (nor
	// are those values sent to its completion/complete); only its listed
	// resources, and pins its templates yield, are read. For a server that
	// should not see the words of the tasks contextd is asked about.
	NoTemplateExpansion bool

	// varSecrets are the values, sorted, that ${VAR} references with a
	// credential's name (${GITHUB_TOKEN}, ${DB_PASSWORD}) put anywhere in
	// the server's fields: a token passed as a positional arg or inside a
	// "--header" value is masked like one in a header.
	varSecrets []string
}

// Server returns the server with the given name.
func (c *Config) Server(name string) (Server, bool) {
	i := slices.IndexFunc(c.Servers, func(s Server) bool { return s.Name == name })
	if i < 0 {
		return Server{}, false
	}
	return c.Servers[i], true
}

// Endpoint returns what tells the server s reaches from another, for
// state kept by its name across restarts: 32 hexadecimal digits, a
// SHA-256 prefix of its transport, command, args and working directory,
// or its URL. Its secrets of 8 bytes or more (see Secrets) count as a
// placeholder of their length, so a rotated credential keeps the endpoint
// and none can be worked back from it; env and headers do not count. The same s gives
// the same endpoint, whatever order Secrets finds them in.
func (s Server) Endpoint() string {
	secrets := slices.DeleteFunc(s.Secrets(), func(v string) bool { return len(v) < minEndpointSecret })
	slices.SortFunc(secrets, func(a, b string) int { return cmp.Or(cmp.Compare(len(b), len(a)), strings.Compare(a, b)) }) // longest first
	secrets = slices.Compact(secrets)
	h := sha256.New()
	field := func(v string) {
		for _, sec := range secrets {
			// Its length stays: a rotated token keeps its format, where
			// two servers' path segments taken for secrets (a name with
			// digits) are told apart.
			v = strings.ReplaceAll(v, sec, "\x00"+strconv.Itoa(len(sec))+"\x00")
		}
		fmt.Fprintf(h, "%d:%s", len(v), v)
	}
	field(s.Transport)
	field(s.Command)
	field(strconv.Itoa(len(s.Args)))
	for _, a := range s.Args {
		field(a)
	}
	field(s.Cwd)
	field(s.URL)
	return hex.EncodeToString(h.Sum(nil)[:16])
}

// minEndpointSecret is the shortest secret Endpoint leaves out: a short
// one ("p", a profile named in a URL's query) would make servers alike.
const minEndpointSecret = 8

// file is the on-disk shape.
type file struct {
	Listen     string    `yaml:"listen"`
	DataDir    string    `yaml:"data_dir"`
	Tokenizer  string    `yaml:"tokenizer"`
	Embedder   yaml.Node `yaml:"embedder"` // a name or a mapping: see embedder.go
	Poll       string    `yaml:"poll_interval"`
	Store      string    `yaml:"store"`
	MaxMessage int       `yaml:"max_message_bytes"`
	// The content index's bounds: see content.go.
	ContentBytes    *string `yaml:"content_bytes_per_server"`
	ContentPassTime string  `yaml:"content_pass_time"`
	// Limits, access control and TLS: see security.go.
	MaxPins          int                   `yaml:"max_pins"`
	MaxReads         int                   `yaml:"max_reads"`
	MaxResponseBytes int                   `yaml:"max_response_bytes"`
	MaxConcurrent    int                   `yaml:"max_concurrent_requests"`
	MaxQueued        int                   `yaml:"max_queued_requests"`
	Auth             *authFile             `yaml:"auth"`
	TLS              tlsFile               `yaml:"tls"`
	AllowInsecure    bool                  `yaml:"allow_insecure_listen"`
	MCPListen        string                `yaml:"mcp_listen"`
	MCPPath          string                `yaml:"mcp_path"`
	MCPServers       map[string]serverFile `yaml:"mcpServers"`
	Servers          map[string]serverFile `yaml:"servers"` // VS Code's mcp.json
	// Metrics and logs: see ops.go.
	Ops opsFile `yaml:",inline"`
	// Connection bounds: see conns.go.
	Conns connsFile `yaml:",inline"`
}

type serverFile struct {
	Type    string            `yaml:"type"`
	Command string            `yaml:"command"`
	Args    []string          `yaml:"args"`
	Env     map[string]string `yaml:"env"`
	Cwd     string            `yaml:"cwd"`
	URL     string            `yaml:"url"`
	// ServerURL is Windsurf's name for url, HTTPURL Gemini CLI's (and Qwen
	// Code's) for a Streamable HTTP server's.
	ServerURL string `yaml:"serverUrl"`
	HTTPURL   string `yaml:"httpUrl"`
	// Transport and TransportType are other hosts' names for type
	// (Cline's transportType: "sse", "streamableHttp", "stdio").
	Transport     string            `yaml:"transport"`
	TransportType string            `yaml:"transportType"`
	Headers       map[string]string `yaml:"headers"`
	Disabled      bool              `yaml:"disabled"`
	// IndexContent is read as a string so that a bad value gets an error
	// naming the server and the field; absent means true.
	IndexContent *string `yaml:"index_content"`
	// AllowUnlistedPins: see Server.AllowUnlistedPins.
	AllowUnlistedPins bool `yaml:"allow_unlisted_pins"`
	// ExpandTemplates is read as a string, as IndexContent is; absent
	// means true.
	ExpandTemplates *string `yaml:"expand_templates"`
}

// Load reads and validates the configuration at path. Errors wrap ErrInvalid
// (bad content) or the fs error (unreadable file) and name the file, and where
// relevant the server and field. A file readable by other users that has
// credentials written in it gets a warning.
func Load(path string) (*Config, error) {
	data, err := readBounded(path)
	if err != nil {
		return nil, err
	}
	return load(path, data)
}

// readBounded reads the file at path, at most MaxReloadBytes: a FIFO (a
// shell's <(…)) is read as a file is, but a link to /dev/zero is refused
// once past the bound instead of filling memory.
func readBounded(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	defer f.Close()
	return readAtMost(f, path)
}

// readAtMost reads r, the file at path, to its end if that is at most
// MaxReloadBytes.
func readAtMost(r io.Reader, path string) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxReloadBytes+1))
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	if len(data) > MaxReloadBytes {
		return nil, fmt.Errorf("config: %s is over %d bytes", path, MaxReloadBytes)
	}
	return data, nil
}

// MaxReloadBytes bounds the file [LoadRegular] reads: 256 MiB. A host's
// own file can hold far more than its servers (Claude Code keeps every
// project's prompt history in ~/.claude.json, tens of megabytes), and
// what contextd does not read in it is skipped cheaply (see pruneUnread).
const MaxReloadBytes = 256 << 20

// LoadRegular is [Load] for a daemon re-reading its file while it serves:
// path must name (or link to) a regular file of at most MaxReloadBytes. A
// FIFO, a device or a directory is refused without blocking on it, so a
// file swapped for a pipe with no writer, or a link to /dev/zero, neither
// hangs the reload (and the daemon's shutdown behind it) nor fills memory.
func LoadRegular(path string) (*Config, error) {
	data, err := ReadRegular(path)
	if err != nil {
		return nil, err
	}
	return load(path, data)
}

// LoadData is [Load] of data, the content of the file at path as read by
// the caller ([ReadRegular]): what a daemon checked before applying it is
// what it applies, though the file changed since.
func LoadData(path string, data []byte) (*Config, error) {
	return load(path, data)
}

// ReadRegular returns the content of the regular file at path (links
// followed), at most MaxReloadBytes; see [LoadRegular].
func ReadRegular(path string) ([]byte, error) {
	f, err := OpenRegular(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readAtMost(f, path)
}

// OpenRegular opens the regular file at path (links followed) for reading
// if it is at most MaxReloadBytes long; see [LoadRegular]. The caller
// closes it, and reads at most MaxReloadBytes+1 bytes of it to learn that
// it grew past the bound meanwhile.
func OpenRegular(path string) (*os.File, error) {
	// O_NONBLOCK: opening a FIFO without a writer does not wait for one.
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	fi, err := f.Stat()
	switch {
	case err != nil:
		err = fmt.Errorf("config: %w", err)
	case !fi.Mode().IsRegular():
		err = fmt.Errorf("config: %s is not a regular file (%v)", path, fi.Mode().Type())
	case fi.Size() > MaxReloadBytes:
		err = fmt.Errorf("config: %s is %d bytes, over %d", path, fi.Size(), MaxReloadBytes)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

func load(path string, data []byte) (*Config, error) {
	c, err := Parse(path, data, os.LookupEnv)
	if err != nil {
		return nil, err
	}
	c.warnWrittenSecrets(path, data)
	return c, nil
}

// Parse validates data as if read from path. lookup resolves ${VAR} references.
//
// A key contextd does not read is ignored with a warning (Config.Warnings),
// so a host's file works as it is; but a key that looks like a misspelling
// of one it reads (index_contents, mcp_servers, header) is an error that
// names the key and suggests the one meant, because ignoring it would
// silently drop what the user asked for.
func Parse(path string, data []byte, lookup func(string) (string, bool)) (*Config, error) {
	return parse(path, data, lookup, false)
}

// parse is Parse; with clientOnly, the servers are left unresolved (see
// ParseClient).
func parse(path string, data []byte, lookup func(string) (string, bool), clientOnly bool) (*Config, error) {
	data, jsonErr := standardizeJSON(data)
	if jsonErr != nil && errors.Is(jsonErr, errTooDeep) {
		return nil, fmt.Errorf("%s: %w: %w", path, ErrInvalid, jsonErr)
	}
	// A JSON file is read as YAML in flow style: jsonData is it as JSON,
	// data as YAML reads it (yamlSafe).
	var jsonData []byte
	if jsonErr == nil && isJSON(data) {
		jsonData = pruneUnread(data)
		data = yamlSafe(jsonData)
	}
	if jsonData == nil {
		// The yaml package checks for a byte order mark at the start of
		// its 512-byte buffer, wherever the line it reads starts: after a
		// U+FEFF (invisible, pasted from a web page) it may drop the first
		// character of a later line, and blame that line.
		if i := bytes.Index(bytes.TrimPrefix(data, []byte("\xef\xbb\xbf")), []byte("\xef\xbb\xbf")); i >= 0 {
			at := i + len(data) - len(bytes.TrimPrefix(data, []byte("\xef\xbb\xbf")))
			return nil, fmt.Errorf("%s: %w: line %d: an invisible U+FEFF character (a byte order mark) inside the file: remove it", path, ErrInvalid, bytes.Count(data[:at], []byte("\n"))+1)
		}
	}
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		if jsonErr != nil {
			return nil, jsonSyntaxError(path, jsonErr)
		}
		return nil, yamlSyntaxError(path, data, err)
	}
	var repeated []string
	if jsonData != nil && repeatsKey(&root) {
		// JSON.parse, and the hosts that read these files with it, keep
		// the last of a repeated key; YAML refuses the file.
		jsonData, repeated = dropRepeatedKeys(jsonData)
		data = yamlSafe(jsonData)
		root = yaml.Node{}
		if err := yaml.Unmarshal(data, &root); err != nil {
			return nil, yamlSyntaxError(path, data, err)
		}
	}
	if err := checkTags(&root, ""); err != nil {
		return nil, fmt.Errorf("%s: %w: %w", path, ErrInvalid, err)
	}
	listed, err := serverLists(&root) // before the decoder names Go types
	if err != nil {
		return nil, fmt.Errorf("%s: %w: %w", path, ErrInvalid, err)
	}
	var f file
	decode := func() error { return yaml.Unmarshal(data, &f) }
	if listed {
		decode = func() error { return root.Decode(&f) }
	}
	if err := decode(); err != nil {
		return nil, fmt.Errorf("%s: %w: %v", path, ErrInvalid, typeError(err))
	}
	total := 0
	for _, servers := range []map[string]serverFile{f.MCPServers, f.Servers} {
		for name, sf := range servers {
			n := sf.bytes()
			if n > MaxServerBytes {
				return nil, fmt.Errorf("%s: %w: server %q: its command, args, env, headers and urls add up to %d bytes, over %d (a YAML alias repeated?)", path, ErrInvalid, keyBare(name), n, MaxServerBytes)
			}
			if total += n; total > MaxServersBytes {
				return nil, fmt.Errorf("%s: %w: the servers' commands, args, env, headers and urls add up to over %d bytes (a YAML alias repeated?)", path, ErrInvalid, MaxServersBytes)
			}
		}
	}
	if err := checkOneDocument(data); err != nil {
		return nil, syntaxError(path, data, err)
	}
	warnings, err := checkKeys(&root, clientOnly)
	if err != nil {
		return nil, fmt.Errorf("%s: %w: %w", path, ErrInvalid, err)
	}
	c := &Config{Path: path, Listen: f.Listen, DataDir: f.DataDir, Tokenizer: f.Tokenizer, MaxMessageBytes: f.MaxMessage,
		MCPListen: f.MCPListen, MCPPath: f.MCPPath}
	for _, w := range append(repeated, warnings...) {
		c.Warnings = append(c.Warnings, path+": "+w)
	}
	if clientOnly {
		// What only the daemon reads (its embedder's ${VAR} key, content
		// bounds, store, metrics) is no client's concern.
		if err := c.parseSecurity(&f, lookup); err != nil {
			return nil, fmt.Errorf("%s: %w: %w", path, ErrInvalid, err)
		}
		if c.Listen == "" {
			c.Listen = DefaultListen
		}
		return c, nil
	}
	switch c.Tokenizer {
	case "", "cl100k_base", "o200k_base":
	default:
		return nil, fmt.Errorf("%s: %w: field tokenizer: %q is not \"cl100k_base\" or \"o200k_base\"", path, ErrInvalid, f.Tokenizer)
	}
	if err := c.parseEmbedder(&f.Embedder, lookup); err != nil {
		return nil, fmt.Errorf("%s: %w: %w", path, ErrInvalid, err)
	}
	if f.MaxMessage < 0 {
		return nil, fmt.Errorf("%s: %w: field max_message_bytes: %d is negative", path, ErrInvalid, f.MaxMessage)
	}
	if f.Poll != "" {
		d, err := time.ParseDuration(f.Poll)
		if err != nil {
			return nil, fmt.Errorf("%s: %w: field poll_interval: %q is not a duration like 30s or 5m", path, ErrInvalid, f.Poll)
		}
		if d == 0 {
			d = -1 // "0" means never, as documented
		}
		c.PollInterval = d
	}
	if err := c.parseContent(&f); err != nil {
		return nil, fmt.Errorf("%s: %w: %w", path, ErrInvalid, err)
	}
	if err := c.parseStore(f.Store, lookup); err != nil {
		return nil, fmt.Errorf("%s: %w: %w", path, ErrInvalid, err)
	}
	if err := c.parseSecurity(&f, lookup); err != nil {
		return nil, fmt.Errorf("%s: %w: %w", path, ErrInvalid, err)
	}
	if err := c.parseOps(&f.Ops); err != nil {
		return nil, fmt.Errorf("%s: %w: %w", path, ErrInvalid, err)
	}
	if err := c.parseConns(&f.Conns); err != nil {
		return nil, fmt.Errorf("%s: %w: %w", path, ErrInvalid, err)
	}
	if c.Listen == "" {
		c.Listen = DefaultListen
	}
	if c.MCPPath == "" {
		c.MCPPath = DefaultMCPPath
	}
	if !strings.HasPrefix(c.MCPPath, "/") {
		return nil, fmt.Errorf("%s: %w: field mcp_path: %q does not start with /", path, ErrInvalid, f.MCPPath)
	}
	if c.MCPListen != "" {
		if err := CheckLoopback(c.MCPListen); err != nil {
			return nil, fmt.Errorf("%s: %w: field mcp_listen: %w", path, ErrInvalid, err)
		}
	}
	if c.Tokenizer == "" {
		c.Tokenizer = DefaultTokenizer
	}
	if c.DataDir == "" {
		c.DataDir = DefaultDataDir()
	}
	c.DataDir = expandHome(c.DataDir)

	all := map[string]serverFile{}
	for _, m := range []map[string]serverFile{f.Servers, f.MCPServers} {
		for name, s := range m {
			if _, dup := all[name]; dup {
				return nil, fmt.Errorf("%s: %w: server %q is defined under both mcpServers and servers", path, ErrInvalid, name)
			}
			all[name] = s
		}
	}
	expanded := 0 // bytes the servers' ${VAR} references expanded to
	for name, sf := range all {
		for _, alias := range []struct{ value, name string }{{sf.ServerURL, "serverUrl (Windsurf's name for it)"}, {sf.HTTPURL, "httpUrl (Gemini CLI's name for it)"}} {
			if alias.value == "" {
				continue
			}
			if sf.URL != "" && sf.URL != alias.value {
				return nil, fmt.Errorf("%s: %w: server %q: set url or %s, not both", path, ErrInvalid, name, alias.name)
			}
			sf.URL = alias.value
			all[name] = sf
		}
		for _, alias := range []struct{ value, name string }{{sf.Transport, "transport"}, {sf.TransportType, "transportType (Cline's name for it)"}} {
			if alias.value == "" {
				continue
			}
			if sf.Type != "" && transportName(sf.Type) != transportName(alias.value) {
				return nil, fmt.Errorf("%s: %w: server %q: set type or %s, not both", path, ErrInvalid, name, alias.name)
			}
			sf.Type = alias.value
			all[name] = sf
		}
		if t := strings.ToLower(sf.Type); t == "websocket" || t == "ws" || t == "" && sf.Command == "" && (strings.HasPrefix(strings.ToLower(sf.URL), "ws://") || strings.HasPrefix(strings.ToLower(sf.URL), "wss://")) {
			// LibreChat's WebSocket transport, which MCP does not define:
			// that server is skipped, not the host's whole file.
			c.Warnings = append(c.Warnings, fmt.Sprintf("%s: server %q: WebSocket is not a transport contextd speaks (stdio, http, sse): the server is skipped", path, name))
			sf.Disabled = true
		}
		if sf.Disabled {
			// Not run, but its credentials are still the user's: masked,
			// and withheld from the servers that run, also when it would
			// not resolve (a variable not set yet, a transport to fix).
			c.disabledSecrets = append(c.disabledSecrets, sf.secrets(name, lookup, &expanded)...)
			continue
		}
		s, err := sf.resolve(name, lookup, &expanded)
		if err != nil {
			return nil, fmt.Errorf("%s: %w: %w", path, ErrInvalid, err)
		}
		s.Cwd = expandHome(s.Cwd)
		c.Servers = append(c.Servers, s)
	}
	slices.SortFunc(c.Servers, func(a, b Server) int { return strings.Compare(a.Name, b.Name) })
	for _, s := range c.Servers {
		for _, field := range all[s.Name].unexpanded() {
			c.Warnings = append(c.Warnings, fmt.Sprintf("%s: server %q: field %s holds a reference contextd does not expand ($VAR, %%VAR%%, {{VAR}}, ${input:…}): it is sent as written; contextd expands ${VAR} and ${VAR:-default}", path, s.Name, field))
		}
	}
	return c, nil
}

// transportName returns the transport a type value names, as resolve
// reads it ("streamableHttp" and "http" alike), or the value itself.
func transportName(t string) string {
	switch t = strings.ToLower(t); t {
	case "stdio", "local":
		return TransportStdio
	case "http", "streamable-http", "streamablehttp", "streamable_http":
		return TransportHTTP
	}
	return t
}

// checkOneDocument returns an error when data has more than its first
// document: yaml.Unmarshal reads only the first, so the keys of a later one
// (after a "---"), or text after a JSON object's closing brace, would be
// dropped without a word. An empty document, as after a trailing "---", is
// not one.
func checkOneDocument(data []byte) error {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var n yaml.Node
	if dec.Decode(&n) != nil {
		return nil // empty, or an error Unmarshal has reported
	}
	for {
		n = yaml.Node{}
		switch err := dec.Decode(&n); {
		case errors.Is(err, io.EOF):
			return nil
		case err != nil:
			return fmt.Errorf("text after the end of the first document: %v", err)
		case len(n.Content) > 0 && n.Content[0].ShortTag() != "!!null":
			return fmt.Errorf("line %d: a second YAML document; contextd reads one, so put its keys in the first", n.Content[0].Line)
		}
	}
}

// otherRef matches a reference to an environment variable in another
// tool's syntax, which contextd sends as written: a shell's $VAR (a name
// in capitals, after a separator: "Pa$sw0rd" and OData's "$top" are not),
// a template's {{VAR}} or {{ secrets.VAR }}, VS Code's ${input:id};
// windowsRef Windows' %VAR% (three characters or more, in capitals: not
// looked for in a URL, where "%C3%A9" is percent-encoding).
var (
	otherRef   = regexp.MustCompile(`(?:^|[\s=:/"'(,])\$[A-Z_][A-Z0-9_]+\b|\{\{\s*(?:(?:secrets|env|vars)\.)?[A-Z_][A-Z0-9_]*\s*\}\}|\$\{input:[^}]*\}`)
	windowsRef = regexp.MustCompile(`%[A-Z_][A-Z0-9_]{2,}%`)
)

// unexpanded returns the fields of sf (command, cwd, url, each argument,
// header and env value; sorted) whose text as written, ${VAR} references
// set aside, holds a reference in another tool's syntax. Arguments of a
// shell ("sh -c 'echo $HOME'") are the shell's to expand. Only the field
// is named: a "$" in a password would be quoted with it.
// MaxServerBytes bounds what one server's entry holds once decoded (its
// command, args, env, headers, urls and cwd): 1 MiB. YAML aliases let a
// file of a few megabytes repeat a string hundreds of times, and each
// copy is then checked and expanded (4 MB aliased 100 times held a daemon
// at full CPU for over ten minutes, deaf to SIGTERM).
const MaxServerBytes = 1 << 20

// MaxServersBytes bounds the same for all servers together: 16 MiB (a
// 1 MB string aliased once in each of 300 servers held a daemon as long).
const MaxServersBytes = 16 << 20

// bytes returns what sf's strings add up to.
func (sf serverFile) bytes() int {
	n := len(sf.Command) + len(sf.Cwd) + len(sf.URL) + len(sf.ServerURL) + len(sf.HTTPURL)
	for _, a := range sf.Args {
		n += len(a)
	}
	for k, v := range sf.Env {
		n += len(k) + len(v)
	}
	for k, v := range sf.Headers {
		n += len(k) + len(v)
	}
	return n
}

func (sf serverFile) unexpanded() []string {
	var fields []string
	check := func(field, v string) {
		v = varRef.ReplaceAllString(v, "")
		if otherRef.MatchString(v) || field != "url" && windowsRef.MatchString(v) {
			fields = append(fields, field)
		}
	}
	check("command", sf.Command)
	check("cwd", sf.Cwd)
	check("url", sf.URL)
	switch strings.TrimSuffix(filepath.Base(sf.Command), ".exe") {
	case "sh", "bash", "zsh", "dash", "ksh", "fish", "cmd", "powershell", "pwsh", "env":
	default:
		for i, a := range sf.Args {
			check(fmt.Sprintf("args[%d]", i), a)
		}
	}
	for k, v := range sf.Headers {
		check("headers."+keyBare(k), v)
	}
	for k, v := range sf.Env {
		check("env."+keyBare(k), v)
	}
	slices.Sort(fields)
	return fields
}

// secrets returns the credentials sf holds (Server.Secrets) as far as its
// fields resolve, whatever else is wrong with it: a disabled server's.
func (sf serverFile) secrets(name string, lookup func(string) (string, bool), expanded *int) []string {
	ex := expander{server: name, lookup: lookup, all: expanded}
	s := Server{Name: name, Command: ex.str("command", sf.Command), Cwd: ex.str("cwd", sf.Cwd), URL: ex.str("url", sf.URL)}
	for i, a := range sf.Args {
		s.Args = append(s.Args, ex.str(fmt.Sprintf("args[%d]", i), a))
	}
	s.Env = ex.strMap("env", sf.Env)
	s.Headers = ex.strMap("headers", sf.Headers)
	s.varSecrets = ex.secrets
	return s.Secrets()
}

// plainName reports whether a server name shows as it is spelled: UTF-8
// with no control, format (bidirectional marks and overrides, tags, what
// shows as nothing), filler, variation selector, private use, or line and
// paragraph separator characters. Names show in
// logs, /metrics labels and terminals as they are.
func plainName(name string) bool {
	if !utf8.ValidString(name) {
		return false
	}
	for _, c := range name {
		if unicode.IsControl(c) || unicode.In(c, unicode.Cf, unicode.Zl, unicode.Zp, unicode.Co, unicode.Other_Default_Ignorable_Code_Point, unicode.Variation_Selector) {
			return false
		}
	}
	return true
}

func (sf serverFile) resolve(name string, lookup func(string) (string, bool), expanded *int) (Server, error) {
	if strings.TrimSpace(name) == "" {
		return Server{}, errors.New("a server has an empty name")
	}
	if !plainName(name) {
		return Server{}, fmt.Errorf("server %s: its name holds a control, invisible or bidirectional formatting character, or bytes that are not UTF-8: rename it", redact.Control(strconv.Quote(name)))
	}
	s := Server{Name: name, AllowUnlistedPins: sf.AllowUnlistedPins}
	for _, f := range []struct {
		field string
		v     *string
		off   *bool // set when the field is false
	}{{"index_content", sf.IndexContent, &s.NoContentIndex}, {"expand_templates", sf.ExpandTemplates, &s.NoTemplateExpansion}} {
		if f.v == nil {
			continue
		}
		switch strings.ToLower(*f.v) {
		case "true":
		case "false":
			*f.off = true
		default:
			return Server{}, fmt.Errorf("server %q: field %s: %q is not true or false", name, f.field, *f.v)
		}
	}
	ex := expander{server: name, lookup: lookup, all: expanded}
	s.Command = ex.str("command", sf.Command)
	s.Cwd = ex.str("cwd", sf.Cwd)
	s.URL = ex.str("url", sf.URL)
	for i, a := range sf.Args {
		s.Args = append(s.Args, ex.str(fmt.Sprintf("args[%d]", i), a))
	}
	s.Env = ex.strMap("env", sf.Env)
	s.Headers = ex.strMap("headers", sf.Headers)
	if ex.err != nil {
		return Server{}, ex.err
	}
	for _, h := range slices.Sorted(maps.Keys(s.Headers)) {
		if !headerName.MatchString(h) {
			// Not quoted: a value typed into the name ("X-Api-Key KEY")
			// would be.
			return Server{}, fmt.Errorf("server %q: field headers: a header name holds a character no header name may (a space, a comma, a colon…): is a value written in the name?", name)
		}
		// Spaces and line breaks around a value are dropped, as the
		// hosts whose files these are (their fetch) drop them: a token
		// read from a file or a variable with its line ending.
		v := strings.Trim(s.Headers[h], " \t\r\n")
		s.Headers[h] = v
		if !httpguts.ValidHeaderFieldValue(v) {
			// Not quoted either: the value is most likely a credential,
			// and net/http would refuse it at every connect.
			return Server{}, fmt.Errorf("server %q: field headers: the value of %s holds a control character (a NUL, a line break…) within it", name, h)
		}
	}
	slices.Sort(ex.secrets)
	s.varSecrets = slices.Compact(ex.secrets)

	typ := strings.ToLower(sf.Type)
	switch typ {
	case "":
		switch {
		case s.Command != "" && s.URL != "":
			return Server{}, fmt.Errorf("server %q: set either command (stdio) or url (Streamable HTTP), not both", name)
		case s.Command != "":
			typ = TransportStdio
		case s.URL != "":
			typ = TransportHTTP
		default:
			return Server{}, fmt.Errorf("server %q: missing command (stdio) or url (Streamable HTTP)", name)
		}
	case "stdio", "local": // "local": GitHub Copilot CLI's mcp-config.json
		typ = TransportStdio
	case "http", "streamable-http", "streamablehttp", "streamable_http":
		typ = TransportHTTP
	case "sse":
		typ = TransportSSE
	default:
		return Server{}, fmt.Errorf("server %q: field type: unknown transport %q (want stdio, http or sse)", name, sf.Type)
	}
	s.Transport = typ
	switch typ {
	case TransportStdio:
		if s.Command == "" {
			return Server{}, fmt.Errorf("server %q: field command: required for a stdio server", name)
		}
	default:
		if s.URL == "" {
			return Server{}, fmt.Errorf("server %q: field url: required for a %s server", name, typ)
		}
		u, err := url.Parse(s.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || !validPort(u.Port()) {
			return Server{}, fmt.Errorf("server %q: field url: %q is not an http(s) URL", name, urlShown(s.URL))
		}
	}
	return s, nil
}

// validPort reports whether a URL's port ("" for none) is one: a password
// of digits written where the port goes ("https://bot:20242024/mcp") is
// not.
func validPort(p string) bool {
	n, err := strconv.Atoi(p)
	return p == "" || err == nil && n >= 1 && n <= 65535
}

// yamlQuoted matches a value yaml.v3 quotes in a type error, up to the
// last " into " of its line ("cannot unmarshal !!str `s3cRet-9x` into …";
// the value may hold a backquote).
var yamlQuoted = regexp.MustCompile("(?m)(cannot unmarshal !!\\w+) .* into ")

// typeError returns err's message without the values it quotes: a token
// written where a mapping belongs ("auth: TOKEN") would be shown, and a
// refused reload's error reaches every caller.
func typeError(err error) string {
	msg := yamlQuoted.ReplaceAllString(err.Error(), "$1 a value into ")
	// A repeated key is quoted by the yaml package: a credential pasted
	// as a key twice would reach the error (and a host's log).
	return repeatedKey.ReplaceAllStringFunc(msg, func(m string) string {
		k := repeatedKey.FindStringSubmatch(m)[1]
		if u, err := strconv.Unquote(`"` + k + `"`); err == nil {
			k = u
		}
		return "mapping key " + keyShown(k) + " already defined"
	})
}

// repeatedKey matches the yaml package's error for a key a mapping
// repeats.
var repeatedKey = regexp.MustCompile(`mapping key "((?:[^"\\]|\\.)*)" already defined`)

// headerName matches an HTTP header's name: a token (RFC 9110 §5.1).
var headerName = regexp.MustCompile("^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")

// varRef matches ${VAR}, ${VAR:-default} and VS Code's ${env:VAR}.
var varRef = regexp.MustCompile(`\$\{(?:env:)?([A-Za-z_][A-Za-z0-9_]*)(:-([^}]*))?\}`)

// vscodeVars are VS Code's predefined variables (code.visualstudio.com,
// "Variables reference"). Unless the environment sets one, a reference to
// it is left as it is: contextd does not know the editor's workspace, and
// a VS Code file must still load.
var vscodeVars = map[string]bool{
	"userHome": true, "workspaceFolder": true, "workspaceFolderBasename": true,
	"file": true, "fileWorkspaceFolder": true, "relativeFile": true, "relativeFileDirname": true,
	"fileBasename": true, "fileBasenameNoExtension": true, "fileExtname": true, "fileDirname": true,
	"fileDirnameBasename": true, "cwd": true, "lineNumber": true, "selectedText": true,
	"execPath": true, "defaultBuildTask": true, "pathSeparator": true,
}

// expander expands ${VAR} references and remembers the first failure and
// the values of variables with a credential's name.
type expander struct {
	server  string
	lookup  func(string) (string, bool)
	err     error
	secrets []string
	// expanded is the bytes the references expanded to so far; all, when
	// set, the same for every expander of one file (each server's).
	expanded int
	all      *int
}

func (e *expander) str(field, s string) string {
	return varRef.ReplaceAllStringFunc(s, func(ref string) string {
		m := varRef.FindStringSubmatch(ref)
		v := e.value(field, ref, m)
		// A variable referenced many times (in a string a YAML alias
		// repeats) would otherwise multiply the bytes bounded before
		// expansion: 1 MiB of "${BIG}" is 150,000 copies of BIG.
		if e.expanded += len(v); e.expanded > MaxServerBytes {
			if e.err == nil {
				e.err = fmt.Errorf("%sits ${VAR} references expand to over %d bytes (field %s)", e.who(), MaxServerBytes, field)
			}
			return ""
		}
		if e.all != nil {
			if *e.all += len(v); *e.all > MaxServersBytes {
				if e.err == nil {
					e.err = fmt.Errorf("%sthe servers' ${VAR} references expand to over %d bytes together (field %s)", e.who(), MaxServersBytes, field)
				}
				return ""
			}
		}
		if v != "" && credentialName(m[1]) {
			// Trimmed too, as a header value is (see resolve).
			e.secrets = append(e.secrets, v)
			if t := strings.Trim(v, " \t\r\n"); t != v && t != "" {
				e.secrets = append(e.secrets, t)
			}
		}
		e.secrets = append(e.secrets, valueSecrets(v, credentialName(m[1]))...)
		return v
	})
}

// who prefixes an error with the server the expander resolves, if any.
func (e *expander) who() string {
	if e.server == "" {
		return ""
	}
	return fmt.Sprintf("server %q: ", e.server)
}

// value returns what the reference ref, matched as m, expands to.
func (e *expander) value(field, ref string, m []string) string {
	if v, ok := e.lookup(m[1]); ok && v != "" {
		return v
	}
	if m[2] != "" {
		return m[3]
	}
	if v, ok := e.lookup(m[1]); ok {
		return v
	}
	if vscodeVars[m[1]] && !strings.HasPrefix(ref, "${env:") {
		return ref
	}
	// The field is named after the variable, and without a colon: a
	// masked log reads "Authorization: …" and "GITHUB_TOKEN: …" as a
	// credential and would hide the message.
	if e.err == nil && e.server == "" {
		e.err = fmt.Errorf("environment variable %s is not set (used in field %s)", varShown(m[1]), field)
	} else if e.err == nil {
		e.err = fmt.Errorf("server %q: environment variable %s is not set (used in field %s)", e.server, varShown(m[1]), field)
	}
	return ""
}

// varShown returns how an error names a variable: its name, unless it
// looks like a credential pasted where the name goes ("${ghp_…}").
func varShown(name string) string {
	if plainKey(name) && !redact.Generated(name) {
		return name
	}
	return "(a name that looks like a credential; not quoted)"
}

func (e *expander) strMap(field string, m map[string]string) map[string]string {
	if len(m) == 0 {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = e.str(field+"."+keyBare(k), v)
	}
	return out
}

// syntaxError reports a file that does not parse, naming a // comment
// when it has one: the likely cause in a JSON file written for an editor.
func syntaxError(path string, data []byte, err error) error {
	if line, ok := commentLine(data); ok {
		return fmt.Errorf("%s: %w: line %d: a // comment (JSON has none; in YAML, comments start with #): %w", path, ErrInvalid, line, err)
	}
	if line, ok := flowVarLine(data, err); ok {
		// In a { … } mapping, YAML reads "{" of an unquoted ${VAR} as
		// another mapping; its error names neither.
		return fmt.Errorf("%s: %w: line %d: a ${VAR} in a { … } mapping must be quoted (\"${VAR}\"): %w", path, ErrInvalid, line, err)
	}
	return fmt.Errorf("%s: %w: %w", path, ErrInvalid, err)
}

// flowVarRef matches a line where a { … } mapping holds an unquoted value
// with a ${VAR} in it; yamlErrLine the line a YAML error names.
var (
	flowVarRef  = regexp.MustCompile(`[{,]\s*[^\s"'{},:#][^{},:]*:\s+[^\s"'{},][^"'{},]*\$\{|[{,]\s*[^\s"'{},:#][^{},:]*:\s+\$\{`)
	yamlErrLine = regexp.MustCompile(`line (\d+): did not find expected ',' or '}'`)
)

// flowVarLine returns the line of an unquoted ${VAR} in a { … } mapping
// that err, a YAML error, is about: the nearest at or up to five lines
// before the line it names, comments aside.
func flowVarLine(data []byte, err error) (int, bool) {
	m := yamlErrLine.FindStringSubmatch(err.Error())
	if m == nil {
		return 0, false
	}
	at, _ := strconv.Atoi(m[1])
	lines := strings.Split(string(data), "\n")
	for n := min(at, len(lines)); n >= max(at-5, 1); n-- {
		if l := strings.TrimSpace(lines[n-1]); !strings.HasPrefix(l, "#") && flowVarRef.MatchString(l) {
			return n, true
		}
	}
	return 0, false
}

// commentLine returns the first line with a // comment: one that starts
// the line, or, in a file that reads as JSON (its first character is "{"),
// one after the content outside a string. That is the JSON-with-comments
// VS Code and Cursor accept, which neither JSON nor YAML does.
func commentLine(data []byte) (int, bool) {
	asJSON := strings.HasPrefix(strings.TrimSpace(string(data)), "{")
	for i, l := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "//") || asJSON && commentOutsideString(l) {
			return i + 1, true
		}
	}
	return 0, false
}

// commentOutsideString reports whether line has "//" outside a JSON string.
func commentOutsideString(line string) bool {
	in := false
	for i := 0; i < len(line); i++ {
		switch c := line[i]; {
		case in && c == '\\':
			i++ // the escaped byte
		case c == '"':
			in = !in
		case !in && c == '/' && i+1 < len(line) && line[i+1] == '/':
			return true
		}
	}
	return false
}

func expandHome(p string) string {
	if p != "~" && !strings.HasPrefix(p, "~/") {
		return p
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return p
	}
	return filepath.Join(home, strings.TrimPrefix(p, "~"))
}

// DefaultServerEverything is the server the built-in default configuration
// mirrors: the MCP reference server that exercises every resource feature.
// npx prefers a copy installed in the working directory's node_modules.
var DefaultServerEverything = Server{
	Name:      "everything",
	Transport: TransportStdio,
	Command:   "npx",
	Args:      []string{"-y", "@modelcontextprotocol/server-everything@2026.8.31", "stdio"},
}

// Default returns the built-in configuration used when no file is given or
// found: the default listen address, data directory and tokenizer, and
// DefaultServerEverything.
func Default() *Config {
	return &Config{
		Listen:    DefaultListen,
		MCPPath:   DefaultMCPPath,
		DataDir:   expandHome(DefaultDataDir()),
		Tokenizer: DefaultTokenizer,
		Embedder:  DefaultEmbedder,
		Servers:   []Server{DefaultServerEverything},
		Limits:    Limits{}.WithDefaults(),
		Ops:       Ops{LogFormat: LogText},
		Conns:     Conns{IdleTimeout: DefaultIdleTimeout, HandshakeTimeout: DefaultHandshakeTimeout},
	}
}

// Find returns the configuration file to use when none is given: the first
// of $CONTEXTD_CONFIG and $XDG_CONFIG_HOME/contextd/config.yaml
// (~/.config/contextd/config.yaml) that exists, or "" when none does. The
// working directory is not searched: a contextd.yaml there (a cloned
// repository's; a host starts `contextd mcp` in the project it opens)
// would choose the commands contextd runs, the address it sends the token
// to and where it sends the user's credentials. InWorkingDir finds it, to
// say so.
func Find() string {
	if p := os.Getenv("CONTEXTD_CONFIG"); p != "" {
		return p
	}
	if d, err := os.UserConfigDir(); err == nil {
		if p := filepath.Join(d, "contextd", "config.yaml"); exists(p) {
			return p
		}
	}
	return ""
}

// InWorkingDir returns the contextd.yaml or contextd.json of the working
// directory, which Find does not take, or "".
func InWorkingDir() string {
	for _, p := range []string{"contextd.yaml", "contextd.json"} {
		if exists(p) {
			return p
		}
	}
	return ""
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// secretName matches flag and variable names that hold credentials: those
// containing token, secret, password, passphrase, mnemonic, credential,
// auth, cookie or session,
// and those with a word key, pat (personal access token) or pass
// (STRIPE_KEY, X-Key, Ocp-Apim-Subscription-Key, stripeKey, ADO_PAT,
// SMTP_PASS), but not KEYBOARD or PATH.
//
// Also the names keys go by written as one word (MEILI_MASTERKEY,
// PRIVATEKEY, AccountKey), and names that end in what holds credentials
// among other settings or is one by its kind: a connection string, a DSN,
// a JWT, a signature (AZURE_STORAGE_CONNECTION_STRING, MYSQL_DSN,
// SUPABASE_JWT, X-Signature, a SAS URL's sig), and a wallet's seed or seed
// phrase; not JWT_ISSUER, SIGNATURE_ALGORITHM or RANDOM_SEED. And lists of
// headers (OTEL_EXPORTER_OTLP_HEADERS), which carry credentials under
// names of their own (x-honeycomb-team=…).
var secretName = regexp.MustCompile(`(?i:headers$|token|secret|passw|passphrase|mnemonic|pwd|api[_-]?key|apikey|credential|auth|cookie|session|jwt$|dsn$|conn(?:ection)?[_-]?str(?:ing)?$|wallet[_-]?seed|seed[_-]?phrase|signature$|^sig$|(?:master|private|account|signing|access|encryption|shared)[_-]?key)|(?i:(^|[^a-z])(key|pat|pass)([^a-z]|$))|[a-z0-9](Key|Pat|Pass)([^a-z]|$)`)

// settingName matches names that say a setting of another kind, though
// they hold a credential's word: a socket, an address, a duration, a size,
// a path, a kind (SSH_AUTH_SOCK, KEY_VAULT_URL, TOKEN_URL,
// SESSION_TIMEOUT, MAX_TOKENS, TOKENIZER, AUTH_PROVIDER, KEY_FILE,
// CORS_ALLOWED_HEADERS).
var settingName = regexp.MustCompile(`(?i)(?:^|[_.-])(?:sock|socket|url|uri|endpoint|host|hostname|port|timeout|ttl|expiry|lifetime|path|dir|file|provider|type|mode|algorithm|version|limit|size|count|length|enabled|region|name)$|` + tokenCount + `|^tokeni[sz]er|(?:^|[_.-])(?:allow(?:ed)?|exposed?)[_-]?headers$`)

// tokenCount matches names and keys of numbers of (language model) tokens:
// MAX_TOKENS, CHUNK_TOKENS, maxOutputTokens, llmContextWindowTokens,
// RATE_LIMIT_TOKENS, TOKENS_PER_MINUTE, TOKEN_BUDGET. Its words start the
// name or follow a separator or, in camel case, a lower-case letter or
// digit: ADMIN_TOKENS and adminTokens are credentials, not "min tokens".
var tokenCount = func() string {
	words := []string{"max", "min", "output", "input", "context", "window", "completion", "prompt", "chunk", "response", "num", "overlap", "batch", "total", "reserved", "embedding", "rate", "limit"}
	per := []string{"second", "minute", "hour", "day", "request", "call"}
	title := func(ws []string) string {
		out := make([]string, len(ws))
		for i, w := range ws {
			out[i] = strings.ToUpper(w[:1]) + w[1:]
		}
		return strings.Join(out, "|")
	}
	first, more := strings.Join(words, "|"), strings.Join(append(slices.Clone(words), "new"), "|")
	return `(?:(?i:(?:^|[_.-])(?:` + first + `)(?:[_.-]?(?:` + more + `))*[_.-]?tokens$|(?:^|[_.-])tokens?[_.-]?(?:per[_.-]?(?:` + strings.Join(per, "|") + `)|budget)$)|` +
		`(?-i:[a-z0-9](?:` + title(words) + `)(?:` + title(append(slices.Clone(words), "new")) + `)*Tokens$|[a-z0-9]Tokens?(?:Per(?:` + title(per) + `)|Budget)$))`
}()

var tokenCountRE = regexp.MustCompile(tokenCount)

// credentialName reports whether a variable, header or flag name says its
// value is a credential (secretName), and not a setting of another kind
// (settingName). A variable named like a cursor (FB_PAGE_TOKEN) is a
// credential: cursors are not configured.
func credentialName(name string) bool {
	return secretName.MatchString(name) && !settingName.MatchString(name)
}

// valueSecrets returns the credentials inside one configured value,
// whatever its name: a Basic credential's password (and "user:password"),
// the values of credential keys (see partKey) in a list of settings (a
// connection string's AccountKey= or Pwd=, a Digest's or SigV4's
// Signature=, "GITHUB_TOKEN=…" given to docker -e) or a JSON object, the
// user info and query values of a JDBC URL, and the password of user info
// written without a scheme (a Go MySQL DSN, "user:pw@tcp(host)/db").
// When the value's own name is a credential's (named: Cookie, a
// connection string), every setting in it that looks generated or like a
// password with a symbol counts too (not a cookie's "tz=Europe/Berlin").
func valueSecrets(v string, named bool) []string {
	v = strings.TrimSpace(v)
	var out []string
	if rest, ok := strings.CutPrefix(v, "jdbc:"); ok {
		out = append(out, urlSecrets(rest)...)
	}
	if scheme, cred, ok := strings.Cut(v, " "); ok && strings.EqualFold(scheme, "basic") {
		if b, err := base64.StdEncoding.DecodeString(strings.TrimSpace(cred)); err == nil {
			if _, pass, ok := strings.Cut(string(b), ":"); ok && pass != "" {
				out = append(out, string(b), pass)
			}
		}
	}
	if strings.HasPrefix(v, "{") || strings.HasPrefix(v, "[") {
		var obj any
		if json.Unmarshal([]byte(v), &obj) == nil {
			out = append(out, jsonSecrets(obj, named, 0)...)
		}
		v = "" // no settings list, no DSN
	}
	// Quoted and braced values first: they may hold the separators
	// (Password="S3cr3t;Pa55!", Pwd={a;b}, password='correct horse 42!').
	for _, m := range quotedSetting.FindAllStringSubmatch(v, -1) {
		val := cmp.Or(m[2], m[3], strings.ReplaceAll(m[4], "}}", "}"))
		if val != "" && (credentialKey(m[1]) || named && chosenOrGenerated(val)) {
			out = append(out, withDecoded(val)...)
		}
	}
	parts := strings.FieldsFunc(v, func(r rune) bool { return r == ';' || r == ',' || r == '&' || unicode.IsSpace(r) })
	if strings.Count(v, ";") > 0 && strings.Count(v, "=") > 1 {
		// A connection string: values may hold spaces (Password=Winter
		// 2024 Snow;). Its settings are read whole, and instead of the
		// words they were cut into ("Winter").
		var whole []string
		for _, p := range strings.Split(v, ";") {
			if k, val, ok := strings.Cut(strings.TrimSpace(p), "="); ok && strings.ContainsRune(strings.TrimSpace(val), ' ') && credentialKey(k) {
				whole = append(whole, strings.TrimSpace(p))
			}
		}
		parts = slices.DeleteFunc(parts, func(p string) bool {
			return slices.ContainsFunc(whole, func(w string) bool { return p != w && strings.HasPrefix(w, p) })
		})
		parts = append(parts, whole...)
	}
	for _, part := range parts {
		k, val, ok := strings.Cut(part, "=")
		if cut := len(val) > 0 && strings.ContainsRune(`"'{`, rune(val[0])) && !strings.HasSuffix(val[1:], map[byte]string{'"': `"`, '\'': "'", '{': "}"}[val[0]]); cut {
			continue // a piece of a quoted or braced value (see quotedSetting)
		}
		if val = strings.Trim(strings.TrimSpace(val), `"'`); !ok || val == "" {
			continue
		}
		if credentialKey(k) || named && chosenOrGenerated(val) {
			out = append(out, withDecoded(val)...)
			if u, err := url.QueryUnescape(val); err == nil && u != val && strings.ContainsRune(u, ' ') {
				// Authorization=Basic%20…: the credential after the scheme.
				out = append(out, valueSecrets(u, false)...)
				if _, cred, ok := strings.Cut(u, " "); ok {
					out = append(out, strings.TrimSpace(cred))
				}
			}
		}
	}
	if m := dsnUserInfo.FindStringSubmatch(v); m != nil {
		out = append(out, m[1])
	}
	// A password of dots ("Basic base64(u:....)") would mask every "....".
	return slices.DeleteFunc(out, func(v string) bool {
		return strings.IndexFunc(v, func(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }) < 0
	})
}

// partKey matches the keys whose value is a credential inside a list of
// settings: a password, secret, token, key, signature or credential by
// name or by its last word (Pwd, AccountKey, SharedAccessKey,
// GITHUB_TOKEN, client_secret, sig), and a cookie's session (sid,
// session, JSESSIONID, csrf); not AUTH_PROVIDER or SESSION_STORE.
var partKey = regexp.MustCompile(`(?i)(?:^|[_.-])(?:password|passwd|passphrase|pwd|pass|secret|token|key|apikeys?|signature|sig|credential|session|sess|sid|csrf|xsrf)$|^(?:account|sharedaccess|master|private)key$|^sharedaccesssignature$|^(?:jsessionid|phpsessid|sessionid|connect\.sid)$`)

// camelKey matches keys whose last word, in camel case, names a
// credential (trustStorePassword, clientSecret, apiKey, authToken); not a
// key of another kind (hotKey, sortKey).
var camelKey = regexp.MustCompile(`[a-z0-9](?:Passwords?|Passwd|Passphrase|Pwd|Secrets?|Tokens?|Credentials?|Signature|(?:Api|API|Access|Secret|Private|Account|Master|Signing|Encryption|Auth|Client|License)Keys?)$`)

// authKey matches an Authorization setting's key (an OTLP headers list).
var authKey = regexp.MustCompile(`(?i)(?:^|[_.-])(?:proxy-)?authorization$`)

// paginationKey matches keys of cursors, which are named tokens but are
// none (pageToken, next_token).
var paginationKey = regexp.MustCompile(`(?i)(?:^|[_.-])(?:page|next|continuation|cursor)[_.-]?token$`)

// credentialKey reports whether a setting's key names a credential
// (partKey, camelKey), whatever precedes it on a command line ("-D",
// "--").
func credentialKey(k string) bool {
	k = strings.TrimSpace(k)
	return (partKey.MatchString(k) || camelKey.MatchString(k) || authKey.MatchString(k)) && !paginationKey.MatchString(k) && !tokenCountRE.MatchString(k)
}

// quotedSetting matches a setting whose value is quoted or braced (an
// ODBC value, where "}}" is a "}"): key, then the value in m[2], m[3] or
// m[4].
var quotedSetting = regexp.MustCompile(`([A-Za-z0-9_.-]+)\s*=\s*(?:"([^"]*)"|'([^']*)'|\{((?:[^}]|\}\})*)\})`)

// maxJSONDepth bounds how deep jsonSecrets looks into a value's JSON.
const maxJSONDepth = 8

// jsonSecrets returns the credentials in a value's JSON: strings under a
// credential's key (partKey, camelKey), an Authorization's, or, when the
// value's own name is a credential's (named), any that looks generated or
// like a password; a "Bearer X" or "Basic X" also gives X (and a Basic
// credential's password); in nested objects and arrays too
// (OPENAPI_MCP_HEADERS='{"Authorization": "Bearer ntn_…"}').
func jsonSecrets(x any, named bool, depth int) []string {
	var out []string
	switch x := x.(type) {
	case map[string]any:
		if depth >= maxJSONDepth {
			return nil
		}
		// A name/value pair ({"key": "X-Api-Key", "value": "…"}): its
		// name is no credential, its value may be; other keys beside
		// them are read as any are.
		pair := map[string]bool{}
		for _, nk := range []string{"key", "name", "Key", "Name"} {
			n, ok := x[nk].(string)
			if !ok {
				continue
			}
			for _, vk := range []string{"value", "Value"} {
				if str, ok := x[vk].(string); ok && str != "" {
					pair[nk], pair[vk] = true, true
					if credentialKey(n) || credentialName(n) || strings.EqualFold(n, "authorization") {
						out = append(out, withDecoded(str)...)
						out = append(out, valueSecrets(str, true)...)
					}
				}
			}
		}
		for k, y := range x {
			if pair[k] {
				continue // read above
			}
			if n, ok := y.(float64); ok && credentialKey(k) {
				y = strconv.FormatFloat(n, 'f', -1, 64) // a numeric password
			}
			str, ok := y.(string)
			if !ok {
				out = append(out, jsonSecrets(y, named || credentialKey(k), depth+1)...)
				continue
			}
			// A connection string or settings list in a string.
			out = append(out, valueSecrets(str, false)...)
			auth := strings.EqualFold(k, "authorization") || strings.EqualFold(k, "proxy-authorization")
			if str == "" || !(auth || credentialKey(k) || named && chosenOrGenerated(str)) {
				continue
			}
			out = append(out, withDecoded(str)...)
			if scheme, cred, ok := strings.Cut(str, " "); ok && (auth || strings.EqualFold(scheme, "bearer") || strings.EqualFold(scheme, "basic")) {
				out = append(out, strings.TrimSpace(cred))
				out = append(out, valueSecrets(str, false)...)
			}
		}
	case []any:
		if depth >= maxJSONDepth {
			return nil
		}
		for _, y := range x {
			if str, ok := y.(string); ok {
				if named && chosenOrGenerated(str) { // {"apiKeys": ["…"]}
					out = append(out, withDecoded(str)...)
				}
				continue
			}
			out = append(out, jsonSecrets(y, named, depth+1)...)
		}
	}
	return out
}

// dsnUserInfo matches user info at the start of a Go MySQL DSN
// ("user:pw@tcp(host:3306)/db", "user:pw@/db"): the password. Not a
// docker image reference ("node:20.11.1@sha256:…").
var dsnUserInfo = regexp.MustCompile(`^[A-Za-z0-9._%+-]+:([^\s@/]+)@(?:[a-z]+\([^)\s]*\))?/`)

// symbolPassword reports whether v reads as a chosen password: 8
// characters or more, no space, a letter and a symbol (one of
// !#$^&*+?@%~, or punctuation or a symbol outside ASCII: "Pa$$w0rd!",
// "P@ssw0rd2024", "Jade~Moon~42", "Passwört§2024"); not a URL, a path, a
// route, a query or an e-mail address ("https://app.example.com/?tab=1",
// "/srv/a?b", "#/settings", "dashboard?tab=1", "bob+ci@example.com").
// Passwords of words,
// digits and "-", "_" or "." alone ("Sunny-Days-2024") cannot be told
// from settings ("spring-sale-2024", "release-1.2.3") and are not taken.
func symbolPassword(v string) bool {
	return utf8.RuneCountInString(v) >= 8 && passwordSymbol(v) && strings.IndexFunc(v, unicode.IsLetter) >= 0 &&
		strings.IndexFunc(v, unicode.IsSpace) < 0 && !addressLike(v)
}

// passwordSymbol reports whether v holds a symbol people put in passwords:
// one of !#$^&*+?, or, beside a digit or in mixed case, one of @%~ or
// punctuation or a symbol outside ASCII ("P@ssw0rd2024", "P@ssWord",
// "Passwört§2024"; not "deploy@buildhost", "%y-%m-%d", "ops~team").
func passwordSymbol(v string) bool {
	v = width.Narrow.String(v) // "！" is "!"
	if strings.ContainsAny(v, "!#$^&*+?") {
		return true
	}
	mixed := strings.ContainsAny(v, "0123456789") ||
		strings.IndexFunc(v, unicode.IsUpper) >= 0 && strings.IndexFunc(v, unicode.IsLower) >= 0
	return mixed && (strings.ContainsAny(v, "@%~") || strings.IndexFunc(v, func(c rune) bool {
		return c >= utf8.RuneSelf && (unicode.IsPunct(c) || unicode.IsSymbol(c))
	}) >= 0)
}

// addressLike reports whether v is a URL, a path, a client-side route, a
// relative URL with a query, or an e-mail address.
func addressLike(v string) bool {
	for _, p := range []string{"/", "~/", "./", "#/", "#!/"} {
		if strings.HasPrefix(v, p) {
			return true
		}
	}
	return strings.Contains(v, "://") || emailAddress.MatchString(v) || relativeQuery.MatchString(v)
}

// emailAddress matches a whole e-mail address as people write them: a
// name of letters, digits and ._%+!- before the "@", a domain ending in a
// top-level name of letters after it ("Pa$$@w0rd.1" is none).
var emailAddress = regexp.MustCompile(`^[A-Za-z0-9._%+!-]+@(?:[A-Za-z0-9-]+\.)+[A-Za-z]{2,}$`)

// relativeQuery matches a relative URL's path and the start of its query,
// in lower case as paths and parameters are written ("dashboard?tab=1",
// "settings/profile?page=2"; not "Who?Am=I42x").
var relativeQuery = regexp.MustCompile(`^[a-z0-9_./-]*\?[a-z0-9_.\[\]-]+=`)

// withDecoded returns v and, when it is percent-encoded, v decoded: a
// server echoes the password it uses ("Amber!Lamps"), not the setting
// ("Amber%21Lamps").
func withDecoded(v string) []string {
	if d, err := url.PathUnescape(v); err == nil && d != v {
		return []string{v, d}
	}
	return []string{v}
}

// chosenOrGenerated reports whether a setting's value reads as a chosen
// password or looks generated (see symbolPassword and generated), judged
// percent-decoded: "a%21b%40cdefgh" is "a!b@cdefgh", and
// "filter%3Dstatus%3Dopen" is "filter=status=open", no secret.
func chosenOrGenerated(v string) bool {
	if strings.Contains(v, "%") {
		if d, err := url.PathUnescape(v); err == nil {
			v = d
		}
	}
	return generated(v) || symbolPassword(v)
}

// generated reports whether a setting's value looks generated rather than
// chosen: 16 bytes or more, letters and digits, no space, and mixed case
// or four digits or more (a session id, not "utf8mb4_unicode_ci",
// "contosodata01" or "Europe/Berlin").
func generated(v string) bool {
	if len(v) < 16 || strings.IndexFunc(v, unicode.IsSpace) >= 0 {
		return false
	}
	var upper, lower, digits int
	for _, c := range v {
		switch {
		case unicode.IsUpper(c):
			upper++
		case unicode.IsLower(c):
			lower++
		case unicode.IsDigit(c):
			digits++
		}
	}
	return upper+lower > 0 && digits > 0 && (upper > 0 && lower > 0 || digits >= 4)
}

// Given returns the credentials s was given: its own (Secrets), and each
// of all (every configured secret) that one of its fields holds (an env
// value, an argument, a header, its URL or command), such as another
// server's token passed to it under a name Secrets does not know. It is
// what s's own text (its errors, stderr, list problems) is masked for: a
// server can print no other secret unless a caller sent it one, and
// masking others there would tell whoever reads it which of the server's
// words is one.
func (s Server) Given(all []string) []string {
	out := s.Secrets()
	fields := append([]string{s.Command, s.URL, s.Cwd}, s.Args...)
	for _, v := range s.Env {
		fields = append(fields, v)
	}
	for _, v := range s.Headers {
		fields = append(fields, v)
	}
	for _, sec := range all {
		if sec != "" && slices.ContainsFunc(fields, func(f string) bool { return strings.Contains(f, sec) }) {
			out = append(out, sec)
		}
	}
	return out
}

// Secrets returns the values of s that may be credentials, for masking in
// errors and logs: the values of headers and env variables whose name
// contains token, secret, password, key, auth, cookie or session (and, for
// "Bearer X" or "Basic X", X alone); the user info, query values and long
// path segments mixing letters and digits of the URL, of any env value and
// of any arg that is a URL (a database URL given to a stdio server); args
// that follow (or are joined by "=" to) a flag with such a name; the value
// of an arg written as a header with such a name ("Authorization: Bearer
// X", as mcp-remote's --header takes it); what a ${VAR} reference with
// such a name put in any field; and the credentials inside any of these
// values, whatever its name (see valueSecrets: a Basic credential's
// password, a connection string's AccountKey=, a DSN's password).
func (s Server) Secrets() []string {
	var out []string
	named := func(m map[string]string) {
		for k, v := range m {
			out = append(out, urlSecrets(v)...)
			out = append(out, valueSecrets(v, credentialName(k))...)
			if !credentialName(k) {
				continue
			}
			out = append(out, v)
			if _, cred, ok := strings.Cut(v, " "); ok {
				out = append(out, cred)
			}
		}
	}
	named(s.Headers)
	named(s.Env)
	out = append(out, urlSecrets(s.URL)...)
	// A command line written whole in command ("GITHUB_TOKEN=ghp_… npx -y
	// server --api-key KEY") is read as its words, as args are.
	words := append(strings.Fields(s.Command), s.Args...)
	for i, a := range words {
		flag, v, joined := strings.Cut(a, "=")
		out = append(out, urlSecrets(a)...)
		out = append(out, valueSecrets(a, false)...)
		if joined {
			out = append(out, urlSecrets(v)...)
			out = append(out, valueSecrets(v, credentialName(flag))...)
		}
		out = append(out, headerArgSecrets(a)...)
		if joined {
			out = append(out, headerArgSecrets(v)...)
		}
		if !credentialName(strings.TrimLeft(flag, "-")) || !strings.HasPrefix(a, "-") && !joined {
			continue
		}
		switch {
		case joined && (strings.HasPrefix(a, "-") || chosenOrGenerated(v)):
			out = append(out, v) // --token=KEY, or an assignment: GITHUB_TOKEN=KEY
		case joined: // SESSION_STORE=memory
		case i+1 < len(words):
			out = append(out, words[i+1])
		}
	}
	return append(out, s.varSecrets...)
}

// URLWords returns the secrets Secrets takes from s's URL for where they
// stand alone: its query values under names no credential has
// ("api-version=2024-10-21", "region=eu-west-1") and its long path
// segments. In what the server serves they may be words (see
// redact.Redactor.WithWords); its user info and credential-named query
// values are not among them.
func (s Server) URLWords() []string {
	u, err := url.Parse(s.URL)
	if err != nil || u.Host == "" {
		return nil
	}
	var out []string
	for k, vs := range u.Query() {
		if !credentialName(k) {
			out = append(out, vs...)
		}
	}
	for _, kv := range strings.Split(u.RawQuery, "&") {
		if k, v, ok := strings.Cut(kv, "="); ok && v != "" && !credentialName(k) {
			out = append(out, v)
		}
	}
	for _, seg := range strings.Split(u.Path, "/") {
		if len(seg) >= 16 {
			out = append(out, seg)
		}
	}
	return out
}

// headerArgSecrets returns the value of arg when it is a header with a
// credential's name, as mcp-remote's --header takes it ("Authorization:
// Bearer X"), and, for "Bearer X" or "Basic X", X alone.
func headerArgSecrets(arg string) []string {
	name, v, ok := strings.Cut(arg, ":")
	if !ok || strings.HasPrefix(v, "//") || strings.ContainsAny(name, " =") || !credentialName(name) {
		return nil
	}
	v = strings.TrimSpace(v)
	out := []string{v}
	if _, cred, ok := strings.Cut(v, " "); ok {
		out = append(out, cred)
	}
	return out
}

// urlSecrets returns the user info and query values of raw when it is a
// URL, and of each URL in it when it holds several (a failover list,
// "amqp://u:p1@h1//;amqp://u:p2@h2//"). User info is also taken as
// written (see userInfoAsWritten): Go reads "postgres://admin:2024#Winter!@db/prod"
// as host "admin", port 2024 and a fragment, where libpq reads the
// password "2024#Winter!".
func urlSecrets(raw string) []string {
	starts := urlStart.FindAllStringIndex(raw, -1)
	// User info as written is each URL's own, never the whole list's.
	out := oneURLSecrets(raw, len(starts) <= 1)
	if len(starts) > 1 {
		for i, st := range starts {
			end := len(raw)
			if i+1 < len(starts) {
				end = starts[i+1][0]
			}
			out = append(out, oneURLSecrets(strings.TrimRight(raw[st[0]:end], ";, \t\n"), true)...)
		}
	}
	return out
}

// urlShown returns raw as an error may quote it: its scheme and host
// alone, without user info, and "…" for whatever follows ("u:pw@host/p?k=x"
// → "host/…"), whatever raw's shape: a typo'd scheme ("https//u:pw@h"), a
// key in the path, a password where the port goes ("https://u:pw/p",
// "https://host:pw/p" → "https://u:…/…", a port over 65535 too), user
// info before the scheme ("u:pw@https://h" → "…://h").
func urlShown(raw string) string {
	rest := raw
	if _, after, ok := strings.Cut(raw, "://"); ok {
		rest = after
	}
	prefix := raw[:len(raw)-len(rest)]
	if !schemeRE.MatchString(prefix) {
		// Something before the scheme: user info typed before it
		// ("bot:pw@https://…"), a word.
		prefix = "…://"
	}
	end := len(rest)
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		end = i
	}
	host, more := rest[:end], end < len(rest)
	if at := strings.LastIndex(host, "@"); at >= 0 {
		host = "…@" + host[at+1:]
	}
	if at := strings.LastIndex(rest[end:], "@"); at >= 0 {
		// An "@" after the host: user info behind a typo'd scheme.
		host = "…"
	}
	// An IPv6 literal is an address; a host ends at its first ":" (past
	// the literal's "]"), and a port is digits: anything else is user
	// info without its "@" ("bot:pw:with:colons", "[bot:pw]").
	name := "" // the IPv6 literal, if any
	if strings.HasPrefix(host, "[") {
		lit, _, _ := strings.Cut(host[1:], "]")
		if net.ParseIP(lit) == nil {
			name = "[…]"
		} else {
			name = "[" + lit + "]"
		}
		host = name + host[min(len(host), len(lit)+2):]
		if rest := host[len(name):]; rest != "" && !strings.HasPrefix(rest, ":") {
			host = name + "…" // text glued to the address
		}
	}
	if colon := strings.Index(host[len(name):], ":"); colon >= 0 {
		colon += len(name)
		if port, err := strconv.Atoi(host[colon+1:]); host[colon+1:] != "" && (err != nil || port > 65535 || port < 1) {
			host = host[:colon+1] + "…"
		}
	}
	if more {
		host += rest[end:end+1] + "…"
	}
	return prefix + host
}

// schemeRE matches what urlShown quotes before a host: "" or a scheme of
// letters, no longer than "postgresql", and "://" (not a key glued to one:
// "Zk9fhttps://").
var schemeRE = regexp.MustCompile(`^(?:[A-Za-z]{1,10}://)?$`)

// urlStart finds where a URL begins: a scheme and "://".
var urlStart = regexp.MustCompile(`[A-Za-z][A-Za-z0-9+.-]*://`)

func oneURLSecrets(raw string, asWritten bool) []string {
	var out []string
	if asWritten {
		out = userInfoAsWritten(raw)
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return out
	}
	if u.User != nil {
		out = append(out, u.User.Username())
		if p, ok := u.User.Password(); ok {
			out = append(out, p)
		}
	}
	for _, vs := range u.Query() {
		out = append(out, vs...)
	}
	// As written, too: a "+" decodes to a space, and a server echoing the
	// query back shows the "+".
	for _, kv := range strings.Split(u.RawQuery, "&") {
		if _, v, ok := strings.Cut(kv, "="); ok && v != "" {
			out = append(out, v)
		}
	}
	// Some services put the key in the path (https://host/mcp/sk-ak-…/sse).
	for _, seg := range strings.Split(u.Path, "/") {
		if len(seg) >= 16 && strings.ContainsAny(seg, "0123456789") && strings.IndexFunc(seg, unicode.IsLetter) >= 0 {
			out = append(out, seg)
		}
	}
	return out
}

// userInfoAsWritten returns the user name and password of a URL as the
// clients that take it read them, where Go's parser differs: it refuses
// "postgresql://app:Tr0ub^dor3x@db:5432/prod" ("^", "{", "|", a space or a
// character outside ASCII), and reads "postgres://admin:2024#Winter!@db"
// as host "admin", port 2024 and a fragment, which libpq and pgx take as
// user info. The user info ends at the last "@" before the first "/" (as
// libpq reads it), or, in web URLs (http, https, ws, wss), before the
// first "/", "?" or "#" (as WHATWG parsers do: an "@" in a web URL's
// query, "?notify=ops@example.com", is no user info); it is split at its
// first ":".
func userInfoAsWritten(raw string) []string {
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok {
		return nil
	}
	ends := "/"
	switch strings.ToLower(scheme[max(0, strings.LastIndexFunc(scheme, func(r rune) bool { return !unicode.IsLetter(r) })+1):]) {
	case "http", "https", "ws", "wss":
		ends = "/?#"
	}
	if i := strings.IndexAny(rest, ends); i >= 0 {
		rest = rest[:i]
	}
	at := strings.LastIndex(rest, "@")
	if at <= 0 {
		return nil
	}
	user, pass, _ := strings.Cut(rest[:at], ":")
	if strings.ContainsAny(user, "/?#") {
		return nil // an "@" in the query or fragment, not user info
	}
	var out []string
	for _, v := range []string{user, pass} {
		if v != "" {
			out = append(out, withDecoded(v)...)
		}
	}
	return out
}

// CheckLoopback returns an error unless addr is host:port with a loopback
// host ("localhost", 127.0.0.0/8 or ::1): contextd's MCP endpoint has no
// authentication, so it must not be reachable from other machines.
func CheckLoopback(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("%q is not host:port (%v); want a loopback address such as 127.0.0.1:7879", addr, err)
	}
	if IsLoopbackHost(host) {
		return nil
	}
	return fmt.Errorf("%q is not a loopback address: the MCP endpoint has no authentication; use 127.0.0.1, [::1] or localhost", addr)
}
