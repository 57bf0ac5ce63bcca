package config_test

import (
	"slices"
	"testing"

	"github.com/contextd/contextd/internal/config"
)

// A URL's words are the query values under names no credential has and
// its long path segments; its password and credential-named values are
// not.
func TestURLWordsLeaveCredentialsOut(t *testing.T) {
	s := config.Server{URL: "https://app:Winter2024@api.example.com/mcp/ws7f3a9c21b4e5d6a8ab?api-version=2024-10-21&api_key=K123456789x&region=eu-west-1"}
	got := s.URLWords()
	for _, want := range []string{"2024-10-21", "eu-west-1", "ws7f3a9c21b4e5d6a8ab"} {
		if !slices.Contains(got, want) {
			t.Errorf("URLWords() = %q, want %q in it", got, want)
		}
	}
	for _, cred := range []string{"Winter2024", "K123456789x"} {
		if slices.Contains(got, cred) {
			t.Errorf("URLWords() = %q holds the credential %q", got, cred)
		}
		if !slices.Contains(s.Secrets(), cred) {
			t.Errorf("Secrets() = %q, want %q in it", s.Secrets(), cred)
		}
	}
}
