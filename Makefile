# presenced: the two commands are `make run` and `make test`.
GO        ?= go
BIN       := bin/presenced
PORT      ?= 6379
DIR       ?= ./data
FUZZTIME  ?= 30s
STATICCHECK := honnef.co/go/tools/cmd/staticcheck@v0.8.2

.PHONY: build run cluster test verify fuzz bench clean

build:
	$(GO) build -o $(BIN) ./cmd/presenced

run: build
	./$(BIN) --port $(PORT) --dir $(DIR)

# A local three-node cluster: clients on ports 7001-7003, raft on
# 7101-7103, data in $(DIR)/cluster, answering CLUSTER for clients built
# for Redis Cluster. Ctrl-C stops it.
cluster: build
	@mkdir -p $(DIR)/cluster
	@trap 'trap - INT TERM EXIT; kill 0 2>/dev/null' INT TERM EXIT; \
	./$(BIN) --node-id n1 --port 7001 --raft-addr 127.0.0.1:7101 --dir $(DIR)/cluster/n1 --cluster-enabled yes 2>$(DIR)/cluster/n1.log & \
	./$(BIN) --node-id n2 --port 7002 --raft-addr 127.0.0.1:7102 --dir $(DIR)/cluster/n2 --cluster-enabled yes --join 127.0.0.1:7001 2>$(DIR)/cluster/n2.log & \
	./$(BIN) --node-id n3 --port 7003 --raft-addr 127.0.0.1:7103 --dir $(DIR)/cluster/n3 --cluster-enabled yes --join 127.0.0.1:7001 2>$(DIR)/cluster/n3.log & \
	echo "presenced cluster: nodes n1, n2, n3 at 127.0.0.1:7001, :7002, :7003 (logs in $(DIR)/cluster/)"; \
	echo "  redis-cli -p 7002 SETBIT online 42 1   # any node takes writes"; \
	echo "  redis-cli -p 7001 ROLE; redis-cli -p 7003 RAFT INFO"; \
	echo "  Sentinel clients: sentinels 127.0.0.1:7001,7002,7003, master name mymaster"; \
	echo "  Redis Cluster clients: any node, e.g. redis-cli -c -p 7001 CLUSTER SLOTS"; \
	echo "Ctrl-C stops the cluster; its data stays in $(DIR)/cluster."; \
	wait

test:
	$(GO) test -race -timeout 9m ./...

verify:
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { gofmt -l $$(git ls-files '*.go'); exit 1; }
	$(GO) vet ./...
	$(GO) run $(STATICCHECK) ./...
	$(GO) mod tidy -diff

# Every fuzz target of the module, FUZZTIME each: go test fuzzes one
# target at a time. A target that fails with "context deadline exceeded"
# and no new failing input in testdata/fuzz hit the race of Go's fuzzing
# coordinator with its own deadline (go.dev/issue/75804, fixed in Go
# 1.27), not a bug of ours: that is reported and the next target runs.
fuzz:
	@log=$$(mktemp); trap 'rm -f $$log $$log.rc' EXIT; \
	for f in $$(git grep -l '^func Fuzz' -- '*_test.go'); do \
		d=$$(dirname $$f); \
		for name in $$(sed -n 's/^func \(Fuzz[A-Za-z0-9_]*\)(.*/\1/p' $$f); do \
			echo "== ./$$d $$name"; \
			{ $(GO) test ./$$d -run '^$$' -fuzz "^$$name\$$" -fuzztime $(FUZZTIME); echo $$? > $$log.rc; } 2>&1 | tee $$log; \
			[ "$$(cat $$log.rc)" = 0 ] && continue; \
			if git status --porcelain -- $$d/testdata/fuzz | grep -q . || ! grep -q 'context deadline exceeded' $$log; then exit 1; fi; \
			echo "== $$name: stopped by the coordinator's deadline race, no failing input"; \
		done; \
	done

bench: build
	$(GO) run ./bench -presenced $(BIN) -out bench/RESULTS.md $(BENCHFLAGS)

# The fault test (cluster/faulttest) for longer than in `make test`:
# make chaos DURATION=10m (APPENDONLY=no: the nodes' logs in memory)
chaos:
	PRESENCED_CHAOS_DURATION=$(DURATION) PRESENCED_CHAOS_APPENDONLY=$(APPENDONLY) $(GO) test ./cluster/faulttest -run TestFault -count=1 -timeout 0 -v

clean:
	rm -rf bin
