package mcp

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// heldWriter passes writes through until hold is called; from then on
// every write blocks until Close, as a server that has stopped reading its
// stdin makes them.
type heldWriter struct {
	w        io.Writer
	mu       sync.Mutex
	held     bool
	closed   chan struct{}
	closeOne sync.Once
}

func (h *heldWriter) hold() { h.mu.Lock(); h.held = true; h.mu.Unlock() }

func (h *heldWriter) Write(p []byte) (int, error) {
	h.mu.Lock()
	held := h.held
	h.mu.Unlock()
	if held {
		<-h.closed
		return 0, io.ErrClosedPipe
	}
	return h.w.Write(p)
}

func (h *heldWriter) Close() error {
	h.closeOne.Do(func() { close(h.closed) })
	return nil
}

func heapAfterGC() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// A server that negotiates 2025-03-26 may send JSON-RPC batches. The
// go-sdk keeps a batch until each of its requests is answered; an answer
// dropped because every answer slot was taken (a server that takes
// contextd's answers slowly) left the batch and its requests held for the
// session's life, so such a server grew the daemon's memory for as long as
// it kept sending batches.
func TestBatchesWhoseAnswersAreDroppedLeaveNothingBehind(t *testing.T) {
	toClientR, toClientW := io.Pipe()
	fromClientR, fromClientW := io.Pipe()
	w := &heldWriter{w: fromClientW, closed: make(chan struct{})}
	iot := &mcpsdk.IOTransport{
		Reader: io.NopCloser(&jsonLines{r: bufio.NewReaderSize(toClientR, 64<<10), max: DefaultMaxMessageBytes}),
		Writer: w,
	}
	t.Cleanup(func() { toClientW.Close(); fromClientR.Close(); w.Close() })
	go func() { // the server's side of the handshake
		br := bufio.NewReader(fromClientR)
		for {
			line, err := br.ReadBytes('\n')
			if err != nil {
				return
			}
			var m struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
			}
			switch {
			case json.Unmarshal(line, &m) != nil || len(m.ID) == 0 || m.Method == "":
			case m.Method == "initialize":
				fmt.Fprintf(toClientW, `{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2025-03-26","capabilities":{},"serverInfo":{"name":"batcher","version":"0"}}}`+"\n", m.ID)
			default: // server/discover
				fmt.Fprintf(toClientW, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"Method not found"}}`+"\n", m.ID)
			}
		}
	}()
	sess, err := ConnectTransport(t.Context(), "batcher", iot, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close(); sess.Close() })

	// From now on the server takes no answer: the first pings' answers hold
	// every slot, and the batches' answers are dropped.
	w.hold()
	for i := range MaxAnswersInFlight + 1 {
		fmt.Fprintf(toClientW, `{"jsonrpc":"2.0","id":"p%d","method":"ping"}`+"\n", i)
	}
	settle := func() {
		deadline := time.Now().Add(30 * time.Second)
		last, stable := -1, 0
		for time.Now().Before(deadline) && stable < 5 {
			time.Sleep(100 * time.Millisecond)
			if n := runtime.NumGoroutine(); n == last {
				stable++
			} else {
				last, stable = n, 0
			}
		}
	}
	settle()
	before := heapAfterGC()
	const batches, per = 20, 2000
	for b := range batches {
		var sb strings.Builder
		sb.WriteByte('[')
		for i := range per {
			if i > 0 {
				sb.WriteByte(',')
			}
			fmt.Fprintf(&sb, `{"jsonrpc":"2.0","id":"b%d-%d","method":"ping","params":{"_meta":{"pad":"%s"}}}`, b, i, strings.Repeat("x", 100))
		}
		sb.WriteString("]\n")
		if _, err := io.WriteString(toClientW, sb.String()); err != nil {
			t.Fatal(err)
		}
	}
	settle()
	grown := int64(heapAfterGC()) - int64(before)
	t.Logf("heap grew %d KiB after %d batches of %d pings whose answers were dropped", grown>>10, batches, per)
	if grown > 4<<20 {
		t.Fatalf("the heap grew %d MiB and stays so: the batches are held after their answers were dropped", grown>>20)
	}
}

// The go-sdk decodes the params of every notification, whatever it does
// with them, one at a time, while its reader queues the next: a flood of
// 16 MiB notifications/message whose data is empty objects took the daemon
// past 1.6 GB. Params of more than MaxParamsValues values are dropped
// before it decodes them.
func TestNotificationsOfTooManyValuesAreNotDecoded(t *testing.T) {
	toClientR, toClientW := io.Pipe()
	fromClientR, fromClientW := io.Pipe()
	iot := &mcpsdk.IOTransport{
		Reader: io.NopCloser(&jsonLines{r: bufio.NewReaderSize(toClientR, 64<<10), max: DefaultMaxMessageBytes}),
		Writer: fromClientW,
	}
	t.Cleanup(func() { toClientW.Close(); fromClientR.Close() })
	pong := make(chan struct{}, 1)
	go func() {
		br := bufio.NewReader(fromClientR)
		for {
			line, err := br.ReadBytes('\n')
			if err != nil {
				return
			}
			var m struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
			}
			switch {
			case json.Unmarshal(line, &m) != nil || len(m.ID) == 0:
			case m.Method == "initialize":
				fmt.Fprintf(toClientW, `{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2025-06-18","capabilities":{},"serverInfo":{"name":"chatty","version":"0"}}}`+"\n", m.ID)
			case m.Method != "":
				fmt.Fprintf(toClientW, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"Method not found"}}`+"\n", m.ID)
			case string(m.ID) == `"pong"`:
				pong <- struct{}{}
			}
		}
	}()
	var logs strings.Builder
	var logMu sync.Mutex
	log := slog.New(slog.NewTextHandler(writerFunc(func(p []byte) (int, error) {
		logMu.Lock()
		defer logMu.Unlock()
		return logs.Write(p)
	}), nil))
	sess, err := ConnectTransport(t.Context(), "chatty", iot, &Options{Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sess.Close() })

	big := `{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":[{}` + strings.Repeat(",{}", 2*MaxResultValues) + "]}}\n"
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for range 3 {
		if _, err := io.WriteString(toClientW, big); err != nil {
			t.Fatal(err)
		}
	}
	// The client answers a ping once the notifications before it are handled.
	io.WriteString(toClientW, `{"jsonrpc":"2.0","id":"pong","method":"ping"}`+"\n")
	select {
	case <-pong:
	case <-time.After(30 * time.Second):
		t.Fatal("no answer to a ping after the notifications")
	}
	runtime.ReadMemStats(&after)
	allocated := after.TotalAlloc - before.TotalAlloc
	t.Logf("%d MiB allocated for 3 notifications of %d KiB", allocated>>20, len(big)>>10)
	// Reading each 3 MiB line costs about 40 MiB of copies in the
	// transports; decoding its params took about 100 MiB more.
	if allocated > 256<<20 {
		t.Errorf("%d MiB allocated for 3 notifications of %d KiB: their params were decoded", allocated>>20, len(big)>>10)
	}
	logMu.Lock()
	defer logMu.Unlock()
	if !strings.Contains(logs.String(), "params dropped") {
		t.Errorf("no warning that the params were dropped; log:\n%s", logs.String())
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }
