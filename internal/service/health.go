package service

import (
	"context"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	contextdv1 "github.com/contextd/contextd/proto/contextd/v1"
)

// Health is the grpc.health.v1 service of a Service: it reports readiness,
// not mere liveness. Both the overall status ("") and the contextd.v1
// service are NOT_SERVING until the engine has completed a sync of at
// least one server (before that, every Assemble would fail UNAVAILABLE),
// then SERVING, and NOT_SERVING again from the moment Shutdown is called,
// for good. Watch streams get each change, and end after sending
// NOT_SERVING at shutdown, so they do not hold up a graceful stop.
type Health struct {
	healthpb.UnimplementedHealthServer
	ready <-chan struct{}

	mu       sync.Mutex
	shutdown chan struct{} // closed by Shutdown
}

var _ healthpb.HealthServer = (*Health)(nil)

// NewHealth returns a health service that turns SERVING when ready is
// closed.
func NewHealth(ready <-chan struct{}) *Health {
	return &Health{ready: ready, shutdown: make(chan struct{})}
}

// Shutdown turns the status NOT_SERVING for good; call it first thing when
// the daemon begins to stop, before the listener closes, so that probes
// and load balancers stop sending new work. It is safe to call more than
// once.
func (h *Health) Shutdown() {
	h.mu.Lock()
	defer h.mu.Unlock()
	select {
	case <-h.shutdown:
	default:
		close(h.shutdown)
	}
}

// status returns the current status.
func (h *Health) status() healthpb.HealthCheckResponse_ServingStatus {
	select {
	case <-h.shutdown:
		return healthpb.HealthCheckResponse_NOT_SERVING
	default:
	}
	select {
	case <-h.ready:
		return healthpb.HealthCheckResponse_SERVING
	default:
		return healthpb.HealthCheckResponse_NOT_SERVING
	}
}

// Serving reports whether the status is SERVING.
func (h *Health) Serving() bool { return h.status() == healthpb.HealthCheckResponse_SERVING }

// known reports whether the service name is one this server has.
func known(service string) bool {
	return service == "" || service == contextdv1.ContextService_ServiceDesc.ServiceName
}

// Check implements healthpb.HealthServer.
func (h *Health) Check(_ context.Context, in *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
	if !known(in.GetService()) {
		return nil, status.Errorf(codes.NotFound, "unknown service %q", in.GetService())
	}
	return &healthpb.HealthCheckResponse{Status: h.status()}, nil
}

// List implements healthpb.HealthServer.
func (h *Health) List(context.Context, *healthpb.HealthListRequest) (*healthpb.HealthListResponse, error) {
	st := &healthpb.HealthCheckResponse{Status: h.status()}
	return &healthpb.HealthListResponse{Statuses: map[string]*healthpb.HealthCheckResponse{
		"": st, contextdv1.ContextService_ServiceDesc.ServiceName: st,
	}}, nil
}

// Watch implements healthpb.HealthServer. An unknown service is reported
// SERVICE_UNKNOWN, as the protocol asks, and the stream stays open.
func (h *Health) Watch(in *healthpb.HealthCheckRequest, stream grpc.ServerStreamingServer[healthpb.HealthCheckResponse]) error {
	ctx := stream.Context()
	if !known(in.GetService()) {
		if err := stream.Send(&healthpb.HealthCheckResponse{Status: healthpb.HealthCheckResponse_SERVICE_UNKNOWN}); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return status.FromContextError(ctx.Err()).Err()
		case <-h.shutdown:
			return nil
		}
	}
	ready := h.ready
	for {
		st := h.status()
		if err := stream.Send(&healthpb.HealthCheckResponse{Status: st}); err != nil {
			return err
		}
		if st == healthpb.HealthCheckResponse_SERVING {
			ready = nil // seen; only shutdown changes it now
		}
		select {
		case <-ctx.Done():
			return status.FromContextError(ctx.Err()).Err()
		case <-h.shutdown:
			// Send NOT_SERVING, then end the stream: a graceful stop waits
			// for open streams.
			return stream.Send(&healthpb.HealthCheckResponse{Status: healthpb.HealthCheckResponse_NOT_SERVING})
		case <-ready:
		}
	}
}

// Instrument returns a server option that calls observe after each unary
// call with its full method name, status code and duration. Put it before
// Guard's options to see the calls Guard refuses too.
func Instrument(observe func(method string, code codes.Code, took time.Duration)) grpc.ServerOption {
	return grpc.ChainUnaryInterceptor(func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		begun := time.Now()
		resp, err := handler(ctx, req)
		observe(info.FullMethod, status.Code(err), time.Since(begun))
		return resp, err
	})
}
