package main

import (
	"bytes"
	"context"
	"net"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"

	"github.com/contextd/contextd/internal/config"
	"github.com/contextd/contextd/internal/h2flood"
)

// One gRPC connection may hold at most maxStreamsPerConn calls at once: a
// client (with the token, or where none is set) that opens calls sending
// headers and never a message has the rest refused (REFUSED_STREAM), so
// it cannot hold a goroutine per call without bound.
func TestStreamsPerConnectionAreBounded(t *testing.T) {
	const n = maxStreamsPerConn + 50
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := grpc.NewServer(grpcConnOptions(config.Conns{HandshakeTimeout: 10 * time.Second, IdleTimeout: time.Minute})...)
	healthpb.RegisterHealthServer(s, health.NewServer())
	go s.Serve(lis)
	t.Cleanup(s.Stop)

	c, err := h2flood.Dial(lis.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// The server's SETTINGS first, as a client reads them.
	c.Wait(10*time.Second, func() bool { return c.Advertised() != 0 })
	c.OpenCalls("/grpc.health.v1.Health/Check", n)
	// The server may also end the whole connection instead of refusing
	// streams one by one (grpc-go sometimes resets it under load): the
	// client then holds nothing either.
	refused := c.Wait(10*time.Second, func() bool { return c.Refused() >= n-maxStreamsPerConn })
	if got := c.Advertised(); got != maxStreamsPerConn {
		t.Errorf("the server advertises %d streams per connection, want %d", got, maxStreamsPerConn)
	}
	if !refused && !c.Closed() {
		t.Errorf("%d of %d calls over the %d a connection may hold were refused", c.Refused(), n-maxStreamsPerConn, maxStreamsPerConn)
	}
}

// A call's headers are bounded: a client (no token needed) that sends a
// header block of a megabyte and never ends it has its connection closed
// once the block passes maxHeaderListBytes, rather than the server holding
// all of it (grpc-go's default allows 16 MiB a connection). A call with a
// few kilobytes of metadata is still served.
func TestHeaderBlocksAreBounded(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := grpc.NewServer(grpcConnOptions(config.Conns{HandshakeTimeout: 10 * time.Second, IdleTimeout: time.Minute})...)
	healthpb.RegisterHealthServer(s, health.NewServer())
	go s.Serve(lis)
	t.Cleanup(s.Stop)

	c, err := net.Dial("tcp", lis.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fr := http2.NewFramer(c, c)
	if _, err := c.Write([]byte(http2.ClientPreface)); err != nil {
		t.Fatal(err)
	}
	if err := fr.WriteSettings(); err != nil {
		t.Fatal(err)
	}
	// The server's SETTINGS, acknowledged before the header block: no
	// other frame may come inside one.
	var advertised uint32
	for {
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
		f, err := fr.ReadFrame()
		if err != nil {
			t.Fatalf("reading the server's SETTINGS: %v", err)
		}
		if sf, ok := f.(*http2.SettingsFrame); ok && !sf.IsAck() {
			advertised, _ = sf.Value(http2.SettingMaxHeaderListSize)
			if err := fr.WriteSettingsAck(); err != nil {
				t.Fatal(err)
			}
			break
		}
	}
	if advertised != maxHeaderListBytes {
		t.Errorf("the server advertises a header list of %d bytes, want %d", advertised, maxHeaderListBytes)
	}
	closed := make(chan struct{})
	go func() {
		defer close(closed)
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
		for {
			if _, err := fr.ReadFrame(); err != nil {
				if ne, ok := err.(net.Error); ok && ne.Timeout() {
					return // held: reported below
				}
				closed <- struct{}{}
				return
			}
		}
	}()
	var hb bytes.Buffer
	enc := hpack.NewEncoder(&hb)
	for _, kv := range [][2]string{{":method", "POST"}, {":scheme", "http"}, {":path", "/grpc.health.v1.Health/Check"},
		{":authority", "localhost"}, {"content-type", "application/grpc"}, {"te", "trailers"}} {
		_ = enc.WriteField(hpack.HeaderField{Name: kv[0], Value: kv[1]})
	}
	if err := fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: hb.Bytes()}); err != nil {
		t.Fatal(err)
	}
	value := string(bytes.Repeat([]byte("v"), 4000))
	sent := 0
	for i := 0; sent < 1<<20; i++ {
		hb.Reset()
		for j := range 3 {
			_ = enc.WriteField(hpack.HeaderField{Name: "x-pad-" + string(rune('a'+j)) + string(rune('a'+i%26)), Value: value, Sensitive: true})
		}
		if err := fr.WriteContinuation(1, false, hb.Bytes()); err != nil {
			break // the server closed the connection
		}
		sent += hb.Len()
	}
	select {
	case _, ok := <-closed:
		if !ok {
			t.Fatalf("the server held a connection with an unfinished header block of %d bytes for 10 s", sent)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("no answer from the server")
	}

	// Real calls with a few kilobytes of metadata still pass.
	cc, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ctx = metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+string(bytes.Repeat([]byte("t"), 64)), "x-trace", string(bytes.Repeat([]byte("x"), 4<<10)))
	if _, err := healthpb.NewHealthClient(cc).Check(ctx, &healthpb.HealthCheckRequest{}); err != nil {
		t.Fatalf("a call with 4 KiB of metadata: %v", err)
	}
}
