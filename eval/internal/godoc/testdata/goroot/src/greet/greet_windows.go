package greet

// WindowsOnly is built for windows only.
func WindowsOnly() {}
