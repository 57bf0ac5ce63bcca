//go:build !linux && !darwin

package index

import "io/fs"

// statOf reports no identity where the index cannot read a file's inode and
// change time (Windows among others): a rewrite of the same size within the
// clock's resolution would go unseen, so every document is read from its
// file and the snapshot is not used.
func statOf(fs.FileInfo) (fileStat, bool) { return fileStat{}, false }
