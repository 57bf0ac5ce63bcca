package use_test

import (
	"context"
	"fmt"

	"github.com/contextd/contextd/internal/embed/use"
)

func Example() {
	e, err := use.New()
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	pieces, _ := e.Tokenize("readFile: open a file")
	fmt.Println(pieces)

	query, _ := e.Embed(ctx, "read the contents of a file")
	tools := []string{"open a file and return its text", "get the weather forecast for a city"}
	vecs, _ := e.EmbedBatch(ctx, tools)
	for i, v := range vecs {
		var cos float32
		for k := range v {
			cos += v[k] * query[k] // both are unit vectors
		}
		fmt.Printf("%.1f %s\n", cos, tools[i])
	}
	// Output:
	// [▁read F ile : ▁open ▁a ▁file]
	// 0.7 open a file and return its text
	// 0.1 get the weather forecast for a city
}
