package main

import (
	"bytes"
	"strings"
	"testing"

	contextdv1 "github.com/contextd/contextd/proto/contextd/v1"
)

func TestAnAnswerThatConsideredNothingSaysSo(t *testing.T) {
	var b bytes.Buffer
	noMatch(&b, &contextdv1.AssembleResponse{})
	if !strings.Contains(b.String(), "no resource matches") {
		t.Errorf("no hint for an empty answer: %q", b.String())
	}
	b.Reset()
	noMatch(&b, &contextdv1.AssembleResponse{Omitted: []*contextdv1.Omitted{{Uri: "x"}}})
	if b.Len() != 0 {
		t.Errorf("a hint although a candidate was considered: %q", b.String())
	}
}

func TestJSONUsesTheProtoFieldNames(t *testing.T) {
	var b bytes.Buffer
	if err := printJSON(&b, &contextdv1.AssembleResponse{TotalTokens: 3, TokenBudget: 5}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), `"total_tokens": 3`) {
		t.Errorf("want the README's field names: %s", b.String())
	}
}
