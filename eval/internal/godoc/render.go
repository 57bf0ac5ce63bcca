package godoc

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/doc"
	"go/doc/comment"
	"go/format"
	"go/token"
	"strings"

	"github.com/contextd/contextd/eval/beir"
)

// document builds the corpus entry of one package.
func document(p *srcPackage) (beir.Doc, error) {
	var mode doc.Mode
	if p.importPath == "builtin" {
		mode = doc.AllDecls // as go doc: builtin's identifiers are lower case
	}
	dp, err := doc.NewFromFiles(p.fset, p.files, p.importPath, mode)
	if err != nil {
		return beir.Doc{}, fmt.Errorf("godoc: %s: %w", p.importPath, err)
	}
	content, err := Render(dp, p.fset)
	if err != nil {
		return beir.Doc{}, fmt.Errorf("godoc: %s: %w", p.importPath, err)
	}
	return beir.Doc{
		ID:       p.importPath,
		Title:    Title(dp.Name, p.importPath),
		Text:     dp.Synopsis(dp.Doc),
		Name:     p.importPath,
		URI:      URIPrefix + p.importPath,
		MIMEType: MIMEType,
		Content:  content,
	}, nil
}

// Title returns a document title: "package http (net/http)", or
// "package fmt" when the import path is the package name.
func Title(name, importPath string) string {
	if name == importPath {
		return "package " + name
	}
	return fmt.Sprintf("package %s (%s)", name, importPath)
}

// Render returns the documentation of pkg as Markdown, in the order of
// go doc -all:
//
//	# package NAME
//	`import "IMPORT PATH"`
//	the package doc comment (its headings at level 2)
//	## Constants, ## Variables: each declaration group in a go code block, then its doc
//	## Functions: ### func NAME, the declaration, its doc
//	## Types: ### type NAME, the declaration, its doc, the type's constants
//	  and variables, then #### func NAME for its constructors and
//	  #### func (RECV) NAME for its methods, each in the same form
//	## Bugs: the BUG notes
//
// Sections without entries are left out. Doc comments are converted with
// go/doc/comment's Markdown printer; their own headings sit one level below
// the heading of what they document (at most 6). Doc links are printed as
// their text, without a URL, and headings get no anchor IDs. Declarations are
// printed by go/format as go doc prints them: no function bodies, and a
// "contains filtered or unexported …" comment where fields or methods were
// left out. A code block's fence is longer than any run of backquotes inside
// it. Blocks are separated by one blank line and the text ends with one
// newline.
func Render(pkg *doc.Package, fset *token.FileSet) (string, error) {
	w := &mdWriter{pkg: pkg, fset: fset}
	w.heading(1, "package "+pkg.Name)
	w.block(fmt.Sprintf("`import %q`\n", pkg.ImportPath))
	w.comment(pkg.Doc, 2)

	if len(pkg.Consts) > 0 {
		w.heading(2, "Constants")
		w.values(pkg.Consts, 3)
	}
	if len(pkg.Vars) > 0 {
		w.heading(2, "Variables")
		w.values(pkg.Vars, 3)
	}
	if len(pkg.Funcs) > 0 {
		w.heading(2, "Functions")
		for _, f := range pkg.Funcs {
			w.fn(f, 3)
		}
	}
	if len(pkg.Types) > 0 {
		w.heading(2, "Types")
		for _, t := range pkg.Types {
			w.heading(3, "type "+t.Name)
			w.code(t.Decl)
			w.comment(t.Doc, 4)
			w.values(t.Consts, 4)
			w.values(t.Vars, 4)
			for _, f := range t.Funcs {
				w.fn(f, 4)
			}
			for _, f := range t.Methods {
				w.fn(f, 4)
			}
		}
	}
	if bugs := pkg.Notes["BUG"]; len(bugs) > 0 {
		w.heading(2, "Bugs")
		for _, n := range bugs {
			w.comment(n.Body, 3)
		}
	}
	if w.err != nil {
		return "", w.err
	}
	return w.b.String(), nil
}

// An mdWriter accumulates Markdown blocks.
type mdWriter struct {
	pkg  *doc.Package
	fset *token.FileSet
	b    bytes.Buffer
	err  error
}

// block appends s, which ends in a newline, after a blank line.
func (w *mdWriter) block(s string) {
	if w.b.Len() > 0 {
		w.b.WriteByte('\n')
	}
	w.b.WriteString(s)
}

func (w *mdWriter) heading(level int, text string) {
	w.block(strings.Repeat("#", level) + " " + text + "\n")
}

// comment appends a doc comment, its headings at the given level.
func (w *mdWriter) comment(text string, level int) {
	if strings.TrimSpace(text) == "" {
		return
	}
	pr := w.pkg.Printer()
	pr.HeadingLevel = min(level, 6)
	pr.HeadingID = func(*comment.Heading) string { return "" }
	pr.DocLinkURL = func(*comment.DocLink) string { return "" }
	if md := pr.Markdown(w.pkg.Parser().Parse(text)); len(bytes.TrimSpace(md)) > 0 {
		w.block(string(md))
	}
}

// code appends a declaration as a go code block.
func (w *mdWriter) code(decl ast.Node) {
	var b bytes.Buffer
	if err := format.Node(&b, w.fset, decl); err != nil {
		if w.err == nil {
			w.err = err
		}
		return
	}
	src := strings.TrimRight(b.String(), "\n")
	fence := strings.Repeat("`", max(3, longestRun(src, '`')+1))
	w.block(fence + "go\n" + src + "\n" + fence + "\n")
}

// values appends declaration groups of constants or variables.
func (w *mdWriter) values(vs []*doc.Value, level int) {
	for _, v := range vs {
		w.code(v.Decl)
		w.comment(v.Doc, level)
	}
}

// fn appends a function or method with a heading at level.
func (w *mdWriter) fn(f *doc.Func, level int) {
	name := "func " + f.Name
	if f.Recv != "" {
		name = fmt.Sprintf("func (%s) %s", f.Recv, f.Name)
	}
	w.heading(level, name)
	w.code(f.Decl)
	w.comment(f.Doc, level+1)
}

// longestRun returns the length of the longest run of c in s.
func longestRun(s string, c byte) int {
	best, n := 0, 0
	for i := range len(s) {
		if s[i] == c {
			n++
			best = max(best, n)
		} else {
			n = 0
		}
	}
	return best
}
