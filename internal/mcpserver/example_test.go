package mcpserver_test

import (
	"fmt"

	"github.com/contextd/contextd/internal/mcpserver"
	"github.com/contextd/contextd/internal/resource"
)

func ExampleResourceURI() {
	u := mcpserver.ResourceURI(resource.Key{Server: "docs", URI: "file:///srv/My Notes/Überblick #1?.md"})
	fmt.Println(u)
	k, err := mcpserver.ParseResourceURI(u)
	fmt.Printf("%s %q %v\n", k.Server, k.URI, err)
	// Output:
	// contextd:resource/docs/file:///srv/My%20Notes/%C3%9Cberblick%20%231%3F.md
	// docs "file:///srv/My Notes/Überblick #1?.md" <nil>
}
