// Package greet says hello. It is a fixture for the godoc converter, with a
// second sentence that is not part of the synopsis.
//
// # Usage
//
// Make a [Greeter] and call [Greeter.Greet]; see [strings.Builder] for a
// builder and https://go.dev for Go:
//
//	g := greet.NewGreeter("Ann")
//	fmt.Println(g.Greet())
//
// Options:
//   - Loud: shout_it
//   - Quiet
package greet
