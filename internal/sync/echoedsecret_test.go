package sync_test

import (
	"context"
	"encoding/base64"
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
// caller, as written or in base64. Its words that only look like
// credentials ("token=YOUR_TOKEN"), short configured values (a URL's
// "?format=json") and another server's secrets (never sent to it) stay as
// written, and so do its URIs (identifiers, which a URL's query values
// and path segments counted among secrets may name).
func TestCredentialsAServerEchoesAreMasked(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const secret, word, other = "sk-live-4f9Qz81XbT", "json", "ghp_OtherServer0Token1"
		b64 := base64.StdEncoding.EncodeToString([]byte(secret))
		text := "Request headers: Authorization: Bearer " + secret + "\nX-Echo: " + b64 + "\nDocs: set token=YOUR_TOKEN and ask for format=json; see " + other + ".\n"
		srv := mcptest.NewServer(map[string]string{"echo://request": text}, nil)
		srv.AddResource(&mcpsdk.Resource{URI: "echo://about", Name: "about " + secret, Title: "key " + secret, Description: "the key is " + secret + " (json)", MIMEType: "text/plain"}, func(context.Context, *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
			return &mcpsdk.ReadResourceResult{Contents: []*mcpsdk.ResourceContents{{URI: "echo://about", MIMEType: "text/plain", Text: "about"}}}, nil
		})
		srv.AddResourceTemplate(&mcpsdk.ResourceTemplate{URITemplate: "echo://page/{id}", Name: "page", Description: "keyed " + secret}, nil)
		ix := newIndex(t)
		defer ix.Close()
		m := ctxsync.New(ctxsync.Options{Server: "echo", Index: ix, Dial: mcptest.Dial(t, "echo", srv), Redact: redact.NewFor([]string{secret, word}, []string{secret, word, other})})
		start(t, m)
		<-m.Ready()
		synctest.Wait()
		var all strings.Builder
		for _, d := range ix.Descriptors("echo") {
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
		if strings.Contains(got, secret) || strings.Contains(got, b64) {
			t.Errorf("the credential reached what contextd shows:\n%s", got)
		}
		for _, want := range []string{"Bearer " + redact.Mask, "X-Echo: " + redact.Mask, "token=YOUR_TOKEN", "format=json", other, "key " + redact.Mask, "(json)", "keyed " + redact.Mask} {
			if !strings.Contains(got, want) {
				t.Errorf("want %q in what contextd shows:\n%s", want, got)
			}
		}
	})
}

// The same credential echoed where a plain search for it misses: in a MIME
// type, inside a blob, spelled with zero-width spaces between its
// characters, cut short by a byte, and split between a name and a title.
// None of it reaches a caller whole; a blob keeps its length.
func TestCredentialsAServerEchoesInOtherShapesAreMasked(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const secret = "sk-live-4f9Qz81XbT"
		zw := strings.Join(strings.Split(secret, ""), "\u200b")
		blob := []byte("\x89PNG header then " + secret + " then more")
		srv := mcptest.NewServer(nil, nil)
		srv.AddResource(&mcpsdk.Resource{URI: "echo://mime", Name: "first half " + secret[:9], Title: secret[9:] + " second half", MIMEType: "text/plain; key=" + secret}, func(context.Context, *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
			return &mcpsdk.ReadResourceResult{Contents: []*mcpsdk.ResourceContents{{URI: "echo://mime", MIMEType: "text/x-" + secret, Text: "spelled " + zw + " and cut " + secret[:len(secret)-1]}}}, nil
		})
		srv.AddResource(&mcpsdk.Resource{URI: "echo://blob", Name: "blob", MIMEType: "image/png"}, func(context.Context, *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
			return &mcpsdk.ReadResourceResult{Contents: []*mcpsdk.ResourceContents{{URI: "echo://blob", MIMEType: "image/png", Blob: blob}}}, nil
		})
		srv.AddResourceTemplate(&mcpsdk.ResourceTemplate{URITemplate: "echo://page/{id}", Name: "page", MIMEType: "text/x-" + secret}, nil)
		ix := newIndex(t)
		defer ix.Close()
		m := ctxsync.New(ctxsync.Options{Server: "echo", Index: ix, Dial: mcptest.Dial(t, "echo", srv), Redact: redact.NewFor([]string{secret}, []string{secret})})
		start(t, m)
		<-m.Ready()
		synctest.Wait()
		var all strings.Builder
		for _, d := range ix.Descriptors("echo") {
			all.WriteString(d.Name + " " + d.Title + " " + d.MIMEType + "\n")
		}
		for _, tp := range m.Templates() {
			all.WriteString(tp.MIMEType + "\n")
		}
		cs, err := m.Read(t.Context(), "echo://mime")
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range cs {
			all.WriteString(c.MIMEType + " " + c.Text + "\n")
		}
		bs, err := m.Read(t.Context(), "echo://blob")
		if err != nil {
			t.Fatal(err)
		}
		if len(bs) != 1 || len(bs[0].Blob) != len(blob) || !strings.HasPrefix(string(bs[0].Blob), "\x89PNG header then ***") {
			t.Errorf("blob read as %+v; want it the same length, the credential overwritten", bs)
		}
		for _, c := range bs {
			all.Write(c.Blob)
		}
		got := all.String()
		for _, leak := range []string{secret, zw, secret[:len(secret)-1], secret[:9], secret[9:]} {
			if strings.Contains(got, leak) {
				t.Errorf("%q reached what contextd shows:\n%s", leak, got)
			}
		}
		if strings.Count(got, redact.Mask) < 6 {
			t.Errorf("want the credential masked in each place:\n%s", got)
		}
	})
}
