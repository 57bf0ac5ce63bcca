package mcptest

import (
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// sessionHeader is the Streamable HTTP session header (MCP 2025-06-18,
// Transports § Session Management).
const sessionHeader = "Mcp-Session-Id"

// ServeHTTP makes s a minimal Streamable HTTP server: every POST gets one
// application/json answer, initialize opens a session (ids s1, s2, …), a
// request naming an unknown or expired session gets 404, and GET (the
// optional standalone stream) gets 405.
func (s *RawServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.Method {
	case http.MethodDelete:
		s.mu.Lock()
		delete(s.sessions, r.Header.Get(sessionHeader))
		s.mu.Unlock()
		return
	case http.MethodPost:
	default:
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != "application/json" {
		http.Error(w, "want application/json", http.StatusUnsupportedMediaType)
		return
	}
	data, err := io.ReadAll(r.Body)
	if err != nil {
		return
	}
	msg, err := jsonrpc.DecodeMessage(data)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	req, ok := msg.(*jsonrpc.Request)
	if !ok {
		w.WriteHeader(http.StatusAccepted) // a response to a server request
		return
	}
	s.mu.Lock()
	if s.sessions == nil {
		s.sessions = map[string]bool{}
	}
	id := r.Header.Get(sessionHeader)
	if req.Method == "initialize" {
		s.nextID++
		id = fmt.Sprintf("s%d", s.nextID)
		s.sessions[id] = true
	} else if !s.sessions[id] {
		s.mu.Unlock()
		http.Error(w, "session not found", http.StatusNotFound)
		return
	}
	if s.unavailable[req.Method] {
		s.mu.Unlock()
		http.Error(w, "try again later", http.StatusServiceUnavailable)
		return
	}
	if _, ok := s.expireAt[req.Method]; ok && req.Method != "initialize" {
		s.expireAt[req.Method]--
		if s.expireAt[req.Method] < 0 {
			delete(s.expireAt, req.Method)
		}
		delete(s.sessions, id)
		s.mu.Unlock()
		http.Error(w, "session not found", http.StatusNotFound)
		return
	}
	s.mu.Unlock()
	if !req.ID.IsValid() {
		w.WriteHeader(http.StatusAccepted) // a notification
		return
	}
	s.record(req)
	if sid := s.SessionID[req.Method]; sid != "" {
		id = sid
	}
	w.Header().Set(sessionHeader, id)
	ct := "application/json"
	if c := s.ContentType[req.Method]; c != "" {
		ct = c
	}
	w.Header().Set("Content-Type", ct)
	if s.Stall[req.Method] {
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		<-r.Context().Done()
		return
	}
	if code := s.Status[req.Method]; code != 0 {
		w.WriteHeader(code)
	}
	var body []byte
	if f := s.Body[req.Method]; f != nil {
		body = f(fmt.Sprint(req.ID.Raw()))
	} else if body, err = jsonrpc.EncodeMessage(s.answer(req)); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Write(body)
}

// ExpireSessions ends every open HTTP session: requests naming them get 404.
func (s *RawServer) ExpireSessions() {
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.sessions)
}

// ExpireOn makes the server expire the caller's session instead of answering
// the next n requests for method (404 each time); n < 0 means every one.
func (s *RawServer) ExpireOn(method string, n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.expireAt == nil {
		s.expireAt = map[string]int{}
	}
	if n == 0 {
		delete(s.expireAt, method)
		return
	}
	if n < 0 {
		n = 1 << 30
	}
	s.expireAt[method] = n - 1
}

// SetUnavailable makes the server answer requests for method with 503
// Service Unavailable (or stop doing so).
func (s *RawServer) SetUnavailable(method string, down bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.unavailable == nil {
		s.unavailable = map[string]bool{}
	}
	s.unavailable[method] = down
}

// StartHTTP serves s on a loopback httptest server for the test's lifetime
// and returns its URL.
func (s *RawServer) StartHTTP(t testing.TB) string {
	hs := httptest.NewServer(s)
	t.Cleanup(hs.Close)
	return hs.URL
}
