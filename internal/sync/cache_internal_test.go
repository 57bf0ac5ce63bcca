package sync

import (
	"testing"
	"time"

	"github.com/contextd/contextd/internal/resource"
)

// notifications/resources/updated for a URI contextd does not hold (never
// subscribed, or evicted) is ignored: nothing cached is dropped.
func TestUpdatedForAnUnsubscribedURIDropsNothing(t *testing.T) {
	c := newReadCache(1 << 20)
	tk := c.ticket()
	c.markSubscribed("x://a", tk)
	c.put("x://a", tk, []resource.Content{{URI: "x://a", Text: "alpha"}}, time.Now())
	c.invalidate("x://not-subscribed")
	if got, _, ok := c.get("x://a"); !ok || got[0].Text != "alpha" {
		t.Fatalf("x://a after an update for another URI = %v, %v; want it still cached", got, ok)
	}
	if c.subscribed("x://not-subscribed") {
		t.Error("an update made a URI subscribed")
	}
	c.invalidate("x://a")
	if _, _, ok := c.get("x://a"); ok {
		t.Error("x://a still cached after its own update")
	}
}
