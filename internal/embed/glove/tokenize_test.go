package glove

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestTokens(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"", nil},
		{"  ...!? ", nil},
		{"getUserProfile", []string{"get", "user", "profile"}},
		{"read_file", []string{"read", "file"}},
		{"list-dir-entries", []string{"list", "dir", "entries"}},
		{"docs/architecture.md", []string{"docs", "architecture", "md"}},
		{`C:\Users\Me\notes.txt`, []string{"c", "users", "me", "notes", "txt"}},
		{"HTTPServer", []string{"http", "server"}},
		{"parseJSON", []string{"parse", "json"}},
		{"XMLHttpRequest", []string{"xml", "http", "request"}},
		{"utf8 ipv6 mp3", []string{"utf", "8", "ipv", "6", "mp", "3"}},
		{"v2Beta3", []string{"v", "2", "beta", "3"}},
		{"__init__", []string{"init"}},
		{"Read the FILE, now!", []string{"read", "the", "file", "now"}},
		{"ÜberCool naïve", []string{"über", "cool", "naïve"}},
		{"nai\u0308ve", []string{"nai\u0308ve"}}, // a combining mark stays in its word
		{"東京タワー is tall", []string{"東京タワー", "is", "tall"}},
		{"ΑθήναΠόλη", []string{"αθήνα", "πόλη"}},
		{"x\xffy", []string{"x", "y"}}, // invalid UTF-8 separates
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.want, tokens(tt.in)); diff != "" {
			t.Errorf("tokens(%q) mismatch (-want +got):\n%s", tt.in, diff)
		}
	}
}

func TestAppendLower(t *testing.T) {
	for _, s := range []string{"", "abc", "HTTPServer", "ÜberCool", "MixedÄscii", "ΑΘΉΝΑ", "x\xffY"} {
		if got, want := string(appendLower(nil, s)), strings.ToLower(s); got != want {
			t.Errorf("appendLower(%q) = %q, want %q", s, got, want)
		}
	}
}

// TestVocabularyReachable checks that the converter's filter (reachable in
// internal/convert) agrees with the tokeniser: every stored word comes out of
// runs unchanged, so Embed can look it up.
func TestVocabularyReachable(t *testing.T) {
	m, err := load()
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range m.t.Words {
		var got []string
		for r := range runs(w) {
			got = append(got, string(appendLower(nil, r)))
		}
		if len(got) != 1 || got[0] != w {
			t.Fatalf("stored word %q tokenises as %q; regenerate the data or fix the tokeniser", w, got)
		}
	}
}
