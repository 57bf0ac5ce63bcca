package redact

import (
	"regexp"
	"strings"
)

// tokenRE matches credentials in the published formats of common services,
// as a word: GitHub (ghp_, gho_, ghu_, ghs_, ghr_, github_pat_), GitLab
// (glpat-), Slack (xoxa-, xoxb-, xoxp-, xoxr-, xoxs-), OpenAI and Anthropic
// (sk-), Google API keys (AIza), npm (npm_), PyPI (pypi-), Stripe
// (sk_live_, rk_live_, sk_test_), Notion (ntn_, secret_), Hugging Face
// (hf_). AWS access key IDs (awsKeyRE) have a length of their own.
var tokenRE = regexp.MustCompile(`(?:^|[^A-Za-z0-9_])(?:` +
	`gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}|glpat-[A-Za-z0-9_-]{20,}|` +
	`xox[abprs]-[A-Za-z0-9-]{10,}|sk-[A-Za-z0-9_-]{20,}|AIza[A-Za-z0-9_-]{35}|` +
	`npm_[A-Za-z0-9]{30,}|pypi-[A-Za-z0-9_-]{30,}|[sr]k_(?:live|test)_[A-Za-z0-9]{16,}|` +
	`ntn_[A-Za-z0-9]{30,}|secret_[A-Za-z0-9]{30,}|hf_[A-Za-z0-9]{30,})`)

// awsKeyRE matches an AWS access key ID (AKIA or ASIA and 16 capitals or
// digits) as a whole word: "ASIA2024Q1SALESREPORTS" is a name.
var awsKeyRE = regexp.MustCompile(`(?:^|[^A-Za-z0-9_])A(?:KIA|SIA)[A-Z0-9]{16}(?:$|[^A-Za-z0-9_])`)

// TokenShaped reports whether s holds a credential in the published format
// of a common service (a GitHub, GitLab, Slack, OpenAI, AWS, Google, npm,
// PyPI, Stripe, Notion or Hugging Face token), configured or not: a match
// whose longest run of letters and digits is 16 long or more and looks
// random, not like words ("sk-learn-tutorial-for-beginners-2024",
// "secret_santa2024GiftExchangeIdeas" and "glpat-rotation-runbook-v2" are
// names, not keys; see randomRun). It depends on s alone, so it may judge a
// caller's text: whether it is true says nothing about the secrets
// contextd holds.
func TokenShaped(s string) bool {
	for _, m := range awsKeyRE.FindAllString(s, -1) {
		if strings.ContainsAny(m, "0123456789") {
			return true
		}
	}
	for _, m := range tokenRE.FindAllString(s, -1) {
		if randomRun(longestAlnumRun(m)) {
			return true
		}
	}
	return false
}

// randomRun reports whether run looks generated rather than written: 16
// letters and digits or more, with a digit or both cases, and under 85% of
// its letters in words. run is cut into segments where it changes between
// lower case, upper case and digits (an upper-case letter starting a
// lower-case run stays with it: "Gift"); a segment of letters is a word
// when it has three letters or more and a vowel in every four, or is two
// letters, the second lower-case, one a vowel ("On", "My"). Names such as
// "santa2024GiftExchangeIdeasList" or "2024Q1SALESREPORTS" are all words;
// random base-62 text is taken for words about once in 250 at 36
// characters (a GitHub token), once in 60 at 24; 32 hex digits once in
// 150. Names of acronyms ("SQLInjectionXSSReport") are taken for keys.
func randomRun(run string) bool {
	if len(run) < 16 || !strings.ContainsAny(run, "0123456789") && (strings.ToLower(run) == run || strings.ToUpper(run) == run) {
		return false
	}
	letters, words := 0, 0
	for start := 0; start < len(run); {
		end := start + 1
		for end < len(run) && (charClass(run[end]) == charClass(run[end-1]) || charClass(run[end-1]) == 1 && charClass(run[end]) == 0) {
			end++
		}
		seg := run[start:end]
		start = end
		if charClass(seg[0]) == 2 {
			continue
		}
		letters += len(seg)
		vowels := 0
		for k := range len(seg) {
			switch seg[k] | 0x20 {
			case 'a', 'e', 'i', 'o', 'u', 'y':
				vowels++
			}
		}
		if len(seg) >= 3 && vowels*4 >= len(seg) || len(seg) == 2 && vowels == 1 && charClass(seg[1]) == 0 {
			words += len(seg)
		}
	}
	return words*20 < letters*17
}

// charClass returns 0 for a lower-case ASCII letter, 1 for an upper-case
// one, 2 for a digit.
func charClass(c byte) int {
	switch {
	case 'a' <= c && c <= 'z':
		return 0
	case 'A' <= c && c <= 'Z':
		return 1
	}
	return 2
}

// longestAlnumRun returns the longest run of ASCII letters and digits in s
// (the first of those as long).
func longestAlnumRun(s string) string {
	best, start := "", 0
	for i := 0; i <= len(s); i++ {
		if i < len(s) {
			c := s[i]
			if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' {
				continue
			}
		}
		if i-start > len(best) {
			best = s[start:i]
		}
		start = i + 1
	}
	return best
}
