package answers

import (
	"bytes"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"text/template"

	"github.com/contextd/contextd/eval/beir"
)

// Generated file names beside the BEIR files.
const (
	AnswersFile    = "answers.jsonl"
	NPMLicenseFile = "LICENSE-npm"
)

// Files returns every file of the dataset directory, in a fixed order:
// corpus.jsonl, queries.jsonl, qrels/test.tsv, qrels/dev.tsv, LICENSE (Go's),
// answers.jsonl, LICENSE-npm, README.md.
func (d *Dataset) Files() ([]beir.File, error) {
	var queries []beir.Query
	var test, dev []beir.Qrel
	var ans bytes.Buffer
	for _, q := range d.Questions {
		queries = append(queries, beir.Query{ID: q.ID, Text: q.Question.Question})
		qr := beir.Qrel{QueryID: q.ID, CorpusID: q.Doc, Score: GradeAnswer}
		s := SplitDev
		if d.InTest[q.ID] {
			s = SplitTest
			test = append(test, qr)
		} else {
			dev = append(dev, qr)
		}
		if err := jsonLine(&ans, Answer{ID: q.ID, Split: s, Answers: q.Answers, CorpusID: q.Doc, Kind: q.Kind}); err != nil {
			return nil, fmt.Errorf("answers: %w", err)
		}
	}
	files, err := beir.DatasetFiles(d.Corpus, queries,
		[]beir.SplitQrels{{Name: SplitTest, Qrels: test}, {Name: SplitDev, Qrels: dev}}, d.GoLicense)
	if err != nil {
		return nil, err
	}
	files = append(files,
		beir.File{Path: AnswersFile, Data: ans.Bytes()},
		beir.File{Path: NPMLicenseFile, Data: d.NPMLicense})
	readme, err := d.readme(files)
	if err != nil {
		return nil, err
	}
	return append(files, beir.File{Path: "README.md", Data: readme}), nil
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

// depthLimits are the byte offsets the README's depth table counts answers
// below.
var depthLimits = []int{2_000, 8_000, 32_000}

// A countRow is one line of the README's count tables.
type countRow struct {
	Label       string
	Cells       []int
	Total       int
	Extra       string
	Docs, Bytes int
}

type fileRow struct {
	Path, SHA256 string
	Bytes        int
}

func (d *Dataset) readme(files []beir.File) ([]byte, error) {
	kinds := []string{KindDeep, KindSimilar, KindReworded}
	// counts[split][server][kind]
	counts := map[string]map[string]map[string]int{}
	for _, s := range []string{SplitTest, SplitDev} {
		counts[s] = map[string]map[string]int{}
		for _, sv := range Servers {
			counts[s][sv] = map[string]int{}
		}
	}
	var testIDs, devIDs []string
	for _, q := range d.Questions {
		s := SplitDev
		if d.InTest[q.ID] {
			s = SplitTest
			testIDs = append(testIDs, q.ID)
		} else {
			devIDs = append(devIDs, q.ID)
		}
		counts[s][q.Server][q.Kind]++
	}
	var tables []map[string]any
	for _, s := range []string{SplitTest, SplitDev} {
		var rows []countRow
		sum := countRow{Label: "all", Cells: make([]int, len(kinds))}
		for _, sv := range Servers {
			r := countRow{Label: sv}
			for i, k := range kinds {
				n := counts[s][sv][k]
				r.Cells = append(r.Cells, n)
				r.Total += n
				sum.Cells[i] += n
				sum.Total += n
			}
			rows = append(rows, r)
		}
		tables = append(tables, map[string]any{"Split": s, "Rows": append(rows, sum)})
	}
	var servers []countRow
	for _, sv := range Servers {
		servers = append(servers, countRow{Label: sv, Docs: d.Stats.Docs[sv], Bytes: d.Stats.Bytes[sv]})
	}
	total := countRow{Label: "all"}
	for _, r := range servers {
		total.Docs += r.Docs
		total.Bytes += r.Bytes
	}
	// depth[kind] counts answers by the byte offset of their first
	// occurrence, in the buckets of depthLimits.
	depth := map[string][]int{}
	for _, k := range kinds {
		depth[k] = make([]int, len(depthLimits)+1)
	}
	for _, q := range d.Questions {
		off := slices.Min(q.Offsets)
		i, _ := slices.BinarySearch(depthLimits, off+1)
		depth[q.Kind][i]++
	}
	var depthRows []countRow
	for _, k := range kinds {
		depthRows = append(depthRows, countRow{Label: k, Cells: depth[k]})
	}
	var deepOffsets []int
	for _, q := range d.Questions {
		if q.Kind == KindDeep {
			deepOffsets = append(deepOffsets, slices.Min(q.Offsets))
		}
	}
	slices.Sort(deepOffsets)
	medianDeep := 0
	if len(deepOffsets) > 0 {
		medianDeep = deepOffsets[len(deepOffsets)/2]
	}
	var rows []fileRow
	for _, f := range files {
		h := sha256.Sum256(f.Data)
		rows = append(rows, fileRow{Path: f.Path, SHA256: hex.EncodeToString(h[:]), Bytes: len(f.Data)})
	}
	data := map[string]any{
		"GoVersion":     d.GoVersion,
		"GoVersionTime": d.GoVersionTime,
		"NPMVersion":    d.NPMVersion,
		"Stats":         d.Stats,
		"Servers":       append(servers, total),
		"Tables":        tables,
		"Kinds":         kinds,
		"Questions":     len(d.Questions),
		"TestIDs":       strings.Join(testIDs, ", "),
		"DevIDs":        strings.Join(devIDs, ", "),
		"Files":         rows,
		"Seed1":         Seed1,
		"Seed2":         Seed2,
		"Packages":      "`" + strings.Join(d.Packages, "`, `") + "`",
		"Pages":         "`" + strings.Join(d.Pages, "`, `") + "`",
		"DeepMinSize":   DeepMinSize,
		"DeepOffset":    DeepOffset,
		"MinAnswerLen":  MinAnswerLen,
		"MaxAnswerLen":  MaxAnswerLen,
		"MinSharedWord": MinSharedWord,
		"MedianDeep":    medianDeep,
		"Deep":          len(deepOffsets),
		"PageCount":     len(d.Pages),
		"DepthRows":     depthRows,
		"PkgDocs":       d.Stats.Docs[ServerGoDoc] - len(d.Pages),
	}
	t, err := template.New("README").Funcs(template.FuncMap{
		"mb": func(n int) string { return fmt.Sprintf("%.2f MB", float64(n)/1e6) },
	}).Parse(readmeTemplate)
	if err != nil {
		return nil, fmt.Errorf("answers: README template: %w", err)
	}
	var b bytes.Buffer
	if err := t.Execute(&b, data); err != nil {
		return nil, fmt.Errorf("answers: README template: %w", err)
	}
	return b.Bytes(), nil
}
