package main

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// mkfile writes text to path, its directories made first.
func mkfile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// mkdirs makes each directory, with its parents.
func mkdirs(t *testing.T, dirs ...string) {
	t.Helper()
	for _, d := range dirs {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
}

// repoint makes link point at target, by rename, as deploy tools do.
func repoint(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link+".new"); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(link+".new", link); err != nil {
		t.Fatal(err)
	}
}

// linkedWatch makes root/etc/contextd.yaml a link to root/D/real.yaml for
// the first of dirs (root/D/real.yaml is made for each), and watches it.
// watched lists the directories watched, sorted.
func linkedWatch(t *testing.T, dirs ...string) (root, link string, w *watcher, watched func() []string) {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	link = filepath.Join(root, "etc", "contextd.yaml")
	for _, d := range dirs {
		mkfile(t, filepath.Join(root, d, "real.yaml"), "x")
	}
	mkdirs(t, filepath.Dir(link))
	if err := os.Symlink(filepath.Join(root, dirs[0], "real.yaml"), link); err != nil {
		t.Fatal(err)
	}
	w = startWatch(link, slog.New(slog.DiscardHandler))
	t.Cleanup(w.Close)
	if w.fs == nil {
		t.Fatal("the directories could not be watched")
	}
	return root, link, w, func() []string {
		l := w.fs.WatchList()
		slices.Sort(l)
		return l
	}
}

func TestLinkChainIsEveryDirectoryAlongThePath(t *testing.T) {
	// t.TempDir may itself be reached through links (macOS's /var).
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	at := func(p ...string) string { return filepath.Join(append([]string{root}, p...)...) }
	mkfile(t, at("releases", "v1", "real.yaml"), "x")
	mkdirs(t, at("etc"), at("mid"), at("srv"))
	// etc/contextd.yaml -> ../mid/next.yaml -> srv/current/real.yaml,
	// with srv/current -> ../releases/v1 (relative, a directory).
	for _, l := range [][2]string{
		{filepath.Join("..", "releases", "v1"), at("srv", "current")},
		{at("srv", "current", "real.yaml"), at("mid", "next.yaml")},
		{filepath.Join("..", "mid", "next.yaml"), at("etc", "contextd.yaml")},
	} {
		if err := os.Symlink(l[0], l[1]); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		name, path string
		want       []string
	}{
		{"a file", at("releases", "v1", "real.yaml"), []string{at("releases", "v1")}},
		{"a missing file", at("releases", "v1", "gone.yaml"), []string{at("releases", "v1")}},
		{"a missing directory", at("releases", "v9", "real.yaml"), []string{at("releases")}},
		{"a directory link", at("srv", "current", "real.yaml"), []string{at("srv"), at("releases", "v1")}},
		{"a link to a link", at("etc", "contextd.yaml"), []string{at("etc"), at("mid"), at("srv"), at("releases", "v1")}},
		{"dot-dot after a link", at("srv", "current") + "/../v1/real.yaml", []string{at("srv"), at("releases", "v1")}},
	} {
		got, _ := linkChain(c.path)
		slices.Sort(got)
		slices.Sort(c.want)
		if !slices.Equal(got, c.want) {
			t.Errorf("%s: linkChain(%s) = %q, want %q", c.name, c.path, got, c.want)
		}
	}
	// A loop ends the walk, with what was found.
	if err := os.Symlink("b", at("a")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("a", at("b")); err != nil {
		t.Fatal(err)
	}
	if got, _ := linkChain(at("a")); !slices.Equal(got, []string{root}) {
		t.Errorf("a loop of links: linkChain = %q, want %q", got, []string{root})
	}
}

// The watch follows the path as its links are repointed and its
// directories removed and made again, and holds only what the path goes
// through now: it does not grow with every place a link once pointed.
func TestTheWatchHoldsTheDirectoriesThePathGoesThroughNow(t *testing.T) {
	root, link, w, watched := linkedWatch(t, "r0")
	for i := 1; i <= 30; i++ {
		r := filepath.Join(root, fmt.Sprintf("r%d", i))
		mkfile(t, filepath.Join(r, "real.yaml"), "x")
		repoint(t, filepath.Join(r, "real.yaml"), link)
		w.follow(link)
		if got, want := watched(), []string{filepath.Join(root, "etc"), r}; !slices.Equal(got, want) {
			t.Fatalf("after %d repoints the watch holds %q, want %q", i, got, want)
		}
	}
	last := filepath.Join(root, "r30")
	if err := os.RemoveAll(last); err != nil {
		t.Fatal(err)
	}
	w.follow(link)
	if got, want := watched(), []string{root, filepath.Join(root, "etc")}; !slices.Equal(got, want) {
		t.Fatalf("with the target's directory removed the watch holds %q, want %q", got, want)
	}
	mkfile(t, filepath.Join(last, "real.yaml"), "x")
	w.follow(link)
	if got, want := watched(), []string{filepath.Join(root, "etc"), last}; !slices.Equal(got, want) {
		t.Fatalf("with the target's directory made again the watch holds %q, want %q", got, want)
	}
}

// Each change along a path of links reloads: the middle of a chain of
// links repointed, the new target edited in place, a directory link in
// the path repointed, and the target's directory removed and made again.
func TestReloadFollowsEveryLinkAlongThePath(t *testing.T) {
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	state := t.TempDir()
	at := func(p ...string) string { return filepath.Join(append([]string{root}, p...)...) }
	head := serveHead(state)
	mkfile(t, at("releases", "v1", "real.yaml"), head+docEntry("one"))
	mkdirs(t, at("etc"), at("mid"), at("srv"))
	// etc/contextd.yaml -> mid/next.yaml -> srv/current/real.yaml, and
	// srv/current -> releases/v1.
	for _, l := range [][2]string{
		{at("releases", "v1"), at("srv", "current")},
		{at("srv", "current", "real.yaml"), at("mid", "next.yaml")},
		{at("mid", "next.yaml"), at("etc", "contextd.yaml")},
	} {
		if err := os.Symlink(l[0], l[1]); err != nil {
			t.Fatal(err)
		}
	}
	logs := serveConfig(t, at("etc", "contextd.yaml"))
	deadline := time.Now().Add(60 * time.Second)
	waitFor := func(what, want string) {
		t.Helper()
		for !strings.Contains(logs.String(), want) {
			if time.Now().After(deadline) {
				t.Fatalf("%s was not reloaded (no %q); logs:\n%s", what, want, logs.String())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}

	mkfile(t, at("elsewhere", "b.yaml"), head+docEntry("one")+docEntry("two"))
	repoint(t, at("elsewhere", "b.yaml"), at("mid", "next.yaml"))
	waitFor("the middle link repointed", "added=[two]")

	f, err := os.OpenFile(at("elsewhere", "b.yaml"), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(docEntry("three")); err != nil {
		t.Fatal(err)
	}
	f.Close()
	waitFor("the new target edited in place", "added=[three]")

	repoint(t, at("srv", "current", "real.yaml"), at("mid", "next.yaml"))
	waitFor("the middle link pointed back", `removed="[three two]"`)

	mkfile(t, at("releases", "v2", "real.yaml"), head+docEntry("one")+docEntry("four"))
	repoint(t, at("releases", "v2"), at("srv", "current"))
	waitFor("the directory link repointed", "added=[four]")

	if err := os.RemoveAll(at("releases", "v2")); err != nil {
		t.Fatal(err)
	}
	waitFor("the target's directory removed", "config reload refused")
	mkfile(t, at("releases", "v2", "real.yaml"), head+docEntry("one")+docEntry("five"))
	waitFor("the target's directory made again", "added=[five]")
}

// A directory on the path that cannot be watched (made unreadable a
// moment) keeps the watches held, and the file is checked every pollEvery
// until the path can be watched whole again. Before, the watches no
// longer wanted were dropped all the same: none was left, nothing was
// polled, and changes went unseen until a SIGHUP.
func TestAPathThatCannotBeWatchedWholeIsPolled(t *testing.T) {
	root, link, w, watched := linkedWatch(t, "a", "b")
	held := []string{filepath.Join(root, "a"), filepath.Join(root, "etc")}
	if got := watched(); !slices.Equal(got, held) {
		t.Fatalf("the watch holds %q, want %q", got, held)
	}
	add := w.watchDir
	w.watchDir = func(d string) error {
		if d == filepath.Join(root, "b") {
			return os.ErrPermission
		}
		return add(d)
	}
	repoint(t, filepath.Join(root, "b", "real.yaml"), link)
	w.follow(link)
	if got := watched(); !slices.Equal(got, held) {
		t.Errorf("with the new target's directory unwatchable the watch holds %q, want the watches held before, %q", got, held)
	}
	select {
	case <-w.poll.C:
	case <-time.After(3 * pollEvery):
		t.Fatal("with a directory of the path unwatchable the file is not polled")
	}
	w.watchDir = add
	w.follow(link)
	if got, want := watched(), []string{filepath.Join(root, "b"), filepath.Join(root, "etc")}; !slices.Equal(got, want) {
		t.Errorf("once the directory can be watched the watch holds %q, want %q", got, want)
	}
	if w.polling {
		t.Error("still polling once the path is watched whole")
	}
}
