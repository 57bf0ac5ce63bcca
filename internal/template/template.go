// Package template turns values found in a task query into resources of an
// MCP server's resource templates (MCP 2025-11-25, Resources § Resource
// Templates): it extracts candidate values from the query (numbers, quoted
// strings, paths, URLs, identifiers, ticket ids, words), matches them to the
// variables of an RFC 6570 URI template by the variable's name and the
// template's words, validates them against the variable's shape, and expands
// the template with github.com/yosida95/uritemplate/v3.
//
// The package is pure: asking the server to confirm a value
// (completion/complete) is the caller's job, and [Proposal.Weak] says which
// values need it.
package template

import (
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/yosida95/uritemplate/v3"

	"github.com/contextd/contextd/internal/redact"

	"github.com/contextd/contextd/internal/lexical"
	"github.com/contextd/contextd/internal/resource"
)

// A Class is what a template variable holds, judged from its name and, for
// names that say nothing, from the template's title and description.
type Class int

// Classes.
const (
	ClassAny  Class = iota // the name says nothing: "city", "q"
	ClassID                // "id", "userId", "issue_number", "sha", "key"
	ClassPath              // "path", "file", "filename", "dir"
	ClassURL               // "url", "uri", "link"
	ClassName              // "name", "user", "owner", "repo", "branch", "table"
)

func (c Class) String() string {
	switch c {
	case ClassID:
		return "id"
	case ClassPath:
		return "path"
	case ClassURL:
		return "url"
	case ClassName:
		return "name"
	}
	return "any"
}

var (
	idWords = words("id ids uuid guid key number num no nr sha hash commit rev revision version " +
		"ticket issue pr index idx code serial")
	pathWords = words("path paths file files filename filepath dir directory folder glob route location")
	urlWords  = words("url uri href link endpoint")
	nameWords = words("name username user login owner org organization organisation repo repository " +
		"project package pkg module table schema database db branch tag slug topic channel team label " +
		"namespace service bucket title handle collection category language lang symbol function " +
		"class method type author email account customer product city country region")
)

func words(s string) map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(s) {
		m[w] = true
	}
	return m
}

// A Var is one variable of a URI template.
type Var struct {
	Name string
	// Op is the RFC 6570 §2.2 operator of the expression holding the
	// variable: 0 (simple string expansion), '+', '#', '.', '/', ';', '?'
	// or '&'.
	Op byte
	// Optional is true for form-style query and path-parameter expressions
	// ('?', '&', ';', and the '#' fragment): an undefined variable expands
	// to nothing there (RFC 6570 §3.2.1) and the URI still names a
	// resource. Every other variable must have a value.
	Optional bool
	Class    Class
}

// A Template is a parsed resource template.
type Template struct {
	resource.Template
	Vars    []Var
	tmpl    *uritemplate.Template
	anchors map[string]bool // stemmed words of the URI's literal parts, name and title
	// varWords holds the stemmed words of each variable's name, as Vars.
	varWords []map[string]bool
}

var reExpr = regexp.MustCompile(`\{([^{}]*)\}`)

// Bounds on what Parse takes: matching a URI against a template costs in
// proportion to its variables and more than linearly in the URI's length
// (the library copies every capture per step), and each request parses
// every template of the servers in scope.
const (
	// MaxTemplateBytes bounds t.URITemplate.
	MaxTemplateBytes = 1024
	// MaxVars bounds a template's variables.
	MaxVars = 32
	// maxClassifyBytes is how much of the title and description classify
	// reads.
	maxClassifyBytes = 4096
	// MaxMatchBytes bounds the URIs Matches considers and Expand gives.
	MaxMatchBytes = 512
)

// Parse parses t.URITemplate (RFC 6570, levels 1–4).
//
// Errors: the library's parse error, a template without variables (a
// fixed URI is a resource, not a template), or one longer than
// MaxTemplateBytes or with more than MaxVars variables.
func Parse(t resource.Template) (*Template, error) {
	if len(t.URITemplate) > MaxTemplateBytes {
		return nil, fmt.Errorf("template %q: longer than %d bytes", redact.Clip(t.URITemplate, 64), MaxTemplateBytes)
	}
	ut, err := uritemplate.New(t.URITemplate)
	if err != nil {
		return nil, fmt.Errorf("template %q: %w", t.URITemplate, err)
	}
	out := &Template{Template: t, tmpl: ut, anchors: map[string]bool{}}
	text := lexical.Words(strings.ToLower(cutText(t.Title+" "+t.Description, maxClassifyBytes)))
	seen := map[string]bool{}
	for _, m := range reExpr.FindAllStringSubmatch(t.URITemplate, -1) {
		expr := m[1]
		var op byte
		if expr != "" && strings.IndexByte("+#./;?&", expr[0]) >= 0 {
			op, expr = expr[0], expr[1:]
		}
		for _, spec := range strings.Split(expr, ",") {
			name, _, _ := strings.Cut(strings.TrimSuffix(spec, "*"), ":")
			if name == "" || seen[name] {
				continue
			}
			seen[name] = true
			out.Vars = append(out.Vars, Var{
				Name: name, Op: op, Optional: op == '?' || op == '&' || op == ';' || op == '#',
				Class: classify(name, text),
			})
		}
	}
	if len(out.Vars) == 0 {
		return nil, fmt.Errorf("template %q has no variables", t.URITemplate)
	}
	if len(out.Vars) > MaxVars {
		return nil, fmt.Errorf("template %q has %d variables, more than %d", t.URITemplate, len(out.Vars), MaxVars)
	}
	// The literal parts (scheme included: "users://{id}"), the name and the
	// title are the words a query uses next to a value for this template.
	for _, s := range []string{reExpr.ReplaceAllString(t.URITemplate, " "), t.Name, t.Title} {
		for _, w := range lexical.Tokenize(s) {
			out.anchors[w] = true
		}
	}
	for _, v := range out.Vars {
		words := map[string]bool{}
		for _, w := range lexical.Tokenize(v.Name) {
			words[w] = true
		}
		out.varWords = append(out.varWords, words)
	}
	return out, nil
}

// classify judges a variable's class from its name's words ("userId" →
// user, id: the last word decides, so userId is an id and fileName a
// name), then from the template's title and description.
func classify(name string, text []string) Class {
	ws := lexical.Words(name)
	for i := len(ws) - 1; i >= 0; i-- {
		if c := classOfWord(ws[i]); c != ClassAny {
			return c
		}
	}
	for _, w := range text {
		switch {
		case w == "id" || w == "identifier" || w == "number":
			return ClassID
		case pathWords[w]:
			return ClassPath
		}
	}
	return ClassAny
}

func classOfWord(w string) Class {
	switch {
	case idWords[w]:
		return ClassID
	case pathWords[w]:
		return ClassPath
	case urlWords[w]:
		return ClassURL
	case nameWords[w]:
		return ClassName
	}
	return ClassAny
}

// Raw returns the URI template as the server wrote it.
func (t *Template) Raw() string { return t.URITemplate }

var (
	reIDValue   = regexp.MustCompile(`^[\p{L}\p{N}][\p{L}\p{N}._:+-]*$`)
	reNameValue = regexp.MustCompile(`^[\p{L}\p{N}][\p{L}\p{N} ._@+'’-]*$`)
)

// Fits reports whether value may fill v: non-empty, at most 256 bytes of
// valid UTF-8 without control characters, no "." or ".." segment (between
// "/" or "\", also percent-encoded: "%2e%2e", "..%2f"), not starting, once
// decoded, with a home directory ("~", "~/.ssh", "~user/": a server may
// expand it), no "#" or "?" for
// a reserved or fragment expansion ({+path}, {#frag}: they would pass
// unencoded and end the path), and of v's shape:
//
//   - ClassID: letters, digits and . _ : + - , no spaces ("42", "ABC-123", "9f86d08");
//   - ClassPath: no NUL, not a URL ("src/main.go", "/etc/hosts");
//   - ClassURL: an absolute URL with a scheme and a host or path;
//   - ClassName: letters, digits, spaces and . _ @ + ' - ("alice", "api-gateway", "Q3 plan");
//   - ClassAny: anything else these rules allow.
func Fits(v Var, value string) bool {
	if value == "" || len(value) > maxValueBytes || !utf8.ValidString(value) ||
		strings.IndexFunc(value, unicode.IsControl) >= 0 || HasDotSegment(value) || rooted(value) {
		return false
	}
	if (v.Op == '+' || v.Op == '#') && strings.ContainsAny(value, "#?") {
		return false
	}
	switch v.Class {
	case ClassID:
		return reIDValue.MatchString(value)
	case ClassPath:
		if strings.Contains(value, "://") {
			return false
		}
		return strings.IndexFunc(value, func(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }) >= 0
	case ClassURL:
		u, err := url.Parse(value)
		return err == nil && u.Scheme != "" && (u.Host != "" || u.Path != "") && !strings.ContainsAny(value, " \t")
	case ClassName:
		return reNameValue.MatchString(value) && len(value) <= 128
	}
	return true
}

// maxDecodes bounds how many times HasDotSegment percent-decodes.
const maxDecodes = 4

// reHome matches a value that starts with a home directory: "~", "~/…",
// "~user/…" (a shell's or Python's expanduser reads it so), but not
// "~1.2.3".
var reHome = regexp.MustCompile(`^~([^/\\]*[/\\]|$)`)

// rooted reports whether s, percent-decoded, starts with a home directory.
func rooted(s string) bool { return reHome.MatchString(decoded(s)) }

// decoded returns s percent-decoded until nothing changes, at most
// maxDecodes times.
func decoded(s string) string {
	for range maxDecodes {
		d := percentDecode(s)
		if d == s {
			break
		}
		s = d
	}
	return s
}

func isSep(c byte) bool { return c == '/' || c == '\\' }

// reDriveSeg matches a Windows drive as a path segment ("/C:/", "\\d:"):
// not "/q:1-review.md" or "/c:main", honest names a drive-relative
// "D:Windows" cannot be told from (that one counts where a path begins,
// see reDriveAuthority).
var reDriveSeg = regexp.MustCompile(`[/\\][A-Za-z]:([/\\]|$)`)

// reDriveAuthority matches a drive where a URL's authority begins
// ("docs://C:/Windows", "docs://D:Windows"), not a one-letter name and a
// number ("users://x%3A1/profile" has the id "x:1"); reDriveStart, for
// the text as written, any drive ("notes://D:2024/x").
var (
	reDriveAuthority = regexp.MustCompile(`^[A-Za-z]:([^0-9]|$)`)
	reDriveStart     = regexp.MustCompile(`^[A-Za-z]:`)
)

// roots counts the places in uri, percent-decoded, where a server building
// a path from it may find a root of its own: two separators ("/" or "\")
// meeting other than in a scheme's "://" or ":///" (an empty segment:
// "/srv/docs/" + "/etc/passwd" reads as /etc/passwd to Python's
// os.path.join, "\\host\share" is a network path), and a drive ("C:")
// as any path segment but the first (file:///C:/Users is a Windows path;
// file:///srv/docs/C:/Windows climbs out). Outside the file scheme, whose
// URIs name absolute paths by definition, a path that begins at a root
// counts too: an empty authority ("docs:///etc/passwd"), a separator
// right after the scheme ("docs:/etc/passwd"), a drive as the authority
// or the first segment ("docs://C:/Windows", "docs:C:/Windows"): a server
// that strips "docs://" and joins the rest onto its own root reads an
// absolute path there. A URL inside the URI ("fetch://{+url}" with
// "https://example.com/a") adds none.
func roots(uri string) int {
	d := decoded(uri)
	n := 0
	for i := 0; i+1 < len(d); i++ {
		// "scheme://" and the empty authority of "scheme:///" are no root.
		if isSep(d[i]) && isSep(d[i+1]) && (i == 0 || d[i-1] != ':') && (i < 2 || d[i-2] != ':' || !isSep(d[i-1])) {
			n++
		}
	}
	// The path: after "scheme://authority", or after "scheme:".
	path := d
	scheme, rest, hier := strings.Cut(d, "://")
	if hier {
		if i := strings.IndexAny(rest, "/\\"); i >= 0 {
			path = rest[i:]
		} else {
			path = ""
		}
	} else if i := strings.IndexByte(d, ':'); i >= 0 {
		scheme, rest = d[:i], d[i+1:]
		path = "/" + rest
	}
	// What follows the scheme as written: a drive there whose colon is
	// not percent-encoded is one even before digits ("D:2024/x").
	raw := uri
	if _, r, ok := strings.Cut(uri, "://"); ok && hier {
		raw = r
	} else if i := strings.IndexByte(uri, ':'); i >= 0 && !hier {
		raw = uri[i+1:]
	}
	file := strings.EqualFold(scheme, "file")
	if !file && rest != "" && (isSep(rest[0]) || reDriveAuthority.MatchString(rest) || reDriveStart.MatchString(raw) ||
		hier && (emptyHost(rest) || emptyHost(raw) || reDriveAuthority.MatchString(afterUserInfo(rest)) || reDriveStart.MatchString(afterUserInfo(raw)))) {
		n++
	}
	for _, m := range reDriveSeg.FindAllStringIndex(path, -1) {
		if !file || strings.TrimLeft(path[:m[0]], "/\\") != "" { // not the first segment of a file path
			n++
		}
	}
	return n
}

// emptyHost reports whether the authority that begins rest (what follows
// "://") has user info or a port but no host ("docs://:/etc/passwd",
// "docs://@/etc/passwd", "docs://:x/etc/passwd"): a server joining host
// and path reads an absolute path. The host is what follows the last "@"
// up to the first ":" (as Python's urlsplit reads it), outside an IPv6
// literal.
func emptyHost(rest string) bool {
	if rest == "" || isSep(rest[0]) {
		return false // no authority at all: counted as a root elsewhere
	}
	auth := rest
	if i := strings.IndexAny(rest, "/\\?#"); i >= 0 {
		auth = rest[:i]
	}
	if i := strings.LastIndexByte(auth, '@'); i >= 0 {
		auth = auth[i+1:]
	}
	if strings.HasPrefix(auth, "[") {
		// An IP literal: "[]" is no host.
		lit, _, _ := strings.Cut(auth[1:], "]")
		return strings.Trim(lit, "\t\r\n ") == ""
	}
	host, _, _ := strings.Cut(auth, ":")
	return strings.Trim(host, "\t\r\n") == ""
}

// afterUserInfo returns rest (what follows "://") from its host on: after
// the last "@" of its authority ("user@C:/Windows" reads as the drive).
func afterUserInfo(rest string) string {
	auth := rest
	if i := strings.IndexAny(rest, "/\\?#"); i >= 0 {
		auth = rest[:i]
	}
	if i := strings.LastIndexByte(auth, '@'); i >= 0 {
		return rest[i+1:]
	}
	return rest
}

// rawAuthority returns the authority of uri as written, cut at the first
// "/", "\\", "?" or "#" that is not percent-encoded: what a URL parser
// reads, which the decoded form may cut earlier ("api.example.com%5C@evil"
// is user info and the host evil).
func rawAuthority(uri string) string {
	_, rest, _ := strings.Cut(uri, "://")
	if i := strings.IndexAny(rest, "/\\?#"); i >= 0 {
		rest = rest[:i]
	}
	return rest
}

// authority returns the authority of uri, percent-decoded ("host:port" in
// "https://host:port/a"), and whether it has one.
func authority(uri string) (string, bool) {
	_, rest, ok := strings.Cut(decoded(uri), "://")
	if i := strings.IndexAny(rest, "/\\?#"); i >= 0 {
		rest = rest[:i]
	}
	return rest, ok
}

// madeAuthority reports whether the values made an authority where the
// template has none: "docs:{+path}" with "//etc/passwd" gives
// "docs://etc/passwd", which a server stripping "docs:" reads as
// /etc/passwd (or, on Windows, a network path). base is the expansion
// with every value "x". A URL value after the scheme ("fetch:{+url}" with
// "https://…") makes none.
func madeAuthority(uri, base string) bool {
	scheme, _, ok := strings.Cut(base, ":")
	if !ok || strings.HasPrefix(base[len(scheme):], "://") {
		return false
	}
	d := decoded(uri)
	rest, ok := strings.CutPrefix(d, scheme+":")
	return ok && len(rest) >= 2 && isSep(rest[0]) && isSep(rest[1])
}

// HasDotSegment reports whether s, percent-decoded up to maxDecodes times
// (a server may decode more than once), has a "." or ".." segment between
// "/" or "\" (RFC 3986 §5.2.4: such a segment climbs out of where the
// template put the value; "..;x" and ".. " count), or is still
// percent-encoded after that many decodings.
func HasDotSegment(s string) bool {
	for i := 0; ; i++ {
		for _, seg := range strings.FieldsFunc(s, func(r rune) bool { return r == '/' || r == '\\' }) {
			// Servlet containers drop a segment's ";parameters", and
			// Windows a name's trailing spaces: "..;" and ".. " climb too.
			seg, _, _ = strings.Cut(seg, ";")
			// URL parsers (WHATWG, Python's urlsplit) drop tabs and line
			// breaks: ".\t." is "..".
			seg = strings.Map(func(r rune) rune {
				if r == '\t' || r == '\r' || r == '\n' {
					return -1
				}
				return r
			}, seg)
			if seg = strings.TrimRight(seg, " "); seg == "." || seg == ".." {
				return true
			}
		}
		d := percentDecode(s)
		if d == s {
			return false
		}
		if i == maxDecodes {
			return true
		}
		s = d
	}
}

// percentDecode decodes every well-formed %XX triplet of s and leaves the
// rest as it is.
func percentDecode(s string) string {
	if !strings.Contains(s, "%") {
		return s
	}
	unhex := func(c byte) (byte, bool) {
		switch {
		case '0' <= c && c <= '9':
			return c - '0', true
		case 'a' <= c && c <= 'f':
			return c - 'a' + 10, true
		case 'A' <= c && c <= 'F':
			return c - 'A' + 10, true
		}
		return 0, false
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '%' && i+2 < len(s) {
			if hi, ok := unhex(s[i+1]); ok {
				if lo, ok := unhex(s[i+2]); ok {
					b.WriteByte(hi<<4 | lo)
					i += 2
					continue
				}
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// ErrInvalidValue is wrapped by Expand's errors for a value that fails Fits,
// a missing required variable, or an expansion that does not round-trip.
var ErrInvalidValue = errors.New("invalid template value")

// Expand expands the template with values (variable → value), RFC 6570 §3,
// and checks the result: every value Fits its variable, every required
// variable has a value, matching the URI against the template gives the
// values back (so a value cannot spill into another variable or the
// literal parts), the URI before its query and fragment has no "." or ".."
// segment, even percent-encoded (so it cannot climb out of the template's
// literal prefix: file:///srv/docs/{+rest} stays under /srv/docs/), nor an
// empty segment ("//", "\\") or a drive segment past the first ("C:") that
// the template itself does not make (see roots), and it
// has a query or a fragment only where the template has one. Variables
// absent from values stay undefined.
//
// Errors: ErrInvalidValue (wrapped, naming the variable), or the library's.
func (t *Template) Expand(values map[string]string) (string, error) {
	uv := uritemplate.Values{}
	for _, v := range t.Vars {
		val, ok := values[v.Name]
		if !ok {
			if !v.Optional {
				return "", fmt.Errorf("%w: %s: variable %q has no value", ErrInvalidValue, t.URITemplate, v.Name)
			}
			continue
		}
		if !Fits(v, val) {
			return "", fmt.Errorf("%w: %s: %q does not fit variable %q (%s)", ErrInvalidValue, t.URITemplate, val, v.Name, v.Class)
		}
		uv.Set(v.Name, uritemplate.String(val))
	}
	for name := range values {
		if !slices.ContainsFunc(t.Vars, func(v Var) bool { return v.Name == name }) {
			return "", fmt.Errorf("%w: %s has no variable %q", ErrInvalidValue, t.URITemplate, name)
		}
	}
	uri, err := t.tmpl.Expand(uv)
	if err != nil {
		return "", fmt.Errorf("template %q: expand: %w", t.URITemplate, err)
	}
	if len(uri) > MaxMatchBytes || strings.IndexFunc(uri, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0 {
		return "", fmt.Errorf("%w: %s: expansion %q is not a usable URI", ErrInvalidValue, t.URITemplate, uri)
	}
	hier, _, _ := strings.Cut(uri, "#")
	hier, _, _ = strings.Cut(hier, "?")
	if HasDotSegment(hier) {
		return "", fmt.Errorf("%w: %s: expansion %q has a dot segment", ErrInvalidValue, t.URITemplate, uri)
	}
	// The values may not add a root the template does not have
	// (file:///srv/docs/{+rest} with "/etc/passwd" or "C:/Windows").
	plain := uritemplate.Values{}
	for name := range uv {
		plain.Set(name, uritemplate.String("x"))
	}
	if base, err := t.tmpl.Expand(plain); err == nil {
		bh, _, _ := strings.Cut(base, "#")
		bh, _, _ = strings.Cut(bh, "?")
		if roots(hier) > roots(bh) || madeAuthority(hier, bh) {
			return "", fmt.Errorf("%w: %s: expansion %q has an empty segment or a drive", ErrInvalidValue, t.URITemplate, uri)
		}
		// Where the template writes a host of its own, the values may
		// not put user info before it ("https://api.example.com{+path}"
		// with "@evil.example/x", ":443@evil.example/x" or, read as a
		// URL parser does, "%5C@evil.example/x": evil.example becomes the
		// host). Where the value is the whole authority (docker://{+image}
		// with "nginx@sha256:…") an "@" is its own.
		other := uritemplate.Values{}
		for name := range uv {
			other.Set(name, uritemplate.String("y"))
		}
		if a, ok := authority(bh); ok {
			if b, err := t.tmpl.Expand(other); err == nil {
				// Unless one value is the whole authority.
				if a2, _ := authority(b); a != "x" || a2 != "y" {
					got, _ := authority(hier)
					if strings.Count(got, "@") > strings.Count(a, "@") || strings.Count(rawAuthority(hier), "@") > strings.Count(a, "@") {
						return "", fmt.Errorf("%w: %s: expansion %q puts user info in the authority", ErrInvalidValue, t.URITemplate, uri)
					}
				}
			}
		}
	}
	for _, c := range "?#" {
		if strings.ContainsRune(uri, c) && !strings.ContainsRune(t.URITemplate, c) {
			return "", fmt.Errorf("%w: %s: expansion %q has a %q the template does not", ErrInvalidValue, t.URITemplate, uri, c)
		}
	}
	back := t.tmpl.Match(uri)
	for name, val := range values {
		if got := back.Get(name); !got.Valid() || got.String() != val {
			return "", fmt.Errorf("%w: %s: %q for variable %q does not survive expansion (%q)", ErrInvalidValue, t.URITemplate, val, name, uri)
		}
	}
	return uri, nil
}

// Matches reports whether uri is what Expand gives for some values: the
// template matches it (RFC 6570 in reverse), and expanding the values it
// yields passes Expand's checks (every value fits its variable, no dot
// segment, the expansion round-trips) and gives uri back byte for byte. A
// pinned URI that Matches a server's template is one the server offers.
//
// A URI longer than MaxMatchBytes, or not starting with the template's
// literal prefix, does not match.
func (t *Template) Matches(uri string) bool {
	if !t.MayMatch(uri) {
		return false
	}
	m := t.tmpl.Match(uri)
	if m == nil {
		return false
	}
	values := map[string]string{}
	for _, v := range t.Vars {
		if x := m.Get(v.Name); x.Valid() && x.T == uritemplate.ValueTypeString {
			values[v.Name] = x.String()
		}
	}
	got, err := t.Expand(values)
	return err == nil && got == uri
}

// MayMatch reports whether uri passes Matches' cheap checks: it is at most
// MaxMatchBytes long and starts with the template's literal prefix.
func (t *Template) MayMatch(uri string) bool {
	return len(uri) <= MaxMatchBytes && strings.HasPrefix(uri, literalPrefix(t.URITemplate))
}

// literalPrefix returns the start of a template that every expansion
// starts with as it is: its literal text before the first expression, up
// to the first character an expansion would percent-encode.
func literalPrefix(tmpl string) string {
	for i := 0; i < len(tmpl); i++ {
		if c := tmpl[i]; c <= ' ' || c >= 0x7f || strings.IndexByte("\"<>\\^`{|}", c) >= 0 {
			return tmpl[:i]
		}
	}
	return tmpl
}

// cutText returns the longest prefix of s of at most n bytes that does not
// split a UTF-8 sequence.
func cutText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
