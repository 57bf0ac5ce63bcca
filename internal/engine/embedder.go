package engine

import (
	"context"
	"log/slog"

	"github.com/contextd/contextd/internal/config"
	"github.com/contextd/contextd/internal/embed"
	"github.com/contextd/contextd/internal/embed/remote"
)

// ConfiguredEmbedder returns the embedder cfg names: a built-in one
// (NewEmbedder), or the remote one cfg.RemoteEmbedder configures. A remote
// embedder without configured dimensions asks its server once for them, so
// an unreachable server, a refused key or an unknown model fails here.
// Errors carry no credential.
func ConfiguredEmbedder(ctx context.Context, cfg *config.Config, log *slog.Logger) (embed.Embedder, error) {
	r := cfg.RemoteEmbedder
	if r == nil {
		return NewEmbedder(cfg.Embedder)
	}
	return remote.New(ctx, remote.Options{
		Provider:      r.Provider,
		URL:           r.URL,
		Model:         r.Model,
		Dimensions:    r.Dimensions,
		APIKey:        r.APIKey,
		BatchSize:     r.BatchSize,
		Concurrency:   r.Concurrency,
		MaxRetries:    r.MaxRetries,
		Timeout:       r.Timeout,
		MaxInputBytes: r.MaxInputBytes,
		Logger:        log,
	})
}
