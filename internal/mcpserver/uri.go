package mcpserver

import (
	"errors"
	"fmt"
	"strings"

	"github.com/contextd/contextd/internal/resource"
)

// Scheme is the URI scheme of every resource contextd re-exposes.
const Scheme = "contextd"

// resourcePrefix starts every namespaced resource URI; ContextTemplate is
// the resource template of assembled context.
const (
	resourcePrefix   = Scheme + ":resource/"
	resourceTemplate = Scheme + ":resource/{server}/{+uri}"
	// ContextTemplate is the URI template of assembled context: reading
	// contextd:context?task=…&budget=… assembles for the task.
	ContextTemplate = Scheme + ":context{?task,budget}"
	contextPrefix   = Scheme + ":context"
)

// ResourceURI returns the namespaced URI of an upstream resource:
//
//	contextd:resource/<server>/<uri>
//
// The server name is percent-encoded except for RFC 3986 unreserved
// characters (so it holds no "/"); the upstream URI is percent-encoded
// except for unreserved characters and those a URI path may hold literally
// (":", "/", "@", "!", "$", "&", "'", "(", ")", "*", "+", ",", ";", "=").
// Everything else — "%", "?", "#", spaces, control characters and every
// byte of a non-ASCII character — is encoded as %XX (upper-case hex), so
// ParseResourceURI returns the server name and URI byte for byte, and the
// result is a valid URI with an opaque path that URL parsers leave as it is
// (no dot-segment removal, no fragment, no query).
func ResourceURI(k resource.Key) string {
	var b strings.Builder
	b.Grow(len(resourcePrefix) + len(k.Server) + len(k.URI) + 8)
	b.WriteString(resourcePrefix)
	escape(&b, k.Server, false)
	b.WriteByte('/')
	escape(&b, k.URI, true)
	return b.String()
}

// errNotOurs is wrapped by ParseResourceURI's errors.
var errNotOurs = errors.New("not a contextd resource URI")

// ParseResourceURI inverts ResourceURI. It accepts any percent-encoding of
// the same bytes (lower-case hex, or characters encoded that need not be).
//
// Errors (wrapping errNotOurs): another scheme or form, no "/" after the
// server, an empty server or URI, or a malformed %XX escape.
func ParseResourceURI(s string) (resource.Key, error) {
	rest, ok := strings.CutPrefix(s, resourcePrefix)
	if !ok {
		return resource.Key{}, fmt.Errorf("%w: %q does not start with %q", errNotOurs, s, resourcePrefix)
	}
	server, uri, ok := strings.Cut(rest, "/")
	if !ok {
		return resource.Key{}, fmt.Errorf("%w: %q has no \"/\" between the server name and the upstream URI", errNotOurs, s)
	}
	var err error
	k := resource.Key{}
	if k.Server, err = unescape(server); err != nil {
		return resource.Key{}, fmt.Errorf("%w: %q: server name: %v", errNotOurs, s, err)
	}
	if k.URI, err = unescape(uri); err != nil {
		return resource.Key{}, fmt.Errorf("%w: %q: upstream URI: %v", errNotOurs, s, err)
	}
	if k.Server == "" || k.URI == "" {
		return resource.Key{}, fmt.Errorf("%w: %q: empty server name or upstream URI", errNotOurs, s)
	}
	return k, nil
}

const upperhex = "0123456789ABCDEF"

func escape(b *strings.Builder, s string, path bool) {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if unreserved(c) || (path && strings.IndexByte(":/@!$&'()*+,;=", c) >= 0) {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(upperhex[c>>4])
		b.WriteByte(upperhex[c&15])
	}
}

func unreserved(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~'
}

func unescape(s string) (string, error) {
	if !strings.Contains(s, "%") {
		return s, nil
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		if s[i] != '%' {
			b.WriteByte(s[i])
			continue
		}
		if i+2 >= len(s) || unhex(s[i+1]) < 0 || unhex(s[i+2]) < 0 {
			return "", fmt.Errorf("malformed escape at byte %d", i)
		}
		b.WriteByte(byte(unhex(s[i+1])<<4 | unhex(s[i+2])))
		i += 2
	}
	return b.String(), nil
}

func unhex(c byte) int {
	switch {
	case '0' <= c && c <= '9':
		return int(c - '0')
	case 'a' <= c && c <= 'f':
		return int(c-'a') + 10
	case 'A' <= c && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}
