package template

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/contextd/contextd/internal/resource"
)

// deadEndQuery builds a template of groups id variables ({waaId}, {wbaId},
// …) plus four {zz…} id variables, and a query placing three numbers next
// to each group's word and three next to "zz": every variable has
// candidates, but the four zz variables share three values, so no
// assignment fills them all.
func deadEndQuery(groups int) (*Template, *Query) {
	var vars, q []string
	n := 0
	for g := range groups {
		w := fmt.Sprintf("w%c%c", 'a'+g%26, 'a'+g/26)
		vars = append(vars, "{"+w+"Id}")
		for range 3 {
			n++
			q = append(q, "!"+w, fmt.Sprint(n))
		}
	}
	for _, suf := range []string{"Id", "Key", "No", "Nr"} {
		vars = append(vars, "{zz"+suf+"}")
	}
	for range 3 {
		n++
		q = append(q, "!zz", fmt.Sprint(n))
	}
	tp, err := Parse(resource.Template{URITemplate: "x://" + strings.Join(vars, "/")})
	if err != nil {
		panic(err)
	}
	return tp, ParseQuery(strings.Join(q, " "))
}

func TestProposeDeadEndVisitsNothing(t *testing.T) {
	tp, q := deadEndQuery(maxRequired - 4) // 8 required variables: not skipped
	got, nodes := tp.propose(q, 2)
	if got != nil {
		t.Errorf("Propose = %v, want none (no complete assignment exists)", got)
	}
	// Without the matching check every partial assignment of the w
	// variables is extended into the zz dead end (over 1,000 steps).
	if nodes != 0 {
		t.Errorf("Propose visited %d partial assignments, want 0: no complete assignment exists", nodes)
	}
}

func TestProposeManyVariablesIsBounded(t *testing.T) {
	// The tester's case: 18 required variables, no complete assignment. It
	// took 7.8 s before the search was bounded (20 groups: about 1.5 h).
	tp, q := deadEndQuery(14)
	start := time.Now()
	got, nodes := tp.propose(q, 2)
	if el := time.Since(start); el > 2*time.Second {
		t.Errorf("Propose took %v", el)
	}
	if got != nil || nodes != 0 {
		t.Errorf("Propose = %v after %d steps, want nothing: more than %d required variables", got, nodes, maxRequired)
	}

	// Eight variables, three distinct candidates each: 6,561 complete
	// assignments. Every step leads to one, so the search stops after
	// maxCombos of them, within (variables+1) × maxCombos steps.
	var vars, words []string
	for g := range maxRequired {
		w := fmt.Sprintf("w%c", 'a'+g)
		vars = append(vars, "{"+w+"Id}")
		for k := range 3 {
			words = append(words, "!"+w, fmt.Sprint(10*g+k+1))
		}
	}
	tp, err := Parse(resource.Template{URITemplate: "x://" + strings.Join(vars, "/")})
	if err != nil {
		t.Fatal(err)
	}
	got, nodes = tp.propose(ParseQuery(strings.Join(words, " ")), 2)
	if len(got) != 2 || nodes > (maxRequired+1)*maxCombos {
		t.Errorf("Propose = %d proposals after %d steps, want 2 within %d", len(got), nodes, (maxRequired+1)*maxCombos)
	}
	for _, p := range got {
		if _, err := tp.Expand(p.Values); err != nil {
			t.Errorf("proposal %v does not expand: %v", p.Values, err)
		}
	}
}

// Templates that would make parsing or matching costly are refused, and
// URIs that would are not matched: matching costs more than linearly in
// the URI's length and in proportion to the variables, and every request
// parses every template.
func TestCostlyTemplatesAndURIsAreRefused(t *testing.T) {
	var many []string
	for i := range MaxVars + 1 {
		many = append(many, fmt.Sprintf("{v%d}", i))
	}
	for name, tmpl := range map[string]string{
		"too many variables": "x://" + strings.Join(many, "/"),
		"too long":           "x://{id}/" + strings.Repeat("a", MaxTemplateBytes),
	} {
		if _, err := Parse(resource.Template{URITemplate: tmpl}); err == nil {
			t.Errorf("%s: parsed", name)
		}
	}
	tp, err := Parse(resource.Template{URITemplate: "file:///srv/{+path}"})
	if err != nil {
		t.Fatal(err)
	}
	if ok := tp.Matches("file:///srv/" + strings.Repeat("a/", 100)); !ok {
		t.Error("a short URI under the template does not match")
	}
	if tp.MayMatch("file:///srv/" + strings.Repeat("a/", MaxMatchBytes/2)) {
		t.Errorf("a URI over %d bytes may match", MaxMatchBytes)
	}
	if tp.MayMatch("file:///etc/passwd") || !tp.MayMatch("file:///srv/x") {
		t.Error("MayMatch does not check the literal prefix")
	}
}

// An expansion is matched back against its template, at a cost that grows
// faster than its length: one longer than MaxMatchBytes is refused.
func TestLongExpansionsAreRefused(t *testing.T) {
	tp, err := Parse(resource.Template{URITemplate: "x://{a}/{b}/{c}"})
	if err != nil {
		t.Fatal(err)
	}
	v := strings.Repeat("v", 200)
	if uri, err := tp.Expand(map[string]string{"a": v, "b": v, "c": v}); err == nil {
		t.Errorf("a %d-byte expansion was given", len(uri))
	}
	if _, err := tp.Expand(map[string]string{"a": v, "b": "b", "c": "c"}); err != nil {
		t.Errorf("a short expansion: %v", err)
	}
}
