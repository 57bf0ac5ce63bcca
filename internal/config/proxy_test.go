package config

import (
	"slices"
	"testing"
)

func TestProxySecretsAreThePasswordsInProxyURLs(t *testing.T) {
	env := []string{
		"HTTP_PROXY=http://pxu:SECRETPX1zz@127.0.0.1:3128",
		"https_proxy=pxv:p%40ss%2Fword9@proxy.corp:8080/",
		"ALL_PROXY=socks5://u:SECRETPXALL9zz@127.0.0.1:1080",
		"NO_PROXY=localhost,127.0.0.1",
		"HTTP_PROXY_NOT=http://a:NOTAPROXYVAR1@h",
		"FTP_PROXY=http://SECRETUSERONLYtok9@h:21",
		"PATH=/usr/bin",
		"ftp_proxy=http://proxy@proxy.corp:2121",
	}
	got := ProxySecrets(env)
	for _, want := range []string{"SECRETPX1zz", "pxu:SECRETPX1zz", "p@ss/word9", "p%40ss%2Fword9", "pxv:p%40ss%2Fword9", "pxv:p@ss/word9", "SECRETPXALL9zz", "u:SECRETPXALL9zz", "SECRETUSERONLYtok9", "SECRETUSERONLYtok9:"} {
		if !slices.Contains(got, want) {
			t.Errorf("ProxySecrets lacks %q: %q", want, got)
		}
	}
	for _, not := range []string{"NOTAPROXYVAR1", "pxu", "pxv", "proxy", "proxy:", "localhost,127.0.0.1", "/usr/bin"} {
		if slices.ContainsFunc(got, func(s string) bool { return s == not || s == "a:"+not }) {
			t.Errorf("ProxySecrets holds %q: %q", not, got)
		}
	}
	if got := ProxySecrets([]string{"HTTP_PROXY=http://[::1", "HTTPS_PROXY="}); len(got) != 0 {
		t.Errorf("unparsable or empty proxy URLs: %q; want nothing", got)
	}
}
