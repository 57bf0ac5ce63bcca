package service_test

import (
	"bytes"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
	"google.golang.org/grpc"

	"github.com/contextd/contextd/internal/service"
	contextdv1 "github.com/contextd/contextd/proto/contextd/v1"
)

// A client without the token opens thousands of unary calls on one
// connection, each sending its headers and never its request message
// (interceptors run only once the message is in). Each is refused as its
// headers arrive: none holds a goroutine waiting.
func TestCallsWithoutTheTokenAreRefusedAtTheirHeaders(t *testing.T) {
	const token, n = "0123456789abcdef0123456789abcdef", 2000
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := grpc.NewServer(service.Guard(service.GuardOptions{Token: token})...)
	contextdv1.RegisterContextServiceServer(s, &stubService{})
	go s.Serve(lis)
	t.Cleanup(s.Stop)

	c, err := net.Dial("tcp", lis.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	before := runtime.NumGoroutine()
	var mu sync.Mutex
	fr := http2.NewFramer(c, c)
	// The server may also end the whole connection (grpc-go sometimes
	// resets it under load): its calls then hold nothing either.
	var closed atomic.Bool
	write := func(f func() error) {
		mu.Lock()
		defer mu.Unlock()
		if closed.Load() {
			return
		}
		if err := f(); err != nil {
			t.Logf("write: %v (the server ended the connection)", err)
			closed.Store(true)
		}
	}
	var ended atomic.Int32 // streams the server ended (trailers or RST_STREAM)
	go func() {
		for {
			f, err := fr.ReadFrame()
			if err != nil {
				closed.Store(true)
				return
			}
			switch f := f.(type) {
			case *http2.SettingsFrame:
				if !f.IsAck() {
					write(fr.WriteSettingsAck)
				}
			case *http2.HeadersFrame:
				if f.StreamEnded() {
					ended.Add(1)
				}
			case *http2.RSTStreamFrame:
				ended.Add(1)
			}
		}
	}()
	write(func() error { _, err := c.Write([]byte(http2.ClientPreface)); return err })
	write(func() error { return fr.WriteSettings() })
	var hb bytes.Buffer
	enc := hpack.NewEncoder(&hb)
	for i := range n {
		hb.Reset()
		for _, kv := range [][2]string{{":method", "POST"}, {":scheme", "http"}, {":path", contextdv1.ContextService_ListServers_FullMethodName},
			{":authority", "localhost"}, {"content-type", "application/grpc"}, {"te", "trailers"}} {
			_ = enc.WriteField(hpack.HeaderField{Name: kv[0], Value: kv[1]})
		}
		write(func() error {
			return fr.WriteHeaders(http2.HeadersFrameParam{StreamID: uint32(2*i + 1), BlockFragment: hb.Bytes(), EndHeaders: true})
		})
	}
	deadline := time.Now().Add(10 * time.Second)
	for ended.Load() < n && !closed.Load() && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if got := ended.Load(); got < n && !closed.Load() {
		t.Errorf("%d of %d calls without the token refused; the rest wait for a message", got, n)
	}
	if grown := runtime.NumGoroutine() - before; grown > 100 {
		t.Errorf("%d goroutines more while %d calls without the token are open", grown, n)
	}
}
