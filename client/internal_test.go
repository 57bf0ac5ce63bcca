package client

import (
	"testing"

	"github.com/contextd/contextd/internal/config"
	"github.com/contextd/contextd/internal/service"
)

// The client tells the daemon's errors by the ErrorInfo domain the service
// sets, and dials its default address.
func TestConstantsMatchTheDaemon(t *testing.T) {
	if errorDomain != service.ErrorDomain {
		t.Errorf("errorDomain %q, the service's %q", errorDomain, service.ErrorDomain)
	}
	if DefaultAddr != config.DefaultListen {
		t.Errorf("DefaultAddr %q, config.DefaultListen %q", DefaultAddr, config.DefaultListen)
	}
}
