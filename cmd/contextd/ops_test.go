//go:build unix

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/contextd/contextd/internal/metrics/metricstest"
	contextdv1 "github.com/contextd/contextd/proto/contextd/v1"
)

// TestServeHealthMetricsAndReload runs the daemon with JSON logs and
// metrics, and checks, over its real socket and HTTP endpoint: health is
// NOT_SERVING until a server has synced; metrics move with a query; SIGHUP
// adds, removes and changes servers while an Assemble reading from the
// removed one is in flight, and that Assemble completes; a bad file is
// refused and the old configuration keeps serving; a change of the file
// alone is picked up; and at shutdown health turns NOT_SERVING on an open
// Watch stream before the connection closes.
func TestServeHealthMetricsAndReload(t *testing.T) {
	dir := t.TempDir()
	gate, started, release := filepath.Join(dir, "gate"), filepath.Join(dir, "started"), filepath.Join(dir, "release")
	sock := filepath.Join(dir, "contextd.sock")
	head := fmt.Sprintf("listen: unix://%s\ndata_dir: %s\nlog_format: json\nmetrics_listen: 127.0.0.1:0\nembedder: glove\nmcpServers:\n", sock, filepath.Join(dir, "data"))
	docsJSON := func(m map[string]string) string { b, _ := json.Marshal(m); return string(b) }
	cfgPath := filepath.Join(dir, "contextd.yaml")
	write := func(body string) {
		t.Helper()
		// Replace the file as editors do, so the watcher sees one change.
		tmp := cfgPath + ".tmp"
		if err := os.WriteFile(tmp, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, cfgPath); err != nil {
			t.Fatal(err)
		}
	}
	write(head +
		upstreamEntry("alpha", map[string]string{"FAKE_GATE": gate, "FAKE_DOCS": docsJSON(map[string]string{"doc://alpha": "narwhal notes"})}) +
		upstreamEntry("gone", map[string]string{"FAKE_GATE": gate, "FAKE_DOCS": "{}", "FAKE_SLOW_URI": "doc://gone-ledger",
			"FAKE_STARTED": started, "FAKE_RELEASE": release}) +
		"    index_content: false\n")

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	logs := &lockedBuffer{}
	done := make(chan error, 1)
	go func() { done <- run(ctx, []string{"serve", "--config", cfgPath}, io.Discard, logs) }()
	defer func() {
		cancel()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Error("serve did not stop within 30s")
		}
	}()
	eventually := func(what string, ok func() bool) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for !ok() {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s; logs:\n%s", what, logs.String())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	// JSON logs: find the metrics URL.
	var metricsURL string
	eventually("the metrics URL in the log", func() bool {
		for _, l := range strings.Split(logs.String(), "\n") {
			var rec map[string]any
			if json.Unmarshal([]byte(l), &rec) == nil && rec["msg"] == "contextd serving metrics" {
				metricsURL, _ = rec["url"].(string)
				return true
			}
		}
		return false
	})
	eventually("the socket", func() bool { _, err := os.Stat(sock); return err == nil })
	conn, err := grpc.NewClient("unix://"+sock, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	health := healthpb.NewHealthClient(conn)
	client := contextdv1.NewContextServiceClient(conn)
	check := func() healthpb.HealthCheckResponse_ServingStatus {
		t.Helper()
		r, err := health.Check(t.Context(), &healthpb.HealthCheckRequest{})
		if err != nil {
			t.Fatalf("health check: %v", err)
		}
		return r.GetStatus()
	}

	// Before any server has synced (both wait for the gate).
	if got := check(); got != healthpb.HealthCheckResponse_NOT_SERVING {
		t.Errorf("health before any sync = %v, want NOT_SERVING", got)
	}
	if got := metricstest.Scrape(t, metricsURL)["contextd_serving"]; got != 0 {
		t.Errorf("contextd_serving before any sync = %v, want 0", got)
	}
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	eventually("health SERVING after the first sync", func() bool { return check() == healthpb.HealthCheckResponse_SERVING })

	// Metrics move with a query.
	eventually("alpha and gone ready", func() bool {
		s := metricstest.Scrape(t, metricsURL)
		return s[metricstest.Key("contextd_server_state", "server", "alpha", "state", "ready")] == 1 &&
			s[metricstest.Key("contextd_server_state", "server", "gone", "state", "ready")] == 1
	})
	// alpha's content pass reads doc://alpha once; wait for it, so that the
	// read counter below moves by the Assemble's reads alone.
	eventually("alpha's text in the content index", func() bool {
		return metricstest.Scrape(t, metricsURL)["contextd_content_index_texts"] >= 1
	})
	before := metricstest.Scrape(t, metricsURL)
	resp, err := client.Assemble(t.Context(), &contextdv1.AssembleRequest{Query: "narwhal notes", TokenBudget: 200, Servers: []string{"alpha"}})
	if err != nil {
		t.Fatal(err)
	}
	after := metricstest.Scrape(t, metricsURL)
	for key, want := range map[string]float64{
		metricstest.Key("contextd_request_duration_seconds_count", "method", "assemble", "result", "ok"):                   1,
		metricstest.Key("contextd_grpc_requests_total", "method", "contextd.v1.ContextService/Assemble", "code", "OK"):     1,
		metricstest.Key("contextd_upstream_requests_total", "server", "alpha", "method", "resources/read", "result", "ok"): float64(resp.GetReads()),
		metricstest.Key("contextd_assemble_tokens_sum"):                                                                    float64(resp.GetTotalTokens()),
	} {
		if got := after[key] - before[key]; got != want {
			t.Errorf("%s moved by %v, want %v", key, got, want)
		}
	}
	if after["contextd_serving"] != 1 || resp.GetReads() == 0 {
		t.Errorf("contextd_serving = %v, reads = %d; want 1 and at least one read", after["contextd_serving"], resp.GetReads())
	}

	// An Assemble reading from "gone" is in flight across the reload.
	type answer struct {
		r   *contextdv1.AssembleResponse
		err error
	}
	inflight := make(chan answer, 1)
	go func() {
		r, err := client.Assemble(t.Context(), &contextdv1.AssembleRequest{Query: "walrus ledger", TokenBudget: 200, Servers: []string{"gone"}})
		inflight <- answer{r, err}
	}()
	eventually("the slow read to start", func() bool { _, err := os.Stat(started); return err == nil })

	write(head +
		upstreamEntry("alpha", map[string]string{"FAKE_DOCS": docsJSON(map[string]string{"doc://alpha": "narwhal notes, second edition"})}) +
		upstreamEntry("beta", map[string]string{"FAKE_DOCS": docsJSON(map[string]string{"doc://beta": "manatee notes"})}))
	if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	servers := func() []string {
		r, err := client.ListServers(t.Context(), &contextdv1.ListServersRequest{})
		if err != nil {
			t.Fatalf("ListServers: %v", err)
		}
		var out []string
		for _, s := range r.GetServers() {
			out = append(out, s.GetName())
		}
		return out
	}
	eventually("the new server list", func() bool { return slices.Equal(servers(), []string{"alpha", "beta"}) })
	select {
	case a := <-inflight:
		t.Fatalf("the in-flight Assemble ended before its read was released: %v", a.err)
	default:
	}
	if err := os.WriteFile(release, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	a := <-inflight
	if a.err != nil {
		t.Fatalf("in-flight Assemble across the reload: %v", a.err)
	}
	if items := a.r.GetItems(); len(items) != 1 || items[0].GetUri() != "doc://gone-ledger" {
		t.Errorf("in-flight Assemble items = %v, omitted %v; want the ledger of the removed server", items, a.r.GetOmitted())
	}
	eventually("beta answering", func() bool {
		r, err := client.Search(t.Context(), &contextdv1.SearchRequest{Query: "manatee", Servers: []string{"beta"}})
		return err == nil && len(r.GetResults()) == 1
	})
	eventually("the reload counted", func() bool {
		return metricstest.Scrape(t, metricsURL)[metricstest.Key("contextd_config_reloads_total", "result", "ok")] >= 1
	})
	for key := range metricstest.Scrape(t, metricsURL) {
		if strings.Contains(key, `server="gone"`) {
			t.Errorf("%s still exported after gone was removed", key)
		}
	}
	if !strings.Contains(logs.String(), `"removed":["gone"]`) || !strings.Contains(logs.String(), `"changed":["alpha"]`) {
		t.Errorf("no reload log line naming the removed and changed servers; logs:\n%s", logs.String())
	}

	// A bad file is refused; the old configuration keeps serving.
	write(head + "  broken:\n    command: x\n    url: http://127.0.0.1:1/mcp\n")
	if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	eventually("the refused reload counted", func() bool {
		return metricstest.Scrape(t, metricsURL)[metricstest.Key("contextd_config_reloads_total", "result", "error")] >= 1
	})
	if got := metricstest.Scrape(t, metricsURL)["contextd_config_last_reload_successful"]; got != 0 {
		t.Errorf("contextd_config_last_reload_successful = %v after a refused file, want 0", got)
	}
	if got := servers(); !slices.Equal(got, []string{"alpha", "beta"}) {
		t.Errorf("servers after a refused reload = %v, want the old alpha, beta", got)
	}
	if _, err := client.Assemble(t.Context(), &contextdv1.AssembleRequest{Query: "manatee", TokenBudget: 100}); err != nil {
		t.Errorf("Assemble after a refused reload: %v", err)
	}
	if !strings.Contains(logs.String(), "config reload refused") || !strings.Contains(logs.String(), "not both") {
		t.Errorf("the refused reload is not logged with its reason; logs:\n%s", logs.String())
	}
	// Callers are told that it was refused and where, not the error,
	// which may quote what was written; and that the token in force
	// stays (one rotated in its file meanwhile is not applied).
	if r, err := client.ListServers(t.Context(), &contextdv1.ListServersRequest{}); err != nil || !strings.Contains(r.GetConfigError(), "config reload refused") || !strings.Contains(r.GetConfigError(), "auth token too") || strings.Contains(r.GetConfigError(), "not both") {
		t.Errorf("ListServers config_error = %q (%v), want that the file was refused, the log saying why", r.GetConfigError(), err)
	}
	var human bytes.Buffer
	if err := run(t.Context(), []string{"servers", "--addr", "unix://" + sock}, &human, io.Discard); err != nil || !strings.Contains(human.String(), "config: the daemon refused its config file") {
		t.Errorf("contextd servers = %q (%v), want a line saying the file was refused", human.String(), err)
	}

	// A change of the file alone, no signal, is picked up.
	write(head + upstreamEntry("beta", map[string]string{"FAKE_DOCS": docsJSON(map[string]string{"doc://beta": "manatee notes"})}))
	eventually("the watched file's change applied", func() bool { return slices.Equal(servers(), []string{"beta"}) })
	eventually("config_error cleared by the good file", func() bool {
		r, err := client.ListServers(t.Context(), &contextdv1.ListServersRequest{})
		return err == nil && r.GetConfigError() == ""
	})

	// Shutdown: an open Watch sees NOT_SERVING before the connection closes.
	wctx, wcancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer wcancel()
	watch, err := health.Watch(wctx, &healthpb.HealthCheckRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if r, err := watch.Recv(); err != nil || r.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("watch = %v, %v; want SERVING", r, err)
	}
	cancel() // what SIGTERM does (main's signal.NotifyContext)
	if r, err := watch.Recv(); err != nil || r.GetStatus() != healthpb.HealthCheckResponse_NOT_SERVING {
		t.Errorf("watch after shutdown began = %v, %v; want NOT_SERVING before the connection closed", r, err)
	}
	if err := <-done; err != nil {
		t.Errorf("serve: %v", err)
	}
	done <- nil // for the deferred wait
}

// serveHead is the head of a configuration serving on a unix socket, with
// its data, in state: the mcpServers entries follow it.
func serveHead(state string) string {
	return fmt.Sprintf("listen: unix://%s\ndata_dir: %s\nembedder: glove\nmcpServers:\n", filepath.Join(state, "c.sock"), filepath.Join(state, "data"))
}

// docEntry is the mcpServers entry of a doc-upstream named name serving
// one document, doc://name, whose text is name.
func docEntry(name string) string {
	return upstreamEntry(name, map[string]string{"FAKE_DOCS": fmt.Sprintf(`{"doc://%s":"%s"}`, name, name)})
}

// serveConfig runs serve on the configuration at path until t ends, and
// returns its log once it serves.
func serveConfig(t *testing.T, path string) *lockedBuffer {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	logs := &lockedBuffer{}
	go func() { done <- run(ctx, []string{"serve", "--config", path}, io.Discard, logs) }()
	t.Cleanup(func() { cancel(); <-done })
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(logs.String(), "contextd serving") {
		if time.Now().After(deadline) {
			t.Fatalf("serve did not start; logs:\n%s", logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	return logs
}

// A config file that is a symbolic link to a file elsewhere is reloaded
// when the target is edited in place.
func TestReloadFollowsASymlinkedConfig(t *testing.T) {
	// The daemon writes its socket and data elsewhere, so nothing else
	// stirs the link's directory.
	dir, elsewhere, state := t.TempDir(), t.TempDir(), t.TempDir()
	target := filepath.Join(elsewhere, "real.yaml")
	head := serveHead(state)
	one := docEntry("one")
	if err := os.WriteFile(target, []byte(head+one), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "contextd.yaml")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	logs := serveConfig(t, link)
	deadline := time.Now().Add(30 * time.Second)
	two := docEntry("two")
	f, err := os.OpenFile(target, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(two); err != nil {
		t.Fatal(err)
	}
	f.Close()
	for !strings.Contains(logs.String(), `msg="config reloaded"`) || !strings.Contains(logs.String(), "added=[two]") {
		if time.Now().After(deadline) {
			t.Fatalf("the edit of the link's target was not reloaded; logs:\n%s", logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	// The link pointed at a file in a third directory, then that file
	// edited in place: the new target's directory is watched too.
	third := filepath.Join(t.TempDir(), "moved.yaml")
	if err := os.WriteFile(third, []byte(head+one), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(third, link+".new"); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(link+".new", link); err != nil {
		t.Fatal(err)
	}
	for !strings.Contains(logs.String(), "removed=[two]") {
		if time.Now().After(deadline) {
			t.Fatalf("the link pointed elsewhere was not reloaded; logs:\n%s", logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	three := docEntry("three")
	if f, err = os.OpenFile(third, os.O_WRONLY|os.O_APPEND, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(three); err != nil {
		t.Fatal(err)
	}
	f.Close()
	for !strings.Contains(logs.String(), "added=[three]") {
		if time.Now().After(deadline) {
			t.Fatalf("the edit of the link's new target was not reloaded; logs:\n%s", logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A writer that empties the file and writes it again a moment later
// (not by rename) leaves it empty between the two: that is not applied,
// so no server is removed and its texts stay in the index. The 110th
// pass's 600-resource server took 43 s to come back whole.
func TestAConfigEmptiedAndRewrittenIsAppliedOnceItSettles(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "contextd.yaml")
	head := serveHead(dir)
	one := docEntry("one")
	if err := os.WriteFile(path, []byte(head+one), 0o644); err != nil {
		t.Fatal(err)
	}
	logs := serveConfig(t, path)
	deadline := time.Now().Add(30 * time.Second)
	two := docEntry("two")
	other := filepath.Join(dir, "other.txt") // another file in the directory
	for _, cut := range []string{"", head} { // empty, then cut after mcpServers:
		if err := os.WriteFile(path, []byte(cut), 0o644); err != nil {
			t.Fatal(err)
		}
		time.Sleep(450 * time.Millisecond)
		if err := os.WriteFile(other, []byte(cut), 0o644); err != nil { // an event meanwhile
			t.Fatal(err)
		}
		time.Sleep(450 * time.Millisecond)
		if err := os.WriteFile(path, []byte(head+one), 0o644); err != nil {
			t.Fatal(err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err := os.WriteFile(path, []byte(head+one+two), 0o644); err != nil {
		t.Fatal(err)
	}
	// Another file written every 0.2 s does not put the reload off.
	edited := time.Now()
	for !strings.Contains(logs.String(), "added=[two]") && !strings.Contains(logs.String(), `added="[one two]"`) {
		if time.Now().After(deadline) {
			t.Fatalf("the last edit was not reloaded; logs:\n%s", logs.String())
		}
		if err := os.WriteFile(other, []byte(time.Now().String()), 0o644); err != nil {
			t.Fatal(err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if took := time.Since(edited); took > 8*time.Second {
		t.Errorf("the edit took %v to apply while another file in the directory was written every 0.2 s; want at most %v and the settle", took, maxEventWait)
	}
	if s := logs.String(); strings.Contains(s, "removed=[one]") {
		t.Errorf("a file emptied for 0.6 s was applied, removing a server; logs:\n%s", s)
	}
}

// A writer rewriting the file in place faster than the checks come (empty
// it, write its head, the rest a moment later) leaves the cut file on disk
// at each check: sampled, it seemed to have stayed the same for the
// settle, and was applied, removing a server while the writer ran (the
// 113th pass: at periods of 0.4 and 0.6 s, for 6 and 10 s). Writes seen
// meanwhile restart the settle.
func TestACutRewriteInPlaceIsNotApplied(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "contextd.yaml")
	head := serveHead(dir)
	one := docEntry("one")
	if err := os.WriteFile(path, []byte(head+one), 0o644); err != nil {
		t.Fatal(err)
	}
	logs := serveConfig(t, path)
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, w := range []struct {
		period time.Duration
		n      int
	}{{600 * time.Millisecond, 9}, {400 * time.Millisecond, 10}} {
		for range w.n {
			if err := f.Truncate(0); err != nil {
				t.Fatal(err)
			}
			if _, err := f.WriteAt([]byte(head), 0); err != nil {
				t.Fatal(err)
			}
			time.Sleep(w.period * 6 / 10)
			if _, err := f.WriteAt([]byte(one), int64(len(head))); err != nil {
				t.Fatal(err)
			}
			time.Sleep(w.period * 4 / 10)
		}
	}
	// The watch goes on: an edit after is applied.
	two := docEntry("two")
	if err := os.WriteFile(path, []byte(head+one+two), 0o644); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(logs.String(), "added=[two]") && !strings.Contains(logs.String(), `added="[one two]"`) {
		if time.Now().After(deadline) {
			t.Fatalf("the edit after the rewrites was not reloaded; logs:\n%s", logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if s := logs.String(); strings.Contains(s, "removed=[one]") {
		t.Errorf("the cut file was applied while the writer rewrote it, removing a server; logs:\n%s", s)
	}
}
