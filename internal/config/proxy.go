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
// each as written and percent-decoded, and each user:password pair: a
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
		p, set := u.User.Password()
		if !set || p == "" {
			continue
		}
		// The user information as written (percent-encoded or not).
		auth := v[strings.Index(v, "://")+3:]
		auth = auth[:strings.IndexAny(auth+"/", "/?#")]
		info := auth[:max(strings.LastIndex(auth, "@"), 0)]
		_, rawPass, _ := strings.Cut(info, ":")
		out = append(out, p, u.User.Username()+":"+p)
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
