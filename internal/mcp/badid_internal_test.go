package mcp

import (
	"errors"
	"testing"
)

// TestBadID checks which ids a message may carry to a decoder: a string, a
// number or null, once. encoding/json matches member names in any case and
// after unescaping, and the last of repeated members wins, so those
// spellings count too.
func TestBadID(t *testing.T) {
	for _, tc := range []struct {
		msg string
		bad bool
	}{
		{`{"jsonrpc":"2.0","id":1,"method":"ping"}`, false},
		{`{"jsonrpc":"2.0","id":"a\"b","result":{}}`, false},
		{`{"jsonrpc":"2.0","id":-1.5e3,"result":{}}`, false},
		{`{"jsonrpc":"2.0","id":null,"error":{"code":1,"message":"x"}}`, false},
		{`{"jsonrpc":"2.0","method":"notifications/message","params":{"id":[[]]}}`, false},
		{`{"jsonrpc":"2.0","id":[[],[]],"method":"notifications/message"}`, true},
		{`{"jsonrpc":"2.0","id":{},"result":{}}`, true},
		{`{"jsonrpc":"2.0","id":true,"result":{}}`, true},
		{`{"jsonrpc":"2.0","id":[[]],"id":null,"method":"x"}`, true},
		{`{"jsonrpc":"2.0","id":1,"id":2,"result":{}}`, true},
		{`{"jsonrpc":"2.0","ID":[[]],"method":"x"}`, true},
		{`{"jsonrpc":"2.0","\u0069d":[[]],"method":"x"}`, true},
	} {
		if got := badID([]byte(tc.msg)); got != tc.bad {
			t.Errorf("badID(%s) = %v, want %v", tc.msg, got, tc.bad)
		}
		if _, err := decodeMessage([]byte(tc.msg)); tc.bad && !errors.Is(err, errBadID) {
			t.Errorf("decodeMessage(%s) = %v, want errBadID", tc.msg, err)
		}
	}
}
