# presenced: the two commands are `make run` and `make test`.
GO        ?= go
BIN       := bin/presenced
PORT      ?= 6379
DIR       ?= ./data
FUZZTIME  ?= 30s
STATICCHECK := honnef.co/go/tools/cmd/staticcheck@v0.8.2

.PHONY: build run test verify fuzz bench clean

build:
	$(GO) build -o $(BIN) ./cmd/presenced

run: build
	./$(BIN) --port $(PORT) --dir $(DIR)

test:
	$(GO) test -race -timeout 9m ./...

verify:
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { gofmt -l $$(git ls-files '*.go'); exit 1; }
	$(GO) vet ./...
	$(GO) run $(STATICCHECK) ./...
	$(GO) mod tidy -diff

fuzz:
	$(GO) test ./proto -run '^$$' -fuzz '^FuzzParser$$' -fuzztime $(FUZZTIME)
	$(GO) test ./store -run '^$$' -fuzz '^FuzzApply$$' -fuzztime $(FUZZTIME)

bench: build
	$(GO) run ./bench -presenced $(BIN) -out bench/RESULTS.md

clean:
	rm -rf bin
