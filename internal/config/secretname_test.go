package config

import "testing"

// Names that say key, pat or pass as a word hold credentials as much as
// those that say token: a stdio server must not inherit them, and errors
// must not show them.
func TestSecretNamesIncludeKeyPatAndPass(t *testing.T) {
	for _, name := range []string{"STRIPE_KEY", "X-Key", "Ocp-Apim-Subscription-Key", "stripeKey", "key", "--key", "ADO_PAT", "GITHUB_PAT",
		"SMTP_PASS", "dbPass", "SSH_PASSPHRASE", "WALLET_MNEMONIC", "API_KEY", "X-Api-Key", "GITHUB_TOKEN", "MYSQL_PWD", "Authorization", "AWS_SECRET_ACCESS_KEY",
		"AZURE_STORAGE_CONNECTION_STRING", "MYSQL_DSN", "SUPABASE_JWT", "MEILI_MASTERKEY", "PRIVATEKEY", "WALLET_SEED", "X-Signature", "sig", "AccountKey"} {
		if !secretName.MatchString(name) {
			t.Errorf("%s: not taken for a credential's name", name)
		}
		s := Server{Env: map[string]string{name: "value-0123456789"}}
		if got := s.Secrets(); len(got) == 0 || got[0] != "value-0123456789" {
			t.Errorf("env %s: secrets %q", name, got)
		}
	}
	for _, name := range []string{"PATH", "KEYBOARD", "MONKEY", "PATTERN", "PASSAGE", "HOME", "NODE_ENV", "Accept", "turnkey", "compass", "SIGNAL", "design"} {
		if secretName.MatchString(name) {
			t.Errorf("%s: taken for a credential's name", name)
		}
	}
}
