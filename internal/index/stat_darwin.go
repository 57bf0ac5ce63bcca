package index

import (
	"io/fs"
	"syscall"
)

// statOf returns the identity of the file fi describes, and false when the
// file system does not report one.
func statOf(fi fs.FileInfo) (fileStat, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fileStat{}, false
	}
	return fileStat{ino: st.Ino, size: st.Size, mtime: st.Mtimespec.Nano(), ctime: st.Ctimespec.Nano()}, true
}
