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
