package redact

import (
	"regexp"
	"strings"
)

// tokenRE matches credentials in the published formats of common services,
// as a word: GitHub (ghp_, gho_, ghu_, ghs_, ghr_, github_pat_), GitLab
// (glpat-), Slack (xoxa-, xoxb-, xoxp-, xoxr-, xoxs-), OpenAI and Anthropic
// (sk-), AWS access key IDs (AKIA, ASIA), Google API keys (AIza), npm
// (npm_), PyPI (pypi-), Stripe (sk_live_, rk_live_, sk_test_), Notion
// (ntn_, secret_), Hugging Face (hf_).
var tokenRE = regexp.MustCompile(`(?:^|[^A-Za-z0-9_])(?:` +
	`gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}|glpat-[A-Za-z0-9_-]{20,}|` +
	`xox[abprs]-[A-Za-z0-9-]{10,}|sk-[A-Za-z0-9_-]{20,}|A(?:KIA|SIA)[A-Z0-9]{16}|AIza[A-Za-z0-9_-]{35}|` +
	`npm_[A-Za-z0-9]{30,}|pypi-[A-Za-z0-9_-]{30,}|[sr]k_(?:live|test)_[A-Za-z0-9]{16,}|` +
	`ntn_[A-Za-z0-9]{30,}|secret_[A-Za-z0-9]{30,}|hf_[A-Za-z0-9]{30,})`)

// TokenShaped reports whether s holds a credential in the published format
// of a common service (a GitHub, GitLab, Slack, OpenAI, AWS, Google, npm,
// PyPI, Stripe, Notion or Hugging Face token), configured or not: a match
// with a run of 16 letters and digits or more, and a digit or both cases
// in it, as random ones have ("sk-learn-tutorial-for-beginners-2024" and
// "glpat-rotation-runbook-v2" are names, not keys). It depends on s alone,
// so it may judge a caller's text: whether it is true says nothing about
// the secrets contextd holds.
func TokenShaped(s string) bool {
	for _, m := range tokenRE.FindAllString(s, -1) {
		random := strings.ContainsAny(m, "0123456789") || strings.ToLower(m) != m && strings.ToUpper(m) != m
		if random && longestAlnumRun(m) >= 16 {
			return true
		}
	}
	return false
}

// longestAlnumRun returns the length of the longest run of ASCII letters
// and digits in s.
func longestAlnumRun(s string) int {
	best, n := 0, 0
	for i := range len(s) {
		c := s[i]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' {
			n++
			best = max(best, n)
		} else {
			n = 0
		}
	}
	return best
}
