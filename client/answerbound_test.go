package client_test

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/contextd/contextd/client"
	contextdv1 "github.com/contextd/contextd/proto/contextd/v1"
)

// bigAnswers answers ListServers with a config error of n bytes.
type bigAnswers struct {
	contextdv1.UnimplementedContextServiceServer
	n int
}

func (b bigAnswers) ListServers(context.Context, *contextdv1.ListServersRequest) (*contextdv1.ListServersResponse, error) {
	return &contextdv1.ListServersResponse{ConfigError: strings.Repeat("x", b.n)}, nil
}

// Whatever answers at the daemon's address (another local user who took
// the port while no daemon runs, say) may send answers of up to 2 GiB,
// which the CLI held several times over: a 500 MB answer took
// `contextd servers` to 4 GB. A client accepts what a daemon with its
// configuration's max_response_bytes can answer, and no more.
func TestAnswersAreBoundedByWhatTheDaemonCanSend(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gs := grpc.NewServer(grpc.MaxSendMsgSize(1 << 30))
	contextdv1.RegisterContextServiceServer(gs, bigAnswers{n: 40 << 20})
	go func() { _ = gs.Serve(l) }()
	t.Cleanup(gs.Stop)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()

	c, err := client.Dial(l.Addr().String(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.ListServers(ctx); status.Code(err) != codes.ResourceExhausted {
		t.Errorf("a 40 MiB answer with the default bound (%d MiB): %v, want RESOURCE_EXHAUSTED", client.AnswerBytesFor(8<<20)>>20, err)
	}

	// A daemon configured for larger answers is read in full.
	path := filepath.Join(t.TempDir(), "c.yaml")
	if err := os.WriteFile(path, []byte("listen: "+l.Addr().String()+"\nmax_response_bytes: 67108864\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tg, err := client.ReadConfig(path)
	if err != nil {
		t.Fatal(err)
	}
	if want := client.AnswerBytesFor(64 << 20); tg.Options.MaxAnswerBytes != want {
		t.Errorf("MaxAnswerBytes = %d for max_response_bytes 64 MiB, want %d", tg.Options.MaxAnswerBytes, want)
	}
	big, err := client.Dial(tg.Addr, &tg.Options)
	if err != nil {
		t.Fatal(err)
	}
	defer big.Close()
	resp, err := big.ListServers(ctx)
	if err != nil || len(resp.GetConfigError()) != 40<<20 {
		t.Errorf("a 40 MiB answer under max_response_bytes 64 MiB: %d bytes, %v", len(resp.GetConfigError()), err)
	}
}
