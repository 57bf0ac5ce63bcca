package main

import (
	"bytes"
	"encoding/json"
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
	// protojson varies its white space on purpose: compare decoded keys.
	var got map[string]any
	if err := json.Unmarshal(b.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if got["total_tokens"] != 3.0 || got["token_budget"] != 5.0 {
		t.Errorf("want the README's field names: %s", b.String())
	}
}
