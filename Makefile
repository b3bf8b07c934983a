# redlockctl build and test entry points. `make test` is what CI runs.
GO      ?= go
PKGS    ?= ./...
BENCH   ?= .
APT_PKGS = redis-server redis-sentinel redis-tools tmux prometheus
NODE_DIR = e2e/interop/testdata/node

.PHONY: test deps interop-deps vet bench demo build docs

test: deps vet
	$(GO) test -race -count=1 -timeout 9m $(PKGS)

# vet: gofmt, go vet, and the binary cross-built for Windows (where run's process-group
# code is left out), so that the platform-specific files keep building. About 50 s on a
# cold build cache; macOS and the BSDs share the unix files and build as well.
vet:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)
	GOOS=windows GOARCH=amd64 $(GO) build -o /dev/null .

# deps installs what the tests need (real redis-server, redis-sentinel and redis-cli for
# Sentinel and Cluster topologies, tmux, a C compiler for the clock-skew shim, prometheus
# and promtool for the exporter's end-to-end and alert-rule tests) and fails loudly when
# it cannot.
deps:
	@missing=""; \
	command -v redis-server >/dev/null 2>&1 || missing="$$missing redis-server"; \
	command -v redis-sentinel >/dev/null 2>&1 || missing="$$missing redis-sentinel"; \
	command -v redis-cli >/dev/null 2>&1 || missing="$$missing redis-tools"; \
	command -v tmux >/dev/null 2>&1 || missing="$$missing tmux"; \
	command -v cc >/dev/null 2>&1 || missing="$$missing gcc"; \
	{ command -v prometheus >/dev/null 2>&1 && command -v promtool >/dev/null 2>&1; } || missing="$$missing prometheus"; \
	if [ -n "$$missing" ]; then \
	  echo "make: installing$$missing"; \
	  if ! command -v apt-get >/dev/null 2>&1; then \
	    echo "make: missing$$missing and no apt-get here: install them and rerun" >&2; exit 1; fi; \
	  sudo=""; [ "$$(id -u)" = 0 ] || sudo="sudo"; \
	  ( $$sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$sudo apt-get install -y -qq $$missing ) >/tmp/redlockctl-apt.log 2>&1 \
	    || { cat /tmp/redlockctl-apt.log >&2; echo "make: could not install$$missing (see above)" >&2; exit 1; }; \
	fi; \
	command -v redis-server >/dev/null 2>&1 || { echo "make: redis-server still missing" >&2; exit 1; }; \
	command -v promtool >/dev/null 2>&1 || { echo "make: promtool still missing (Debian package prometheus)" >&2; exit 1; }; \
	redis-server --version
	@$(MAKE) --no-print-directory interop-deps

# interop-deps installs the other libraries' real clients for the interop tests:
# node-redlock from the committed package-lock.json, redis-py from Debian (for
# /usr/bin/python3, which is the interpreter python3-redis serves). The Go clients
# (redsync, bsm/redislock) come through the module proxy when the tests build them.
interop-deps:
	@missing=""; \
	command -v node >/dev/null 2>&1 || missing="$$missing nodejs"; \
	command -v npm >/dev/null 2>&1 || missing="$$missing npm"; \
	/usr/bin/python3 -c 'import redis' >/dev/null 2>&1 || missing="$$missing python3-redis"; \
	if [ -n "$$missing" ]; then \
	  echo "make: installing$$missing"; \
	  if ! command -v apt-get >/dev/null 2>&1; then \
	    echo "make: missing$$missing and no apt-get here: install them and rerun" >&2; exit 1; fi; \
	  sudo=""; [ "$$(id -u)" = 0 ] || sudo="sudo"; \
	  ( $$sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$sudo apt-get install -y -qq $$missing ) >/tmp/redlockctl-apt-interop.log 2>&1 \
	    || { cat /tmp/redlockctl-apt-interop.log >&2; echo "make: could not install$$missing (see above)" >&2; exit 1; }; \
	fi; \
	/usr/bin/python3 -c 'import redis' || { echo "make: /usr/bin/python3 cannot import redis (python3-redis)" >&2; exit 1; }; \
	if [ ! -d $(NODE_DIR)/node_modules ] || [ $(NODE_DIR)/package-lock.json -nt $(NODE_DIR)/node_modules ]; then \
	  echo "make: npm ci in $(NODE_DIR)"; \
	  ( cd $(NODE_DIR) && npm ci --no-audit --no-fund ) >/tmp/redlockctl-npm.log 2>&1 \
	    || { cat /tmp/redlockctl-npm.log >&2; echo "make: npm ci failed in $(NODE_DIR) (see above)" >&2; exit 1; }; \
	fi

bench: deps
	$(GO) test -run '^$$' -bench '$(BENCH)' -benchtime 1x -timeout 20m $(PKGS)

# bench-large: the end-to-end figures at 5 masters x 1M keys (a few minutes; the
# redis-servers hold about 1 GiB in all). REDLOCKCTL_BENCH_* knobs: bench_e2e_test.go.
bench-large: deps
	$(GO) test -tags benchlarge -run '^$$' -bench 'EndToEndLarge|ConsoleLarge|KeystrokeLarge' -benchtime 1x -timeout 30m ./e2e/ ./ui/

build:
	$(GO) build -o redlockctl .

demo:
	$(GO) run . demo

# docs regenerates the man pages (docs/man) and the markdown CLI reference (docs/cli)
# from the command tree; a test fails when the committed ones are stale.
docs:
	rm -rf docs/man docs/cli
	$(GO) run ./internal/cli/gendocs docs
