package config_test

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/contextd/contextd/internal/config"
	"github.com/contextd/contextd/internal/redact"
)

func TestSecurityKeys(t *testing.T) {
	dir := t.TempDir()
	tokFile := filepath.Join(dir, "token")
	if err := os.WriteFile(tokFile, []byte("0123456789abcdef0123\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := config.Parse("c.yaml", []byte(`
max_pins: 4
max_reads: 9
auth: { token_file: `+tokFile+` }
tls: { cert_file: /c.pem, key_file: /k.pem, client_ca_file: /ca.pem }
mcpServers:
  fs: { command: x, allow_unlisted_pins: true }
  docs: { url: "https://d.example/mcp?key=${K}" }
`), env(map[string]string{"K": "qk-1234"}))
	if err != nil {
		t.Fatal(err)
	}
	want := config.Limits{MaxPins: 4, MaxReads: 9, MaxResponseBytes: config.DefaultMaxResponseBytes,
		MaxConcurrent: config.DefaultMaxConcurrent, MaxQueued: config.DefaultMaxQueued}
	if c.Limits != want {
		t.Errorf("limits %+v, want %+v", c.Limits, want)
	}
	if c.Auth.Token != "0123456789abcdef0123" || c.Auth.TLS.ClientCAFile != "/ca.pem" || !c.Auth.TLS.Enabled() {
		t.Errorf("auth %+v", c.Auth)
	}
	fs, _ := c.Server("fs")
	docs, _ := c.Server("docs")
	if !fs.AllowUnlistedPins || docs.AllowUnlistedPins {
		t.Errorf("allow_unlisted_pins: fs %v, docs %v", fs.AllowUnlistedPins, docs.AllowUnlistedPins)
	}
	zap := config.Server{URL: "https://actions.example.com/mcp/sk-ak-7f3a9c2e1b5d4f60/sse"}
	if got := zap.Secrets(); !slices.Equal(got, []string{"sk-ak-7f3a9c2e1b5d4f60"}) {
		t.Errorf("secrets of a URL with a key in its path: %q", got)
	}
	plus := config.Server{URL: "https://h.example/mcp?key=Zq8vR2mK+p4Tn6Wx9/Yb3Hc5&x=1"}
	if got := plus.Secrets(); !slices.Contains(got, "Zq8vR2mK+p4Tn6Wx9/Yb3Hc5") || !slices.Contains(got, "Zq8vR2mK p4Tn6Wx9/Yb3Hc5") {
		t.Errorf("secrets of a query key with a raw +: %q; want it as written and decoded", got)
	}
	if !slices.Contains(docs.Secrets(), "qk-1234") {
		t.Errorf("docs secrets %q lack the URL's query value", docs.Secrets())
	}
	if d := config.Default(); d.Limits != (config.Limits{}).WithDefaults() || d.Auth.Token != "" {
		t.Errorf("default config: %+v %+v", d.Limits, d.Auth)
	}
}

func TestSecurityKeyErrors(t *testing.T) {
	for _, tt := range []struct{ file, want string }{
		{"auth: { token_fle: /x }", `field auth.token_fle is not one contextd reads; did you mean "token_file"?`},
		{"tls: { cert: /x }", `field tls.cert is not one contextd reads`},
		{"auth: { token: short }", "the token is 5 bytes; use at least 16"},
		{"auth: { token: '${NOPE}' }", "environment variable NOPE is not set (used in field auth.token)"},
		{"auth: { token_file: /does/not/exist }", "field auth.token_file: cannot read it (is the token written here instead of in auth.token?): no such file or directory"},
		{"auth: { token_file: " + os.DevNull + " }", "field auth.token_file: not a regular file"}, // nor /dev/zero, read without end, nor a FIFO
		{"tls: { cert_file: /c }", "set both cert_file and key_file"},
		{"tls: { client_ca_file: /c }", "client certificates need TLS"},
		{"max_reads: -1", "field max_reads: -1 is negative"},
	} {
		_, err := config.Parse("c.yaml", []byte(tt.file), env(nil))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: err = %v, want %q", tt.file, err, tt.want)
		}
	}
}

// A token file whose first line runs past what is read is refused, not
// cut: the token would be a prefix of the one clients send. Its first
// line is the token; what follows it may be long.
func TestATokenFileWithAnOverlongFirstLineIsRefused(t *testing.T) {
	dir := t.TempDir()
	long := filepath.Join(dir, "long")
	if err := os.WriteFile(long, []byte(strings.Repeat("0123456789abcdef", 8<<10)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := config.Parse("c.yaml", []byte("auth: { token_file: "+long+" }\n"), env(nil)); err == nil || !strings.Contains(err.Error(), "first line is over 65536 bytes") {
		t.Errorf("a token file of one 128 KiB line: err = %v; want it refused", err)
	}
	// One byte over, with its line ending read too.
	for _, end := range []string{"\n", "\r\n", ""} {
		over := filepath.Join(dir, "over")
		if err := os.WriteFile(over, []byte(strings.Repeat("a", 64<<10+1)+end), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := config.Parse("c.yaml", []byte("auth: { token_file: "+over+" }\n"), env(nil)); err == nil || !strings.Contains(err.Error(), "first line is over 65536 bytes") {
			t.Errorf("a token file of one 65,537-byte line ending %q: err = %v; want it refused", end, err)
		}
	}
	notes := filepath.Join(dir, "notes")
	if err := os.WriteFile(notes, []byte("0123456789abcdef0123\n"+strings.Repeat("a note\n", 20<<10)), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := config.Parse("c.yaml", []byte("auth: { token_file: "+notes+" }\n"), env(nil))
	if err != nil || c.Auth.Token != "0123456789abcdef0123" {
		t.Errorf("a token file of a token and 140 KiB of notes: %v, token %d bytes; want the first line", err, len(c.Auth.Token))
	}
}

// A token longer than a call's headers may carry is refused at load: it
// passed, and then every gRPC call failed for the size of its headers.
func TestATokenTooLongToSendIsRefused(t *testing.T) {
	long := strings.Repeat("0123456789abcdef", 20_000/16)
	for _, file := range []string{"auth: { token: " + long + " }\n", "auth: { token: \"${T}\" }\n"} {
		_, err := config.Parse("c.yaml", []byte(file), env(map[string]string{"T": long}))
		if err == nil || !strings.Contains(err.Error(), "at most 4096") || strings.Contains(err.Error(), "0123456789abcdef") {
			t.Errorf("a 20,000-byte token: err = %v; want it refused, not quoted", err)
		}
	}
	if c, err := config.Parse("c.yaml", []byte("auth: { token: "+long[:4096]+" }\n"), env(nil)); err != nil || len(c.Auth.Token) != 4096 {
		t.Errorf("a 4,096-byte token: %v; want it taken", err)
	}
}

func TestCheckListen(t *testing.T) {
	open := config.Auth{}
	for _, addr := range []string{"127.0.0.1:7878", "[::1]:1", "localhost:7878", "unix:///tmp/c.sock"} {
		if err := open.CheckListen(addr); err != nil {
			t.Errorf("CheckListen(%s) = %v", addr, err)
		}
	}
	for _, addr := range []string{"0.0.0.0:7878", ":7878", "192.168.1.2:7878", "[::]:7878"} {
		if err := open.CheckListen(addr); err == nil || !strings.Contains(err.Error(), "allow_insecure_listen") {
			t.Errorf("CheckListen(%s) = %v, want a refusal", addr, err)
		}
	}
	for _, a := range []config.Auth{{Token: "0123456789abcdef"}, {TLS: config.TLS{ClientCAFile: "/ca"}}, {AllowInsecureListen: true}} {
		if err := a.CheckListen("0.0.0.0:7878"); err != nil {
			t.Errorf("%+v: CheckListen = %v", a, err)
		}
	}
}

func TestTokenFileReadableByOthersIsWarnedAbout(t *testing.T) {
	f := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(f, []byte("0123456789abcdef0123\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := config.Parse("c.yaml", []byte("auth: { token_file: "+f+" }\n"), env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Warnings) != 1 || !strings.Contains(c.Warnings[0], "readable by others") {
		t.Errorf("warnings %q", c.Warnings)
	}
}

// Credentials reach stdio servers as positional args too: a database URL
// (server-postgres takes one), a header for mcp-remote, or a ${VAR} with a
// credential's name. Each must be among the values masked in errors and
// logs, and nothing else the config names may be.
func TestSecretsInArgsAndVariables(t *testing.T) {
	vars := env(map[string]string{
		"GITHUB_TOKEN": "ghp_0123456789abcdefXYZ", "AUTH_HEADER": "Bearer tok-from-env-4321",
		"DB_PASSWORD": "pw-in-a-url-99", "HOME": "/home/someone", "PORT": "5432",
	})
	c, err := config.Parse("c.yaml", []byte(`
mcpServers:
  pg: { command: npx, args: [-y, "@modelcontextprotocol/server-postgres", "postgresql://app:pg-pass-77@localhost/db"] }
  joined: { command: srv, args: ["--db=postgres://u:hunter22xx@h/d"] }
  remote: { command: npx, args: [mcp-remote, "https://x.example/sse", --header, "Authorization: Bearer tok-abcdef123456"] }
  envhdr: { command: npx, args: [mcp-remote, "https://x.example/sse", --header, "Authorization:${AUTH_HEADER}"] }
  gh: { command: gh-mcp, args: [serve, "${GITHUB_TOKEN}", "${HOME}/cache", "--port=${PORT}"] }
  inurl: { command: srv, env: { DSN: "mysql://root:${DB_PASSWORD}@db:${PORT}/x" } }
  caret: { command: srv, env: { DATABASE_URL: "postgresql://app:Tr0ub^dor3x@db.internal:5432/prod", REDIS_URL: "redis://:Straße§Haus1@cache:6379/0",
    DB2: "postgres://admin:2024#Winter!@db:5432/prod", BROKERS: "amqp://u:Rabbit^1x@h1//;amqp://u:Hop^Rab2@h2//", HOOKS: "https://a.example/x, https://u:Pw2y!zz9@b.example/y" } }
  hooks: { command: srv, env: { NOTIFY: "http://localhost:8080/hook?notify=ops@example.com", NOTIFY2: "https://api.example.com?cc=ops@example.com",
    NOTIFY3: "http://127.0.0.1:9000/a/b@c", CACHE: "redis://localhost:6379/0?client=me@example.com" } }
`), vars)
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string][]string{
		"pg":     {"pg-pass-77"},
		"caret":  {"Tr0ub^dor3x", "Straße§Haus1", "2024#Winter!", "Rabbit^1x", "Hop^Rab2", "Pw2y!zz9"},
		"joined": {"hunter22xx"},
		"remote": {"Bearer tok-abcdef123456", "tok-abcdef123456"},
		"envhdr": {"Bearer tok-from-env-4321", "tok-from-env-4321"},
		"gh":     {"ghp_0123456789abcdefXYZ"},
		"inurl":  {"pw-in-a-url-99"},
		"hooks":  {},
	} {
		s, _ := c.Server(name)
		got := s.Secrets()
		for _, w := range want {
			if !slices.Contains(got, w) {
				t.Errorf("%s: secrets %q lack %q", name, got, w)
			}
		}
		for _, v := range got {
			if strings.Contains(v, "/home/someone") || v == "5432" || v == "https://x.example/sse" || v == "@modelcontextprotocol/server-postgres" ||
				v == "localhost" || v == "127.0.0.1" || v == "api.example.com" || strings.HasPrefix(v, "8080") || strings.HasPrefix(v, "6379") {
				t.Errorf("%s: %q taken for a secret", name, v)
			}
		}
	}
	// Credentials inside values, whatever their names: a Basic
	// credential's password, a cookie's session, a connection string's
	// key, an ODBC Pwd=, a JDBC URL's password, a Go MySQL DSN's, a
	// SigV4 signature.
	inside, err := config.Parse("c.yaml", []byte(`
mcpServers:
  h:
    url: https://h.example/mcp
    headers:
      Authorization: "Basic Ym9iOlMzY3IzdCFQYXNz"
      Cookie: "theme=dark; sid=Qx7vR2mK9pL4wZ8nT3jH6cF1"
      X-Amz: "AWS4-HMAC-SHA256 Credential=AKIAEXAMPLE/2024/s3, SignedHeaders=host, Signature=9f86d081884c7d659a2f"
      X-Dots: "Basic dTouLi4u"
  e:
    command: srv
    env:
      STORAGE: "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=bXlrZXk0Mg==;EndpointSuffix=core.windows.net"
      ODBC: "Driver={ODBC Driver 18};Server=db;Uid=app;Pwd=Odbc!Pass9;"
      JDBC: "jdbc:postgresql://db:5432/app?user=app&password=Jdbc!Pass9"
      MYSQL: "app:My!Pass99@tcp(db:3306)/app"
      OPENAPI_MCP_HEADERS: '{"Authorization": "Bearer ntn_4b2F9kQ7xLmP3vR8sT1wYz6aBcD", "Notion-Version": "2022-06-28", "nested": {"X-Api-Key": "nk-77Qw2"}}'
      JAVA_TOOL_OPTIONS: "-Xmx512m -Djavax.net.ssl.trustStorePassword=Tru5t!Store -Dfile.encoding=UTF-8"
      ConnectionStrings__Default: 'Server=db;Database=app;User Id=sa;Password="S3cr3t;Pa55!";TrustServerCertificate=true'
      ODBC2: "Driver={ODBC Driver 18};Uid=app;Pwd={Br4ce;Pa55!}}x};"
      PGOPTS: "host=db password='correct horse 42!' sslmode=require"
      OTEL_EXPORTER_OTLP_HEADERS: "x-honeycomb-team=hcaik_01hq2w3e4r5t6y7u8i9o0p1a2s3d4f5g,Authorization=Basic%20dXNlcjpTM2NyZXQhUGFzcw=="
      HEADERS_JSON: '[{"key":"X-Api-Key","value":"Kx9Winter2024Snow"}]'
      NET: "Server=db;User Id=sa;Password=Winter 2024 Snow;"
      JOPTS: "-Dgpg.passphrase=Gpg!Phrase9"
      APPSETTINGS: '{"ConnectionStrings":{"Default":"Server=db;Password=Nested!Pw9;"},"Db":{"password":12345678},"apiKeys":["Ak9Winter2024Key"]}'
      SSH_AUTH_SOCK: /tmp/ssh-XYZ/agent.1
      KEY_VAULT_URL: https://kv.vault.azure.net/
      TOKEN_URL: https://auth.example.com/token
      TOKENIZER: cl100k_base
      MAX_TOKENS: "4096"
      SESSION_TIMEOUT: 30m
      PAGE_TOKEN: nextpage42
      FB_PAGE_TOKEN: EAAGm0PX4ZCpsBA9zZ
      ADMIN_API_TOKENS: "adm1n-t0k-a,adm1n-t0k-b"
      STATUSPAGE_TOKEN: st4tus-p4ge-tok
      MAX_API_KEY: m4x-ap1-key-77
      JAVA_WIN: "-Djava.class.path=C:\\a.jar;C:\\b.jar -Dfile.encoding=UTF-8 -Djavax.net.ssl.keyStorePassword=J4va!Store9"
      PG_CONN: "host=db user=app password=Pg!Pass99 sslmode=require;"
      LLM_SETTINGS: '{"maxTokens":4096,"contextWindowTokens":200000,"outputTokens":"8192"}'
      CORS_ALLOWED_HEADERS: "Content-Type,Authorization"
      APP_SETTINGS: '{"apiTokens":["Tk9Winter2024Tok"],"chunkTokens":512,"maxOutputTokens":8193}'
      DBS: '[{"name":"prod","value":"primary","password":"Thr33!Keys"}]'
      CHUNK_TOKENS: "1048576"
      TOKENS_PER_MINUTE: "90000"
      RATE_LIMIT_TOKENS: "40000"
      TOKEN_BUDGET: "2000"
      ADMIN_TOKENS: "ryan:Tk9fAdm1nTok"
      GITLAB_ADMIN_TOKENS: "glpat-Adm9Tok2024xyz"
      CORPORATE_TOKENS: "c0rp-T0k-9931"
      SEPARATE_TOKENS: "s3p-T0k-7714"
      ROLE_TOKENS: '{"adminTokens":["Adm1nTok2024Json9x"],"llmMaxOutputTokens":8191,"requestTokensPerMinute":60000}'
  plain:
    command: docker
    args: [run, -e, AUTH_PROVIDER=github, -e, SESSION_STORE=memory, -e, "GITHUB_TOKEN=ghp_Docker0123456789abcd", img,
      '--static-oauth-client-info={"client_id":"abc","client_secret":"Cs3cr3t!xyz"}']
    env:
      JWT_ALGORITHM: HS256
      JWT_ISSUER: https://auth.example.com/
      RANDOM_SEED: "20240101"
      AWS_S3_SIGNATURE_VERSION: s3v4
      SIGNATURE_ALGORITHM: ed25519
      SESSION_COOKIE: "tz=Europe/Berlin; lang=en; sid=Amber-Lamps-Tide!; session=hunter2hunter; returnTo=https://app.example.com/?tab=1; email=alice@example.com; filter=status=open; remember_me=Summer2024!@; pw=Zebra=Moon!7; login=Amber%Lamps!Tide; notify=bob+ci@example.com; next=/srv/a?b=1; remember=P@ssw0rd2024; pin=Jade~Moon~42; back=dashboard?tab=1; hash=#/settings/profile; cc=bob!ci@example.com; q=filter%3Dstatus%3Dopen; r2=Who?Am=I42x; r3=Jade%40Moon42; r4=Pa$$@w0rd.1; r5=秘密のパスワード！; r6=P@ssWord; r7=Straße§Haus; user=deploy@buildhost; fmt=%y-%m-%d; home=~alice/docs"
      AZURE_CONNECTION_STRING: "AccountName=contosodata01;AccountKey=bXlrZXk0Mg==;EndpointSuffix=core.windows.net"
      IMAGE: "node:20.11.1@sha256:0f3b2a1c9d8e7f6a5b4c3d2e1f0a9b8c"
      MYSQL_DSN: "app:My!Pass98@tcp(db:3306)/app?parseTime=true&collation=utf8mb4_unicode_ci"
`), vars)
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string][]string{
		"h": {"S3cr3t!Pass", "Qx7vR2mK9pL4wZ8nT3jH6cF1", "9f86d081884c7d659a2f"},
		"e": {"bXlrZXk0Mg==", "Odbc!Pass9", "Jdbc!Pass9", "My!Pass99", "ntn_4b2F9kQ7xLmP3vR8sT1wYz6aBcD", "nk-77Qw2", "Tru5t!Store",
			"S3cr3t;Pa55!", "Br4ce;Pa55!}x", "correct horse 42!", "hcaik_01hq2w3e4r5t6y7u8i9o0p1a2s3d4f5g", "S3cret!Pass", "Kx9Winter2024Snow",
			"Winter 2024 Snow", "Gpg!Phrase9", "Nested!Pw9", "12345678", "Ak9Winter2024Key", "nextpage42", "EAAGm0PX4ZCpsBA9zZ",
			"adm1n-t0k-a,adm1n-t0k-b", "st4tus-p4ge-tok", "m4x-ap1-key-77", "J4va!Store9", "Pg!Pass99", "Tk9Winter2024Tok", "Thr33!Keys",
			"ryan:Tk9fAdm1nTok", "glpat-Adm9Tok2024xyz", "c0rp-T0k-9931", "s3p-T0k-7714", "Adm1nTok2024Json9x"},
		"plain": {"ghp_Docker0123456789abcd", "Cs3cr3t!xyz", "bXlrZXk0Mg==", "My!Pass98", "Amber-Lamps-Tide!", "hunter2hunter",
			"Summer2024!@", "Zebra=Moon!7", "Amber%Lamps!Tide", "P@ssw0rd2024", "Jade~Moon~42",
			"Who?Am=I42x", "Jade%40Moon42", "Jade@Moon42", "Pa$$@w0rd.1", "秘密のパスワード！", "P@ssWord", "Straße§Haus"},
	} {
		s, _ := inside.Server(name)
		got := s.Secrets()
		for _, w := range want {
			if !slices.Contains(got, w) {
				t.Errorf("%s: secrets %q lack %q", name, got, w)
			}
		}
		for _, v := range got {
			if slices.Contains([]string{"dark", "acct", "https", "host", "github", "memory", "HS256", "https://auth.example.com/", "20240101",
				"s3v4", "ed25519", "Europe/Berlin", "en", "core.windows.net", `{"client_id":"abc`, "....", "contosodata01", "20.11.1",
				"true", "utf8mb4_unicode_ci", "https://app.example.com/?tab=1", "alice@example.com", "status=open",
				"bob+ci@example.com", "/srv/a?b=1", "dashboard?tab=1", "#/settings/profile", "bob!ci@example.com", "filter%3Dstatus%3Dopen",
				"deploy@buildhost", "%y-%m-%d", "~alice/docs", "/tmp/ssh-XYZ/agent.1", "https://kv.vault.azure.net/", "https://auth.example.com/token",
				"cl100k_base", "4096", "30m", "X-Api-Key", "Winter", "200000", "8192", "Content-Type,Authorization", "512", "8193", "1048576", "prod", "primary", "90000", "40000", "2000", "8191", "60000"}, v) {
				t.Errorf("%s: %q taken for a secret", name, v)
			}
		}
	}
	// Loading the same file again gives the same servers, so a reload does
	// not restart them.
	again, err := config.Parse("c.yaml", []byte(`
mcpServers:
  inurl: { command: srv, env: { A_TOKEN: "${GITHUB_TOKEN}", B_PASS: "${DB_PASSWORD}", C: "${AUTH_HEADER}" } }
`), vars)
	if err != nil {
		t.Fatal(err)
	}
	for range 20 {
		other, _ := config.Parse("c.yaml", []byte(`
mcpServers:
  inurl: { command: srv, env: { A_TOKEN: "${GITHUB_TOKEN}", B_PASS: "${DB_PASSWORD}", C: "${AUTH_HEADER}" } }
`), vars)
		if !reflect.DeepEqual(again.Servers, other.Servers) {
			t.Fatalf("two loads of one file differ: %+v and %+v", again.Servers, other.Servers)
		}
	}
}

// Without a token, the MCP endpoint and pprof (plain HTTP on a loopback
// port) are refused beside what they would bypass: client certificates,
// or a unix socket only its owner may open.
func TestCheckHTTPEndpoints(t *testing.T) {
	certs := config.Auth{TLS: config.TLS{CertFile: "c", KeyFile: "k", ClientCAFile: "ca"}}
	for _, tc := range []struct {
		auth           config.Auth
		listen, mcp    string
		pprof, refused bool
	}{
		{config.Auth{}, "127.0.0.1:7878", "127.0.0.1:7879", true, false},
		{config.Auth{}, "unix:///run/c.sock", "127.0.0.1:7879", false, true},
		{config.Auth{}, "unix:///run/c.sock", "", true, true},
		{config.Auth{}, "unix:///run/c.sock", "", false, false},
		{config.Auth{Token: "t0k3n-0123456789"}, "unix:///run/c.sock", "127.0.0.1:7879", true, false},
		{certs, "127.0.0.1:7878", "127.0.0.1:7879", false, true},
		{certs, "127.0.0.1:7878", "", false, false},
	} {
		err := tc.auth.CheckHTTPEndpoints(tc.listen, tc.mcp, tc.pprof)
		if (err != nil) != tc.refused {
			t.Errorf("token %v, certs %v, listen %s, mcp_listen %q, pprof %v: %v; want refused %v", tc.auth.Token != "", tc.auth.TLS.ClientCAFile != "", tc.listen, tc.mcp, tc.pprof, err, tc.refused)
		}
	}
}

// A server the file disables still holds the user's credentials: they are
// among Secrets (masked, withheld from the servers that run), also when it
// would not resolve (an unset variable, a transport contextd lacks).
func TestDisabledServersSecretsAreSecrets(t *testing.T) {
	c, err := config.Parse("c.yaml", []byte(`
mcpServers:
  linear: { command: npx, args: [-y, linear-mcp], env: { LINEAR_API_KEY: "${LINEAR_API_KEY}" }, disabled: true }
  broken: { command: npx, env: { X_TOKEN: "${UNSET_VAR}", BROKEN_API_KEY: "${BROKEN_API_KEY}" }, type: ws, disabled: true }
  fs: { command: fs-mcp }
`), func(k string) (string, bool) {
		switch k {
		case "LINEAR_API_KEY":
			return "lin_api_Zq8mT3kLw9PxR2vN7bYc", true
		case "BROKEN_API_KEY":
			return "brk_api_Zq8mT3kLw9PxR2vN7bYc", true
		}
		return "", false
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Servers) != 1 || !slices.Contains(c.Secrets(), "lin_api_Zq8mT3kLw9PxR2vN7bYc") || !slices.Contains(c.Secrets(), "brk_api_Zq8mT3kLw9PxR2vN7bYc") {
		t.Errorf("servers %d, secrets %q; want fs alone, and linear's key among the secrets", len(c.Servers), c.Secrets())
	}
}

// A URL refused for its shape is quoted without what may hold a key: its
// user info, query or path, also behind a typo'd scheme.
func TestBadURLErrorsHideCredentials(t *testing.T) {
	for _, u := range []string{"mcp.example-search.com/sse?key=Zk9fQ2xW7rT1", "ftp://bob:Pw2y!zz9@files.example/x",
		"https//bot:Pw2y!zz9@mcp.example.com/mcp", "https:/bot:Pw2y!zz9@mcp.example.com/mcp", "mcp.zapier.com/api/mcp/s/Zk9fQ2xW7rT1/mcp",
		// User info without its "@": the password where a port goes.
		"https://bot:Pw2yzz9x/mcp", "https://mcp.example.com:Pw2yzz9x/mcp", "http://[::1]:Pw2yzz9x/mcp", "https://bot:20242024/mcp",
		"https://bot:Winter:Pw2y/mcp", "https://bot:pw:with:Pw2yzz9x/mcp", "https://[bot:Pw2yzz9x]/mcp",
		// User info or a key typed before the scheme.
		"bot:Pw2yzz9x@https://mcp.example.com/mcp", "Pw2yzz9x https://mcp.example.com/mcp",
		// A key glued to the scheme or to an address.
		"Pw2yzz9xQhttps://mcp.example.com/mcp", "P.w2y+zz9https://mcp.example.com/mcp", "https://[::1]Pw2yzz9x/mcp"} {
		_, err := config.Parse("c.yaml", []byte("mcpServers:\n  s: { url: \""+u+"\" }\n"), func(string) (string, bool) { return "", false })
		if err == nil || strings.Contains(err.Error(), "Zk9f") || strings.Contains(err.Error(), "Pw2y") || strings.Contains(err.Error(), "2024") || !strings.Contains(err.Error(), "is not an http(s) URL") {
			t.Errorf("url %s: err = %v; want it refused, its key and password not quoted", u, err)
		}
		_, err = config.Parse("c.yaml", []byte("embedder: {provider: openai, model: m, url: \""+u+"\"}\nmcpServers: {a: {command: x}}\n"), func(string) (string, bool) { return "", false })
		if err == nil || strings.Contains(err.Error(), "Zk9f") || strings.Contains(err.Error(), "Pw2y") || !strings.Contains(err.Error(), "field embedder.url") {
			t.Errorf("embedder.url %s: err = %v; want it refused, its key and password not quoted", u, err)
		}
	}
	for _, st := range []string{"postgres:contextd:Pw2y!zz9@db:5432/x", "contextd:Pw2y!zz9@db:5432/x", "contextd:Pw2y!zz9@postgres://db/x",
		"host=db user=contextd password='Winter Pw2y zz9 Store!'", "password='Pw2y zz9 Store' host=db"} {
		_, err := config.Parse("c.yaml", []byte("store: \""+st+"\"\n"), func(string) (string, bool) { return "", false })
		if err == nil || strings.Contains(err.Error(), "Pw2y") {
			t.Errorf("store %s: err = %v; want it refused, its password not quoted", st, err)
		}
	}
}

// A header value holding a control character within it (a NUL, a line
// break between two tokens) is refused at load, naming the header and not
// quoting the value: net/http refuses it at every connect instead, and the
// server never connects. Spaces and line breaks around it are dropped, as
// the hosts whose files these are drop them: a variable read with its
// line ending works.
func TestHeaderValuesWithControlCharactersAreRefused(t *testing.T) {
	for _, v := range []string{`"Bearer Zk9fQ2xW7rT1\u0000x"`, `"Bearer Zk9fQ2xW7rT1\nx"`, `"Zk9f\rQ2xW7rT1"`, `"Zk9fQ2xW7rT1\u007fx"`} {
		_, err := config.Parse("c.yaml", []byte("mcpServers:\n  s: { url: \"https://h.example/mcp\", headers: { Authorization: "+v+" } }\n"), func(string) (string, bool) { return "", false })
		if err == nil || strings.Contains(err.Error(), "Zk9f") || !strings.Contains(err.Error(), "Authorization") {
			t.Errorf("header value %s: err = %v; want it refused, naming the header, the value not quoted", v, err)
		}
	}
	env := func(k string) (string, bool) { return "Bearer Zk9fQ2xW7rT1\r\n", k == "TOKEN" }
	c, err := config.Parse("c.yaml", []byte("mcpServers:\n  s: { url: \"https://h.example/mcp\", headers: { Authorization: \"${TOKEN}\", X-Note: \" a\\tb é \" } }\n"), env)
	if err != nil {
		t.Fatalf("a variable ending in a line break, a tab and non-ASCII within a value: %v", err)
	}
	s := c.Servers[0]
	if s.Headers["Authorization"] != "Bearer Zk9fQ2xW7rT1" || s.Headers["X-Note"] != "a\tb é" {
		t.Errorf("headers %q; want the values without what surrounds them", s.Headers)
	}
	if !slices.Contains(s.Secrets(), "Zk9fQ2xW7rT1") {
		t.Errorf("secrets %q; want the token as sent", s.Secrets())
	}
}

// A value typed into a header's name ("X-Api-Key KEY": "") is refused
// without quoting it: net/http would quote it at every connect.
func TestHeaderNamesMustBeTokens(t *testing.T) {
	for _, h := range []string{`"X-Api-Key Zk9fQ2xW7rT1": ""`, `"Zk9fQ2xW7rT1 ": ""`, `"x-goog-api-key,Zk9fQ2xW7rT1": ""`, `"Authorization: Bearer Zk9fQ2xW7rT1": ""`} {
		_, err := config.Parse("c.yaml", []byte("mcpServers:\n  s: { url: \"https://h.example/mcp\", headers: { "+h+" } }\n"), func(string) (string, bool) { return "", false })
		if err == nil || strings.Contains(err.Error(), "Zk9f") || !strings.Contains(err.Error(), "header name") {
			t.Errorf("headers {%s}: err = %v; want it refused, the key not quoted", h, err)
		}
	}
	if _, err := config.Parse("c.yaml", []byte("mcpServers:\n  s: { url: \"https://h.example/mcp\", headers: { X-Api-Key: v, Notion-Version: \"2022-06-28\" } }\n"), func(string) (string, bool) { return "", false }); err != nil {
		t.Errorf("honest headers refused: %v", err)
	}
}

// A server name holding what a terminal acts on, or what shows as nothing,
// is refused, escaped in the error: names reach logs, /metrics labels and
// terminals as they are. Names in other scripts are names.
func TestServerNamesHoldNoControlCharacters(t *testing.T) {
	for _, name := range []string{`"x\e]0;title\a"`, `"docs\u202etxt"`, `"a\u200bb"`, `"tab\tname"`, `"del\x7f"`, `"docs\u200e"`, `"docs\u061c"`, `"line\u2028sep"`, `"c1\u0085"`, `"docs\U000E0041"`, `"docs\u3164"`, `"docs\uFE0F"`, `"docs\U000F0000"`} {
		_, err := config.Parse("c.yaml", []byte("mcpServers:\n  "+name+": { url: \"https://h.example/mcp\" }\n"), func(string) (string, bool) { return "", false })
		if err == nil || !strings.Contains(err.Error(), "its name holds") || strings.ContainsAny(err.Error(), "\x1b\a\u202e\u200b\t\x7f\u200e\u061c\u2028\u0085\u3164") {
			t.Errorf("server %s: err = %q; want it refused, the name escaped", name, err)
		}
	}
	for _, name := range []string{"docs", "документы", "ドキュメント", "git-main_2", "مستندات"} {
		if _, err := config.Parse("c.yaml", []byte("mcpServers:\n  "+name+": { url: \"https://h.example/mcp\" }\n"), func(string) (string, bool) { return "", false }); err != nil {
			t.Errorf("server %q refused: %v", name, err)
		}
	}
}

// A token written where a mapping belongs is refused without quoting it:
// yaml.v3 quotes the value in its type errors.
func TestTypeErrorsDoNotQuoteValues(t *testing.T) {
	for _, f := range []string{"auth: s3cRet-9x\nmcpServers: {a: {command: x}}\n", "mcpServers: {gh: s3cRet-9xZk9fQ2xW7rT1}\n",
		"embedder: {provider: openai, model: m, api_key: [s3cRet-9x]}\nmcpServers: {a: {command: x}}\n",
		"auth: \"`s3cRet-9x\"\nmcpServers: {a: {command: x}}\n", "auth: \"s3`cRet-9x into `\"\nmcpServers: {a: {command: x}}\n"} {
		_, err := config.Parse("c.yaml", []byte(f), func(string) (string, bool) { return "", false })
		if err == nil || strings.Contains(err.Error(), "s3cR") {
			t.Errorf("%q: err = %v; want it refused, the value not quoted", f, err)
		}
	}
}

// A command line written whole in command is read as its words: its keys
// are secrets, masked in the log.
func TestSecretsInACommandLine(t *testing.T) {
	c, err := config.Parse("c.yaml", []byte(`mcpServers:
  a: { command: "GITHUB_PERSONAL_ACCESS_TOKEN=ghp_Zq8mT3kLw9PxR2vN7bYc0123 npx -y server" }
  b: { command: "npx -y server --token=Tk9Winter2024Tok" }
  c: { command: "npx -y server --api-key Ak9Winter2024Key" }
  d: { command: "env SESSION_STORE=memory npx -y server" }
`), func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"a": "ghp_Zq8mT3kLw9PxR2vN7bYc0123", "b": "Tk9Winter2024Tok", "c": "Ak9Winter2024Key"} {
		if s, _ := c.Server(name); !slices.Contains(s.Secrets(), want) {
			t.Errorf("%s: secrets %q lack %q", name, s.Secrets(), want)
		}
	}
	if s, _ := c.Server("d"); slices.Contains(s.Secrets(), "memory") {
		t.Errorf("d: %q taken for a secret", "memory")
	}
}

// A value typed into a key's name ("token:KEY", "token KEY") is not quoted
// in the warning or error naming the key.
func TestKeysHoldingValuesAreNotQuoted(t *testing.T) {
	for _, f := range []string{"auth: { token Zq7vN2kLp9Xw4Rt6Yb8Hc3Jd }\nmcpServers: {a: {command: x}}\n",
		"\"token:Zq7vN2kLp9Xw4Rt6Yb8Hc3Jd\": 1\nmcpServers: {a: {command: x}}\n",
		"mcpServers: {a: {command: x, \"GITHUB_TOKEN=Zq7vN2kLp9Xw4Rt6Yb8Hc3Jd\": 1}}\n",
		// A key pasted as a key, in formats no service publishes.
		"Zq7vN2kLp9Xw4Rt6Yb8Hc3Jd: 1\nmcpServers: {a: {command: x}}\n",
		"mcpServers: {a: {command: x, Zq7v3f9a1c2e4b6d8f0a1c3e5b7d9f2a: 1}}\n"} {
		c, err := config.Parse("c.yaml", []byte(f), func(string) (string, bool) { return "", false })
		msg := fmt.Sprint(err)
		if c != nil {
			msg += strings.Join(c.Warnings, "|")
		}
		if strings.Contains(msg, "Zq7v") || !strings.Contains(msg, "not quoted") {
			t.Errorf("%q: %s; want the key named without its text", f, msg)
		}
	}
}

// A token written but empty, an empty auth block, or a token written where
// contextd does not read it would leave the daemon open: each is refused,
// for the daemon and its clients alike.
func TestATokenThatIsNotThereIsRefused(t *testing.T) {
	vars := env(map[string]string{"EMPTY": "", "SPACES": "  "})
	for _, body := range []string{
		"auth: { token: ${EMPTY} }",
		"auth: { token: \"${EMPTY}\" }",
		"auth: { token: \"${UNSET:-}\" }",
		"auth: { token: '' }",
		"auth: { token: \"${SPACES}\" }",
		"auth: { token: }",
		"auth: {}",
		"auth:\n  token: &a\n",
		"auth: { token_file: '' }",
		"token: 0123456789abcdef0123",
		"auth_token: 0123456789abcdef0123",
		"Authentication: { token: 0123456789abcdef0123 }",
		"security: { token: 0123456789abcdef0123 }",
		"serve: { auth: { token: 0123456789abcdef0123 } }",
		"mcpServers:\n  fs: { command: x, auth: { token: 0123456789abcdef0123 } }",
		"auth:",
		"auth: ~",
		"auth:\n  # token: 0123456789abcdef0123",
		"{\"auth\": null}",
		"x: &n\nauth: *n",
		"tls: { cert_file: /c.pem, key_file: /k.pem, client_ca_file: '' }",
		"tls: { cert_file: /c.pem, key_file: /k.pem, client_ca_file: }",
		// TLS written, its lines commented out: plain text, token and all.
		"tls:",
		"tls: {}",
		"tls:\n  # cert_file: /c.pem\n  # key_file: /k.pem",
		"{\"tls\": null}",
	} {
		if _, err := config.Parse("c.yaml", []byte(body+"\n"), vars); err == nil {
			t.Errorf("%q: accepted", body)
		} else if strings.Contains(err.Error(), "0123456789abcdef") {
			t.Errorf("%q: error %q quotes the token", body, err)
		}
		if _, err := config.ParseClient("c.yaml", []byte(body+"\n"), vars); err == nil && !strings.Contains(body, "mcpServers") {
			t.Errorf("%q: a client accepted it", body)
		}
	}
}

// Spaces and line breaks around a token (an env file saved with CRLF) are
// no part of it, as in token_file; a character no client can send in a
// header is refused.
func TestTokenIsTrimmedAndPrintable(t *testing.T) {
	c, err := config.Parse("c.yaml", []byte("auth: { token: \"${T}\" }\n"), env(map[string]string{"T": " 0123456789abcdef0123\r\n"}))
	if err != nil || c.Auth.Token != "0123456789abcdef0123" {
		t.Errorf("token %q, %v; want it trimmed", c.Auth.Token, err)
	}
	for _, tok := range []string{"0123456789ab\tcdef0123", "0123456789abcdéf0123", "0123456789abc\x00def0123"} {
		if _, err := config.Parse("c.yaml", []byte("auth: { token: \"${T}\" }\n"), env(map[string]string{"T": tok})); err == nil || !strings.Contains(err.Error(), "printable ASCII") {
			t.Errorf("token %q: %v; want it refused", tok, err)
		}
	}
}

// The commonest mistake, a credential's variable not exported, reads
// whole in a masked log: the field is not written as "Authorization: …".
func TestAnUnsetVariableIsNamedThroughMasking(t *testing.T) {
	for _, field := range []string{
		"headers: { Authorization: \"Bearer ${DOCS_TOKEN}\" }",
		"headers: { X-Api-Key: \"${DOCS_TOKEN}\" }",
		"headers: { Cookie: \"session=${DOCS_TOKEN}\" }",
		"command: x\n    env: { GITHUB_TOKEN: \"${DOCS_TOKEN}\" }",
	} {
		body := "mcpServers:\n  docs:\n    "
		if !strings.HasPrefix(field, "command") {
			body += "url: https://d.example/mcp\n    "
		}
		_, err := config.Parse("c.yaml", []byte(body+field+"\n"), env(nil))
		if err == nil {
			t.Fatalf("%s: accepted", field)
		}
		if got := redact.New().String(err.Error()); !strings.Contains(got, "environment variable DOCS_TOKEN is not set") {
			t.Errorf("%s: masked, the error reads %q", field, got)
		}
	}
	_, err := config.Parse("c.yaml", []byte("auth: { token: \"${CTX_TOKEN}\" }\n"), env(nil))
	if got := redact.New().String(fmt.Sprint(err)); !strings.Contains(got, "environment variable CTX_TOKEN is not set") {
		t.Errorf("auth.token: masked, the error reads %q", got)
	}
}

// A credential pasted where a variable's name goes ("${ghp_…}") is not
// quoted by the error that says it is not set.
func TestAVariableNamedLikeACredentialIsNotQuoted(t *testing.T) {
	for _, name := range []string{"ghp_16C7e42F292c6912E7710c838347Ae178B4a", "Zq8vR2mKp4Tn6Wx9Yb3Hc5", "sk_live_4eC39HqLyjWDarjtT1zdp7dc"} {
		for _, body := range []string{
			"mcpServers:\n  docs: { url: \"https://d.example/mcp\", headers: { Authorization: \"Bearer ${" + name + "}\" } }\n",
			"auth: { token: \"${" + name + "}\" }\n",
		} {
			_, err := config.Parse("c.yaml", []byte(body), env(nil))
			if err == nil || !strings.Contains(err.Error(), "is not set") || strings.Contains(err.Error(), name[4:12]) {
				t.Errorf("%q: %v; want it refused without the name", body, err)
			}
		}
	}
	_, err := config.Parse("c.yaml", []byte("auth: { token: \"${GITHUB_PAT_2024}\" }\n"), env(nil))
	if err == nil || !strings.Contains(err.Error(), "environment variable GITHUB_PAT_2024 is not set") {
		t.Errorf("a name: %v; want it named", err)
	}
}

// Hosts' own keys that mention auth or tokens are not the daemon's token:
// a host's file read as contextd's config loads, with warnings.
func TestHostsAuthKeysAreNotTheDaemonsToken(t *testing.T) {
	for _, body := range []string{
		`{"selectedAuthType": "oauth-personal", "security": {"auth": {"selectedType": "oauth-personal"}}, "mcpServers": {"fs": {"command": "x"}}}`,
		`{"oauthAccount": {"accountUuid": "u", "emailAddress": "a@b.example"}, "mcpServers": {"fs": {"command": "x"}}}`,
		`{"mcpServers": {"c": {"url": "https://c.example/mcp", "auth": {"CLIENT_ID": "id", "CLIENT_SECRET": "s"}}}}`,
		"x-common: &hdr { Authorization: \"Bearer abc\" }\nmcpServers:\n  a: { url: \"https://a.example/mcp\", headers: *hdr }\n",
		"max_tokens: 100\ngithub: { token_scopes: [repo] }\nauthor: me\nauthors: [me]\nmcpServers: { fs: { command: x } }\n",
	} {
		c, err := config.Parse("c.json", []byte(body), env(nil))
		if err != nil {
			t.Errorf("%s: %v", body, err)
			continue
		}
		if len(c.Servers) == 0 || c.Auth.Token != "" {
			t.Errorf("%s: %d servers, token %q", body, len(c.Servers), c.Auth.Token)
		}
	}
}

// A token written under a top-level key ending in "token", or as an
// "authorization", is refused; a token pasted as token_file is not quoted;
// a credential used as an env or header name is not quoted either.
func TestMisplacedTokensAreRefusedUnquoted(t *testing.T) {
	const tok = "ghp_16C7e42F292c6912E7710c838347Ae178B4a"
	for _, body := range []string{
		"CONTEXTD_TOKEN: " + tok, "contextd_token: " + tok, "daemon_token: " + tok, "authorization: \"Bearer " + tok + "\"",
		"auth: { token_file: " + tok + " }",
		"mcpServers:\n  s: { command: x, env: { " + tok + ": \"${NOPE}\" } }",
		"mcpServers:\n  s: { url: \"https://s.example/mcp\", headers: { " + tok + ": \"${NOPE}\" } }",
	} {
		_, err := config.Parse("c.yaml", []byte(body+"\n"), env(nil))
		if err == nil {
			t.Errorf("%q: accepted", body)
		} else if strings.Contains(err.Error(), tok[4:20]) {
			t.Errorf("%q: error %q quotes the token", body, err)
		}
	}
}

// Windsurf names a remote server's url serverUrl.
func TestWindsurfServerURL(t *testing.T) {
	c, err := config.Parse("mcp_config.json", []byte(`{"mcpServers": {"gh": {"serverUrl": "https://gh.example/mcp", "headers": {"Authorization": "Bearer x"}}}}`), env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if s, ok := c.Server("gh"); !ok || s.URL != "https://gh.example/mcp" || s.Transport != config.TransportHTTP {
		t.Errorf("server gh: %+v", s)
	}
}

// Gemini CLI (and Qwen Code) write a Streamable HTTP server's URL as
// httpUrl: the host's file loads with it read as url.
func TestGeminiHTTPURL(t *testing.T) {
	c, err := config.Parse("settings.json", []byte(`{"selectedAuthType": "oauth-personal", "mcpServers": {"api": {"httpUrl": "https://api.example/mcp", "headers": {"Authorization": "Bearer x"}, "timeout": 5000}}}`), env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if s, ok := c.Server("api"); !ok || s.URL != "https://api.example/mcp" || s.Transport != config.TransportHTTP {
		t.Errorf("server api: %+v", s)
	}
}

// A compose-style anchor holder whose name ends in "token" is a value for
// servers to reuse, not the daemon's token written in the wrong place.
func TestAnchorHoldersAreNotTheDaemonsToken(t *testing.T) {
	f := "x-github-token: &ght \"${GITHUB_TOKEN}\"\nmcpServers:\n  gh: { command: x, env: { GITHUB_TOKEN: *ght } }\n"
	c, err := config.Parse("c.yaml", []byte(f), env(map[string]string{"GITHUB_TOKEN": "ghp_4kP0vQ9zXa7LmB2nR8sT"}))
	if err != nil {
		t.Fatal(err)
	}
	if s, ok := c.Server("gh"); !ok || s.Env["GITHUB_TOKEN"] != "ghp_4kP0vQ9zXa7LmB2nR8sT" {
		t.Errorf("server gh: %+v", s)
	}
	if _, err := config.Parse("c.yaml", []byte("x-daemon-token: 0123456789abcdef0123\n"), env(nil)); err == nil {
		t.Error("a token under a marked key without an anchor was accepted")
	}
}
