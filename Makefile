# Tool versions are pinned here; `go run pkg@version` fetches them through the Go module proxy.
BUF := go run github.com/bufbuild/buf/cmd/buf@v1.75.0

.PHONY: help generate checkgenerate buflint lint test snapshot
help: ## show this help
	@grep -E '^[a-z]+:.*##' $(MAKEFILE_LIST) | sed 's/:.*## /\t/'

generate: ## regenerate proto/contextd/v1/*.pb.go from the .proto files
	$(BUF) generate

checkgenerate: ## fail when the checked-in generated code differs from what make generate writes
	@tmp=$$(mktemp -d) && $(BUF) generate -o $$tmp && \
	  for f in $$(cd $$tmp && find . -name '*.pb.go'); do \
	    cmp -s $$tmp/$$f $$f || { echo "$$f is stale: run make generate"; rm -rf $$tmp; exit 1; }; \
	  done; rm -rf $$tmp

buflint: ## buf lint and buf format
	$(BUF) lint
	$(BUF) format -d --exit-code

lint: buflint ## gofmt, go vet, buf lint and buf format
	@out=$$(gofmt -l $$(git ls-files '*.go' | grep -v '\.pb\.go$$')); test -z "$$out" || { echo "gofmt needed (run gofmt -w):"; echo "$$out"; exit 1; }
	go vet ./...

test: ## the README's test command: every test but the slow ones
	go test -race -skip '^TestSlow$$' ./...
	go test ./eval/...

test-slow: ## the README's second test command: the slow tests and the answer-bearing floor
	go test -race -run '^TestSlow$$' ./...
	go test -tags longeval -timeout 30m -run TestAnswerBearingFloor ./eval/harness/

snapshot: ## build release archives for every platform into dist/, as CI does (goreleaser, pinned)
	go run github.com/goreleaser/goreleaser/v2@v2.15.1 release --snapshot --clean
