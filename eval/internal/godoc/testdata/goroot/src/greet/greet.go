package greet

import "strings"

// Greeting styles.
const (
	Formal = "Good day" // for strangers
	Casual = "Hi"
	secret = "psst"
)

// Default is the greeting used by [Hello].
var Default = Casual

var hidden = secret

// Hello returns a greeting for name.
func Hello(name string) string {
	return Default + ", " + name
}

func helper() string { return hidden }

// A Greeter greets one person.
//
// # Caveats
//
// It is not safe for concurrent use.
type Greeter struct {
	// Name is who to greet; a field comment with ```three``` backquotes.
	Name  string
	loud  bool
	Level Level // how loud
}

// NewGreeter returns a Greeter for name.
func NewGreeter(name string) *Greeter {
	return &Greeter{Name: name}
}

// Greet greets g's person.
func (g *Greeter) Greet() string {
	if g.loud {
		return strings.ToUpper(Hello(g.Name))
	}
	return Hello(g.Name)
}

// String implements fmt.Stringer.
func (g Greeter) String() string { return g.Name }

func (g *Greeter) whisper() string { return helper() }

// A Level is a loudness.
type Level int

// Levels.
const (
	Low Level = iota
	High
)

// A Set is a set of comparable values.
type Set[T comparable] map[T]struct{}

// Add adds v to s.
func (s Set[T]) Add(v T) { s[v] = struct{}{} }

// BUG(fixture): Greet ignores the locale.

type unexported struct{}
