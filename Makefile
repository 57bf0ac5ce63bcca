# Tool versions are pinned here; `go run pkg@version` fetches them through the Go module proxy.
BUF := go run github.com/bufbuild/buf/cmd/buf@v1.75.0

.PHONY: help generate checkgenerate lint test
help: ## show this help
	@grep -E '^[a-z]+:.*##' $(MAKEFILE_LIST) | sed 's/:.*## /\t/'

generate: ## regenerate proto/contextd/v1/*.pb.go from the .proto files
	$(BUF) generate

checkgenerate: generate ## fail when the checked-in generated code is stale
	@test -z "$$(git status --porcelain -- proto)" || (git status --porcelain -- proto; echo "generated code is stale: run make generate"; exit 1)

lint: ## gofmt, go vet, buf lint and buf format
	@test -z "$$(gofmt -l $$(git ls-files '*.go' | grep -v '\.pb\.go$$'))" || (gofmt -l $$(git ls-files '*.go'); exit 1)
	go vet ./...
	$(BUF) lint
	$(BUF) format -d --exit-code

test: ## run all tests (see README)
	go test -race ./...
