package mcpserver

import (
	"net/url"
	"strings"
	"testing"

	"github.com/contextd/contextd/internal/resource"
)

func TestResourceURIRoundTripsServerAndURIByteForByte(t *testing.T) {
	for _, k := range []resource.Key{
		{Server: "everything", URI: "demo://resource/static/document/architecture.md"},
		{Server: "docs", URI: "file:///srv/My Notes/Überblick 50%25 done.md"},
		{Server: "docs", URI: "file:///a/b?query=1&x=y#frag"},
		{Server: "a/b c", URI: "x:%2F%2e%2E/../. /ü日本#?%"},
		{Server: "ünï cødé", URI: "urn:isbn:0451450523"},
		{Server: "s", URI: "https://example.com/a%20b/c+d;e=f@g:h!$&'()*,"},
		{Server: "s", URI: "bin:\x00\x01\x7f\xff\xfe"}, // not UTF-8, still bytes
		{Server: "%", URI: "%"},
	} {
		got := ResourceURI(k)
		if !strings.HasPrefix(got, "contextd:resource/") {
			t.Errorf("ResourceURI(%q) = %q, want the contextd:resource/ prefix", k, got)
		}
		if strings.ContainsAny(got, " #?%\x00\x7f") && strings.ContainsAny(strings.ReplaceAll(got, "%", ""), " #?\x00\x7f") {
			t.Errorf("ResourceURI(%q) = %q keeps a space, #, ? or control byte literal", k, got)
		}
		for i := 0; i < len(got); i++ {
			if got[i] >= 0x80 {
				t.Errorf("ResourceURI(%q) = %q has a non-ASCII byte at %d", k, got, i)
				break
			}
		}
		u, err := url.Parse(got)
		if err != nil {
			t.Errorf("ResourceURI(%q) = %q is not a URI Go parses: %v", k, got, err)
		} else if u.Scheme != Scheme || u.Fragment != "" || u.RawQuery != "" {
			t.Errorf("ResourceURI(%q) = %q parses to scheme %q, query %q, fragment %q; want %q and none", k, got, u.Scheme, u.RawQuery, u.Fragment, Scheme)
		}
		back, err := ParseResourceURI(got)
		if err != nil {
			t.Errorf("ParseResourceURI(%q): %v", got, err)
			continue
		}
		if back != k {
			t.Errorf("round trip of %q via %q = %q", k, got, back)
		}
	}
}

func TestParseResourceURIAcceptsOtherEncodingsAndRejectsOthers(t *testing.T) {
	k, err := ParseResourceURI("contextd:resource/every%74hing/demo:%2f%2Fx%20y")
	if err != nil || k != (resource.Key{Server: "everything", URI: "demo://x y"}) {
		t.Errorf("lower-case and needless escapes: got %q, %v", k, err)
	}
	for _, bad := range []string{
		"demo://resource/x",                  // not ours
		"contextd:context?task=x",            // the template, not a resource
		"contextd:resource/everything",       // no upstream URI
		"contextd:resource//demo://x",        // empty server
		"contextd:resource/everything/",      // empty URI
		"contextd:resource/everything/a%zzb", // bad escape
		"contextd:resource/everything/a%2",   // cut escape
	} {
		if k, err := ParseResourceURI(bad); err == nil {
			t.Errorf("ParseResourceURI(%q) = %q, want an error", bad, k)
		}
	}
}

func FuzzResourceURI(f *testing.F) {
	f.Add("everything", "demo://resource/static/document/architecture.md")
	f.Add("a/b", "file:///x y/%41#?ü")
	f.Fuzz(func(t *testing.T, server, uri string) {
		if server == "" || uri == "" {
			return
		}
		k := resource.Key{Server: server, URI: uri}
		s := ResourceURI(k)
		if _, err := url.Parse(s); err != nil {
			t.Fatalf("ResourceURI(%q) = %q does not parse: %v", k, s, err)
		}
		back, err := ParseResourceURI(s)
		if err != nil || back != k {
			t.Fatalf("round trip of %q via %q = %q, %v", k, s, back, err)
		}
	})
}
