package beir_test

import (
	"strings"
	"testing"

	"github.com/contextd/contextd/eval/beir"
)

func TestWrittenFilesLoadBack(t *testing.T) {
	corpus, err := beir.JSONLines([]beir.Doc{{ID: "d1", Title: "A & B", Text: "<tag>"}, {ID: "d2", Text: "two"}})
	if err != nil {
		t.Fatal(err)
	}
	queries, err := beir.JSONLines([]beir.Query{{ID: "q1", Text: "find a"}})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	files := []beir.File{
		{Path: beir.CorpusFile, Data: corpus},
		{Path: beir.QueriesFile, Data: queries},
		beir.QrelsFile("dev", []beir.Qrel{{QueryID: "q1", CorpusID: "d1", Score: 2}, {QueryID: "q1", CorpusID: "d2", Score: 1}}),
	}
	if err := beir.WriteFiles(dir, files); err != nil {
		t.Fatal(err)
	}
	ds, err := beir.Load(dir, "dev")
	if err != nil {
		t.Fatal(err)
	}
	if len(ds.Corpus) != 2 || ds.Corpus[0].Title != "A & B" || ds.Corpus[0].Text != "<tag>" {
		t.Errorf("corpus = %+v", ds.Corpus)
	}
	if ds.Qrels["q1"]["d1"] != 2 || ds.Qrels["q1"]["d2"] != 1 {
		t.Errorf("qrels = %+v", ds.Qrels)
	}
}

func TestDatasetFilesOrder(t *testing.T) {
	files, err := beir.DatasetFiles([]beir.Doc{{ID: "d"}}, []beir.Query{{ID: "q", Text: "x"}},
		[]beir.SplitQrels{{Name: "test", Qrels: []beir.Qrel{{QueryID: "q", CorpusID: "d", Score: 1}}}, {Name: "dev"}}, []byte("MIT"))
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, f := range files {
		paths = append(paths, f.Path)
	}
	if got, want := strings.Join(paths, " "), "corpus.jsonl queries.jsonl qrels/test.tsv qrels/dev.tsv LICENSE"; got != want {
		t.Fatalf("paths %q, want %q", got, want)
	}
}
