package engine_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/contextd/contextd/internal/engine"
	"github.com/contextd/contextd/internal/mcp/mcptest"
	"github.com/contextd/contextd/internal/selector"
)

// addDoc serves one text resource with its descriptor.
func addDoc(srv *mcpsdk.Server, r *mcpsdk.Resource, body string) {
	r.Size = int64(len(body))
	srv.AddResource(r, func(context.Context, *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
		return &mcpsdk.ReadResourceResult{Contents: []*mcpsdk.ResourceContents{{URI: r.URI, MIMEType: r.MIMEType, Text: body}}}, nil
	})
}

func item(res *engine.AssembleResult, uri string) (selector.Item, bool) {
	for _, it := range res.Items {
		if it.URI == uri {
			return it, true
		}
	}
	return selector.Item{}, false
}

// A first-ranked resource that does not fit whole no longer spends the
// budget on its sections while the resources the task needs, ranked just
// after it, are left out. The ranking is the default without the passage
// list, which puts the guide first here (with it, the range picker's one
// passage matches the query best, and the guide comes second).
func TestAWrongFirstResourceDoesNotTakeTheBudget(t *testing.T) {
	var guide strings.Builder
	guide.WriteString("# Date formatting\n\nShow a date, a range of days, in the user's format.\n\n")
	for i := range 40 {
		fmt.Fprintf(&guide, "## Format %d\n\nFormat %d shows a date and a range of days with the day first; selecting a format changes every date shown. %s\n\n",
			i, i, strings.Repeat("Dates are shown in the locale of the user. ", 6))
	}
	srv := mcptest.NewServer(nil, nil)
	addDoc(srv, &mcpsdk.Resource{URI: "doc://formatting", Name: "date formatting", Title: "Date formatting for a date picker, a range of days",
		Description: "Selecting how a date or a range of days is shown", MIMEType: "text/markdown"}, guide.String())
	for _, n := range []string{"range", "single", "time"} {
		addDoc(srv, &mcpsdk.Resource{URI: "doc://picker-" + n, Name: "calendar " + n, Title: "Calendar: " + n,
			Description: "A calendar widget for choosing days", MIMEType: "text/markdown"},
			fmt.Sprintf("# Date picker (%s)\n\nUse <DatePicker mode=%q> to let the user pick days; a range picker selects a start and an end day.\n", n, n))
	}
	how := engine.DefaultRanking
	how.Passages = 0
	eng := newEngineOpts(t, "", map[string]*mcpsdk.Server{"s": srv}, engine.Options{Ranking: how})
	res, err := eng.Assemble(t.Context(), engine.AssembleRequest{Query: "date picker for selecting a range of days", TokenBudget: 2000})
	if err != nil {
		t.Fatal(err)
	}
	if it, ok := item(res, "doc://formatting"); !ok || it.Rank != 1 || it.Form != selector.FormSections {
		t.Fatalf("setup: the formatting guide should rank first and come as sections: %+v", res.Items)
	}
	for _, n := range []string{"range", "single", "time"} {
		if it, ok := item(res, "doc://picker-"+n); !ok || it.Form != selector.FormWhole {
			t.Errorf("picker-%s is not returned whole: %+v; omitted %+v", n, it, res.Omitted)
		}
	}
	if res.TotalTokens > 2000 {
		t.Errorf("%d tokens over 2000", res.TotalTokens)
	}
}

// A priority annotation on one resource does not push a near-perfect
// match under the value floor.
func TestAPriorityDoesNotPushOutANearPerfectMatch(t *testing.T) {
	srv := mcptest.NewServer(nil, nil)
	addDoc(srv, &mcpsdk.Resource{URI: "doc://rotate", Name: "rotate signing keys", Description: "How to rotate the signing keys of the service",
		MIMEType: "text/markdown", Annotations: &mcpsdk.Annotations{Priority: 0.8}}, "# Rotate signing keys\n\nRun keys rotate, then restart.\n")
	addDoc(srv, &mcpsdk.Resource{URI: "doc://rotate-keys", Name: "rotate keys", Description: "rotate the signing keys",
		MIMEType: "text/markdown"}, "# Key rotation\n\nThe old key stays valid for a day after keys rotate.\n")
	for i := range 6 {
		addDoc(srv, &mcpsdk.Resource{URI: fmt.Sprintf("doc://other-%d", i), Name: fmt.Sprintf("billing %d", i), Description: "Invoices and payment methods",
			MIMEType: "text/markdown"}, "# Billing\n\nInvoices are sent monthly.\n")
	}
	eng := newEngine(t, "", map[string]*mcpsdk.Server{"s": srv}, 0)
	res, err := eng.Assemble(t.Context(), engine.AssembleRequest{Query: "rotate the signing keys", TokenBudget: 2000})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := item(res, "doc://rotate-keys"); !ok {
		t.Errorf("the near-perfect match was left out: %+v", res.Omitted)
	}
	for _, o := range res.Omitted {
		if strings.HasPrefix(o.URI, "doc://other-") && o.Read {
			t.Errorf("%s, about billing, was read", o.URI)
		}
	}
}

// Assemble considers more than ten candidates when the budget has room:
// two servers with the same documents no longer crowd out the rest.
func TestThePoolGrowsWithTheBudget(t *testing.T) {
	servers := map[string]*mcpsdk.Server{}
	for _, name := range []string{"a", "b"} {
		srv := mcptest.NewServer(nil, nil)
		for i := range 7 {
			addDoc(srv, &mcpsdk.Resource{URI: fmt.Sprintf("doc://retry-%d", i), Name: fmt.Sprintf("retry backoff %d", i), Description: "Retry with backoff",
				MIMEType: "text/markdown"}, fmt.Sprintf("# Retry %d\n\nRetry failed calls with backoff, variant %d.\n", i, i))
		}
		servers[name] = srv
	}
	c := mcptest.NewServer(nil, nil)
	for i := range 4 {
		addDoc(c, &mcpsdk.Resource{URI: fmt.Sprintf("doc://policy-%d", i), Name: fmt.Sprintf("retry policy %d", i), Description: "Retry backoff policy",
			MIMEType: "text/markdown"}, fmt.Sprintf("# Policy %d\n\nThe retry policy caps backoff at %d seconds.\n", i, 10*(i+1)))
	}
	servers["c"] = c
	eng := newEngine(t, "", servers, 0)
	res, err := eng.Assemble(t.Context(), engine.AssembleRequest{Query: "retry backoff", TokenBudget: 8000})
	if err != nil {
		t.Fatal(err)
	}
	// Each of the seven documents comes once: the other server's copies
	// are omitted as duplicates, or passed over once three of them came
	// to nothing.
	got, copies := 0, map[string]int{}
	for _, it := range res.Items {
		if it.Server == "c" {
			got++
		} else {
			copies[it.URI]++
		}
	}
	twice := 0
	for _, n := range copies {
		if n > 1 {
			twice++
		}
	}
	if got != 4 || len(copies) != 7 || twice > 0 {
		t.Errorf("%d of server c's 4 policies returned, %d of the 7 retry documents, %d twice; items %d, omitted %+v", got, len(copies), twice, len(res.Items), res.Omitted)
	}
}

// Sections come readable: no bare heading on its own, and a window of a
// long declaration with the declaration's line.
func TestSectionsComeWithWhatTheyNeedToBeRead(t *testing.T) {
	var code strings.Builder
	code.WriteString("package status\n\n// Codes lists every status.\nvar Codes = []Code{\n")
	for i := range 150 {
		name := fmt.Sprintf("Status%d", i)
		if i == 120 {
			name = "Teapot"
		}
		fmt.Fprintf(&code, "\t{%d, %q},\n", 100+i, name)
	}
	code.WriteString("}\n")
	var md strings.Builder
	md.WriteString("# Routing\n\nIntro to routing.\n\n")
	for i := range 20 {
		fmt.Fprintf(&md, "## Topic %d\n\n%s\n\n", i, strings.Repeat("Unrelated words about maps and tiles. ", 12))
	}
	md.WriteString("## Route with changing geometry\n\n### Example\n\nA teapot route whose geometry changes is drawn again.\n")
	srv := mcptest.NewServer(nil, nil)
	addDoc(srv, &mcpsdk.Resource{URI: "file:///status.go", Name: "status.go", MIMEType: "text/x-go"}, code.String())
	addDoc(srv, &mcpsdk.Resource{URI: "doc://routing", Name: "routing", MIMEType: "text/markdown"}, md.String())
	eng := newEngine(t, "", map[string]*mcpsdk.Server{"s": srv}, 0)
	res, err := eng.Assemble(t.Context(), engine.AssembleRequest{Query: "teapot", TokenBudget: 600, ValueFloor: new(float64)})
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range res.Items {
		for _, c := range it.Contents {
			lines := strings.Split(strings.TrimSpace(c.Text), "\n")
			if c.StartLine != c.EndLine && strings.HasPrefix(lines[0], "#") && strings.TrimSpace(strings.Join(lines[1:], "")) == "" {
				t.Errorf("%s: lines %d-%d are a bare heading: %q", it.URI, c.StartLine, c.EndLine, c.Text)
			}
		}
	}
	code1, ok := item(res, "file:///status.go")
	if !ok || code1.Form != selector.FormSections {
		t.Fatalf("status.go: %+v; omitted %+v", code1, res.Omitted)
	}
	lead := false
	for _, c := range code1.Contents {
		if c.StartLine <= 4 && 4 <= c.EndLine && strings.Contains(c.Text, "var Codes = []Code{\n") {
			lead = true // the declaration's line, alone or in a section
		}
		if strings.Contains(c.Text, "Teapot") && !lead {
			t.Errorf("the window holding Teapot (lines %d-%d) comes without the line that declares it", c.StartLine, c.EndLine)
		}
	}
	md1, ok := item(res, "doc://routing")
	if !ok {
		t.Fatalf("routing: omitted %+v", res.Omitted)
	}
	for _, c := range md1.Contents {
		if strings.Contains(c.Text, "teapot route") && !strings.Contains(c.Text, "## Route with changing geometry") {
			t.Errorf("the example comes without its heading: lines %d-%d %q", c.StartLine, c.EndLine, c.Text)
		}
	}
}
