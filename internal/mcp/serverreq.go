package mcp

import "github.com/modelcontextprotocol/go-sdk/jsonrpc"

// answeredRequests are the requests from a server that the go-sdk's client
// answers at once from what it holds: ping, and roots/list (an empty list:
// contextd offers no roots).
var answeredRequests = map[string]bool{
	"ping":       true,
	"roots/list": true,
}

// refusedMethod is the method a request from the server is renamed to when
// contextd refuses it; the go-sdk answers it "method not found", quoting
// it.
const refusedMethod = "not offered by contextd: "

// refuseUnanswered renames a request from the server (a call: it has an ID)
// that is not one of answeredRequests to one the go-sdk does not know, and
// drops its params, so that the go-sdk answers it at once with "method not
// found" without decoding them. The go-sdk handles each request from the
// server on a goroutine of its own that holds the request until its
// handler returns, and some of its handlers wait on the server itself:
// the client's completion/complete handler sends the same request back to
// the server and waits for the answer, with no deadline, so a server
// sending completion/complete and never answering made contextd keep a
// goroutine and the request's params per request, without bound (10,000
// goroutines and 2.8 GB in 40 s). contextd offers no sampling,
// elicitation or completions to servers; notifications are not renamed
// (the go-sdk handles them one at a time, in order, and contextd's
// handlers do not wait).
func refuseUnanswered(req *jsonrpc.Request) {
	if !req.IsCall() || answeredRequests[req.Method] {
		return
	}
	req.Method = refusedMethod + clip(req.Method, 64)
	req.Params = nil
}
