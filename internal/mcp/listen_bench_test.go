package mcp_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"testing"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/contextd/contextd/internal/config"
	"github.com/contextd/contextd/internal/mcp"
	"github.com/contextd/contextd/internal/mcp/mcptest"
)

// BenchmarkListenStreams measures what holding n resource subscriptions
// costs with the go-sdk (v1.8.0) on both sides of one session: on
// 2026-07-28 each is a subscriptions/listen stream of its own (one per
// URI), on 2025-11-25 a resources/subscribe request. It reports the time
// to subscribe all n (ns/op), and per subscription the goroutines and live
// heap bytes held while they are open (client and server in this process).
//
//	go test -run X -bench ListenStreams -benchtime 5x ./internal/mcp/
func BenchmarkListenStreams(b *testing.B) {
	for _, transport := range []string{"memory", "http"} {
		for _, proto := range []string{"2025-11-25", "2026-07-28"} {
			for _, n := range []int{16, 64, 256} {
				b.Run(fmt.Sprintf("%s/%s/n=%d", transport, proto, n), func(b *testing.B) {
					docs := map[string]string{}
					for i := range n {
						docs[fmt.Sprintf("doc://%d", i)] = "text"
					}
					srv := mcptest.NewServer(docs, &mcpsdk.ServerOptions{
						SubscribeHandler:   func(context.Context, *mcpsdk.SubscribeRequest) error { return nil },
						UnsubscribeHandler: func(context.Context, *mcpsdk.UnsubscribeRequest) error { return nil },
					})
					var url string
					if transport == "http" {
						hs := httptest.NewServer(mcpsdk.NewStreamableHTTPHandler(func(*http.Request) *mcpsdk.Server { return srv },
							&mcpsdk.StreamableHTTPOptions{Stateless: proto >= "2026-07-28"}))
						b.Cleanup(hs.Close)
						url = hs.URL
					}
					var goroutines, heap float64
					for b.Loop() {
						b.StopTimer()
						opts := &mcp.Options{ProtocolVersion: proto, MaxListens: n}
						var sess *mcp.Session
						var err error
						if transport == "http" {
							sess, err = mcp.Connect(b.Context(), config.Server{Name: "s", Transport: config.TransportHTTP, URL: url}, opts)
						} else {
							sess, err = mcptest.Dial(b, "s", srv)(b.Context(), opts)
						}
						if err != nil {
							b.Fatal(err)
						}
						g0, h0 := liveGoroutines(), liveHeap()
						b.StartTimer()
						for i := range n {
							if err := sess.Subscribe(b.Context(), fmt.Sprintf("doc://%d", i)); err != nil {
								b.Fatal(err)
							}
						}
						b.StopTimer()
						goroutines += float64(liveGoroutines()-g0) / float64(n)
						heap += float64(liveHeap()-h0) / float64(n)
						sess.Close()
						b.StartTimer()
					}
					b.ReportMetric(goroutines/float64(b.N), "goroutines/sub")
					b.ReportMetric(heap/float64(b.N), "heapB/sub")
				})
			}
		}
	}
}

func liveGoroutines() int {
	time.Sleep(20 * time.Millisecond) // let goroutines started by the last calls settle
	return runtime.NumGoroutine()
}

func liveHeap() int64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc)
}
