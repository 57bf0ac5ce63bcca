package engine

import (
	"slices"
	"testing"
)

// A reload keeps masking and withholding the credentials of earlier
// configurations only while the daemon's environment holds them: rotated
// ones do not add up over reloads.
func TestKeptSecretsAreThoseTheEnvironmentStillHolds(t *testing.T) {
	env := []string{"X_API_KEY=blue-river-stone-lamp!7", "DATABASE_URL=postgres://app:Pw0rd!2024@db/app"}
	got := keptSecrets([]string{"blue-river-stone-lamp!7", "Pw0rd!2024", "rotated-token-0001", "current"}, []string{"current", "new-token-0002"}, env)
	want := []string{"current", "new-token-0002", "blue-river-stone-lamp!7", "Pw0rd!2024"}
	if !slices.Equal(got, want) {
		t.Errorf("kept %q, want %q", got, want)
	}
	for range 1000 {
		got = keptSecrets(got, []string{"current"}, env)
	}
	if len(got) != 3 {
		t.Errorf("after 1,000 reloads: %d secrets (%q)", len(got), got)
	}
}
