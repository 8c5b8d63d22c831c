# execd — see README.md. `make test` is what CI runs (.ci/run).

GO        ?= go
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT    ?= $(shell git rev-parse --short=12 HEAD 2>/dev/null)
LDFLAGS   := -s -w -X main.version=$(VERSION) -X main.commit=$(COMMIT)
# FUZZTIME (say 5m) overrides every target's execution budget below.
FUZZTIME  ?=

# Every fuzz target, as package:Target:executions (about 10 s each on 2
# cores). Counts, not a duration: Go 1.26's coordinator can fail a target
# with a bare "context deadline exceeded" when a -fuzztime duration ends
# mid-execution (go.dev/issue/75804, fixed in Go 1.27). Minimizing a new
# input is bounded by count too: by default it may take a minute per input.
FUZZ_TARGETS := ./internal/rpc:FuzzDecode:40000 ./internal/tools:FuzzArgs:300000 \
	./internal/procstore:FuzzHeadTail:1000000 ./internal/sandbox:FuzzFilter:400000 \
	./internal/policy:FuzzPlainCommands:300000 ./internal/policy:FuzzRules:200000 \
	./internal/policy:FuzzRequire:200000 ./internal/policy:FuzzTrust:200000 ./internal/patch:FuzzParse:300000 \
	./internal/patch:FuzzApply:60000 ./internal/gitrepo:FuzzConfig:200000 ./internal/gitrepo:FuzzGitlinks:200000 \
	./internal/orchestrator:FuzzStartupRefs:100000 ./internal/procfs:FuzzCgroupLines:300000 \
	./internal/shellsnap:FuzzParse:200000

.PHONY: all build test check fmt-check vet lint unit integration fuzz cross bench soak clean test-deps test-hosts

all: build

build:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o bin/execd ./cmd/execd

## test: everything CI checks, on a fresh machine.
test: test-deps fmt-check vet lint cross unit integration fuzz

# Programs the sandbox tests drive, as command:Debian package.
TEST_PROGRAMS := bash:bash python3:python3 strace:strace setpriv:util-linux unshare:util-linux git:git tmux:tmux ps:procps zsh:zsh

# test-deps installs the missing ones (needs root and apt, as in CI). The
# tests run them from the system PATH, whatever the caller's is.
test-deps:
	@missing=""; for p in $(TEST_PROGRAMS); do \
		PATH=/usr/local/bin:/usr/bin:/bin command -v $${p%%:*} >/dev/null 2>&1 || missing="$$missing $${p##*:}"; \
	done; \
	if [ -n "$$missing" ]; then \
		echo "installing$$missing"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing; \
	fi

check: test

fmt-check:
	@out=$$(gofmt -l . | grep -v '^bin/'); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

# test/hosts builds only with its tag: checked here too, run by test-hosts.
vet:
	$(GO) vet ./...
	$(GO) vet -tags hosts ./test/hosts/

lint:
	$(GO) tool staticcheck ./...
	$(GO) tool staticcheck -tags hosts ./test/hosts/

# The product is static (CGO_ENABLED=0) and must build for macOS too.
cross:
	CGO_ENABLED=0 $(GO) build ./...
	CGO_ENABLED=0 GOOS=darwin GOARCH=arm64 $(GO) build ./...
	CGO_ENABLED=0 GOARCH=arm64 $(GO) build ./...
	CGO_ENABLED=0 GOARCH=riscv64 $(GO) build ./...
	CGO_ENABLED=0 GOOS=freebsd $(GO) build ./...

unit:
	$(GO) test -race -count=1 ./internal/... ./cmd/...

integration:
	$(GO) test -race -count=1 -timeout 40m ./test/...

fuzz:
	@set -e; for t in $(FUZZ_TARGETS); do \
		pkg=$${t%%:*}; rest=$${t#*:}; name=$${rest%%:*}; budget=$(FUZZTIME); \
		[ -n "$$budget" ] || budget=$${rest##*:}x; \
		echo "fuzz $$name ($$pkg) for $$budget"; \
		$(GO) test -run='^$$' -fuzz="^$$name\$$" -fuzztime=$$budget -fuzzminimizetime=500x $$pkg; \
	done

## soak: 10 minutes of mixed calls at 16 in flight beside a fork loop, with
## a slow stderr; fails on a lost reply, a leak or a leftover (test/soak).
soak: build
	$(GO) run ./test/soak -execd bin/execd -duration $${SOAK_DURATION:-10m}

# The agent hosts test-hosts drives, pinned: what they send the model and
# how they answer approvals change between releases.
CODEX_VERSION  := 0.169.0
CLAUDE_VERSION := 2.1.331
HOSTS_CACHE    ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/execd/hosts

## test-hosts: drive the Codex CLI and Claude Code, installed from npm into
## $(HOSTS_CACHE) (once), with execd as their MCP server against a scripted
## model on 127.0.0.1 (test/hosts). Needs Node.js, npm and the registry.
test-hosts:
	test/hosts/install-host @openai/codex $(CODEX_VERSION) codex $(HOSTS_CACHE)
	test/hosts/install-host @anthropic-ai/claude-code $(CLAUDE_VERSION) claude $(HOSTS_CACHE)
	HOSTS_CODEX=$(HOSTS_CACHE)/@openai/codex@$(CODEX_VERSION)/node_modules/.bin/codex \
	HOSTS_CLAUDE=$(HOSTS_CACHE)/@anthropic-ai/claude-code@$(CLAUDE_VERSION)/node_modules/.bin/claude \
		$(GO) test -tags hosts -count=1 -v -timeout 30m ./test/hosts/...

## bench: performance numbers against in-run baselines (see test/bench).
bench:
	$(GO) run ./test/bench

clean:
	rm -rf bin
