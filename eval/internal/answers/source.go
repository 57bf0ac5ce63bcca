package answers

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/contextd/contextd/eval/beir"
	"github.com/contextd/contextd/eval/internal/godoc"
)

// goSource reads the Go distribution: its version, licence, the source files
// of pkgs and the reference pages of pages, as documents.
type goSource struct {
	version, versionTime string
	license              []byte
	src, pages           []beir.Doc
	srcSHA256            string
	skipped              int // non-test .go files of pkgs outside the build context
}

func readGo(goroot string, pkgs, pages []string) (*goSource, error) {
	vb, err := os.ReadFile(filepath.Join(goroot, "VERSION"))
	if err != nil {
		return nil, fmt.Errorf("answers: %w", err)
	}
	g := &goSource{}
	lines := strings.Split(strings.TrimSpace(string(vb)), "\n")
	g.version = strings.TrimSpace(lines[0])
	for _, l := range lines[1:] {
		if v, ok := strings.CutPrefix(strings.TrimSpace(l), "time "); ok {
			g.versionTime = v
		}
	}
	ctxt, err := godoc.Context(goroot, g.version)
	if err != nil {
		return nil, fmt.Errorf("answers: %s: %v", filepath.Join(goroot, "VERSION"), err)
	}
	if g.license, err = os.ReadFile(filepath.Join(goroot, "LICENSE")); err != nil {
		return nil, fmt.Errorf("answers: %w", err)
	}
	h := sha256.New()
	for _, pkg := range slices.Sorted(slices.Values(pkgs)) {
		dir := filepath.Join(goroot, "src", filepath.FromSlash(pkg))
		entries, err := os.ReadDir(dir)
		if err != nil {
			return nil, fmt.Errorf("answers: package %s: %w", pkg, err)
		}
		n := 0
		for _, e := range entries { // sorted by name
			name := e.Name()
			if !e.Type().IsRegular() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") ||
				strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") {
				continue
			}
			ok, err := ctxt.MatchFile(dir, name)
			if err != nil {
				return nil, fmt.Errorf("answers: %w", err)
			}
			if !ok {
				g.skipped++
				continue
			}
			b, err := os.ReadFile(filepath.Join(dir, name))
			if err != nil {
				return nil, fmt.Errorf("answers: %w", err)
			}
			rel := pkg + "/" + name
			fmt.Fprintf(h, "%s\x00%d\x00", rel, len(b))
			h.Write(b)
			g.src = append(g.src, beir.Doc{
				ID:       ServerGoSrc + ":" + rel,
				Title:    rel,
				Name:     name,
				URI:      GoSrcURIPrefix + rel,
				MIMEType: GoMIMEType,
				Server:   ServerGoSrc,
				Content:  string(b),
			})
			n++
		}
		if n == 0 {
			return nil, fmt.Errorf("answers: package %s: no non-test .go files for linux/amd64 in %s", pkg, dir)
		}
	}
	g.srcSHA256 = hex.EncodeToString(h.Sum(nil))

	for _, p := range pages {
		b, err := os.ReadFile(filepath.Join(goroot, "doc", filepath.FromSlash(p)))
		if err != nil {
			return nil, fmt.Errorf("answers: %w", err)
		}
		d := beir.Doc{
			ID:      ServerGoDoc + ":doc/" + p,
			Name:    path.Base(p),
			URI:     GoDocURIPrefix + "doc/" + p,
			Server:  ServerGoDoc,
			Content: string(b),
		}
		switch path.Ext(p) {
		case ".html":
			d.MIMEType = "text/html"
			d.Title, d.Text, err = htmlHeader(b)
		case ".md":
			d.MIMEType = "text/markdown"
			var fm map[string]string
			fm, err = frontMatter(b)
			d.Title = fm["title"]
		default:
			err = fmt.Errorf("not .html or .md")
		}
		if err == nil && d.Title == "" {
			err = fmt.Errorf("no title")
		}
		if err != nil {
			return nil, fmt.Errorf("answers: %s: %v", filepath.Join(goroot, "doc", p), err)
		}
		g.pages = append(g.pages, d)
	}
	return g, nil
}

// htmlHeader reads the JSON object in the comment that begins a page of
// GOROOT/doc: <!--{"Title": …, "Subtitle": …}-->.
func htmlHeader(b []byte) (title, subtitle string, err error) {
	rest, ok := bytes.CutPrefix(b, []byte("<!--"))
	if !ok {
		return "", "", fmt.Errorf("no <!--{…}--> header")
	}
	head, _, ok := bytes.Cut(rest, []byte("-->"))
	if !ok {
		return "", "", fmt.Errorf("unterminated <!-- header")
	}
	var h struct{ Title, Subtitle string }
	if err := json.Unmarshal(head, &h); err != nil {
		return "", "", fmt.Errorf("header: %v", err)
	}
	return h.Title, h.Subtitle, nil
}

// frontMatter reads the "key: value" lines between the leading "---" lines
// of a Markdown file. A value in double quotes is unquoted as a Go string;
// one in single quotes loses them.
func frontMatter(b []byte) (map[string]string, error) {
	sc := bufio.NewScanner(bytes.NewReader(b))
	if !sc.Scan() || strings.TrimSpace(sc.Text()) != "---" {
		return nil, fmt.Errorf("no front matter")
	}
	fm := map[string]string{}
	for sc.Scan() {
		line := sc.Text()
		if strings.TrimSpace(line) == "---" {
			return fm, nil
		}
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		v = strings.TrimSpace(v)
		if len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"' {
			u, err := strconv.Unquote(v)
			if err != nil {
				return nil, fmt.Errorf("front matter %s: %v", strings.TrimSpace(k), err)
			}
			v = u
		} else if len(v) >= 2 && v[0] == '\'' && v[len(v)-1] == '\'' {
			v = v[1 : len(v)-1]
		}
		fm[strings.TrimSpace(k)] = v
	}
	return nil, fmt.Errorf("front matter not closed by ---")
}

// npmSource is npm's documentation.
type npmSource struct {
	version string
	license []byte
	docs    []beir.Doc
}

// readNPM reads every .md file under dir (npm's docs/content) and the
// version and LICENSE of the npm package two levels up.
func readNPM(dir string) (*npmSource, error) {
	root := filepath.Join(dir, "..", "..")
	pj, err := os.ReadFile(filepath.Join(root, "package.json"))
	if err != nil {
		return nil, fmt.Errorf("answers: npm docs %s: %w (want npm's docs/content directory)", dir, err)
	}
	var meta struct{ Name, Version string }
	if err := json.Unmarshal(pj, &meta); err != nil {
		return nil, fmt.Errorf("answers: %s: %v", filepath.Join(root, "package.json"), err)
	}
	if meta.Name != "npm" || meta.Version == "" {
		return nil, fmt.Errorf("answers: %s is package %q %q, want npm", filepath.Join(root, "package.json"), meta.Name, meta.Version)
	}
	n := &npmSource{version: meta.Version}
	if n.license, err = os.ReadFile(filepath.Join(root, "LICENSE")); err != nil {
		return nil, fmt.Errorf("answers: %w", err)
	}
	err = filepath.WalkDir(dir, func(p string, e os.DirEntry, err error) error {
		if err != nil || e.IsDir() || !strings.HasSuffix(e.Name(), ".md") {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		relOS, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		rel := filepath.ToSlash(relOS)
		fm, err := frontMatter(b)
		if err != nil {
			return fmt.Errorf("%s: %v", p, err)
		}
		if fm["title"] == "" {
			return fmt.Errorf("%s: no title in the front matter", p)
		}
		n.docs = append(n.docs, beir.Doc{
			ID:       ServerNPM + ":" + rel,
			Title:    fm["title"],
			Text:     fm["description"],
			Name:     e.Name(),
			URI:      NPMURIPrefix + rel,
			MIMEType: "text/markdown",
			Server:   ServerNPM,
			Content:  string(b),
		})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("answers: %w", err)
	}
	if len(n.docs) == 0 {
		return nil, fmt.Errorf("answers: no .md files under %s", dir)
	}
	slices.SortFunc(n.docs, func(a, b beir.Doc) int { return strings.Compare(a.ID, b.ID) })
	return n, nil
}

// readGodocCorpus reads the package documents of the godoc dataset in dir
// and re-ids them for this corpus.
func readGodocCorpus(dir string) ([]beir.Doc, error) {
	ds, err := beir.Load(dir, godoc.SplitDev)
	if err != nil {
		return nil, fmt.Errorf("answers: godoc dataset: %w", err)
	}
	docs := make([]beir.Doc, 0, len(ds.Corpus))
	for _, d := range ds.Corpus {
		pkg, ok := strings.CutPrefix(d.URI, godoc.URIPrefix)
		if !ok || d.Content == "" {
			return nil, fmt.Errorf("answers: godoc dataset %s: document %s has URI %q or no content", dir, d.ID, d.URI)
		}
		d.ID = ServerGoDoc + ":pkg/" + pkg
		d.Server = ServerGoDoc
		docs = append(docs, d)
	}
	return docs, nil
}
