package glove_test

import (
	"context"
	"fmt"

	"github.com/contextd/contextd/internal/embed/glove"
)

func ExampleEmbedder_Embed() {
	e, err := glove.New()
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	query, _ := e.Embed(ctx, "read a file from disk")
	for _, doc := range []string{"readFile: open file contents", "Get the weather forecast for tomorrow"} {
		v, _ := e.Embed(ctx, doc)
		var cos float32
		for i := range v {
			cos += query[i] * v[i]
		}
		fmt.Printf("%.1f %s\n", cos, doc)
	}
	// Output:
	// 0.8 readFile: open file contents
	// 0.1 Get the weather forecast for tomorrow
}
