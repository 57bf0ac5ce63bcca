package mcpserver

import (
	"strings"
	"testing"
)

// BenchmarkCheckMessageNestedErrors checks a line of 990 "error" objects
// nested in one another, each with 250 bytes of message (a line of 256
// KiB, as a host may send): the repeated-key check looks into the top one
// only (into each, it took 1.8-3.6 s a line).
func BenchmarkCheckMessageNestedErrors(b *testing.B) {
	level := `{"code":1,"message":"` + strings.Repeat("m", 250) + `","error":`
	line := []byte(`{"jsonrpc":"2.0","id":1,"error":` + strings.Repeat(level, 990) + `{}` + strings.Repeat(`}`, 990) + `}`)
	for b.Loop() {
		checkMessage(line)
	}
}
