package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// maxLinkHops bounds the symbolic links followed resolving one path, as
// the kernel's ELOOP does (40 on Linux).
const maxLinkHops = 40

// linkChain returns the directories, free of symbolic links, whose
// entries decide which file path names: the one holding each symbolic
// link followed on the way (a link in any component of the path, or at
// its end), and the one holding the file. Where a component is missing (a
// directory removed, to be created again), it returns the directory that
// would hold it, whose entries show it coming back. names are the entries
// in those directories that the walk went through: each link, the file,
// or the missing component. A loop of links, or a link that cannot be
// read, ends the walk with what was found so far.
//
// A change of any of these directories' entries may make path name
// another file: a link repointed, a directory in the path replaced, the
// file itself replaced by rename. Edits of the file in place show in its
// directory too.
func linkChain(path string) (dirs, names []string) {
	// Not filepath.Abs, which cleans the path: ".." after a link is
	// the link target's parent, not the link's directory.
	abs := path
	if !filepath.IsAbs(abs) {
		wd, err := os.Getwd()
		if err != nil {
			return nil, nil
		}
		abs = wd + string(filepath.Separator) + path
	}
	add := func(d string) {
		if !slices.Contains(dirs, d) {
			dirs = append(dirs, d)
		}
	}
	vol := filepath.VolumeName(abs)
	root := vol + string(filepath.Separator)
	resolved := root
	rest := splitPath(abs[len(vol):])
	for hops := 0; len(rest) > 0; {
		part := rest[0]
		rest = rest[1:]
		switch part {
		case "", ".":
			continue
		case "..":
			resolved = filepath.Dir(resolved)
			continue
		}
		next := filepath.Join(resolved, part)
		fi, err := os.Lstat(next)
		if err != nil {
			add(resolved)
			return dirs, append(names, next)
		}
		if fi.Mode()&os.ModeSymlink == 0 {
			resolved = next
			continue
		}
		add(resolved)
		names = append(names, next)
		target, err := os.Readlink(next)
		if hops++; err != nil || hops > maxLinkHops {
			return dirs, names
		}
		if filepath.IsAbs(target) {
			v := filepath.VolumeName(target)
			resolved, target = v+string(filepath.Separator), target[len(v):]
		}
		rest = append(splitPath(target), rest...)
	}
	if resolved != root {
		add(filepath.Dir(resolved))
		names = append(names, resolved)
	}
	return dirs, names
}

// splitPath splits p at its separators; empty parts are kept.
func splitPath(p string) []string {
	return strings.Split(filepath.ToSlash(p), "/")
}
