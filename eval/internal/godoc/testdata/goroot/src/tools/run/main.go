// Run is a command.
package main

func main() {}
