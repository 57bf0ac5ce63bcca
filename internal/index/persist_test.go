package index_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/contextd/contextd/internal/index/indextest"
	"github.com/contextd/contextd/internal/resource"
)

// gateEmbedder blocks every text containing "slow" until gate is closed.
type gateEmbedder struct {
	indextest.BagEmbedder
	entered chan struct{}
	gate    chan struct{}
}

func (g *gateEmbedder) Embed(ctx context.Context, text string) ([]float32, error) {
	if strings.Contains(text, "slow") {
		select {
		case g.entered <- struct{}{}:
		default:
		}
		select {
		case <-g.gate:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return g.BagEmbedder.Embed(ctx, text)
}

// One server's descriptors being embedded must not hold up another
// server's writes: each server's writes wait only for their own.
func TestEmbeddingOneServerDoesNotBlockAnother(t *testing.T) {
	g := &gateEmbedder{entered: make(chan struct{}, 1), gate: make(chan struct{})}
	ix := open(t, t.TempDir(), g)
	big := make([]resource.Descriptor, 0, 50)
	for _, n := range []string{"a", "b", "c", "d", "e"} {
		big = append(big, resource.Descriptor{Server: "big", URI: "doc://" + n, Name: n, Description: "a slow one"})
	}
	done := make(chan error, 1)
	go func() { _, err := ix.Replace(t.Context(), "big", big); done <- err }()
	<-g.entered // big is embedding, and stays so until the gate opens

	other := make(chan error, 1)
	go func() { _, err := ix.Replace(t.Context(), "small", descs("small", "intro", "guide")); other <- err }()
	select {
	case err := <-other:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		close(g.gate)
		t.Fatal("the small server's sync waited for the big server's embedding")
	}
	if ix.Len("small") != 2 || ix.Len("big") != 0 {
		t.Errorf("while big embeds: small %d, big %d", ix.Len("small"), ix.Len("big"))
	}
	close(g.gate)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if ix.Len("big") != 5 {
		t.Errorf("big has %d descriptors, want 5", ix.Len("big"))
	}
}
