package template

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestFitsRejectsDotSegmentsForEveryClass(t *testing.T) {
	bad := []string{"..", ".", "../../etc/passwd", "a/../b", `a\..\b`, "a/./b", "x/..",
		"%2e%2e", "%2E%2e/x", ".%2e", "..%2fetc", "..%5cetc", "%252e%252e", "%25252525252e"}
	good := []string{"a..b", "...", "v1.2", "a.b/c", "%41"}
	for _, c := range []Class{ClassAny, ClassID, ClassPath, ClassURL, ClassName} {
		for _, op := range []byte{0, '+', '/', '.', '#', '?'} {
			v := Var{Name: "x", Op: op, Class: c}
			for _, s := range bad {
				if Fits(v, s) {
					t.Errorf("Fits(%s, op %q, %q) = true, want false: a dot segment", c, op, s)
				}
			}
		}
	}
	for _, s := range good {
		if !Fits(Var{Name: "x", Op: '+'}, s) {
			t.Errorf("Fits(any, op '+', %q) = false, want true", s)
		}
	}
}

func TestFitsRejectsDelimitersInReservedExpansion(t *testing.T) {
	for _, op := range []byte{'+', '#'} {
		for _, s := range []string{"secret#", "a?x=1", "#", "a#b"} {
			for _, c := range []Class{ClassAny, ClassPath} {
				if Fits(Var{Name: "p", Op: op, Class: c}, s) {
					t.Errorf("Fits(%s, op %q, %q) = true, want false", c, op, s)
				}
			}
		}
	}
	// Simple and path expansions percent-encode them: allowed.
	for _, op := range []byte{0, '/'} {
		if !Fits(Var{Name: "p", Op: op}, "secret#") {
			t.Errorf("Fits(any, op %q, \"secret#\") = false, want true: it is encoded", op)
		}
	}
}

func TestExpandStaysInsideTheTemplate(t *testing.T) {
	tests := []struct {
		uri    string
		values map[string]string
		want   string // "" for an error
	}{
		{"file:///srv/docs/{+rest}", map[string]string{"rest": "../../etc/passwd"}, ""},
		{"file:///srv/docs/{+rest}", map[string]string{"rest": "%2e%2e/%2e%2e/etc/passwd"}, ""},
		{"file:///srv/docs/{+rest}", map[string]string{"rest": "guides/../../x"}, ""},
		{"file:///srv/docs/{seg}", map[string]string{"seg": ".."}, ""},
		{"x://a{/a,b}", map[string]string{"a": "..", "b": "c"}, ""},
		{"x://{seg}/y", map[string]string{"seg": ".."}, ""},
		{"file:///docs/{+path}.md", map[string]string{"path": "secret#"}, ""},
		{"file:///docs/{+path}.md", map[string]string{"path": "secret?x=1"}, ""},
		// Neither value has a dot segment; with the literal "." between
		// them they make one, and the URI still round-trips.
		{"x://d/{+a}.{+b}", map[string]string{"a": "x/", "b": "/y"}, ""},
		// A root of the server's own: an empty segment, a home directory,
		// a drive, a segment a servlet container or Windows reads as "..".
		{"file:///srv/docs/{+rest}", map[string]string{"rest": "/etc/passwd"}, ""},
		{"file:///srv/docs/{+rest}", map[string]string{"rest": "//etc/passwd"}, ""},
		{"file:///srv/docs/{+rest}", map[string]string{"rest": "a//b"}, ""},
		{"file:///srv/docs/{+rest}", map[string]string{"rest": `\\host\share`}, ""},
		{"file:///srv/docs/{+rest}", map[string]string{"rest": "%2Fetc%2Fpasswd"}, ""},
		{"file:///srv/docs/{name}", map[string]string{"name": "/etc"}, ""},
		{"file:///srv/docs/{+rest}", map[string]string{"rest": "~/.ssh/id_rsa"}, ""},
		{"file:///srv/docs/{+rest}", map[string]string{"rest": "%7E/.ssh/id_rsa"}, ""},
		{"file:///srv/docs/{+rest}", map[string]string{"rest": "C:/Windows/win.ini"}, ""},
		{"file:///srv/docs/{+rest}", map[string]string{"rest": `c:\boot.ini`}, ""},
		{"file:///srv/docs/{+rest}", map[string]string{"rest": "a/..;/b"}, ""},
		{"file:///srv/docs/{+rest}", map[string]string{"rest": "a/.. /b"}, ""},
		{"file:///srv/docs/{+rest}", map[string]string{"rest": "a/C:/Windows/win.ini"}, ""},
		{"file:///srv/docs/{+rest}", map[string]string{"rest": "~user/.ssh/id_rsa"}, ""},
		// Outside the file scheme, a value that starts the path at a
		// root: an empty authority, a separator after the scheme, a
		// drive as the authority.
		{"docs://{+path}", map[string]string{"path": "/etc/passwd"}, ""},
		{"docs://{+path}", map[string]string{"path": "C:/Windows/win.ini"}, ""},
		{"docs://{+path}", map[string]string{"path": "D:Windows/win.ini"}, ""},
		{"docs:{+path}", map[string]string{"path": "/etc/passwd"}, ""},
		{"docs:{+path}", map[string]string{"path": "C:/Windows/win.ini"}, ""},
		{"docs://{path}", map[string]string{"path": "/etc/passwd"}, ""},
		{"docs:{+path}", map[string]string{"path": "//etc/passwd"}, ""},
		{"docs:{+path}", map[string]string{"path": `\\host\share\x.md`}, ""},
		{"docs:{+path}", map[string]string{"path": "D:Windows/win.ini"}, ""},
		{"docs:/{+path}", map[string]string{"path": "/etc/passwd"}, ""},
		{"docs:{+path}", map[string]string{"path": "/%2Fetc/passwd"}, ""},
		{"notes://{+path}", map[string]string{"path": "D:2024/secret.txt"}, ""},
		{"notes://{+path}", map[string]string{"path": ":/etc/passwd"}, ""},
		{"notes://{+path}", map[string]string{"path": ":0/etc/shadow"}, ""},
		{"notes://{+path}", map[string]string{"path": "@/etc/passwd"}, ""},
		{"https://api.example.com{+path}", map[string]string{"path": "@evil.example/x"}, ""},
		{"https://api.example.com{+path}", map[string]string{"path": ":443@evil.example/x"}, ""},
		// Read as a URL parser reads the URI sent, not as it decodes.
		{"https://api.example.com{+path}", map[string]string{"path": `\@evil.example/x`}, ""},
		{"https://api.example.com{+path}", map[string]string{"path": "%2F@evil.example/x"}, ""},
		{"https://api.example.com{+path}", map[string]string{"path": `:443\@evil.example/x`}, ""},
		{"https://bot@api.example.com{+path}", map[string]string{"path": "@evil.example/x"}, ""},
		{"notes://{+path}", map[string]string{"path": `x\@/etc/passwd`}, ""},
		{"notes://{+path}", map[string]string{"path": "x%2F@/etc/passwd"}, ""},
		{"notes://{+path}", map[string]string{"path": ":x/etc/passwd"}, ""},
		{"notes://{+path}", map[string]string{"path": "::/etc/passwd"}, ""},
		{"notes://{+path}", map[string]string{"path": "%09/etc/passwd"}, ""},
		{"file:///srv/docs/{+rest}", map[string]string{"rest": "a/.%09./.%0A./etc/passwd"}, ""},
		// A template whose authority begins with a variable; an empty IP
		// literal; a drive behind user info.
		{"https://{sub}.example.com{+path}", map[string]string{"sub": "acme", "path": "@evil.example/x"}, ""},
		{"https://{user}@api.example.com{+path}", map[string]string{"user": "acme", "path": "@evil.example/x"}, ""},
		{"notes://{+path}", map[string]string{"path": "[]/etc/passwd"}, ""},
		{"notes://{+path}", map[string]string{"path": "x@[]/etc/passwd"}, ""},
		{"notes://{+path}", map[string]string{"path": "user@C:/Windows/win.ini"}, ""},
		{"notes://{+path}", map[string]string{"path": "u@D:2024/x"}, ""},
		// A URL as a value, a Windows file URI's drive, a directory with
		// its slash, a version with a tilde: no root of their own.
		{"fetch://{+url}", map[string]string{"url": "https://example.com/a/b"}, "fetch://https://example.com/a/b"},
		{"web://page/{url}", map[string]string{"url": "https://example.com/a"}, "web://page/https%3A%2F%2Fexample.com%2Fa"},
		{"file:///{+path}", map[string]string{"path": "C:/Users/me/notes.md"}, "file:///C:/Users/me/notes.md"},
		{"x://d/{+dir}/index.md", map[string]string{"dir": "guides/v2"}, "x://d/guides/v2/index.md"},
		{"docs://{+path}", map[string]string{"path": "guides/intro.md"}, "docs://guides/intro.md"},
		{"docs:{+path}", map[string]string{"path": "guides/intro.md"}, "docs:guides/intro.md"},
		{"docs://{host}/a", map[string]string{"host": "h"}, "docs://h/a"},
		// Names with one letter and a colon are no drive mid-path.
		{"notes://{+path}", map[string]string{"path": "2024/q:1-review.md"}, "notes://2024/q:1-review.md"},
		{"k8s://cluster/{+path}", map[string]string{"path": "pods/c:main/logs"}, "k8s://cluster/pods/c:main/logs"},
		{"git://repo/{+ref}", map[string]string{"ref": "refs/tags/v:1"}, "git://repo/refs/tags/v:1"},
		{"fetch:{+url}", map[string]string{"url": "https://example.com/a"}, "fetch:https://example.com/a"},
		{"https://api.example.com{+path}", map[string]string{"path": "/v1/users"}, "https://api.example.com/v1/users"},
		{"notes://{+path}", map[string]string{"path": "team/ab:c/notes.md"}, "notes://team/ab:c/notes.md"},
		{"postgres://{host}/{db}", map[string]string{"host": "db.internal", "db": "app"}, "postgres://db.internal/app"},
		{"docker://{+image}", map[string]string{"image": "nginx@sha256:0123abcd"}, "docker://nginx@sha256:0123abcd"},
		{"notes://{+path}", map[string]string{"path": "[draft]/notes.md"}, "notes://[draft]/notes.md"},
		{"notes://{+path}", map[string]string{"path": "[::1]:8080/health"}, "notes://[::1]:8080/health"},
		{"https://{sub}.example.com{+path}", map[string]string{"sub": "acme", "path": "/v1/users"}, "https://acme.example.com/v1/users"},
		{"notes://{+path}", map[string]string{"path": "alice@team/notes.md"}, "notes://alice@team/notes.md"},
		{"https://bot@api.example.com{+path}", map[string]string{"path": "/v1/users"}, "https://bot@api.example.com/v1/users"},
		{"file://{+path}", map[string]string{"path": "C:/Users/me/notes.md"}, "file://C:/Users/me/notes.md"},
		{"x://d/{+rest}", map[string]string{"rest": "~1.2.3"}, "x://d/~1.2.3"},
		{"fetch://{+url}", map[string]string{"url": "file:///srv/a"}, "fetch://file:///srv/a"},
		{"fetch://{+url}", map[string]string{"url": "https://example.com//etc"}, ""},
		// A template whose own text starts the path, or has "//", may.
		{"file://{+path}", map[string]string{"path": "/etc/hosts"}, "file:///etc/hosts"},
		{"s3://bucket//{+path}", map[string]string{"path": "a/b"}, "s3://bucket//a/b"},
		{"file:///srv/docs/{+rest}", map[string]string{"rest": "guides/intro.md"}, "file:///srv/docs/guides/intro.md"},
		{"file:///srv/docs/{+rest}", map[string]string{"rest": "notes/a~b;v=1.md"}, "file:///srv/docs/notes/a~b;v=1.md"},
		{"file:///docs/{+path}.md", map[string]string{"path": "notes/a..b"}, "file:///docs/notes/a..b.md"},
		{"x://a{/a,b}", map[string]string{"a": "x", "b": "y"}, "x://a/x/y"},
		{"doc://d{#frag}", map[string]string{"frag": "intro"}, "doc://d#intro"},
		{"search://d{?q}", map[string]string{"q": "a?b"}, "search://d?q=a%3Fb"},
	}
	for _, tt := range tests {
		tp := mustParse(t, tt.uri, "", "")
		got, err := tp.Expand(tt.values)
		if tt.want == "" {
			if !errors.Is(err, ErrInvalidValue) {
				t.Errorf("%s %v = %q, %v; want ErrInvalidValue", tt.uri, tt.values, got, err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("%s %v = %q, %v; want %q", tt.uri, tt.values, got, err, tt.want)
		}
	}
}

func TestProposeNeverTraverses(t *testing.T) {
	tp := mustParse(t, "file:///srv/docs/{+rest}", "", "")
	if got := tp.Propose(ParseQuery("docs rest ../../etc/passwd"), 2); got != nil {
		t.Errorf("Propose = %v, want none: the value climbs out of /srv/docs/", got)
	}
	want := []Proposal{{Values: map[string]string{"rest": "guides/intro.md"}, Score: 6}}
	if diff := cmp.Diff(want, tp.Propose(ParseQuery("docs rest guides/intro.md"), 2)); diff != "" {
		t.Errorf("Propose mismatch (-want +got):\n%s", diff)
	}
	md := mustParse(t, "file:///docs/{+path}.md", "", "")
	if got := md.Propose(ParseQuery(`docs path "secret#"`), 2); got != nil {
		t.Errorf("Propose = %v, want none: # would end the path", got)
	}
}
