package godoc

import (
	"bytes"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"fmt"
	"strings"
	"text/template"

	"github.com/contextd/contextd/eval/beir"
)

// A File is one generated file (beir.File).
type File = beir.File

// Files returns every file of the dataset directory, in a fixed order:
// corpus.jsonl, queries.jsonl, qrels/test.tsv, qrels/dev.tsv, LICENSE,
// README.md.
func (d *Dataset) Files() ([]File, error) {
	var splits []beir.SplitQrels
	for _, s := range d.Splits {
		var qrels []beir.Qrel
		for _, j := range s.Judgements {
			for _, doc := range j.Answers {
				qrels = append(qrels, beir.Qrel{QueryID: j.QueryID, CorpusID: doc, Score: GradeAnswer})
			}
			for _, doc := range j.Helps {
				qrels = append(qrels, beir.Qrel{QueryID: j.QueryID, CorpusID: doc, Score: GradeHelps})
			}
		}
		splits = append(splits, beir.SplitQrels{Name: s.Name, Qrels: qrels})
	}
	files, err := beir.DatasetFiles(d.Corpus, d.Queries, splits, d.License)
	if err != nil {
		return nil, err
	}
	readme, err := d.readme(files)
	if err != nil {
		return nil, err
	}
	return append(files, File{Path: "README.md", Data: readme}), nil
}

// Write writes [Dataset.Files] into dir, creating it and qrels/ as needed and
// replacing files of the same names. Other files in dir are left alone.
func (d *Dataset) Write(dir string) error {
	files, err := d.Files()
	if err != nil {
		return err
	}
	return beir.WriteFiles(dir, files)
}

//go:embed readme.md.tmpl
var readmeTemplate string

type splitRow struct {
	Name, File      string
	Queries, Multi  int
	Answers, Helps  int
	QueriesWithHelp int
	MultiIDs        []string
}

type fileRow struct {
	Path, SHA256, What string
	Bytes              int
}

func (d *Dataset) readme(files []File) ([]byte, error) {
	var splits []splitRow
	for _, s := range d.Splits {
		r := splitRow{Name: s.Name, File: beir.QrelsDir + "/" + s.Name + ".tsv", Queries: len(s.Judgements)}
		for _, j := range s.Judgements {
			r.Answers += len(j.Answers)
			r.Helps += len(j.Helps)
			if len(j.Helps) > 0 {
				r.QueriesWithHelp++
			}
			if j.Multi {
				r.Multi++
				r.MultiIDs = append(r.MultiIDs, j.QueryID)
			}
		}
		splits = append(splits, r)
	}
	var rows []fileRow
	for _, f := range files {
		h := sha256.Sum256(f.Data)
		r := fileRow{Path: f.Path, SHA256: hex.EncodeToString(h[:]), Bytes: len(f.Data)}
		switch f.Path {
		case beir.CorpusFile:
			r.What = fmt.Sprintf("%d packages, %.2f MB of Markdown content", len(d.Corpus), float64(d.Stats.ContentBytes)/1e6)
		case beir.QueriesFile:
			r.What = fmt.Sprintf("%d queries of both splits", len(d.Queries))
		case "LICENSE":
			r.What = "Go's licence, as GOROOT/LICENSE"
		}
		for _, s := range splits {
			if s.File == f.Path {
				r.What = fmt.Sprintf("judgements of the %d %s queries", s.Queries, s.Name)
			}
		}
		rows = append(rows, r)
	}
	data := map[string]any{
		"GoVersion":     d.GoVersion,
		"GoVersionTime": d.GoVersionTime,
		"Seed1":         Seed1,
		"Seed2":         Seed2,
		"URIPrefix":     URIPrefix,
		"MIMEType":      MIMEType,
		"Docs":          len(d.Corpus),
		"Queries":       len(d.Queries),
		"Stats":         d.Stats,
		"Splits":        splits,
		"Files":         rows,
		"CorpusBytes":   len(files[0].Data),
	}
	t, err := template.New("README").Funcs(template.FuncMap{
		"join": strings.Join,
		"kb":   func(n int) string { return fmt.Sprintf("%.1f KB", float64(n)/1000) },
		"mb":   func(n int) string { return fmt.Sprintf("%.2f MB", float64(n)/1e6) },
		"code": func(s []string) string {
			if len(s) == 0 {
				return "none"
			}
			return "`" + strings.Join(s, "`, `") + "`"
		},
	}).Parse(readmeTemplate)
	if err != nil {
		return nil, fmt.Errorf("godoc: README template: %w", err)
	}
	var b bytes.Buffer
	if err := t.Execute(&b, data); err != nil {
		return nil, fmt.Errorf("godoc: README template: %w", err)
	}
	return b.Bytes(), nil
}
