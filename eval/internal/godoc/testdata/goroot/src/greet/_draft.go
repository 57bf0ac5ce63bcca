package greet

// Draft is in a file the go command ignores.
func Draft() {}
