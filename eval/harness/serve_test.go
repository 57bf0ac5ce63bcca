package harness

import (
	"strings"
	"testing"

	"github.com/contextd/contextd/eval/beir"
)

func TestServeRejectsTwoDocumentsWithOneURIOnOneServer(t *testing.T) {
	ds := &beir.Dataset{Corpus: []beir.Doc{
		{ID: "a", Text: "first", URI: "x://same"},
		{ID: "b", Text: "second", URI: "x://same"},
		{ID: "c", Text: "elsewhere", URI: "x://same", Server: "other"},
	}}
	_, _, _, err := serve(ds, "d")
	if err == nil || !strings.Contains(err.Error(), `documents "a" and "b" have the same uri "x://same" on server "d"`) {
		t.Fatalf("serve = %v, want the duplicate named", err)
	}
	ds.Corpus = append(ds.Corpus[:1], ds.Corpus[2])
	servers, ids, order, err := serve(ds, "d")
	if err != nil || len(servers) != 2 || len(ids) != 2 || strings.Join(order, ",") != "a,c" {
		t.Fatalf("the same uri on two servers: %v %v %v %v; want two resources", servers, ids, order, err)
	}
}
