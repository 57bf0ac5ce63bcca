package main

import (
	"bytes"
	"errors"
	"flag"
	"io"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseFlagsAnywhere(t *testing.T) {
	for _, tc := range []struct {
		args    []string
		budget  int
		servers []string
		pos     []string
	}{
		{[]string{"--budget", "5", "a", "b"}, 5, nil, []string{"a", "b"}},
		{[]string{"a", "--budget", "7", "b", "--server", "x"}, 7, []string{"x"}, []string{"a", "b"}},
		{[]string{"--budget", "9", "--", "-a", "--server", "y"}, 9, nil, []string{"-a", "--server", "y"}},
		{[]string{"q", "--", "--budget"}, 1, nil, []string{"q", "--budget"}},
	} {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		b := fs.Int("budget", 1, "")
		var s stringList
		fs.Var(&s, "server", "")
		pos, err := parse(fs, tc.args)
		if err != nil {
			t.Errorf("%q: %v", tc.args, err)
			continue
		}
		if *b != tc.budget || !cmp.Equal([]string(s), tc.servers) || !cmp.Equal(pos, tc.pos) {
			t.Errorf("%q: budget=%d servers=%q pos=%q; want %d %q %q", tc.args, *b, s, pos, tc.budget, tc.servers, tc.pos)
		}
	}
}

func TestCommandHelpAndBadArguments(t *testing.T) {
	var out, errb bytes.Buffer
	if err := run(t.Context(), []string{"assemble", "-h"}, &out, &errb); err != nil {
		t.Errorf("assemble -h: %v, want success", err)
	}
	if !strings.Contains(errb.String(), "-budget") {
		t.Errorf("assemble -h did not list its flags:\n%s", errb.String())
	}
	for _, args := range [][]string{
		{},
		{"frobnicate"},
		{"assemble", "--budget", "0", "q"},
		{"assemble", "--budget", "3000000000", "q"},
		{"assemble", "--budget", "ten", "q"},
		{"assemble"},
		{"query", "--budget", "-1", "q"},
		{"assemble", "--nope", "q"},
		{"assemble", "--pin", "no-equals-sign", "q"},
		{"query", "--pin", "=doc://x", "q"},
	} {
		if err := run(t.Context(), args, &out, &errb); err == nil {
			t.Errorf("%q succeeded, want an error", args)
		}
	}
}

// A rejected flag is reported once, by the flag package, and main exits 2
// without printing it again.
func TestRejectedFlagIsAFlagError(t *testing.T) {
	var a assembleFlags
	fs := newFlagSet("assemble", io.Discard)
	a.register(fs)
	_, err := parse(fs, []string{"--value-floor", "abc", "q"})
	var fe flagError
	if !errors.As(err, &fe) {
		t.Fatalf("parse: %v (%T), want a flagError", err, err)
	}
	if _, err := parse(newFlagSet("assemble", io.Discard), []string{"-h"}); !errors.Is(err, flag.ErrHelp) {
		t.Errorf("-h: %v, want flag.ErrHelp", err)
	}
}

// A proxy answering with the credentials it was sent (decoded, as the
// user:password pair, or as written in the URL) has them masked in the
// log, text or JSON; the proxy's host and the rest of the line stay.
func TestProxyPasswordsAreMaskedInTheLog(t *testing.T) {
	t.Setenv("HTTP_PROXY", "http://pxu:SECRETPX1zz@proxy.corp:3128")
	t.Setenv("all_proxy", "socks5://ops:p%40ssw0rd%21x@proxy.corp:1080")
	for _, format := range []string{"text", "json"} {
		var b bytes.Buffer
		log, err := newLoggerFormat(&b, "info", format)
		if err != nil {
			t.Fatal(err)
		}
		log.Warn("connect failed", "server", "wiki", "err", errors.New("calling initialize: the server answered error -32603: decoded pxu:SECRETPX1zz raw SECRETPX1zz via proxy.corp; socks ops:p@ssw0rd!x"))
		out := b.String()
		for _, secret := range []string{"SECRETPX1zz", "p@ssw0rd!x"} {
			if strings.Contains(out, secret) {
				t.Errorf("%s log holds the proxy password %q: %s", format, secret, out)
			}
		}
		if !strings.Contains(out, "proxy.corp") || !strings.Contains(out, "wiki") {
			t.Errorf("%s log lost what is no secret: %s", format, out)
		}
	}
}
