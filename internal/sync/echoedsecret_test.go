package sync_test

import (
	"context"
	"strings"
	"testing"
	"testing/synctest"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/contextd/contextd/internal/mcp/mcptest"
	"github.com/contextd/contextd/internal/redact"
	ctxsync "github.com/contextd/contextd/internal/sync"
)

// A server echoing the credentials contextd sent it (an endpoint that
// shows the request it got) in its descriptors and texts: they reach no
// caller. Its words that only look like credentials ("token=YOUR_TOKEN")
// and short configured values (a URL's "?format=json") stay as written.
func TestCredentialsAServerEchoesAreMasked(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const secret, word = "sk-live-4f9Qz81XbT", "json"
		text := "Request headers: Authorization: Bearer " + secret + "\nDocs: set token=YOUR_TOKEN and ask for format=json.\n"
		srv := mcptest.NewServer(map[string]string{"echo://request": text, "echo://" + secret: "a page named by the key"}, nil)
		srv.AddResource(&mcpsdk.Resource{URI: "echo://about", Name: "about " + secret, Title: "key " + secret, Description: "the key is " + secret + " (json)", MIMEType: "text/plain"}, func(context.Context, *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
			return &mcpsdk.ReadResourceResult{Contents: []*mcpsdk.ResourceContents{{URI: "echo://about", MIMEType: "text/plain", Text: "about"}}}, nil
		})
		srv.AddResourceTemplate(&mcpsdk.ResourceTemplate{URITemplate: "echo://k/" + secret + "/{id}", Name: "by key"}, nil)
		srv.AddResourceTemplate(&mcpsdk.ResourceTemplate{URITemplate: "echo://page/{id}", Name: "page", Description: "keyed " + secret}, nil)
		ix := newIndex(t)
		defer ix.Close()
		m := ctxsync.New(ctxsync.Options{Server: "echo", Index: ix, Dial: mcptest.Dial(t, "echo", srv), Redact: redact.New(secret, word)})
		start(t, m)
		<-m.Ready()
		synctest.Wait()
		var all strings.Builder
		uris := map[string]bool{}
		for _, d := range ix.Descriptors("echo") {
			uris[d.URI] = true
			all.WriteString(d.URI + d.Name + d.Title + d.Description + d.MIMEType + "\n")
		}
		for _, tp := range m.Templates() {
			all.WriteString(tp.URITemplate + tp.Name + tp.Title + tp.Description + "\n")
		}
		cs, err := m.Read(t.Context(), "echo://request")
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range cs {
			all.WriteString(c.Text)
		}
		got := all.String()
		if strings.Contains(got, secret) {
			t.Errorf("the credential reached what contextd shows:\n%s", got)
		}
		if uris["echo://"+secret] || !uris["echo://about"] || !uris["echo://request"] {
			t.Errorf("listed %v; want echo://about and echo://request, not the URI holding the credential", uris)
		}
		if st := m.Status(); st.Rejected != 2 || len(m.Templates()) != 1 {
			t.Errorf("%d rejected, %d templates kept; want the URI and the template holding the credential rejected, one kept", st.Rejected, len(m.Templates()))
		}
		for _, want := range []string{"Bearer " + redact.Mask, "token=YOUR_TOKEN", "format=json", "key " + redact.Mask, "(json)", "keyed " + redact.Mask} {
			if !strings.Contains(got, want) {
				t.Errorf("want %q in what contextd shows:\n%s", want, got)
			}
		}
	})
}
