package config

import (
	"net/url"
	"strings"
)

// proxyVars are the environment variables a proxy URL is taken from: by
// Go's HTTP transport (HTTP_PROXY, HTTPS_PROXY, in either case) and by
// the programs stdio servers run (ALL_PROXY and the others).
var proxyVars = []string{"HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "FTP_PROXY"}

// ProxySecrets returns the passwords in environ's proxy URLs (proxyVars,
// upper or lower case, "KEY=value" entries as os.Environ gives them),
// each as written and percent-decoded, and each user:password pair (of a
// URL with a user name and no password, the user name if it looks
// generated or chosen as a password: a token then): a
// proxy may quote them in an error contextd logs. They are masked in
// logs only: they are no configured secrets, and stdio servers inherit
// the variables to reach the same proxy. A URL without a scheme is read
// as http://, as Go's transport reads it; one that does not parse holds
// nothing returned.
func ProxySecrets(environ []string) []string {
	var out []string
	for _, kv := range environ {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || v == "" || !isProxyVar(k) {
			continue
		}
		if !strings.Contains(v, "://") {
			v = "http://" + v
		}
		u, err := url.Parse(v)
		if err != nil || u.User == nil {
			continue
		}
		// The user information as written (percent-encoded or not).
		auth := v[strings.Index(v, "://")+3:]
		auth = auth[:strings.IndexAny(auth+"/", "/?#")]
		info := auth[:max(strings.LastIndex(auth, "@"), 0)]
		rawUser, rawPass, _ := strings.Cut(info, ":")
		user := u.User.Username()
		p, _ := u.User.Password()
		if p == "" {
			// A user name alone that looks generated or chosen as a
			// password is the credential (a token as the user, as some
			// proxies take it); a proxy echoes it as "user:". A word
			// ("proxy", "admin") is none, and would mask the log's words.
			if chosenOrGenerated(user) {
				out = append(out, user, user+":")
				out = append(out, withDecoded(rawUser)...)
			}
			continue
		}
		out = append(out, p, user+":"+p)
		out = append(out, withDecoded(rawPass)...)
		out = append(out, withDecoded(info)...)
	}
	return out
}

func isProxyVar(k string) bool {
	for _, name := range proxyVars {
		if k == name || k == strings.ToLower(name) {
			return true
		}
	}
	return false
}
