package config

import (
	"fmt"
	"net/url"
	"strings"
)

// StoreEmbedded is the store: value for the default: the index in
// data_dir, nothing to run.
const StoreEmbedded = "embedded"

// parseStore validates the store: key: absent or "embedded" keeps the
// index in data_dir; a postgres:// or postgresql:// URL (${VAR} references
// expanded, so a password can come from the environment) makes that
// database the mirror shared by every replica configured with it. Errors
// never quote the URL's password.
func (c *Config) parseStore(raw string, lookup func(string) (string, bool)) error {
	if raw == "" || raw == StoreEmbedded {
		return nil
	}
	ex := expander{lookup: lookup}
	v := ex.str("store", raw)
	if ex.err != nil {
		return ex.err
	}
	if !strings.Contains(v, "://") && strings.Contains(v, "=") {
		// A keyword connection string: a quoted password may hold
		// spaces, so none of it is quoted.
		return fmt.Errorf("field store: not %q or a postgres:// URL (a keyword connection string such as \"host=… password=…\" is not read: write postgres://user:password@host/db)", StoreEmbedded)
	}
	u, err := url.Parse(v)
	if err != nil {
		return fmt.Errorf("field store: not %q or a postgres:// URL (it does not parse as a URL)", StoreEmbedded)
	}
	if u.Scheme != "postgres" && u.Scheme != "postgresql" {
		return fmt.Errorf("field store: %q is not %q or a postgres:// or postgresql:// URL", urlShown(v), StoreEmbedded)
	}
	if u.Host == "" && !strings.Contains(u.RawQuery, "host=") {
		return fmt.Errorf("field store: %q names no host", urlShown(v))
	}
	c.Store = v
	return nil
}

// Secrets returns every credential c holds: each server's (Server.Secrets,
// also of servers the file disables), the store's, the remote embedder's
// and the daemon's auth.token. contextd
// masks them in what it shows, keeps them out of stdio servers'
// environments and out of template values.
func (c *Config) Secrets() []string {
	var out []string
	for _, srv := range c.Servers {
		out = append(out, srv.Secrets()...)
	}
	out = append(out, c.disabledSecrets...)
	out = append(out, c.StoreSecrets()...)
	out = append(out, c.EmbedderSecrets()...)
	if c.Auth.Token != "" {
		out = append(out, c.Auth.Token)
	}
	return out
}

// StoreSecrets returns the credentials in Store (its password, and a
// password= parameter), for redaction.
func (c *Config) StoreSecrets() []string {
	if c.Store == "" {
		return nil
	}
	var out []string
	if p := StorePassword(c.Store); p != "" {
		out = append(out, withDecoded(p)...)
	}
	u, err := url.Parse(c.Store)
	if err != nil {
		return out
	}
	if p, ok := u.User.Password(); ok && p != "" {
		out = append(out, p)
	}
	for k, vs := range u.Query() {
		if strings.Contains(strings.ToLower(k), "password") {
			for _, p := range vs {
				if p != "" {
					out = append(out, p)
				}
			}
		}
	}
	return out
}

// StorePassword returns the password written in a database URL's user
// info, as its writer meant it: what stands between the first ":" after
// "://" and the last "@" of the URL ("postgres://app:2024#Winter!@db/x" →
// "2024#Winter!", which pgx reads so and Go's parser does not;
// "postgres://app:42/Answer!x@db/x" → "42/Answer!x"), as written (not
// percent-decoded); "" when there is none.
func StorePassword(raw string) string {
	_, rest, ok := strings.Cut(raw, "://")
	if !ok {
		return ""
	}
	at := strings.LastIndex(rest, "@")
	if at < 0 {
		return ""
	}
	_, pass, ok := strings.Cut(rest[:at], ":")
	if !ok {
		return ""
	}
	return pass
}

// KeepServers drops from c.Servers those keep refuses (a run limited to some
// servers, contextd's own MCP server), keeping their credentials among
// Secrets: they are still the user's, to mask and to withhold from the
// servers that run.
func (c *Config) KeepServers(keep func(Server) bool) {
	kept := c.Servers[:0:0]
	for _, s := range c.Servers {
		if keep(s) {
			kept = append(kept, s)
		} else {
			c.disabledSecrets = append(c.disabledSecrets, s.Secrets()...)
		}
	}
	c.Servers = kept
}
