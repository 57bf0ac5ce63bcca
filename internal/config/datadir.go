package config

import (
	"os"
	"path/filepath"
	"runtime"
)

// DefaultDataDir is where the index is kept when data_dir is not set, by
// each system's convention:
//
//   - $XDG_DATA_HOME/contextd when XDG_DATA_HOME is set, on any system;
//   - Linux and other unix systems: ~/.local/share/contextd;
//   - macOS: ~/Library/Application Support/contextd;
//   - Windows: %LocalAppData%\contextd.
//
// On macOS and Windows, a ~/.local/share/contextd that an earlier
// version made is kept in use while the conventional directory does not
// exist, so an upgrade does not rebuild the index.
func DefaultDataDir() string {
	home, _ := os.UserHomeDir()
	return defaultDataDir(runtime.GOOS, os.Getenv, home, func(p string) bool {
		fi, err := os.Stat(p)
		return err == nil && fi.IsDir()
	})
}

// defaultDataDir is DefaultDataDir for system goos, environment getenv,
// home directory home ("" when unknown) and a test for an existing
// directory.
func defaultDataDir(goos string, getenv func(string) string, home string, isDir func(string) bool) string {
	if d := getenv("XDG_DATA_HOME"); d != "" {
		return filepath.Join(d, "contextd")
	}
	if home == "" {
		home = "~" // expanded later, or left as the error's hint
	}
	legacy := filepath.Join(home, ".local", "share", "contextd")
	var conventional string
	switch goos {
	case "darwin", "ios":
		conventional = filepath.Join(home, "Library", "Application Support", "contextd")
	case "windows":
		base := getenv("LocalAppData")
		if base == "" {
			base = filepath.Join(home, "AppData", "Local")
		}
		conventional = filepath.Join(base, "contextd")
	default:
		return legacy
	}
	if !isDir(conventional) && isDir(legacy) {
		return legacy
	}
	return conventional
}
