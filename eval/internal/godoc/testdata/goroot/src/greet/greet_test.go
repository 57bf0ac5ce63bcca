package greet

import "testing"

// TestOnly must not be documented.
func TestOnly(t *testing.T) {}
