package mcp_test

import (
	"fmt"
	"testing"

	"github.com/contextd/contextd/internal/mcp"
	"github.com/contextd/contextd/internal/resource"
)

// What was recorded of a server's resources no longer listed is forgotten
// at its next complete list: a bridge turning its list over would
// otherwise fill the copies it is known by, and past their bound its new
// copies would go unrecorded (and a withheld server's own pages too).
func TestServedListsForgetWhatIsNoLongerListed(t *testing.T) {
	lists := &mcp.ServedLists{}
	lists.Withhold("bridge")
	key := func(server string, i int) resource.Key {
		return resource.Key{Server: server, URI: fmt.Sprintf("doc://%d", i)}
	}
	for i := range 6 {
		lists.NoteCopy(key("bridge", i), true)
		lists.NoteCopy(key("other", i), true)
	}
	for i := 6; i < 10; i++ {
		lists.NoteOwn(key("bridge", i))
	}
	if c, o := lists.CopyCount("bridge"), lists.OwnCount("bridge"); c != 6 || o != 4 {
		t.Fatalf("recorded %d copies and %d own; want 6 and 4", c, o)
	}
	lists.Prune("bridge", map[string]bool{"doc://1": true, "doc://7": true, "doc://99": true})
	if c, o := lists.CopyCount("bridge"), lists.OwnCount("bridge"); c != 1 || o != 1 {
		t.Errorf("after a list of doc://1, doc://7 and doc://99: %d copies and %d own; want 1 and 1", c, o)
	}
	if !lists.IsCopy(key("bridge", 1)) || lists.IsCopy(key("bridge", 2)) || !lists.IsOwn(key("bridge", 7)) || lists.IsOwn(key("bridge", 8)) {
		t.Error("kept the wrong ones: want doc://1 a copy and doc://7 its own, no others")
	}
	if n := lists.CopyCount("other"); n != 6 {
		t.Errorf("another server's copies: %d; want its 6", n)
	}
}
