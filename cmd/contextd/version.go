package main

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
)

// releaseVersion is set at link time by release builds
// (-ldflags "-X main.releaseVersion=1.2.3"); empty otherwise.
var releaseVersion string

// version is the short version: the release's, else the main module's
// version as the go command stamped it (a tag such as v1.2.3, or a
// pseudo-version with +dirty for a modified checkout), else "devel".
var version = shortVersion(releaseVersion, readBuildInfo())

func readBuildInfo() *debug.BuildInfo {
	bi, _ := debug.ReadBuildInfo()
	return bi
}

func shortVersion(release string, bi *debug.BuildInfo) string {
	switch {
	case release != "":
		return release
	case bi != nil && bi.Main.Version != "" && bi.Main.Version != "(devel)":
		return bi.Main.Version
	}
	return "devel"
}

// buildSetting returns the value of key in bi's settings, or "".
func buildSetting(bi *debug.BuildInfo, key string) string {
	if bi == nil {
		return ""
	}
	for _, s := range bi.Settings {
		if s.Key == key {
			return s.Value
		}
	}
	return ""
}

// printVersion writes what the binary knows of its build: the version,
// the VCS revision and whether the tree had uncommitted changes, the
// commit time, and the Go toolchain and platform. A binary built outside a
// checkout (or with -buildvcs=false) has no revision, and says so.
func printVersion(w io.Writer, bi *debug.BuildInfo) {
	fmt.Fprintln(w, "contextd", version)
	rev := buildSetting(bi, "vcs.revision")
	switch {
	case rev == "":
		fmt.Fprintln(w, "revision: unknown (built without VCS information)")
	case buildSetting(bi, "vcs.modified") == "true":
		fmt.Fprintf(w, "revision: %s (dirty: built with uncommitted changes)\n", rev)
	default:
		fmt.Fprintf(w, "revision: %s\n", rev)
	}
	if t := buildSetting(bi, "vcs.time"); t != "" {
		fmt.Fprintln(w, "commit time:", t)
	}
	goVersion := runtime.Version()
	if bi != nil && bi.GoVersion != "" {
		goVersion = bi.GoVersion
	}
	fmt.Fprintf(w, "go: %s %s/%s\n", goVersion, runtime.GOOS, runtime.GOARCH)
}
