package redact_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/contextd/contextd/internal/redact"
)

// BenchmarkStringNonASCII masks a 60 KB Russian error message with 20
// configured secrets, none of them in it: the cost every log line and
// error of a non-Latin server pays.
func BenchmarkStringNonASCII(b *testing.B) {
	var secrets []string
	for i := range 20 {
		secrets = append(secrets, fmt.Sprintf("ghp_%02dAbCdEfGhIjKlMnOpQr", i))
	}
	r := redact.New(secrets...)
	text := strings.Repeat("Ошибка сервера документации: запрос отклонён, повторите попытку позже. ", 500)[:60<<10]
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		_ = r.String(text)
	}
}

// BenchmarkStringCutMarks masks 60 KB of text made of cut marks ("..." or
// "…" after each character or word), with 20 configured secrets, none in
// it: every mark is a place a cut piece of a secret is looked for.
func BenchmarkStringCutMarks(b *testing.B) {
	var secrets []string
	for i := range 20 {
		secrets = append(secrets, fmt.Sprintf("ghp_%02dAbCdEfGhIjKlMnOpQr", i))
	}
	r := redact.New(secrets...)
	for _, c := range []struct{ name, unit string }{
		{"plain", "server error: request refused, try again later please. "},
		{"ascii-dots", "a..."},
		{"ellipsis", "a…"},
		{"cyrillic-ellipsis", "а…"},
	} {
		text := strings.Repeat(c.unit, 60<<10/len(c.unit)+1)[:60<<10]
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(text)))
			for b.Loop() {
				_ = r.String(text)
			}
		})
	}
}

// BenchmarkStringOverrides masks 4 KiB made of right-to-left overrides
// (a stdio server's stderr tail, one word of them or one per word), with
// 20 configured secrets, none in it: each override is read with the word
// it stands in.
func BenchmarkStringOverrides(b *testing.B) {
	var secrets []string
	for i := range 20 {
		secrets = append(secrets, fmt.Sprintf("ghp_%02dAbCdEfGhIjKlMnOpQr", i))
	}
	r := redact.New(secrets...)
	for _, c := range []struct{ name, unit string }{
		{"one-word", "\u202ex\u202c"},
		{"words", "\u202ex\u202c "},
		{"unclosed", "\u202ex"},
	} {
		text := strings.Repeat(c.unit, 4<<10/len(c.unit)+1)[:4<<10]
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(text)))
			for b.Loop() {
				_ = r.String(text)
			}
		})
	}
}

// BenchmarkConfigured masks the configured secrets in 1 MiB of a
// resource's text (markdown prose, none of them in it), with 5 and 20
// configured credentials: what each read of a server's text pays.
func BenchmarkConfigured(b *testing.B) {
	text := strings.Repeat("## Rotating keys\nSet `token=YOUR_TOKEN` in the environment, then call https://api.example.com/v1/keys?page=2 and check the response. ", 8000)[:1<<20]
	for _, n := range []int{5, 20} {
		var secrets []string
		for i := range n {
			secrets = append(secrets, fmt.Sprintf("ghp_%02dAbCdEfGhIjKlMnOpQr", i))
		}
		r := redact.New(secrets...)
		b.Run(fmt.Sprintf("secrets=%d", n), func(b *testing.B) {
			b.SetBytes(int64(len(text)))
			for b.Loop() {
				_ = r.Configured(text)
			}
		})
	}
}

// A text of one character outside ASCII that reads as others ("…" as
// "..."), repeated: each is folded once.
func BenchmarkConfiguredRepeatedCharacter(b *testing.B) {
	text := strings.Repeat("… ", 1<<19)[:1<<20]
	r := redact.New("ghp_Q7xv9KpL2mN4rT8wZ3bY6cD1fH5jA0sE", "sk-live-4f9Qz81XbT", "PassW0rdAlpha9x", "HKEYzz99887766554433aa")
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		_ = r.Configured(text)
	}
}
