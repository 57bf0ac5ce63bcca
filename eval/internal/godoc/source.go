package godoc

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"go/ast"
	"go/build"
	"go/parser"
	"go/token"
	"go/version"
	"hash"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// A srcPackage is one package's parsed files.
type srcPackage struct {
	importPath string
	fset       *token.FileSet
	files      []*ast.File // in file name order
}

// A tree is what [readTree] found in a GOROOT.
type tree struct {
	version, versionTime string
	license              []byte
	packages             []*srcPackage // in import-path order
	excluded, commands   []string
	files                int
	sha256               string
}

// Context returns the build context the packages are read with: linux/amd64,
// the gc compiler, cgo enabled, and the release tags go1.1 … go1.N of
// goVersion (e.g. "go1.26.8" gives go1.1 … go1.26), with no tool or build
// tags. It does not depend on the Go toolchain running it.
func Context(goroot, goVersion string) (*build.Context, error) {
	lang := version.Lang(goVersion) // "go1.26", or "" when not a release version
	minorText, ok := strings.CutPrefix(lang, "go1.")
	minor, err := strconv.Atoi(minorText)
	if !ok || err != nil || minor < 1 {
		return nil, fmt.Errorf("want a Go 1 release version such as go1.26.8, got %q", goVersion)
	}
	ctxt := &build.Context{
		GOARCH:     "amd64",
		GOOS:       "linux",
		GOROOT:     goroot,
		Compiler:   "gc",
		CgoEnabled: true,
	}
	for i := 1; i <= minor; i++ {
		ctxt.ReleaseTags = append(ctxt.ReleaseTags, fmt.Sprintf("go1.%d", i))
	}
	return ctxt, nil
}

// readTree reads GOROOT/VERSION, GOROOT/LICENSE and the packages under
// GOROOT/src as the package documentation describes.
func readTree(goroot string) (*tree, error) {
	t := &tree{}
	vb, err := os.ReadFile(filepath.Join(goroot, "VERSION"))
	if err != nil {
		return nil, fmt.Errorf("godoc: %w", err)
	}
	lines := strings.Split(strings.TrimSpace(string(vb)), "\n")
	t.version = strings.TrimSpace(lines[0])
	for _, l := range lines[1:] {
		if v, ok := strings.CutPrefix(strings.TrimSpace(l), "time "); ok {
			t.versionTime = v
		}
	}
	ctxt, err := Context(goroot, t.version)
	if err != nil {
		return nil, fmt.Errorf("godoc: %s: %v", filepath.Join(goroot, "VERSION"), err)
	}
	if t.license, err = os.ReadFile(filepath.Join(goroot, "LICENSE")); err != nil {
		return nil, fmt.Errorf("godoc: %w", err)
	}

	src := filepath.Join(goroot, "src")
	h := sha256.New()
	err = filepath.WalkDir(src, func(dir string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		rel, err := filepath.Rel(src, dir)
		if err != nil {
			return err
		}
		importPath := filepath.ToSlash(rel)
		if importPath == "." {
			return nil
		}
		if skipDir(importPath) {
			return filepath.SkipDir
		}
		p, kind, err := readDir(ctxt, dir, importPath, h)
		if err != nil {
			return err
		}
		switch kind {
		case dirPackage:
			t.packages = append(t.packages, p)
			t.files += len(p.files)
		case dirExcluded:
			t.excluded = append(t.excluded, importPath)
		case dirCommand:
			t.commands = append(t.commands, importPath)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("godoc: %w", err)
	}
	// WalkDir visits "a/b" before "a-b"; import-path order is byte order.
	slices.SortFunc(t.packages, func(a, b *srcPackage) int { return strings.Compare(a.importPath, b.importPath) })
	slices.Sort(t.excluded)
	slices.Sort(t.commands)
	t.sha256 = hex.EncodeToString(h.Sum(nil))
	return t, nil
}

// skipDir reports whether the directory at importPath and its subtree are
// left out.
func skipDir(importPath string) bool {
	if importPath == "cmd" {
		return true
	}
	base := importPath[strings.LastIndex(importPath, "/")+1:]
	switch base {
	case "internal", "vendor", "testdata":
		return true
	}
	return strings.HasPrefix(base, ".") || strings.HasPrefix(base, "_")
}

type dirKind int

const (
	dirNone     dirKind = iota // no candidate .go files
	dirPackage                 // a package to document
	dirExcluded                // .go files, none for the build context
	dirCommand                 // package main
)

// readDir parses the .go files of dir that match ctxt, hashing the path
// and content of each into h when the directory is a package to document.
func readDir(ctxt *build.Context, dir, importPath string, h hash.Hash) (*srcPackage, dirKind, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, dirNone, err
	}
	var names []string
	candidates := 0
	for _, e := range entries {
		name := e.Name()
		if !e.Type().IsRegular() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") ||
			strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") {
			continue
		}
		candidates++
		ok, err := ctxt.MatchFile(dir, name)
		if err != nil {
			return nil, dirNone, err
		}
		if ok {
			names = append(names, name)
		}
	}
	switch {
	case candidates == 0:
		return nil, dirNone, nil
	case len(names) == 0:
		return nil, dirExcluded, nil
	}
	p := &srcPackage{importPath: importPath, fset: token.NewFileSet()}
	var contents [][]byte
	for _, name := range names { // os.ReadDir sorts by name
		path := filepath.Join(dir, name)
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, dirNone, err
		}
		f, err := parser.ParseFile(p.fset, path, b, parser.ParseComments)
		if err != nil {
			return nil, dirNone, err
		}
		if f.Name.Name != p.files0Name(f) {
			return nil, dirNone, fmt.Errorf("%s: files of package %s and package %s", dir, p.files[0].Name.Name, f.Name.Name)
		}
		p.files = append(p.files, f)
		contents = append(contents, b)
	}
	if p.files[0].Name.Name == "main" {
		return nil, dirCommand, nil
	}
	for i, name := range names {
		fmt.Fprintf(h, "%s/%s\x00%d\x00", importPath, name, len(contents[i]))
		h.Write(contents[i])
	}
	return p, dirPackage, nil
}

// files0Name returns the package name of the first file, or that of f when
// there is none yet.
func (p *srcPackage) files0Name(f *ast.File) string {
	if len(p.files) == 0 {
		return f.Name.Name
	}
	return p.files[0].Name.Name
}
