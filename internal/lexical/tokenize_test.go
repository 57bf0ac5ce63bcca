package lexical

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
)

func TestTokenize(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []string
	}{
		{"empty", "", nil},
		{"only punctuation", " -_/.:;!? ", nil},
		{"plain words", "Read the Config file", []string{"read", "config", "file"}},
		{"camelCase", "getUserProfile", []string{"get", "user", "profile"}},
		{"PascalCase", "GetUserProfile", []string{"get", "user", "profile"}},
		{"acronym then word", "HTTPServer", []string{"http", "server"}},
		{"word then acronym", "parseJSON", []string{"parse", "json"}},
		{"acronym in the middle", "newHTTPClientFor", []string{"new", "http", "client"}},
		{"plural acronym", "listURIs", []string{"list", "uri"}},
		{"plural acronym then word", "URIsForUser", []string{"uri", "user"}},
		{"acronym with digit", "HTTP2Server", []string{"http2", "server"}},
		{"snake_case", "user_profile_id", []string{"user", "profile", "id"}},
		{"SCREAMING_SNAKE", "MAX_TOKEN_BUDGET", []string{"max", "token", "budget"}},
		{"kebab-case", "server-everything", []string{"server", "everything"}},
		{"dotted name", "io.github.contextd", []string{"io", "github", "contextd"}},
		{"file URI", "file:///docs/architecture.md", []string{"file", "doc", "architecture", "md"}},
		// The S-stemmer conflates https with http; harmless, both are noise.
		{"https URI", "https://example.com/api/v2/users?id=7#top", []string{"http", "example", "com", "api", "v2", "user", "id", "7", "top"}},
		{"mime type", "application/vnd.api+json", []string{"application", "vnd", "api", "json"}},
		{"version", "v2", []string{"v2"}},
		{"utf8", "utf8", []string{"utf8"}},
		{"digits stay with letters", "sha256 base64 k8s 2fa", []string{"sha256", "base64", "k8s", "2fa"}},
		{"digit then camel", "utf8Decode", []string{"utf8", "decode"}},
		{"numbers", "3.14 and 2025-01-02", []string{"3", "14", "2025", "01", "02"}},
		{"German", "Größe der Datei", []string{"größe", "der", "datei"}},
		{"German capitals are not stemmed", "Ausgaben", []string{"ausgaben"}},
		{"Cyrillic", "Привет, Мир", []string{"привет", "мир"}},
		{"Japanese bigrams", "日本語", []string{"日本", "本語"}},
		{"single Han", "日", []string{"日"}},
		{"katakana with prolonged mark", "データ", []string{"デー", "ータ"}},
		{"CJK next to Latin", "日本語API", []string{"日本", "本語", "api"}},
		{"Korean bigrams", "한국어", []string{"한국", "국어"}},
		{"Devanagari keeps marks", "हिन्दी", []string{"हिन्दी"}},
		{"emoji separate words", "🚀launch🚀day", []string{"launch", "day"}},
		{"emoji only", "🚀🎉", nil},
		{"ZWJ emoji sequence", "👩‍💻 developer", []string{"developer"}},
		{"apostrophe elided", "user's don’t", []string{"user", "dont"}},
		{"stop words removed", "what is the status of it", []string{"status"}},
		{"only stop words are kept", "The The", []string{"the", "the"}},
		{"plurals", "queries files classes status", []string{"query", "file", "classe", "status"}},
		{"short acronyms not stemmed", "dns tls aws", []string{"dns", "tls", "aws"}},
		{"invalid UTF-8 separates", "foo\xffbar", []string{"foo", "bar"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Tokenize(tt.in)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Tokenize(%q) mismatch (-want +got):\n%s", tt.in, diff)
			}
		})
	}
}

func TestStem(t *testing.T) {
	tests := []struct{ in, want string }{
		{"files", "file"},
		{"queries", "query"},
		{"policies", "policy"},
		{"ties", "tie"},
		{"plays", "play"},
		{"keys", "key"},
		{"class", "class"},
		{"status", "status"},
		{"uris", "uri"},
		{"dns", "dns"},
		{"ids", "ids"},
		{"file", "file"},
		{"größes", "größes"}, // not ASCII: untouched
		{"k8s", "k8s"},
		{"данные", "данные"},
		{"", ""},
	}
	for _, tt := range tests {
		if got := Stem(tt.in); got != tt.want {
			t.Errorf("Stem(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func FuzzTokenize(f *testing.F) {
	for _, s := range []string{
		"", "getUserProfile", "HTTPServer", "file:///docs/architecture.md", "Größe",
		"日本語テキスト", "🚀👩‍💻", "the of and", "user's", "\xff\xfe", "İstanbul ǅemal",
		"a\u0301b", "ⅫⅪ", "ß", "ﬃ", "\u0345", "x'", "'s",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		toks := Tokenize(s)
		for _, tok := range toks {
			if tok == "" {
				t.Fatalf("Tokenize(%q) returned an empty token in %q", s, toks)
			}
			if strings.ToLower(tok) != tok {
				t.Fatalf("Tokenize(%q) returned non-lowercase token %q", s, tok)
			}
			if !utf8.ValidString(tok) {
				t.Fatalf("Tokenize(%q) returned invalid UTF-8 %q", s, tok)
			}
		}
		if strings.ContainsFunc(s, isWordRune) && len(toks) == 0 {
			t.Fatalf("Tokenize(%q) dropped every token", s)
		}
		if again := Tokenize(s); !cmp.Equal(toks, again) {
			t.Fatalf("Tokenize(%q) not deterministic: %q then %q", s, toks, again)
		}
	})
}

func TestWordsKeepsEveryWordUnstemmed(t *testing.T) {
	for in, want := range map[string]string{
		"get_latest_news":   "get latest news",
		"whatIsTheStatus":   "what is the status",
		"HTTPServer.config": "http server config",
		"天気予報":              "天気予報",
		"":                  "",
	} {
		if got := strings.Join(Words(in), " "); got != want {
			t.Errorf("Words(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestTokenizeQueryAddsCompounds(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{"sync.WaitGroup", []string{"sync", "wait", "group", "waitgroup"}},
		{"getUserProfile", []string{"get", "user", "profile", "getuserprofile"}},
		{"compute the SHA-256 checksum", []string{"compute", "sha", "256", "sha256", "checksum"}},
		{"UTF-8, not 2025-01-02", []string{"utf", "8", "utf8", "2025", "01", "02"}},
		{"read a file line by line", []string{"read", "file", "line", "line"}},
	} {
		if diff := cmp.Diff(tc.want, TokenizeQuery(tc.in)); diff != "" {
			t.Errorf("TokenizeQuery(%q) (-want +got):\n%s", tc.in, diff)
		}
	}
	// Documents keep their terms: a text's BM25 length does not grow.
	if diff := cmp.Diff([]string{"sync", "wait", "group", "sha", "256"}, Tokenize("sync.WaitGroup SHA-256")); diff != "" {
		t.Errorf("Tokenize (-want +got):\n%s", diff)
	}
}

// A query naming a thing as people write it finds the document whose URI
// writes it as one word.
func TestQueryCompoundsMatchOneWordNames(t *testing.T) {
	x := New(nil)
	x.Upsert(Doc{ID: "sha256", URI: "file:///src/crypto/sha256/sha256.go"}, Doc{ID: "sha512", URI: "file:///src/crypto/sha512/sha512.go"})
	hits := x.Search("compute the SHA-256 checksum of a file", 2, nil)
	if len(hits) == 0 || hits[0].ID != "sha256" {
		t.Errorf("hits %+v, want sha256 first", hits)
	}
}
