package remote

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// A status line's reason phrase is the server's to choose (Go reads up to
// 10 MB of it with the headers): an error quoting it is logged at every
// retry and returned to Search and Assemble.
func TestTheStatusLineIsQuotedBounded(t *testing.T) {
	huge := strings.Repeat("q", 1<<20)
	for _, line := range []string{"HTTP/1.1 400 " + huge, huge} { // a reason phrase; not a status line
		statusLineIsQuotedBounded(t, line)
	}
}

func statusLineIsQuotedBounded(t *testing.T, line string) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, rw, err := w.(http.Hijacker).Hijack()
		if err != nil {
			return
		}
		defer conn.Close()
		fmt.Fprintf(rw, "%s\r\nContent-Type: text/plain\r\nContent-Length: 4\r\nConnection: close\r\n\r\nnope", line)
		rw.Flush()
	}))
	t.Cleanup(srv.Close)
	for _, p := range []string{OpenAI, Ollama} {
		e, err := New(t.Context(), Options{Provider: p, URL: baseURL(srv, p), Model: "m", Dimensions: 4, MaxRetries: -1})
		if err == nil {
			_, err = e.Embed(t.Context(), "x")
		}
		if err == nil {
			t.Fatalf("%s: Embed succeeded against a server answering 400", p)
		}
		if n := len(err.Error()); n > 2048 {
			t.Errorf("%s: error of %d bytes (%.120s…), want at most 2 KiB", p, n, err)
		}
	}
}
