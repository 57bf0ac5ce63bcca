// Package metatool converts the MetaTool tool-selection benchmark (Huang et
// al., "MetaTool Benchmark for Large Language Models: Deciding Whether to Use
// Tools and Which to Use", ICLR 2024, arXiv:2310.03128) into a BEIR-layout
// dataset (see package [github.com/contextd/contextd/eval/beir]) in which each
// tool is one MCP resource descriptor.
//
// # Conversion
//
// The corpus holds one document per key of plugin_des.json, in file order:
// _id and name are the tool name, text its description (surrounding white
// space trimmed), uri "metatool://tool/" + the name path-escaped, mimeType
// text/plain. A tool's title and content come from plugin_info.json when
// exactly one distinct record has name_for_model equal to the tool name and
// description_for_human equal, byte for byte, to the plugin_des.json
// description: title is its name_for_human (trimmed) and content its
// description_for_model (as is). Otherwise the title is the tool name and
// there is no content.
//
// Single-tool queries come from all_clean_data.csv (Query,Tool). A query text
// is trimmed of surrounding white space, and rows with the same trimmed text
// become one query whose relevant tools are the union of the rows' tools. The
// queries, in order of first appearance, are shuffled with
// rand.New(rand.NewPCG(Seed1, Seed2)).Shuffle (math/rand/v2) and numbered
// s00001, s00002, … in shuffled order; the first [Options.TestSize] form the
// "test" split, the next [Options.DevSize] "dev", the rest "train".
//
// Multi-tool queries come from multi_tool_query_golden.json, trimmed and
// merged the same way, numbered m0001, … in file order, and form the "multi"
// split. Every judgement has score 1.
//
// Every tool a query names must be a key of plugin_des.json; anything else is
// an error that names the file and line. The output is a pure function of the
// source bytes: converting twice gives identical files.
package metatool

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/contextd/contextd/eval/beir"
)

// Source file names in a MetaTool directory, as in the MetaTool repository
// (dataset/plugin_des.json, dataset/plugin_info.json,
// dataset/data/all_clean_data.csv, dataset/data/multi_tool_query_golden.json).
const (
	ToolsFile      = "plugin_des.json"
	PluginInfoFile = "plugin_info.json"
	SingleFile     = "all_clean_data.csv"
	MultiFile      = "multi_tool_query_golden.json"
	LicenseFile    = "LICENSE"
)

// The snapshot of the MetaTool repository the converter was written
// against. They are recorded in the generated README.
const (
	SourceRepo   = "github.com/HowieHwong/MetaTool"
	SourceCommit = "35e81bb7576826e980c80fed8f8c0a2b4a1e6fbb"
)

// Seed1 and Seed2 seed the PCG generator that shuffles the single-tool
// queries before they are split. They are the two halves of MetaTool's arXiv
// id, 2310.03128.
const (
	Seed1 uint64 = 2310
	Seed2 uint64 = 3128
)

// URIPrefix starts every document URI; the path-escaped tool name follows.
const URIPrefix = "metatool://tool/"

// Split names.
const (
	SplitTest  = "test"
	SplitDev   = "dev"
	SplitTrain = "train"
	SplitMulti = "multi"
)

// Options configures [Convert]. A nil *Options means the defaults.
type Options struct {
	// TestSize is the number of single-tool queries in the test split;
	// 0 means 3000.
	TestSize int
	// DevSize is the number of single-tool queries in the dev split;
	// 0 means 3000.
	DevSize int
}

// A Dataset is the converted benchmark, ready to [Dataset.Write].
type Dataset struct {
	// Corpus has one document per tool, in plugin_des.json order.
	Corpus []beir.Doc
	// Queries has the single-tool queries in id order, then the multi-tool
	// ones.
	Queries []beir.Query
	// Splits are test, dev, train and multi, in that order.
	Splits []Split
	// Sources are the files read, with their SHA-256, in the order of the
	// generated README.
	Sources []SourceFile
	// License is the bytes of the source LICENSE, copied as they are.
	License []byte
	// Stats counts what the conversion did, for the README.
	Stats Stats
}

// A Split is the judgements of one qrels file: for each query (in query id
// order) its relevant tools, in corpus order.
type Split struct {
	Name       string
	Judgements []Judgement
}

// A Judgement is one query and its relevant documents (score 1 each).
type Judgement struct {
	QueryID string
	DocIDs  []string
}

// A SourceFile is one source file read by [Convert].
type SourceFile struct {
	Name   string
	SHA256 string
}

// Stats counts facts about the source data and the conversion.
type Stats struct {
	Tools           int      // keys of plugin_des.json
	ToolsWithInfo   int      // tools given a title and content from plugin_info.json
	AmbiguousInfo   []string // tools with several disagreeing plugin_info.json records
	PluginInfo      int      // records in plugin_info.json
	SingleRows      int      // data rows of all_clean_data.csv
	SingleExact     int      // distinct query texts, byte for byte
	SingleTrimmed   int      // rows whose text had surrounding white space
	SingleQueries   int      // queries after trimming and merging
	SingleMultiTool int      // single-tool queries with more than one relevant tool
	SingleRepeated  int      // rows repeating a (text, tool) pair already seen
	MultiRows       int      // entries of multi_tool_query_golden.json
	MultiQueries    int      // multi-tool queries after trimming and merging
	MultiTrimmed    int      // entries whose text had surrounding white space
	MultiInSingle   int      // multi-tool query texts that are also single-tool texts
	MultiTools      int      // distinct tools named by the multi-tool queries
	SingleQuoted    int      // single-tool queries wrapped in quotation marks
	MultiQuoted     int      // multi-tool queries wrapped in quotation marks
	ToolsUnused     int      // tools no query names
}

func (o *Options) sizes() (test, dev int) {
	test, dev = 3000, 3000
	if o != nil {
		test, dev = cmp.Or(o.TestSize, test), cmp.Or(o.DevSize, dev)
	}
	return test, dev
}

// Convert reads the MetaTool files in src and converts them as the package
// documentation describes.
func Convert(src string, opts *Options) (*Dataset, error) {
	testSize, devSize := opts.sizes()
	if testSize < 0 || devSize < 0 {
		return nil, fmt.Errorf("metatool: negative split size (test %d, dev %d)", testSize, devSize)
	}
	ds := &Dataset{}
	read := func(name string) ([]byte, error) {
		b, err := os.ReadFile(filepath.Join(src, name))
		if err != nil {
			return nil, fmt.Errorf("metatool: %w", err)
		}
		sum := sha256.Sum256(b)
		ds.Sources = append(ds.Sources, SourceFile{Name: name, SHA256: hex.EncodeToString(sum[:])})
		return b, nil
	}
	toolsJSON, err := read(ToolsFile)
	if err != nil {
		return nil, err
	}
	infoJSON, err := read(PluginInfoFile)
	if err != nil {
		return nil, err
	}
	singleCSV, err := read(SingleFile)
	if err != nil {
		return nil, err
	}
	multiJSON, err := read(MultiFile)
	if err != nil {
		return nil, err
	}
	if ds.License, err = read(LicenseFile); err != nil {
		return nil, err
	}

	tools, err := parseTools(filepath.Join(src, ToolsFile), toolsJSON)
	if err != nil {
		return nil, err
	}
	infos, err := parsePluginInfo(filepath.Join(src, PluginInfoFile), infoJSON)
	if err != nil {
		return nil, err
	}
	known := make(map[string]int, len(tools)) // tool name → corpus position
	for i, t := range tools {
		known[t.name] = i
	}
	single, err := parseSingle(filepath.Join(src, SingleFile), singleCSV, known)
	if err != nil {
		return nil, err
	}
	multi, err := parseMulti(filepath.Join(src, MultiFile), multiJSON, known)
	if err != nil {
		return nil, err
	}

	st := &ds.Stats
	st.Tools, st.PluginInfo = len(tools), len(infos)
	for _, t := range tools {
		d := beir.Doc{
			ID:       t.name,
			Title:    t.name,
			Text:     strings.TrimSpace(t.description),
			Name:     t.name,
			URI:      URIPrefix + url.PathEscape(t.name),
			MIMEType: "text/plain",
		}
		switch title, content, n := matchInfo(t, infos); {
		case n == 1:
			d.Title, d.Content = cmp.Or(title, t.name), content
			st.ToolsWithInfo++
		case n > 1:
			st.AmbiguousInfo = append(st.AmbiguousInfo, t.name)
		}
		ds.Corpus = append(ds.Corpus, d)
	}

	st.SingleRows, st.SingleExact, st.SingleTrimmed, st.SingleRepeated =
		single.rows, single.exact, single.trimmed, single.repeated
	st.SingleQueries = len(single.queries)
	st.MultiRows, st.MultiTrimmed = multi.rows, multi.trimmed
	st.MultiQueries = len(multi.queries)
	if testSize+devSize > len(single.queries) {
		return nil, fmt.Errorf("metatool: %d single-tool queries, fewer than test (%d) + dev (%d)",
			len(single.queries), testSize, devSize)
	}

	qs := single.queries
	r := rand.New(rand.NewPCG(Seed1, Seed2))
	r.Shuffle(len(qs), func(i, j int) { qs[i], qs[j] = qs[j], qs[i] })

	used := map[string]bool{}
	splitOf := func(name string, qs []*query, format string, offset int) Split {
		s := Split{Name: name}
		for i, q := range qs {
			id := fmt.Sprintf(format, offset+i+1)
			ds.Queries = append(ds.Queries, beir.Query{ID: id, Text: q.text})
			j := Judgement{QueryID: id}
			for pos := range len(tools) {
				if q.tools[pos] {
					j.DocIDs = append(j.DocIDs, tools[pos].name)
					used[tools[pos].name] = true
				}
			}
			s.Judgements = append(s.Judgements, j)
		}
		return s
	}
	ds.Splits = []Split{
		splitOf(SplitTest, qs[:testSize], "s%05d", 0),
		splitOf(SplitDev, qs[testSize:testSize+devSize], "s%05d", testSize),
		splitOf(SplitTrain, qs[testSize+devSize:], "s%05d", testSize+devSize),
	}
	for _, q := range qs {
		if len(q.tools) > 1 {
			st.SingleMultiTool++
		}
		if quoted(q.text) {
			st.SingleQuoted++
		}
	}
	multiTools := map[string]bool{}
	for _, q := range multi.queries {
		if single.byText[q.text] != nil {
			st.MultiInSingle++
		}
		if quoted(q.text) {
			st.MultiQuoted++
		}
		for pos := range q.tools {
			multiTools[tools[pos].name] = true
		}
	}
	st.MultiTools = len(multiTools)
	ds.Splits = append(ds.Splits, splitOf(SplitMulti, multi.queries, "m%04d", 0))
	st.ToolsUnused = len(tools) - len(used)
	return ds, nil
}

// matchInfo returns the title and content plugin_info.json gives tool t, and
// how many distinct (title, content) pairs match it: 1 is a reliable match.
func matchInfo(t tool, infos []pluginInfo) (title, content string, n int) {
	seen := map[[2]string]bool{}
	for _, in := range infos {
		if in.NameForModel != t.name || in.DescriptionForHuman != t.description {
			continue
		}
		k := [2]string{strings.TrimSpace(in.NameForHuman), in.DescriptionForModel}
		if !seen[k] {
			seen[k] = true
			title, content = k[0], k[1]
		}
	}
	if len(seen) != 1 {
		return "", "", len(seen)
	}
	return title, content, 1
}

// quoted reports whether s begins and ends with the same quotation mark.
func quoted(s string) bool {
	return len(s) > 1 && s[0] == s[len(s)-1] && (s[0] == '"' || s[0] == '\'')
}

// lineOf returns the 1-based line of byte offset off in b.
func lineOf(b []byte, off int64) int {
	return bytes.Count(b[:min(int(off), len(b))], []byte("\n")) + 1
}
