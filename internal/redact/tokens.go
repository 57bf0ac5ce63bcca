package redact

import (
	"regexp"
	"strings"
)

// tokenFormats are the published formats of common services' credentials:
// a prefix, then the random part's shape. tokenRE matches any of them as a
// word; tokenPrefixRE finds which prefix starts a match, so the part after
// it can be judged (generated). A prefix must not also start another
// format listed before it (tokenPrefixRE takes the first that matches).
var tokenFormats = []struct{ service, prefix, body string }{
	{"GitHub", `gh[pousr]_`, `[A-Za-z0-9]{20,}`},
	{"GitHub fine-grained", `github_pat_`, `[A-Za-z0-9_]{20,}`},
	{"GitLab", `glpat-`, `[A-Za-z0-9_-]{20,}`},
	{"GitLab other tokens", `gl(?:ptt|dt|rt|cbt|ft|imt|soat|agent)-`, `[A-Za-z0-9_-]{20,}`},
	{"Slack", `xox[abprs]-`, `[A-Za-z0-9-]{10,}`},
	{"Slack app", `xapp-[0-9]-`, `[A-Za-z0-9-]{20,}`},
	{"OpenAI, Anthropic, DeepSeek, OpenRouter", `sk-`, `[A-Za-z0-9_-]{20,}`},
	{"Google API", `AIza`, `[A-Za-z0-9_-]{35}`},
	{"Google OAuth client secret", `GOCSPX-`, `[A-Za-z0-9_-]{24,}`},
	{"Google OAuth access token", `ya29\.`, `[A-Za-z0-9_-]{30,}`},
	{"npm", `npm_`, `[A-Za-z0-9]{30,}`},
	{"PyPI", `pypi-`, `[A-Za-z0-9_-]{30,}`},
	{"Stripe", `[sr]k_(?:live|test)_`, `[A-Za-z0-9]{16,}`},
	{"Stripe webhook", `whsec_`, `[A-Za-z0-9+/=]{24,}`},
	{"ElevenLabs", `sk_`, `[a-f0-9]{40,}`},
	{"Notion", `ntn_`, `[A-Za-z0-9]{30,}`},
	{"Notion (older)", `secret_`, `[A-Za-z0-9]{30,}`},
	{"Hugging Face", `hf_`, `[A-Za-z0-9]{30,}`},
	{"DigitalOcean", `do[opr]_v1_`, `[a-f0-9]{64}`},
	{"Groq", `gsk_`, `[A-Za-z0-9]{40,}`},
	{"Linear", `lin_api_`, `[A-Za-z0-9]{32,}`},
	{"Shopify", `shp(?:at|ss|ca|pa)_`, `[a-fA-F0-9]{32}`},
	{"Grafana", `glsa_`, `[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}`},
	{"Grafana Cloud", `glc_`, `[A-Za-z0-9+/=]{32,}`},
	{"Replicate", `r8_`, `[A-Za-z0-9]{30,}`},
	{"Perplexity", `pplx-`, `[A-Za-z0-9]{40,}`},
	{"xAI", `xai-`, `[A-Za-z0-9]{40,}`},
	{"Atlassian", `ATATT`, `[A-Za-z0-9_=-]{20,}`},
	{"Atlassian Bitbucket", `ATBB`, `[A-Za-z0-9_=-]{20,}`},
	{"Docker Hub", `dckr_pat_`, `[A-Za-z0-9_-]{20,}`},
	{"Tailscale", `tskey-[a-z]+-`, `[A-Za-z0-9]{6,}-[A-Za-z0-9]{16,}`},
	{"SendGrid", `SG\.`, `[A-Za-z0-9_-]{16,}\.[A-Za-z0-9_-]{30,}`},
	{"HashiCorp Vault", `hv[sb]\.`, `[A-Za-z0-9_-]{24,}`},
	{"Terraform Cloud", `[A-Za-z0-9]{14}\.atlasv1\.`, `[A-Za-z0-9_-]{40,}`},
	{"Doppler", `dp\.(?:pt|st|sa|ct|scim|audit)\.`, `[A-Za-z0-9]{30,}`},
	{"Postman", `PMAK-`, `[a-f0-9]{24}-[a-f0-9]{34}`},
	{"Figma", `figd_`, `[A-Za-z0-9_-]{30,}`},
	{"Supabase", `sbp_`, `[a-f0-9]{40}`},
	{"Supabase secret key", `sb_secret_`, `[A-Za-z0-9_-]{20,}`},
	{"Sentry", `sntry[su]_`, `[A-Za-z0-9+/=_]{30,}`},
	{"Databricks", `dapi`, `[a-f0-9]{32}`},
	{"1Password service account", `ops_`, `[A-Za-z0-9+/=_-]{40,}`},
	{"Fly.io", `fo1_`, `[A-Za-z0-9_-]{30,}`},
	{"Neon", `napi_`, `[A-Za-z0-9]{40,}`},
	{"PlanetScale", `pscale_(?:tkn|pw|oauth)_`, `[A-Za-z0-9_-]{30,}`},
	{"Pulumi", `pul-`, `[a-f0-9]{40}`},
	{"Netlify", `nfp_`, `[A-Za-z0-9]{30,}`},
	{"Buildkite", `bkua_`, `[a-f0-9]{40}`},
	{"Heroku", `HRKU-`, `[A-Za-z0-9_-]{30,}`},
	{"Airtable", `pat[A-Za-z0-9]{14}\.`, `[a-f0-9]{64}`},
	{"New Relic", `NRAK-`, `[A-Z0-9]{27}`},
	{"Mailgun", `key-`, `[a-f0-9]{32}`},
	{"Square", `sq0(?:atp|csp)-`, `[A-Za-z0-9_-]{22,}`},
	{"Mapbox", `sk\.`, `eyJ[A-Za-z0-9_-]{20,}\.[A-Za-z0-9_-]{16,}`},
	{"Tavily", `tvly-`, `[A-Za-z0-9_-]{24,}`},
	{"Firecrawl", `fc-`, `[a-f0-9]{32}`},
	{"Context7", `ctx7sk-`, `[A-Za-z0-9-]{30,}`},
	{"Apify", `apify_api_`, `[A-Za-z0-9]{30,}`},
	{"Pinecone", `pcsk_`, `[A-Za-z0-9_]{40,}`},
	{"LangSmith", `lsv2_(?:pt|sk)_`, `[a-f0-9]{32}_[a-f0-9]{10}`},
	{"Resend", `re_`, `[A-Za-z0-9_]{24,}`},
	{"age", `AGE-SECRET-KEY-1`, `[0-9A-Z]{58}`},
	{"JSON Web Token", `eyJ`, `[A-Za-z0-9_-]{10,}\.eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}`},
	{"Telegram bot", `(?:bot)?[0-9]{8,11}:`, `AA[A-Za-z0-9_-]{33}`},
}

// tokenRE matches a credential in one of tokenFormats as a word. AWS
// access key IDs (awsKeyRE) have a length of their own.
var tokenRE = regexp.MustCompile(`(?:^|[^A-Za-z0-9_])(?:` + joinFormats(func(prefix, body string) string { return prefix + body }) + `)`)

// tokenPrefixRE matches the prefix that starts a match of tokenRE, after
// the character before it.
var tokenPrefixRE = regexp.MustCompile(`^[^A-Za-z0-9_]?(?:` + joinFormats(func(prefix, _ string) string { return prefix }) + `)`)

func joinFormats(part func(prefix, body string) string) string {
	parts := make([]string, len(tokenFormats))
	for i, f := range tokenFormats {
		parts[i] = part(f.prefix, f.body)
	}
	return strings.Join(parts, "|")
}

// awsKeyRE matches an AWS access key ID (AKIA or ASIA and 16 capitals or
// digits) as a whole word: "ASIA2024Q1SALESREPORTS" is a name.
var awsKeyRE = regexp.MustCompile(`(?:^|[^A-Za-z0-9_])A(?:KIA|SIA)[A-Z0-9]{16}(?:$|[^A-Za-z0-9_])`)

// TokenShaped reports whether s holds a credential in the published format
// of a common service (a GitHub, GitLab, Slack, OpenAI, AWS, Google, npm,
// PyPI, Stripe, Notion, Hugging Face, … token: see tokenFormats; also a
// JSON Web Token), configured or not: a match
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
		if Generated(m[len(tokenPrefixRE.FindString(m)):]) {
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
