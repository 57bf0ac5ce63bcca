package service_test

import (
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/contextd/contextd/internal/service"
	contextdv1 "github.com/contextd/contextd/proto/contextd/v1"
)

// A request of many short repeated elements (empty pins cost two bytes on
// the wire and tens decoded) is refused before it is decoded; a long query
// is one field, and requests at the bound reach the service.
func TestRequestsOfTooManyFieldsAreNotDecoded(t *testing.T) {
	c := newClient(t)
	pins := func(n int) []*contextdv1.ResourceRef {
		p := make([]*contextdv1.ResourceRef, n)
		for i := range p {
			p[i] = &contextdv1.ResourceRef{}
		}
		return p
	}
	// Query and budget take two fields.
	_, err := c.Assemble(t.Context(), &contextdv1.AssembleRequest{Query: "x", TokenBudget: 10, Pinned: pins(service.MaxRequestFields - 2)})
	if status.Code(err) != codes.InvalidArgument {
		t.Errorf("Assemble at the bound: %v, want InvalidArgument from the service (too many pins)", err)
	}
	_, err = c.Assemble(t.Context(), &contextdv1.AssembleRequest{Query: "x", TokenBudget: 10, Pinned: pins(service.MaxRequestFields - 1)})
	if status.Code(err) != codes.Internal || !strings.Contains(err.Error(), "fields") {
		t.Errorf("Assemble one field past the bound: %v, want INTERNAL naming the fields", err)
	}
	_, err = c.Search(t.Context(), &contextdv1.SearchRequest{Query: "x", Servers: make([]string, service.MaxRequestFields)})
	if status.Code(err) != codes.Internal || !strings.Contains(err.Error(), "fields") {
		t.Errorf("Search with %d server names: %v, want INTERNAL naming the fields", service.MaxRequestFields, err)
	}
	// A 900 KB query is one field: decoded, it reaches the service, which
	// refuses it for its length; one under the bound is answered.
	_, err = c.Assemble(t.Context(), &contextdv1.AssembleRequest{Query: "billing " + strings.Repeat("invoices ", 100_000), TokenBudget: 200})
	if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "bytes") {
		t.Errorf("Assemble with a 900 KB query: %v, want InvalidArgument from the service (too long)", err)
	}
	res, err := c.Assemble(t.Context(), &contextdv1.AssembleRequest{Query: "billing " + strings.Repeat("invoices ", 7_000), TokenBudget: 200})
	if err != nil || len(res.GetItems()) == 0 {
		t.Errorf("Assemble with a 63 KB query: %v, %d items", err, len(res.GetItems()))
	}
}
