package mcp_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/contextd/contextd/internal/config"
	"github.com/contextd/contextd/internal/mcp"
)

// A server's credentials go to its own origin only: when it redirects to
// another host (a moved endpoint, an open redirect), the other host does
// not receive them.
func TestHeadersDoNotFollowARedirectToAnotherOrigin(t *testing.T) {
	var mu sync.Mutex
	var ownAuth, otherAuth, otherReferer []string
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		otherAuth = append(otherAuth, r.Header.Get("Authorization"))
		otherReferer = append(otherReferer, r.Header.Get("Referer"))
		mu.Unlock()
		http.Error(w, "no", http.StatusNotFound)
	}))
	defer other.Close()
	own := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		ownAuth = append(ownAuth, r.Header.Get("Authorization"))
		mu.Unlock()
		http.Redirect(w, r, other.URL+"/mcp", http.StatusTemporaryRedirect)
	}))
	defer own.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	// The URL's query holds a credential too: net/http would send the URL
	// redirected from as Referer.
	srv := config.Server{Name: "web", Transport: config.TransportHTTP, URL: own.URL + "/mcp?token=query-secret-4567",
		Headers: map[string]string{"Authorization": "Bearer redirect-secret-0123"}}
	if sess, err := mcp.Connect(ctx, srv, nil); err == nil {
		sess.Close()
		t.Fatal("connected through a redirect to a server that answers 404")
	}
	mu.Lock()
	defer mu.Unlock()
	if len(ownAuth) == 0 || ownAuth[0] != "Bearer redirect-secret-0123" {
		t.Errorf("the server's own origin got Authorization %q, want the configured one", ownAuth)
	}
	if len(otherAuth) == 0 {
		t.Fatal("the redirect was not followed")
	}
	for _, a := range otherAuth {
		if a != "" {
			t.Errorf("the other origin got Authorization %q", a)
		}
	}
	for _, r := range otherReferer {
		if r != "" {
			t.Errorf("the other origin got Referer %q", r)
		}
	}
}
