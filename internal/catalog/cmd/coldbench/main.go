// Command coldbench measures how soon a contextd binary serves a cold
// catalogue server (catalogserver), through its CLI and gRPC API only, so
// the same harness measures any version:
//
//   - serve: a daemon on an empty data_dir; the seconds from its start until
//     a Search returns a catalogue resource (searchable), until every
//     descriptor has its vector, until 1,000 and all texts are indexed,
//     and until no passage waits; then the fully indexed answer to each
//     question (Assemble).
//
//   - assemble: a one-shot `contextd assemble --json` per question, each on
//     an empty data_dir: its wall time, and its answer's overlap with the
//     fully indexed one (URIs in common over the full answer's) and whether
//     it holds a resource of a package judged relevant.
//
//     go build -o /tmp/contextd ./cmd/contextd
//     go build -o /tmp/catalogserver ./internal/catalog/cmd/catalogserver
//     go run ./internal/catalog/cmd/coldbench -contextd /tmp/contextd -server /tmp/catalogserver
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/contextd/contextd/internal/catalog"
	contextdv1 "github.com/contextd/contextd/proto/contextd/v1"
)

func main() {
	bin := flag.String("contextd", "", "contextd binary to measure (required)")
	server := flag.String("server", "", "catalogserver binary (required)")
	corpus := flag.String("corpus", catalog.DefaultCorpus(), "godoc dataset directory")
	n := flag.Int("n", 2000, "catalogue resources")
	questions := flag.Int("questions", 3, "test questions for the one-shot runs")
	limit := flag.Duration("limit", 180*time.Second, "how long the serve run may take")
	budget := flag.Int("budget", 2000, "token budget of each answer")
	flag.Parse()
	if *bin == "" || *server == "" {
		fmt.Fprintln(os.Stderr, "coldbench: -contextd and -server are required")
		os.Exit(2)
	}
	if err := run(*bin, *server, *corpus, *n, *questions, *limit, *budget); err != nil {
		fmt.Fprintln(os.Stderr, "coldbench:", err)
		os.Exit(1)
	}
}

func config(dir, server, corpus string, n int) (string, error) {
	cfg := fmt.Sprintf("data_dir: %s\nlisten: unix://%s\nmcpServers:\n  catalog:\n    command: %s\n    args: [\"-n\", \"%d\", \"-corpus\", %q]\n",
		filepath.Join(dir, "data"), filepath.Join(dir, "sock"), server, n, corpus)
	p := filepath.Join(dir, "contextd.yaml")
	return p, os.WriteFile(p, []byte(cfg), 0o644)
}

func run(bin, server, corpus string, n, nq int, limit time.Duration, budget int) error {
	rs, err := catalog.Load(corpus, n)
	if err != nil {
		return err
	}
	pkgOf := map[string]string{}
	for _, r := range rs {
		pkgOf[r.URI] = r.Package
	}
	qs, err := catalog.Questions(corpus, "test")
	if err != nil {
		return err
	}
	qs = qs[:min(nq, len(qs))]

	load := func() string {
		b, _ := os.ReadFile("/proc/loadavg")
		return strings.TrimSpace(string(b))
	}
	fmt.Printf("%s: load average at the start: %s\n", bin, load())
	defer func() { fmt.Printf("%s: load average at the end: %s\n", bin, load()) }()

	// serve
	dir, err := os.MkdirTemp("", "coldbench")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	cfg, err := config(dir, server, corpus, n)
	if err != nil {
		return err
	}
	logf, _ := os.Create(filepath.Join(dir, "serve.log"))
	cmd := exec.Command(bin, "serve", "--config", cfg)
	cmd.Stdout, cmd.Stderr = logf, logf
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return err
	}
	defer func() { _ = cmd.Process.Signal(syscall.SIGTERM); _ = cmd.Wait() }()
	conn, err := grpc.NewClient("unix:"+filepath.Join(dir, "sock"), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer conn.Close()
	cl := contextdv1.NewContextServiceClient(conn)
	marks := map[string]time.Duration{}
	mark := func(name string) {
		if _, ok := marks[name]; !ok {
			marks[name] = time.Since(start)
			fmt.Printf("serve: %-24s %6.1f s (daemon CPU %5.1f s)\n", name, marks[name].Seconds(), cpuSeconds(cmd.Process.Pid))
		}
	}
	var last *contextdv1.ServerStatus
	for time.Since(start) < limit {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		if sr, err := cl.Search(ctx, &contextdv1.SearchRequest{Query: qs[0].Text, Limit: 5}); err == nil && len(sr.GetResults()) > 0 {
			mark("searchable")
		}
		if ls, err := cl.ListServers(ctx, &contextdv1.ListServersRequest{}); err == nil && len(ls.GetServers()) == 1 {
			s := ls.GetServers()[0]
			last = s
			if s.GetResourceCount() == int32(n) && s.GetDescriptorsPending() == 0 && !strings.HasPrefix(s.GetActivity(), "indexing") && s.GetActivity() != "listing" {
				mark("descriptors embedded")
			}
			if s.GetContentCount() >= 1000 {
				mark("1000 texts indexed")
			}
			if s.GetContentCount() >= int32(n) {
				mark("all texts indexed")
			}
			if _, ok := marks["all texts indexed"]; ok && s.GetPassagesPending() == 0 {
				mark("all passages embedded")
				cancel()
				break
			}
		}
		cancel()
		time.Sleep(100 * time.Millisecond)
	}
	if last != nil {
		fmt.Printf("serve: at the end: %d resources, %d texts, %d waiting (%q), %d passages pending, %d bytes of text\n",
			last.GetResourceCount(), last.GetContentCount(), last.GetContentWaiting(), last.GetContentBound(), last.GetPassagesPending(), last.GetContentBytes())
	}
	full := map[string][]string{}
	for _, q := range qs {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		ar, err := cl.Assemble(ctx, &contextdv1.AssembleRequest{Query: q.Text, TokenBudget: int32(budget)})
		cancel()
		if err != nil {
			return fmt.Errorf("assemble on the daemon: %w", err)
		}
		for _, it := range ar.GetItems() {
			full[q.ID] = append(full[q.ID], it.GetUri())
		}
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	_ = cmd.Wait()

	// assemble, cold
	var walls []float64
	for _, q := range qs {
		qdir, err := os.MkdirTemp("", "coldbench-q")
		if err != nil {
			return err
		}
		qcfg, err := config(qdir, server, corpus, n)
		if err != nil {
			return err
		}
		t0 := time.Now()
		c := exec.Command(bin, "assemble", "--config", qcfg, "--json", "--budget", fmt.Sprint(budget), q.Text)
		var errb strings.Builder
		c.Stderr = &errb
		out, err := c.Output()
		wall := time.Since(t0).Seconds()
		os.RemoveAll(qdir)
		if err != nil {
			return fmt.Errorf("assemble %q: %v\n%s", q.Text, err, errb.String())
		}
		var resp struct {
			Items []struct {
				URI string `json:"uri"`
			} `json:"items"`
		}
		if err := json.Unmarshal(out, &resp); err != nil {
			return err
		}
		var got []string
		bearing := false
		for _, it := range resp.Items {
			got = append(got, it.URI)
			if slices.Contains(q.Packages, pkgOf[it.URI]) {
				bearing = true
			}
		}
		common := 0
		for _, u := range full[q.ID] {
			if slices.Contains(got, u) {
				common++
			}
		}
		fullBearing := false
		for _, u := range full[q.ID] {
			if slices.Contains(q.Packages, pkgOf[u]) {
				fullBearing = true
			}
		}
		walls = append(walls, wall)
		cpu := (c.ProcessState.UserTime() + c.ProcessState.SystemTime()).Seconds()
		fmt.Printf("assemble %s: %5.1f s (CPU %5.1f s), %d items, %d of the fully indexed answer's %d, answer-bearing %v (fully indexed: %v)\n",
			q.ID, wall, cpu, len(got), common, len(full[q.ID]), bearing, fullBearing)
		for _, l := range strings.Split(strings.TrimSpace(errb.String()), "\n") {
			if strings.Contains(l, "pending") || strings.Contains(l, "within --timeout") {
				fmt.Println("    stderr:", strings.TrimSpace(l))
			}
		}
	}
	slices.Sort(walls)
	if len(walls) > 0 {
		fmt.Printf("assemble: median %.1f s over %d questions\n", walls[len(walls)/2], len(walls))
	}
	return nil
}

// cpuSeconds returns the user and system CPU time of process pid so far, in
// seconds (Linux: /proc/PID/stat, clock ticks of 1/100 s), or -1.
func cpuSeconds(pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return -1
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	if len(f) < 13 {
		return -1
	}
	var u, k float64
	fmt.Sscan(f[11], &u)
	fmt.Sscan(f[12], &k)
	return (u + k) / 100
}
