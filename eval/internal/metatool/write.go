package metatool

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
// corpus.jsonl, queries.jsonl, the qrels of each split, LICENSE, README.md.
func (d *Dataset) Files() ([]File, error) {
	var splits []beir.SplitQrels
	for _, s := range d.Splits {
		var qrels []beir.Qrel
		for _, j := range s.Judgements {
			for _, doc := range j.DocIDs {
				qrels = append(qrels, beir.Qrel{QueryID: j.QueryID, CorpusID: doc, Score: 1})
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

// repoPaths maps each source file to its path in the MetaTool repository.
var repoPaths = map[string]string{
	ToolsFile:      "dataset/plugin_des.json",
	PluginInfoFile: "dataset/plugin_info.json",
	SingleFile:     "dataset/data/all_clean_data.csv",
	MultiFile:      "dataset/data/multi_tool_query_golden.json",
	LicenseFile:    "LICENSE",
}

type splitRow struct {
	Name, File, FirstID, LastID string
	Queries, Judgements         int
	// MultiRelevant counts the queries with more than one relevant tool.
	MultiRelevant int
}

func (d *Dataset) readme(files []File) ([]byte, error) {
	var splits []splitRow
	for _, s := range d.Splits {
		r := splitRow{Name: s.Name, File: beir.QrelsDir + "/" + s.Name + ".tsv", Queries: len(s.Judgements)}
		if n := len(s.Judgements); n > 0 {
			r.FirstID, r.LastID = s.Judgements[0].QueryID, s.Judgements[n-1].QueryID
		}
		for _, j := range s.Judgements {
			r.Judgements += len(j.DocIDs)
			if len(j.DocIDs) > 1 {
				r.MultiRelevant++
			}
		}
		splits = append(splits, r)
	}
	type sum struct{ Path, SHA256 string }
	var sums []sum
	for _, f := range files {
		h := sha256.Sum256(f.Data)
		sums = append(sums, sum{f.Path, hex.EncodeToString(h[:])})
	}
	testSize, devSize := 0, 0
	for _, s := range splits {
		switch s.Name {
		case SplitTest:
			testSize = s.Queries
		case SplitDev:
			devSize = s.Queries
		}
	}
	data := map[string]any{
		"Repo":      SourceRepo,
		"Commit":    SourceCommit,
		"Seed1":     Seed1,
		"Seed2":     Seed2,
		"URIPrefix": URIPrefix,
		"TestSize":  testSize,
		"DevSize":   devSize,
		"Sources":   d.Sources,
		"RepoPath":  repoPaths,
		"Stats":     d.Stats,
		"Splits":    splits,
		"Sums":      sums,
		"Queries":   len(d.Queries),
	}
	t, err := template.New("README").Funcs(template.FuncMap{
		"join": strings.Join,
		"sub":  func(a, b int) int { return a - b },
	}).Parse(readmeTemplate)
	if err != nil {
		return nil, fmt.Errorf("metatool: README template: %w", err)
	}
	var b bytes.Buffer
	if err := t.Execute(&b, data); err != nil {
		return nil, fmt.Errorf("metatool: README template: %w", err)
	}
	return b.Bytes(), nil
}
