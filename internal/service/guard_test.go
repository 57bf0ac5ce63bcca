package service_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/reflection"
	reflectionpb "google.golang.org/grpc/reflection/grpc_reflection_v1"
	"google.golang.org/grpc/stats"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/test/bufconn"

	"github.com/contextd/contextd/internal/service"
	contextdv1 "github.com/contextd/contextd/proto/contextd/v1"
)

// stubService answers Search after release is closed, and ListServers at once.
type stubService struct {
	contextdv1.UnimplementedContextServiceServer
	release chan struct{}
	started chan struct{}
}

func (s *stubService) Search(ctx context.Context, _ *contextdv1.SearchRequest) (*contextdv1.SearchResponse, error) {
	s.started <- struct{}{}
	select {
	case <-s.release:
	case <-ctx.Done():
	}
	return &contextdv1.SearchResponse{}, nil
}

func (s *stubService) ListServers(context.Context, *contextdv1.ListServersRequest) (*contextdv1.ListServersResponse, error) {
	return &contextdv1.ListServersResponse{}, nil
}

func startGuarded(t *testing.T, o service.GuardOptions, svc contextdv1.ContextServiceServer) func(...grpc.DialOption) *grpc.ClientConn {
	t.Helper()
	lis := bufconn.Listen(1 << 20)
	s := grpc.NewServer(service.Guard(o)...)
	contextdv1.RegisterContextServiceServer(s, svc)
	healthpb.RegisterHealthServer(s, healthStub{})
	reflection.Register(s)
	go s.Serve(lis)
	t.Cleanup(s.Stop)
	return func(opts ...grpc.DialOption) *grpc.ClientConn {
		conn, err := grpc.NewClient("passthrough:///bufnet", append([]grpc.DialOption{
			grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
			grpc.WithTransportCredentials(insecure.NewCredentials())}, opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		return conn
	}
}

type healthStub struct {
	healthpb.UnimplementedHealthServer
}

func (healthStub) Check(context.Context, *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
	return &healthpb.HealthCheckResponse{Status: healthpb.HealthCheckResponse_SERVING}, nil
}

func TestTokenIsCheckedOnEveryCall(t *testing.T) {
	const token = "0123456789abcdef-token"
	dial := startGuarded(t, service.GuardOptions{Token: token}, &stubService{})
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	calls := func(conn *grpc.ClientConn) map[string]error {
		_, lerr := contextdv1.NewContextServiceClient(conn).ListServers(ctx, &contextdv1.ListServersRequest{})
		_, herr := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{})
		var rerr error
		if st, err := reflectionpb.NewServerReflectionClient(conn).ServerReflectionInfo(ctx); err != nil {
			rerr = err
		} else if err := st.Send(&reflectionpb.ServerReflectionRequest{MessageRequest: &reflectionpb.ServerReflectionRequest_ListServices{}}); err != nil && err != io.EOF {
			rerr = err
		} else {
			// io.EOF from Send means the server ended the stream: its
			// status comes from Recv.
			_, rerr = st.Recv()
		}
		return map[string]error{"ListServers": lerr, "health": herr, "reflection": rerr}
	}
	for name, err := range calls(dial()) {
		if status.Code(err) != codes.Unauthenticated {
			t.Errorf("%s without a token: %v, want UNAUTHENTICATED", name, err)
		}
	}
	for name, err := range calls(dial(grpc.WithPerRPCCredentials(service.BearerToken{Token: "0123456789abcdef-wrong"}))) {
		if status.Code(err) != codes.Unauthenticated {
			t.Errorf("%s with a wrong token: %v, want UNAUTHENTICATED", name, err)
		}
	}
	for name, err := range calls(dial(grpc.WithPerRPCCredentials(service.BearerToken{Token: token}))) {
		if err != nil {
			t.Errorf("%s with the token: %v", name, err)
		}
	}
}

func TestAdmissionQueuesThenRefusesFast(t *testing.T) {
	svc := &stubService{release: make(chan struct{}), started: make(chan struct{}, 4)}
	dial := startGuarded(t, service.GuardOptions{MaxConcurrent: 1, MaxQueued: 1, MaxQueueWait: time.Minute}, svc)
	client := contextdv1.NewContextServiceClient(dial())
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	errs := make(chan error, 2)
	search := func() { _, err := client.Search(ctx, &contextdv1.SearchRequest{Query: "q"}); errs <- err }
	go search()
	<-svc.started // running
	go search()   // queued
	time.Sleep(50 * time.Millisecond)
	start := time.Now()
	_, err := client.Search(ctx, &contextdv1.SearchRequest{Query: "q"})
	if status.Code(err) != codes.ResourceExhausted || time.Since(start) > 5*time.Second {
		t.Fatalf("third call with one running and one queued: %v after %v, want RESOURCE_EXHAUSTED at once", err, time.Since(start))
	}
	if _, err := client.ListServers(ctx, &contextdv1.ListServersRequest{}); err != nil {
		t.Fatalf("ListServers is not admitted, yet: %v", err)
	}
	close(svc.release)
	for range 2 {
		if err := <-errs; err != nil {
			t.Errorf("running or queued call: %v", err)
		}
	}
}

func TestAdmissionWaitIsBounded(t *testing.T) {
	svc := &stubService{release: make(chan struct{}), started: make(chan struct{}, 4)}
	defer close(svc.release)
	dial := startGuarded(t, service.GuardOptions{MaxConcurrent: 1, MaxQueued: 4, MaxQueueWait: 100 * time.Millisecond}, svc)
	client := contextdv1.NewContextServiceClient(dial())
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	go client.Search(ctx, &contextdv1.SearchRequest{Query: "q"})
	<-svc.started
	if _, err := client.Search(ctx, &contextdv1.SearchRequest{Query: "q"}); status.Code(err) != codes.ResourceExhausted {
		t.Fatalf("queued past MaxQueueWait: %v, want RESOURCE_EXHAUSTED", err)
	}
}

// holdStarts is a stats.Handler, installed before Guard's, that holds
// every handler at its start until open is closed: the calls it holds
// have arrived and not started, as when the daemon's CPU is far behind.
type holdStarts struct{ open chan struct{} }

func (h holdStarts) TagRPC(ctx context.Context, _ *stats.RPCTagInfo) context.Context {
	<-h.open
	return ctx
}
func (holdStarts) HandleRPC(context.Context, stats.RPCStats) {}
func (holdStarts) TagConn(ctx context.Context, _ *stats.ConnTagInfo) context.Context {
	return ctx
}
func (holdStarts) HandleConn(context.Context, stats.ConnStats) {}

// Calls that arrive while the daemon has not started the handlers of
// DefaultMaxUnstarted others fail at once with RESOURCE_EXHAUSTED, their
// requests not kept; once the handlers start, calls pass again.
func TestCallsWaitingToStartAreBounded(t *testing.T) {
	const over = 20
	hold := holdStarts{open: make(chan struct{})}
	lis := bufconn.Listen(1 << 20)
	var busy atomic.Int64
	onRefused := func(reason string) {
		if reason == "busy" {
			busy.Add(1)
		}
	}
	s := grpc.NewServer(append([]grpc.ServerOption{grpc.StatsHandler(hold)}, service.Guard(service.GuardOptions{OnRefused: onRefused})...)...)
	healthpb.RegisterHealthServer(s, healthStub{})
	go s.Serve(lis)
	t.Cleanup(s.Stop)
	var once sync.Once
	openStarts := func() { once.Do(func() { close(hold.open) }) }
	t.Cleanup(openStarts)
	conn, err := grpc.NewClient("passthrough:///bufnet",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	hc := healthpb.NewHealthClient(conn)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	errs := make(chan error, service.DefaultMaxUnstarted+over)
	for range service.DefaultMaxUnstarted + over {
		go func() {
			_, err := hc.Check(ctx, &healthpb.HealthCheckRequest{})
			errs <- err
		}()
	}
	for range over {
		select {
		case err := <-errs:
			if status.Code(err) != codes.ResourceExhausted || !strings.Contains(err.Error(), "wait for the daemon to start them") {
				t.Fatalf("a call past the bound: %v, want RESOURCE_EXHAUSTED", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("no call refused with %d+%d waiting to start", service.DefaultMaxUnstarted, over)
		}
	}
	select {
	case err := <-errs:
		t.Fatalf("more than %d calls refused: %v", over, err)
	case <-time.After(200 * time.Millisecond):
	}
	if got := busy.Load(); got != over {
		t.Errorf("OnRefused told of %d busy refusals, want %d", got, over)
	}

	openStarts()
	for range service.DefaultMaxUnstarted {
		if err := <-errs; err != nil {
			t.Fatalf("a call held at its start: %v", err)
		}
	}
	// Every place was given up as the handlers started.
	for range 2 * service.DefaultMaxUnstarted {
		if _, err := hc.Check(ctx, &healthpb.HealthCheckRequest{}); err != nil {
			t.Fatalf("a call after the handlers started: %v", err)
		}
	}
}

// Server reflection streams are bounded daemon-wide: a client opening
// many and reading none of their answers cannot queue them on every
// stream of every connection. One past the bound fails at once; a
// stream that ends gives its place to the next.
func TestReflectionStreamsAreBounded(t *testing.T) {
	dial := startGuarded(t, service.GuardOptions{}, &stubService{})
	rc := reflectionpb.NewServerReflectionClient(dial())
	open := func(ctx context.Context) (reflectionpb.ServerReflection_ServerReflectionInfoClient, error) {
		s, err := rc.ServerReflectionInfo(ctx)
		if err != nil {
			return nil, err
		}
		// A stream the server refused at once fails Send with io.EOF;
		// its status comes with Recv.
		if err := s.Send(&reflectionpb.ServerReflectionRequest{MessageRequest: &reflectionpb.ServerReflectionRequest_ListServices{}}); err != nil && !errors.Is(err, io.EOF) {
			return nil, err
		}
		_, err = s.Recv()
		return s, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var first context.CancelFunc
	for i := range service.MaxReflectionStreams {
		sctx, scancel := context.WithCancel(ctx)
		defer scancel()
		if i == 0 {
			first = scancel
		}
		if _, err := open(sctx); err != nil {
			t.Fatalf("reflection stream %d: %v", i+1, err)
		}
	}
	if _, err := open(ctx); status.Code(err) != codes.ResourceExhausted {
		t.Fatalf("a reflection stream past %d open: %v, want RESOURCE_EXHAUSTED", service.MaxReflectionStreams, err)
	}
	first()
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err := open(ctx)
		if err == nil {
			break
		}
		if status.Code(err) != codes.ResourceExhausted || time.Now().After(deadline) {
			t.Fatalf("a reflection stream after one ended: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Streams opened with a token a reload has since replaced end: a
// reflection stream answers no more requests, and an MCP event stream
// (a GET on the endpoint) is closed. The token may have leaked; whoever
// holds it keeps nothing it opened.
func TestStreamsOpenedWithARotatedTokenEnd(t *testing.T) {
	const old, rotated = "0123456789abcdef-old", "0123456789abcdef-new"
	tok := service.NewToken(old)
	dial := startGuarded(t, service.GuardOptions{Tokens: tok}, &stubService{})
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	rs, err := reflectionpb.NewServerReflectionClient(dial(grpc.WithPerRPCCredentials(service.BearerToken{Token: old}))).ServerReflectionInfo(ctx)
	if err != nil {
		t.Fatal(err)
	}
	list := func() error {
		if err := rs.Send(&reflectionpb.ServerReflectionRequest{MessageRequest: &reflectionpb.ServerReflectionRequest_ListServices{}}); err != nil && !errors.Is(err, io.EOF) {
			return err
		}
		_, err := rs.Recv()
		return err
	}
	if err := list(); err != nil {
		t.Fatalf("reflection with the token: %v", err)
	}

	streaming := make(chan struct{})
	ended := make(chan error, 1)
	h := service.RequireBearerOf(tok, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		close(streaming)
		<-r.Context().Done()
		ended <- r.Context().Err()
	}))
	srv := httptest.NewServer(h)
	defer srv.Close()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
	req.Header.Set("Authorization", "Bearer "+old)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	<-streaming

	// A health Watch, as grpc's health server runs it.
	hl := bufconn.Listen(1 << 20)
	hs := grpc.NewServer(service.Guard(service.GuardOptions{Tokens: tok})...)
	healthpb.RegisterHealthServer(hs, health.NewServer())
	go hs.Serve(hl)
	defer hs.Stop()
	hconn, err := grpc.NewClient("passthrough:///bufnet",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return hl.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()), grpc.WithPerRPCCredentials(service.BearerToken{Token: old}))
	if err != nil {
		t.Fatal(err)
	}
	defer hconn.Close()
	watch, err := healthpb.NewHealthClient(hconn).Watch(ctx, &healthpb.HealthCheckRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := watch.Recv(); err != nil {
		t.Fatalf("health Watch with the token: %v", err)
	}

	tok.Set(rotated)
	if _, err := watch.Recv(); status.Code(err) != codes.Unauthenticated {
		t.Errorf("the health Watch opened with the old token, after the rotation: %v; want UNAUTHENTICATED", err)
	}
	if err := list(); status.Code(err) != codes.Unauthenticated {
		t.Errorf("reflection on the stream opened with the old token, after the rotation: %v; want UNAUTHENTICATED", err)
	}
	select {
	case <-ended:
	case <-ctx.Done():
		t.Error("the event stream opened with the old token is still open 10 s after the rotation")
	}
}
