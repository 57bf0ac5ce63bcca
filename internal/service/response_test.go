package service_test

import (
	"testing"
	"time"

	"github.com/contextd/contextd/internal/engine"
	"github.com/contextd/contextd/internal/resource"
	"github.com/contextd/contextd/internal/selector"
	"github.com/contextd/contextd/internal/service"
	ctxsync "github.com/contextd/contextd/internal/sync"
)

func TestAssembleResponseSaysWhenAndHowEachItemWasFetched(t *testing.T) {
	at := time.Date(2026, 11, 30, 6, 0, 0, 0, time.UTC)
	res := &engine.AssembleResult{
		Result: selector.Result{Items: []selector.Item{
			{Candidate: selector.Candidate{Server: "s", URI: "doc://cached"}},
			{Candidate: selector.Candidate{Server: "s", URI: "doc://read"}},
			{Candidate: selector.Candidate{Server: "s", URI: "doc://ttl"}},
		}},
		Fetched: map[resource.Key]ctxsync.Fetch{
			{Server: "s", URI: "doc://cached"}: {At: at, Subscribed: true},
			{Server: "s", URI: "doc://read"}:   {At: at.Add(time.Second)},
			{Server: "s", URI: "doc://ttl"}:    {At: at, Expires: at.Add(time.Minute)},
		},
	}
	out := service.AssembleResponse(res, 100)
	if got := out.Items[0]; got.GetFreshness() != "subscription" || !got.GetFetchedAt().AsTime().Equal(at) || got.GetExpiresAt() != nil {
		t.Errorf("cached item: freshness %q fetched %v expires %v", got.GetFreshness(), got.GetFetchedAt().AsTime(), got.GetExpiresAt())
	}
	if got := out.Items[1]; got.GetFreshness() != "read" || !got.GetFetchedAt().AsTime().Equal(at.Add(time.Second)) || got.GetExpiresAt() != nil {
		t.Errorf("read item: freshness %q fetched %v expires %v", got.GetFreshness(), got.GetFetchedAt().AsTime(), got.GetExpiresAt())
	}
	if got := out.Items[2]; got.GetFreshness() != "ttl" || !got.GetFetchedAt().AsTime().Equal(at) || !got.GetExpiresAt().AsTime().Equal(at.Add(time.Minute)) {
		t.Errorf("ttl item: freshness %q fetched %v expires %v; want ttl until %v", got.GetFreshness(), got.GetFetchedAt().AsTime(), got.GetExpiresAt(), at.Add(time.Minute))
	}
}
