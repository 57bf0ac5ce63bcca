package catalog

import (
	"context"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// NewServer returns a go-sdk MCP server that lists rs (in the order given,
// a page at a time as the SDK pages) and reads each as one text content.
func NewServer(rs []Resource) *mcpsdk.Server {
	s := mcpsdk.NewServer(&mcpsdk.Implementation{Name: "catalog", Version: "1"}, nil)
	for _, r := range rs {
		d := &mcpsdk.Resource{URI: r.URI, Name: r.Name, Title: r.Title, Description: r.Description, MIMEType: r.MIMEType, Size: r.Size}
		if r.LastModified != "" || r.Priority > 0 {
			d.Annotations = &mcpsdk.Annotations{LastModified: r.LastModified, Priority: r.Priority}
		}
		s.AddResource(d, func(context.Context, *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
			return &mcpsdk.ReadResourceResult{Contents: []*mcpsdk.ResourceContents{{URI: r.URI, MIMEType: r.MIMEType, Text: r.Text}}}, nil
		})
	}
	return s
}
