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
}

var reExpr = regexp.MustCompile(`\{([^{}]*)\}`)

// Parse parses t.URITemplate (RFC 6570, levels 1–4).
//
// Errors: the library's parse error, or a template without variables (a
// fixed URI is a resource, not a template).
func Parse(t resource.Template) (*Template, error) {
	ut, err := uritemplate.New(t.URITemplate)
	if err != nil {
		return nil, fmt.Errorf("template %q: %w", t.URITemplate, err)
	}
	out := &Template{Template: t, tmpl: ut, anchors: map[string]bool{}}
	text := strings.ToLower(t.Title + " " + t.Description)
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
	// The literal parts (scheme included: "users://{id}"), the name and the
	// title are the words a query uses next to a value for this template.
	for _, s := range []string{reExpr.ReplaceAllString(t.URITemplate, " "), t.Name, t.Title} {
		for _, w := range lexical.Tokenize(s) {
			out.anchors[w] = true
		}
	}
	return out, nil
}

// classify judges a variable's class from its name's words ("userId" →
// user, id: the last word decides, so userId is an id and fileName a
// name), then from the template's title and description.
func classify(name, text string) Class {
	ws := lexical.Words(name)
	for i := len(ws) - 1; i >= 0; i-- {
		if c := classOfWord(ws[i]); c != ClassAny {
			return c
		}
	}
	for _, w := range lexical.Words(text) {
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
// valid UTF-8 without control characters, and of v's shape:
//
//   - ClassID: letters, digits and . _ : + - , no spaces ("42", "ABC-123", "9f86d08");
//   - ClassPath: no ".." segment, no NUL, not a URL ("src/main.go", "/etc/hosts");
//   - ClassURL: an absolute URL with a scheme and a host or path;
//   - ClassName: letters, digits, spaces and . _ @ + ' - ("alice", "api-gateway", "Q3 plan");
//   - ClassAny: anything else these rules allow.
func Fits(v Var, value string) bool {
	if value == "" || len(value) > maxValueBytes || !utf8.ValidString(value) ||
		strings.IndexFunc(value, unicode.IsControl) >= 0 {
		return false
	}
	switch v.Class {
	case ClassID:
		return reIDValue.MatchString(value)
	case ClassPath:
		if strings.Contains(value, "://") {
			return false
		}
		for _, seg := range strings.FieldsFunc(value, func(r rune) bool { return r == '/' || r == '\\' }) {
			if seg == ".." {
				return false
			}
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

// ErrInvalidValue is wrapped by Expand's errors for a value that fails Fits,
// a missing required variable, or an expansion that does not round-trip.
var ErrInvalidValue = errors.New("invalid template value")

// maxURIBytes bounds an expanded URI.
const maxURIBytes = 2048

// Expand expands the template with values (variable → value), RFC 6570 §3,
// and checks the result: every value Fits its variable, every required
// variable has a value, and matching the URI against the template gives
// the values back (so a value cannot spill into another variable or the
// literal parts). Variables absent from values stay undefined.
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
	if len(uri) > maxURIBytes || strings.IndexFunc(uri, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0 {
		return "", fmt.Errorf("%w: %s: expansion %q is not a usable URI", ErrInvalidValue, t.URITemplate, uri)
	}
	back := t.tmpl.Match(uri)
	for name, val := range values {
		if got := back.Get(name); !got.Valid() || got.String() != val {
			return "", fmt.Errorf("%w: %s: %q for variable %q does not survive expansion (%q)", ErrInvalidValue, t.URITemplate, val, name, uri)
		}
	}
	return uri, nil
}
