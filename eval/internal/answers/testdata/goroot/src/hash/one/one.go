// Package one is a checksum.
package one

const modulus = 65521 // largest prime below 65536
