package greet

import "C"

// CgoHello is in a cgo file: cgo is enabled.
func CgoHello() {}
