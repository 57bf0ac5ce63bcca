package template

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/contextd/contextd/internal/resource"
)

func TestExtract(t *testing.T) {
	tests := []struct {
		query string
		want  []Value
	}{
		{"show the profile of user 42", []Value{{"show", KindWord, 0}, {"profile", KindWord, 2}, {"user", KindWord, 4}, {"42", KindNumber, 5}}},
		{"fix ABC-123 (see #77).", []Value{{"fix", KindWord, 0}, {"ABC-123", KindTicket, 1}, {"see", KindWord, 2}, {"77", KindNumber, 3}}},
		{`open "Q3 plan" and src/main.go`, []Value{{"open", KindWord, 0}, {"Q3 plan", KindQuoted, 1}, {"src/main.go", KindPath, 3}}},
		{"read README.md, then https://example.com/a?b=1.", []Value{{"read", KindWord, 0}, {"README.md", KindPath, 1}, {"https://example.com/a?b=1", KindURL, 3}}},
		{"rename getUserName in user_service v2", []Value{{"rename", KindWord, 0}, {"getUserName", KindIdentifier, 1}, {"user_service", KindIdentifier, 3}, {"v2", KindIdentifier, 4}}},
		{"commit 9f86d08 and 123e4567-e89b-12d3-a456-426614174000", []Value{{"commit", KindWord, 0}, {"9f86d08", KindHex, 1}, {"123e4567-e89b-12d3-a456-426614174000", KindHex, 3}}},
		{"it's the user's file", []Value{{"it's", KindWord, 0}, {"user's", KindWord, 2}, {"file", KindWord, 3}}},
		{"e.g. a ... !!", nil},
	}
	for _, tt := range tests {
		t.Run(tt.query, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, Extract(tt.query)); diff != "" {
				t.Errorf("Extract mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func mustParse(t *testing.T, uri, title, desc string) *Template {
	t.Helper()
	tp, err := Parse(resource.Template{Server: "s", URITemplate: uri, Name: title, Title: title, Description: desc})
	if err != nil {
		t.Fatal(err)
	}
	return tp
}

func TestParseClassifiesVariables(t *testing.T) {
	tests := []struct {
		uri, desc string
		want      []Var
	}{
		{"users://{id}/profile", "", []Var{{Name: "id", Class: ClassID}}},
		{"file:///{+path}", "", []Var{{Name: "path", Op: '+', Class: ClassPath}}},
		{"repo://{owner}/{repo}/issues/{issue_number}{?page}", "", []Var{
			{Name: "owner", Class: ClassName}, {Name: "repo", Class: ClassName},
			{Name: "issue_number", Class: ClassID}, {Name: "page", Op: '?', Optional: true, Class: ClassAny},
		}},
		{"db://{userId}/{fileName}", "", []Var{{Name: "userId", Class: ClassID}, {Name: "fileName", Class: ClassName}}},
		{"weather://{city}", "", []Var{{Name: "city", Class: ClassName}}},
		{"orders://{x}", "An order by its number", []Var{{Name: "x", Class: ClassID}}},
		{"q://{x}", "Anything", []Var{{Name: "x", Class: ClassAny}}},
	}
	for _, tt := range tests {
		t.Run(tt.uri, func(t *testing.T) {
			tp := mustParse(t, tt.uri, "", tt.desc)
			if diff := cmp.Diff(tt.want, tp.Vars); diff != "" {
				t.Errorf("Vars mismatch (-want +got):\n%s", diff)
			}
		})
	}
	for _, bad := range []string{"users://{id", "fixed://no/vars"} {
		if _, err := Parse(resource.Template{URITemplate: bad}); err == nil {
			t.Errorf("Parse(%q) = nil error", bad)
		}
	}
}

func TestFits(t *testing.T) {
	id, path, url, name := Var{Class: ClassID}, Var{Class: ClassPath}, Var{Class: ClassURL}, Var{Class: ClassName}
	tests := []struct {
		v     Var
		value string
		want  bool
	}{
		{id, "42", true}, {id, "ABC-123", true}, {id, "a b", false}, {id, "../x", false}, {id, "", false},
		{path, "src/main.go", true}, {path, "../../etc/passwd", false}, {path, "a/../b", false}, {path, "http://x/y", false},
		{path, "a\x00b", false}, {url, "https://example.com/a", true}, {url, "example.com", false},
		{name, "alice", true}, {name, "Q3 plan", true}, {name, "a/b", false}, {name, "-rf", false},
		{Var{}, string(make([]byte, 300)), false}, {Var{}, "\xff", false},
	}
	for _, tt := range tests {
		if got := Fits(tt.v, tt.value); got != tt.want {
			t.Errorf("Fits(%s, %q) = %v, want %v", tt.v.Class, tt.value, got, tt.want)
		}
	}
}

func TestExpand(t *testing.T) {
	tests := []struct {
		uri    string
		values map[string]string
		want   string
		err    bool
	}{
		{"users://{id}/profile", map[string]string{"id": "42"}, "users://42/profile", false},
		{"file:///{path}", map[string]string{"path": "src/main.go"}, "file:///src%2Fmain.go", false}, // RFC 6570 §3.2.2: "/" is escaped
		{"file:///{+path}", map[string]string{"path": "src/main.go"}, "file:///src/main.go", false},
		{"repo://{owner}/{repo}{?page}", map[string]string{"owner": "golang", "repo": "go"}, "repo://golang/go", false},
		{"repo://{owner}/{repo}{?page}", map[string]string{"owner": "golang", "repo": "go", "page": "2"}, "repo://golang/go?page=2", false},
		{"users://{id}/profile", map[string]string{}, "", true},                                     // required variable missing
		{"users://{id}/profile", map[string]string{"id": "a b"}, "", true},                          // fails Fits
		{"users://{id}/profile", map[string]string{"id": "4", "x": "1"}, "", true},                  // no such variable
		{"file:///{+path}", map[string]string{"path": "../secrets"}, "", true},                      // traversal
		{"x://{+path}/raw", map[string]string{"path": "a/raw/b"}, "x://a/raw/b/raw", false},         // round-trips
		{"file:///{+path}", map[string]string{"path": "C:/Users/me"}, "file:///C:/Users/me", false}, // a Windows file URI
		{"x://{+a}{+b}", map[string]string{"a": "ab", "b": "cd"}, "", true},                         // ambiguous: does not round-trip
		{"users://{id}/profile", map[string]string{"id": "x:1"}, "users://x%3A1/profile", false},    // reserved character escaped
	}
	for _, tt := range tests {
		tp := mustParse(t, tt.uri, "", "")
		got, err := tp.Expand(tt.values)
		if tt.err {
			if !errors.Is(err, ErrInvalidValue) {
				t.Errorf("%s %v: err = %v, want ErrInvalidValue", tt.uri, tt.values, err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("%s %v = %q, %v; want %q", tt.uri, tt.values, got, err, tt.want)
		}
	}
}

func TestPropose(t *testing.T) {
	tests := []struct {
		name, uri, title, query string
		want                    []Proposal
	}{
		{
			name: "number next to the template's word", uri: "users://{id}/profile", title: "User profile",
			query: "show the profile of user 42",
			want:  []Proposal{{Values: map[string]string{"id": "42"}, Score: 9}},
		},
		{
			name: "a number anywhere fits an id, with less evidence", uri: "users://{id}/profile", title: "User profile",
			query: "what happened in 2024",
			want:  []Proposal{{Values: map[string]string{"id": "2024"}, Score: 6}},
		},
		{
			name: "no value of the shape", uri: "users://{id}/profile", title: "User profile",
			query: "show the profile of user alice",
		},
		{
			name: "a plain word next to the variable's name is weak", uri: "users://{username}", title: "User",
			query: "the account of user alice",
			want: []Proposal{ // both to be confirmed; the one right after "user" first
				{Values: map[string]string{"username": "alice"}, Weak: []string{"username"}, Score: 5},
				{Values: map[string]string{"username": "account"}, Weak: []string{"username"}, Score: 4},
			},
		},
		{
			name: "a word of the template is not a value", uri: "users://{username}/profile", title: "User profile",
			query: "profile of user alice",
			want:  []Proposal{{Values: map[string]string{"username": "alice"}, Weak: []string{"username"}, Score: 5}},
		},
		{
			name: "a plain word far from any hint is no value", uri: "users://{username}", title: "User",
			query: "alice wants the account settings page",
		},
		{
			name: "path", uri: "file:///{+path}", title: "Project files",
			query: "explain the file internal/engine/rank.go please",
			want:  []Proposal{{Values: map[string]string{"path": "internal/engine/rank.go"}, Score: 9}},
		},
		{
			name: "traversal is never proposed", uri: "file:///{+path}", title: "Project files",
			query: "read ../../etc/passwd",
		},
		{
			name: "ticket id", uri: "jira://issue/{key}", title: "Issue",
			query: "summarise issue PROJ-481 for me",
			want:  []Proposal{{Values: map[string]string{"key": "PROJ-481"}, Score: 9}},
		},
		{
			name: "two variables, distinct values, optional one left out", uri: "repo://{owner}/{repo}/issues/{number}{?page}", title: "Issue",
			query: "issue 12 in owner contextd repo main_repo",
			want: []Proposal{
				// "contextd" is a plain word: a name only if the server confirms it.
				{Values: map[string]string{"owner": "contextd", "repo": "main_repo", "number": "12"}, Weak: []string{"owner"}, Score: 29},
				{Values: map[string]string{"owner": "main_repo", "repo": "contextd", "number": "12"}, Weak: []string{"repo"}, Score: 25},
			},
		},
		{
			name: "optional variable named next to its value", uri: "log://{service}{?page}", title: "Service log",
			query: "log of api_gateway page 3",
			want:  []Proposal{{Values: map[string]string{"service": "api_gateway", "page": "3"}, Score: 14}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tp := mustParse(t, tt.uri, tt.title, "")
			got := tp.Propose(ParseQuery(tt.query), 2)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Propose mismatch (-want +got):\n%s", diff)
			}
			for _, p := range got {
				if _, err := tp.Expand(p.Values); err != nil {
					t.Errorf("proposal %v does not expand: %v", p.Values, err)
				}
			}
		})
	}
}

func TestMatchesWindowsFileURIsAndURLValues(t *testing.T) {
	for _, tc := range []struct {
		tmpl, uri string
		want      bool
	}{
		{"file:///{+path}", "file:///C:/Users/me/notes.md", true},
		{"fetch://{+url}", "fetch://https://example.com/a?x=1", false}, // "?" the template does not have
		{"fetch://{+url}", "fetch://https://example.com/a/b", true},
		{"file:///srv/{+path}", "file:///srv/a/C:/Windows", false},
		{"file:///srv/{+path}", "file:///srv//etc/passwd", false},
		{"docs://{+path}", "docs:///etc/passwd", false},
		{"docs://{+path}", "docs://C:/Windows/win.ini", false},
		{"docs:{+path}", "docs://etc/passwd", false},
		{"docs://{+path}", "docs://guides/intro.md", true},
	} {
		if got := mustParse(t, tc.tmpl, "", "").Matches(tc.uri); got != tc.want {
			t.Errorf("%s Matches(%q) = %v, want %v", tc.tmpl, tc.uri, got, tc.want)
		}
	}
}

func TestMatches(t *testing.T) {
	tests := []struct {
		tmpl, uri string
		want      bool
	}{
		{"users://{id}/profile", "users://42/profile", true},
		{"users://{id}/profile", "users://42/settings", false},
		{"users://{id}/profile", "users://a%2Fb/profile", false}, // not an id
		{"file:///srv/docs/{+rest}", "file:///srv/docs/guide/intro.md", true},
		{"file:///srv/docs/{+rest}", "file:///srv/docs/../secrets/.env", false},
		{"file:///srv/docs/{+rest}", "file:///srv/docs/%2e%2e/x", false},
		{"file:///srv/docs/{+rest}", "file:///etc/passwd", false},
		{"file:///srv/docs/{+rest}", "file:///srv/docs/a?b=c", false},
	}
	for _, tt := range tests {
		tp, err := Parse(resource.Template{URITemplate: tt.tmpl, Name: "t"})
		if err != nil {
			t.Fatal(err)
		}
		if got := tp.Matches(tt.uri); got != tt.want {
			t.Errorf("%s Matches %q = %v, want %v", tt.tmpl, tt.uri, got, tt.want)
		}
	}
}
