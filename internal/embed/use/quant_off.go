//go:build !useint

package use

// intDefault is false: see intKernel.
const intDefault = false
