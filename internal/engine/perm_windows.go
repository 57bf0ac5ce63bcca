package engine

import "os"

// tightenDir does nothing on Windows, where access is given by ACLs that
// a new directory inherits, not by mode bits.
func tightenDir(string) (os.FileMode, bool, error) { return 0, false, nil }
