//go:build useint

package use

// intDefault is true in a build with the useint tag: see intKernel.
const intDefault = true
