package config

import (
	"path/filepath"
	"testing"
)

func TestDefaultDataDirFollowsEachSystemAndKeepsTheOldOne(t *testing.T) {
	home := filepath.Join("/", "home", "me")
	legacy := filepath.Join(home, ".local", "share", "contextd")
	mac := filepath.Join(home, "Library", "Application Support", "contextd")
	win := filepath.Join("/", "Users", "me", "AppData", "Local", "contextd")
	for _, tc := range []struct {
		name, goos string
		env        map[string]string
		dirs       []string // existing directories
		want       string
	}{
		{"linux", "linux", nil, nil, legacy},
		{"linux with XDG_DATA_HOME", "linux", map[string]string{"XDG_DATA_HOME": "/data"}, nil, filepath.Join("/data", "contextd")},
		{"macOS", "darwin", nil, nil, mac},
		{"macOS with an old index", "darwin", nil, []string{legacy}, legacy},
		{"macOS with both", "darwin", nil, []string{legacy, mac}, mac},
		{"macOS with XDG_DATA_HOME", "darwin", map[string]string{"XDG_DATA_HOME": "/data"}, []string{legacy}, filepath.Join("/data", "contextd")},
		{"windows", "windows", map[string]string{"LocalAppData": filepath.Join("/", "Users", "me", "AppData", "Local")}, nil, win},
		{"windows with an old index", "windows", map[string]string{"LocalAppData": filepath.Join("/", "Users", "me", "AppData", "Local")}, []string{legacy}, legacy},
	} {
		t.Run(tc.name, func(t *testing.T) {
			getenv := func(k string) string { return tc.env[k] }
			isDir := func(p string) bool {
				for _, d := range tc.dirs {
					if d == p {
						return true
					}
				}
				return false
			}
			if got := defaultDataDir(tc.goos, getenv, home, isDir); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}
