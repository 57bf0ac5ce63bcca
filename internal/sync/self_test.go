package sync_test

import (
	"strings"
	"testing"

	"github.com/contextd/contextd/internal/index"
	"github.com/contextd/contextd/internal/index/indextest"
	"github.com/contextd/contextd/internal/mcp"
	"github.com/contextd/contextd/internal/mcp/mcptest"
	ctxsync "github.com/contextd/contextd/internal/sync"
)

// A server that lists this contextd's own mirror of it back
// (contextd:resource/<its name>/…) is this contextd, reached through a
// bridge that answers initialize itself and so drops the instance name:
// it is not mirrored, nor are its templates, and what was indexed of it
// goes. Listed entries of a contextd under other names (another contextd's
// servers) are mirrored as ever.
func TestAServerListingItsOwnMirrorBackIsNotMirrored(t *testing.T) {
	for _, c := range []struct {
		uri  string
		self bool
	}{
		{"contextd:resource/bridge/contextd:resource/everything/demo://a", true},
		{"contextd:resource/br%69dge/doc://a", true},
		{"contextd:resource/everything/demo://a", false},
	} {
		ix, err := index.Open(t.Context(), index.Options{Embedder: &indextest.BagEmbedder{}})
		if err != nil {
			t.Fatal(err)
		}
		srv := mcptest.NewServer(map[string]string{c.uri: "a note", "doc://plain": "another"}, nil)
		m := ctxsync.New(ctxsync.Options{Server: "bridge", Index: ix, Dial: mcptest.Dial(t, "bridge", srv)})
		start(t, m)
		<-m.Ready()
		st := m.Status()
		n := len(ix.Descriptors("bridge"))
		if c.self {
			if !strings.Contains(st.LastError, mcp.ErrSelf.Error()) || n != 0 || st.Templates != 0 {
				t.Errorf("%s listed: error %q, %d indexed, %d templates; want ErrSelf and none", c.uri, st.LastError, n, st.Templates)
			}
		} else if st.LastError != "" || n != 2 {
			t.Errorf("%s listed: error %q, %d indexed; want both mirrored", c.uri, st.LastError, n)
		}
		ix.Close()
	}
}
