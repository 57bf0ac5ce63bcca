package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// evalProgram is the program `contextd eval` runs. The eval lives in its own
// binary (eval/cmd/contextd-eval) so that its datasets, charting and extra
// embedders are never linked into the daemon (DESIGN.md).
const evalProgram = "contextd-eval"

// evalModule is the import path of the eval program.
const evalModule = "github.com/contextd/contextd/eval/cmd/contextd-eval"

// runEval runs contextd-eval with args: the one next to this executable,
// else the one on $PATH, else, inside a checkout of contextd, `go run` of
// its source.
func runEval(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	name, prefix, err := findEval()
	if err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, name, append(prefix, args...)...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, stdout, stderr
	if err := cmd.Run(); err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return exitCode(ee.ExitCode()) // contextd-eval printed why
		}
		return fmt.Errorf("eval: %w", err)
	}
	return nil
}

// exitCode is a failure that was already reported; main exits with it.
type exitCode int

func (e exitCode) Error() string { return fmt.Sprintf("exit status %d", int(e)) }

func findEval() (name string, prefix []string, err error) {
	if exe, err := os.Executable(); err == nil {
		p := filepath.Join(filepath.Dir(exe), evalProgram)
		if st, err := os.Stat(p); err == nil && !st.IsDir() {
			return p, nil, nil
		}
	}
	if p, err := exec.LookPath(evalProgram); err == nil {
		return p, nil, nil
	}
	if root, ok := checkoutRoot(); ok {
		if gobin, err := exec.LookPath("go"); err == nil {
			return gobin, []string{"run", filepath.Join(root, "eval", "cmd", evalProgram)}, nil
		}
	}
	return "", nil, fmt.Errorf("contextd eval needs the %s program, which is kept out of the daemon binary: install it with\n\tgo install %s@latest\nor run contextd eval from a checkout of contextd", evalProgram, evalModule)
}

// checkoutRoot finds the contextd module root at or above the working
// directory.
func checkoutRoot() (string, bool) {
	dir, err := os.Getwd()
	if err != nil {
		return "", false
	}
	for {
		if f, err := os.Open(filepath.Join(dir, "go.mod")); err == nil {
			first, _ := bufio.NewReader(f).ReadString('\n')
			f.Close()
			return dir, strings.TrimSpace(first) == "module github.com/contextd/contextd"
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", false
		}
		dir = parent
	}
}
