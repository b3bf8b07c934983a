# redlockctl build and test entry points. `make test` is what CI runs.
GO      ?= go
PKGS    ?= ./...
BENCH   ?= .
APT_PKGS = redis-server redis-sentinel redis-tools tmux prometheus

.PHONY: test deps vet bench demo build

test: deps vet
	$(GO) test -race -count=1 -timeout 9m $(PKGS)

vet:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)

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

bench: deps
	$(GO) test -run '^$$' -bench '$(BENCH)' -benchtime 1x -timeout 20m $(PKGS)

build:
	$(GO) build -o redlockctl .

demo:
	$(GO) run . demo
