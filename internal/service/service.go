// Package service exposes an [engine.Engine] as the contextd.v1 gRPC API,
// plus the standard health service and server reflection. It is the only
// package that turns contextd's errors into gRPC status codes.
package service

import (
	"context"
	"errors"
	"log/slog"
	"math"
	"strings"
	"sync/atomic"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/reflection"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/contextd/contextd/internal/engine"
	"github.com/contextd/contextd/internal/replica"
	"github.com/contextd/contextd/internal/resource"
	ctxsync "github.com/contextd/contextd/internal/sync"
	contextdv1 "github.com/contextd/contextd/proto/contextd/v1"
)

// MaxRecvMsgSize bounds request messages (bytes). Requests are small; the
// limit keeps a bad client from making the daemon buffer megabytes.
const MaxRecvMsgSize = 1 << 20

// Service implements contextdv1.ContextServiceServer.
type Service struct {
	contextdv1.UnimplementedContextServiceServer
	eng    *engine.Engine
	log    *slog.Logger
	health *Health
	// configError is why the configuration file was last refused ("" when
	// it was not); see SetConfigError.
	configError atomic.Pointer[string]
	// answered, when set, is given each Assemble answer before it is
	// sent (see NoteAnswers).
	answered func(*engine.AssembleResult)
}

// NoteAnswers has Assemble give each answer to f before sending it: the
// MCP server remembers the texts contextd hands out, so that a bridge
// passing them back is told (mcpserver.Server.NoteAnswered). Call it
// before serving.
func (s *Service) NoteAnswers(f func(*engine.AssembleResult)) { s.answered = f }

var _ contextdv1.ContextServiceServer = (*Service)(nil)

// New returns the service for eng. A nil logger discards.
func New(eng *engine.Engine, log *slog.Logger) *Service {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Service{eng: eng, log: log, health: NewHealth(eng.Synced())}
}

// NewServer returns a gRPC server with the contextd service, the health
// service (svc.Health: NOT_SERVING until a server has synced) and
// reflection registered. Requests are bounded to MaxRecvMsgSize bytes and
// MaxRequestFields fields.
func NewServer(svc *Service, opts ...grpc.ServerOption) *grpc.Server {
	s := grpc.NewServer(append([]grpc.ServerOption{grpc.MaxRecvMsgSize(MaxRecvMsgSize), grpc.ForceServerCodecV2(requestCodec())}, opts...)...)
	contextdv1.RegisterContextServiceServer(s, svc)
	healthpb.RegisterHealthServer(s, svc.health)
	reflection.Register(s)
	return s
}

// Health returns the service's health service (see NewServer); call its
// Shutdown when the daemon begins to stop.
func (s *Service) Health() *Health { return s.health }

// AssembleRequest converts a gRPC request to the engine's.
func AssembleRequest(in *contextdv1.AssembleRequest) engine.AssembleRequest {
	req := engine.AssembleRequest{
		Query: in.GetQuery(), TokenBudget: int(in.GetTokenBudget()),
		Filter:        engine.Filter{Servers: in.GetServers(), MIMETypes: in.GetMimeTypes(), URIPrefixes: in.GetUriPrefixes()},
		IncludeBinary: in.GetIncludeBinary(), MaxItems: int(in.GetMaxItems()),
		IncludeUserAudience: in.GetIncludeUserAudience(),
	}
	for _, p := range in.GetPinned() {
		req.Pinned = append(req.Pinned, resource.Key{Server: p.GetServer(), URI: p.GetUri()})
	}
	if in.ValueFloor != nil {
		f := in.GetValueFloor()
		req.ValueFloor = &f
	}
	return req
}

// Assemble implements contextdv1.ContextServiceServer.
func (s *Service) Assemble(ctx context.Context, in *contextdv1.AssembleRequest) (*contextdv1.AssembleResponse, error) {
	req := AssembleRequest(in)
	res, err := s.eng.Assemble(ctx, req)
	if err != nil {
		return nil, s.status(ctx, "assemble", err)
	}
	if s.answered != nil {
		s.answered(res)
	}
	return AssembleResponse(res, in.GetTokenBudget()), nil
}

// Search implements contextdv1.ContextServiceServer.
func (s *Service) Search(ctx context.Context, in *contextdv1.SearchRequest) (*contextdv1.SearchResponse, error) {
	ranked, err := s.eng.Search(ctx, engine.SearchRequest{Query: in.GetQuery(), Limit: int(in.GetLimit()),
		Filter: engine.Filter{Servers: in.GetServers(), MIMETypes: in.GetMimeTypes(), URIPrefixes: in.GetUriPrefixes()}})
	if err != nil {
		return nil, s.status(ctx, "search", err)
	}
	out := &contextdv1.SearchResponse{}
	for _, r := range ranked {
		out.Results = append(out.Results, &contextdv1.SearchResult{
			Server: r.Server, Uri: r.URI, Name: r.Name, Title: r.Title, Description: r.Description,
			MimeType: r.MIMEType, Size: r.Size, Score: r.Score, Rank: int32(r.Rank),
		})
	}
	return out, nil
}

// ListServers implements contextdv1.ContextServiceServer.
func (s *Service) ListServers(context.Context, *contextdv1.ListServersRequest) (*contextdv1.ListServersResponse, error) {
	out := ListServersResponse(s.eng.Servers())
	if msg := s.configError.Load(); msg != nil {
		out.ConfigError = *msg
	}
	if st, ok := s.eng.Replica(); ok {
		out.Store = StoreStatus(st)
	}
	return out, nil
}

// SetConfigError records why the daemon's configuration file was refused
// at a reload (ListServersResponse.config_error), or clears it with "".
// msg must already be free of credentials.
func (s *Service) SetConfigError(msg string) { s.configError.Store(&msg) }

// The ErrorInfo a status carries when the daemon itself answered UNAVAILABLE
// (no server in scope has synced, or every one failed): its domain and reason.
const (
	ErrorDomain               = "contextd"
	ReasonUpstreamUnavailable = "UPSTREAM_UNAVAILABLE"
)

// noRetryKey is the trailer by which a server tells a gRPC client's retry
// policy not to retry a call (a negative value).
const noRetryKey = "grpc-retry-pushback-ms"

// status maps an engine error to a gRPC status. A request whose own context
// ended is reported as such, whatever error that surfaced as inside.
func (s *Service) status(ctx context.Context, op string, err error) error {
	if cerr := ctx.Err(); cerr != nil {
		err = cerr
	}
	switch {
	case errors.Is(err, engine.ErrInvalidArgument):
		return status.Error(codes.InvalidArgument, withoutSentinel(err, engine.ErrInvalidArgument))
	case errors.Is(err, engine.ErrUnavailable):
		// UNAVAILABLE is also what a client sees when no daemon answers;
		// the ErrorInfo (AIP-193) says this one is the daemon's.
		msg := withoutSentinel(err, engine.ErrUnavailable)
		// Asking again at once gets the same answer: a client's retry
		// policy for UNAVAILABLE (meant for a connection lost) is told
		// not to (gRPC's server pushback, gRFC A6).
		_ = grpc.SetTrailer(ctx, metadata.Pairs(noRetryKey, "-1"))
		st, derr := status.New(codes.Unavailable, msg).WithDetails(&errdetails.ErrorInfo{Reason: ReasonUpstreamUnavailable, Domain: ErrorDomain})
		if derr != nil {
			return status.Error(codes.Unavailable, msg)
		}
		return st.Err()
	case errors.Is(err, context.Canceled):
		return status.Error(codes.Canceled, err.Error())
	case errors.Is(err, context.DeadlineExceeded):
		return status.Error(codes.DeadlineExceeded, err.Error())
	}
	s.log.Error(op+" failed", "err", err)
	return status.Error(codes.Internal, err.Error())
}

// withoutSentinel returns err's message without a leading "sentinel: ",
// which the status code already says ("unavailable: no server in scope
// has synced yet" is sent as "no server in scope has synced yet").
func withoutSentinel(err, sentinel error) string {
	msg := err.Error()
	if rest, ok := strings.CutPrefix(msg, sentinel.Error()+": "); ok && rest != "" {
		return rest
	}
	return msg
}

// AssembleResponse converts an engine result to its protobuf form. The CLI's
// one-shot assemble uses it too, so --json prints the same message the
// daemon returns.
func AssembleResponse(res *engine.AssembleResult, budget int32) *contextdv1.AssembleResponse {
	out := &contextdv1.AssembleResponse{
		TotalTokens: int32(res.TotalTokens), TokenBudget: budget,
		Tokenizer: res.Tokenizer, Reads: int32(res.Reads),
	}
	for _, it := range res.Items {
		pi := &contextdv1.Item{
			Server: it.Server, Uri: it.URI, Name: it.Name, Title: it.Title, MimeType: it.MIMEType,
			Score: it.Score, Tokens: int32(it.Tokens), Truncated: it.Truncated, Reason: it.Reason,
			Form: string(it.Form), Value: it.Value,
			Rank: int32(it.Rank),
		}
		if f, ok := res.Fetched[it.Key()]; ok {
			pi.FetchedAt = timestamppb.New(f.At)
			pi.Freshness = f.Freshness()
			if !f.Expires.IsZero() {
				pi.ExpiresAt = timestamppb.New(f.Expires)
			}
		}
		for _, c := range it.Contents {
			pc := &contextdv1.Content{Uri: c.URI, MimeType: c.MIMEType, Tokens: int32(c.Tokens), Truncated: c.Truncated,
				StartLine: int32(c.StartLine), EndLine: int32(c.EndLine)}
			if c.IsBlob {
				pc.Body = &contextdv1.Content_Blob{Blob: c.Blob}
			} else {
				pc.Body = &contextdv1.Content_Text{Text: c.Text}
			}
			pi.Contents = append(pi.Contents, pc)
		}
		for _, d := range it.Dropped {
			pi.Dropped = append(pi.Dropped, &contextdv1.DroppedContent{Index: int32(d.Index), Uri: d.URI, MimeType: d.MIMEType, Reason: string(d.Reason), Detail: d.Detail})
		}
		out.Items = append(out.Items, pi)
	}
	for _, o := range res.Omitted {
		out.Omitted = append(out.Omitted, &contextdv1.Omitted{
			Server: o.Server, Uri: o.URI, Reason: string(o.Reason), Detail: o.Detail,
			Score: o.Score, Rank: int32(o.Rank),
		})
	}
	return out
}

// ListServersResponse converts server statuses to their protobuf form.
func ListServersResponse(servers []engine.ServerStatus) *contextdv1.ListServersResponse {
	out := &contextdv1.ListServersResponse{}
	for _, s := range servers {
		ps := &contextdv1.ServerStatus{
			Name: s.Server, State: state(s.State), Transport: s.Transport,
			ResourcesCapability: s.Capabilities.Resources, Subscribe: s.Capabilities.Subscribe,
			ListChanged: s.Capabilities.ListChanged, ResourceCount: int32(s.Resources),
			ContentCount:  int32(s.Contents),
			TemplateCount: int32(s.Templates), ListComplete: s.ListComplete, LastError: s.LastError,
			ProtocolVersion: s.Protocol, RejectedEntries: int32(s.Rejected),
			DuplicateEntries: int32(s.Duplicates), ListProblems: s.Problems,
			Activity: s.Activity, DescriptorsPending: int32(s.DescriptorsPending),
			ContentWaiting: int32(s.ContentWaiting), ContentBytes: s.ContentBytes,
			ContentMaxBytes: s.ContentMaxBytes, ContentBound: s.ContentBound,
			PassagesPending: int32(s.PassagesPending), McpListing: s.MCPListing,
		}
		if s.ServerName != "" {
			ps.ServerInfo = strings.TrimSpace(s.ServerName + " " + s.ServerVersion)
		}
		if !s.LastSync.IsZero() {
			ps.LastSync = timestamppb.New(s.LastSync)
		}
		if !s.LastErrorTime.IsZero() {
			ps.LastErrorTime = timestamppb.New(s.LastErrorTime)
		}
		out.Servers = append(out.Servers, ps)
	}
	return out
}

func state(s ctxsync.State) contextdv1.ServerStatus_State {
	switch s {
	case ctxsync.StateConnecting:
		return contextdv1.ServerStatus_STATE_CONNECTING
	case ctxsync.StateReady:
		return contextdv1.ServerStatus_STATE_READY
	case ctxsync.StateDegraded:
		return contextdv1.ServerStatus_STATE_DEGRADED
	case ctxsync.StateStale:
		return contextdv1.ServerStatus_STATE_STALE
	case ctxsync.StateFailed:
		return contextdv1.ServerStatus_STATE_FAILED
	}
	return contextdv1.ServerStatus_STATE_UNSPECIFIED
}

// StoreStatus is the proto form of a replica's view of the shared store.
func StoreStatus(st replica.Status) *contextdv1.StoreStatus {
	out := &contextdv1.StoreStatus{Replica: st.Holder, Owned: st.Owned, Stale: st.Stale,
		LastError: st.LastError, Pending: int32(min(st.Pending, math.MaxInt32))}
	if !st.LastOK.IsZero() {
		out.LastOk = timestamppb.New(st.LastOK)
	}
	return out
}
