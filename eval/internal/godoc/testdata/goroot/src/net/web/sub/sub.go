// Package sub is nested below net/web.
package sub
