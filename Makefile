# redlockctl build and test entry points. `make test` is what CI runs.
GO      ?= go
PKGS    ?= ./...
BENCH   ?= .
APT_PKGS = redis-server redis-sentinel redis-tools tmux prometheus
NODE_DIR = e2e/interop/testdata/node
# PG_FOUND is a shell test: PostgreSQL's server binaries are where history/pgtest looks.
PG_FOUND = { { command -v initdb && command -v postgres; } >/dev/null 2>&1 || ls /usr/lib/postgresql/*/bin/initdb /usr/lib/postgresql/*/bin/postgres >/dev/null 2>&1; }

.PHONY: test sim sim-table deps interop-deps vet bench bench-dump bench-serve-load bench-live bench-history soak demo build docs release-check release-deps release-snapshot

# goreleaser, run through the Go module proxy at a pinned version (v2.16 and later need
# a Go newer than go.mod's or modules the proxy does not serve).
GORELEASER_VERSION = v2.15.1
GORELEASER = $(GO) run github.com/goreleaser/goreleaser/v2@$(GORELEASER_VERSION)
# goreleaser reads the commit (the version's revision) only where `git ls-remote
# --get-url` answers; a clone without a remote gets the project's URL for the run, in
# the environment (the repository's config is not touched).
GORELEASER_ENV = $(if $(shell git remote 2>/dev/null),,GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=remote.origin.url GIT_CONFIG_VALUE_0=https://github.com/redlockctl/redlockctl.git)
RELEASE_APT_PKGS = podman runc rpm systemd redis-server ca-certificates

# apt_install installs the Debian packages named in the shell variable $$missing (if
# any), logging to /tmp/$(1).log, and fails loudly when it cannot.
define apt_install
if [ -n "$$missing" ]; then \
	  echo "make: installing$$missing"; \
	  if ! command -v apt-get >/dev/null 2>&1; then \
	    echo "make: missing$$missing and no apt-get here: install them and rerun" >&2; exit 1; fi; \
	  sudo=""; [ "$$(id -u)" = 0 ] || sudo="sudo"; \
	  ( $$sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$sudo apt-get install -y -qq $$missing ) >/tmp/$(1).log 2>&1 \
	    || { cat /tmp/$(1).log >&2; echo "make: could not install$$missing (see above)" >&2; exit 1; }; \
	fi
endef

# The e2e package includes the soak's short run (TestSoak: 2 minutes when SOAK is unset).
# It runs alone, after the other packages: its soak and its end-to-end checks then share
# the machine with no other package's tests (on 2 cores, a starved live feed stamps
# what it reads late: see docs/live.md, What it cannot see).
# FuzzConn runs a count of inputs, not a time: Go 1.26's fuzzer can fail a timed run
# with "context deadline exceeded" as its time runs out (golang/go#75804, fixed in 1.27).
test: deps vet
	$(GO) test -race -count=1 -timeout 12m $$($(GO) list $(PKGS) | grep -v '/e2e$$')
	$(GO) test -race -count=1 -timeout 12m ./e2e
	$(GO) test -count=1 -run '^TestSchedules$$' ./inspect/live/sim
	$(GO) test -run '^$$' -fuzz '^FuzzConn$$' -fuzztime 150000x ./redlock/resp

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
# and promtool for the exporter's end-to-end and alert-rule tests, PostgreSQL's initdb and
# postgres for the shared history store's tests: history/pgtest) and fails loudly when
# it cannot.
deps:
	@missing=""; \
	command -v redis-server >/dev/null 2>&1 || missing="$$missing redis-server"; \
	command -v redis-sentinel >/dev/null 2>&1 || missing="$$missing redis-sentinel"; \
	command -v redis-cli >/dev/null 2>&1 || missing="$$missing redis-tools"; \
	command -v tmux >/dev/null 2>&1 || missing="$$missing tmux"; \
	command -v cc >/dev/null 2>&1 || missing="$$missing gcc"; \
	{ command -v prometheus >/dev/null 2>&1 && command -v promtool >/dev/null 2>&1; } || missing="$$missing prometheus"; \
	$(PG_FOUND) || missing="$$missing postgresql"; \
	$(call apt_install,redlockctl-apt); \
	$(PG_FOUND) || { echo "make: PostgreSQL's initdb and postgres still missing (Debian package postgresql; history/pgtest looks on PATH and in /usr/lib/postgresql/*/bin)" >&2; exit 1; }; \
	command -v redis-server >/dev/null 2>&1 || { echo "make: redis-server still missing" >&2; exit 1; }; \
	command -v promtool >/dev/null 2>&1 || { echo "make: promtool still missing (Debian package prometheus)" >&2; exit 1; }; \
	redis-server --version
	@$(MAKE) --no-print-directory interop-deps

# interop-deps installs the other libraries' real clients for the interop tests:
# node-redlock, redis-semaphore, node-redis-warlock and simple-redis-mutex from the
# committed package-lock.json, redis-py from Debian (for /usr/bin/python3, which is the
# interpreter python3-redis serves), Symfony Lock and Semaphore from Debian (php-cli,
# php-redis, php-symfony-lock, php-symfony-semaphore). The Go clients
# (redsync, bsm/redislock) come through the module proxy when the tests build them.
interop-deps:
	@missing=""; \
	command -v node >/dev/null 2>&1 || missing="$$missing nodejs"; \
	command -v npm >/dev/null 2>&1 || missing="$$missing npm"; \
	/usr/bin/python3 -c 'import redis' >/dev/null 2>&1 || missing="$$missing python3-redis"; \
	command -v php >/dev/null 2>&1 || missing="$$missing php-cli"; \
	php -m 2>/dev/null | grep -qx redis || missing="$$missing php-redis"; \
	[ -f /usr/share/php/Symfony/Component/Lock/autoload.php ] || missing="$$missing php-symfony-lock"; \
	[ -f /usr/share/php/Symfony/Component/Semaphore/autoload.php ] || missing="$$missing php-symfony-semaphore"; \
	$(call apt_install,redlockctl-apt-interop); \
	/usr/bin/python3 -c 'import redis' || { echo "make: /usr/bin/python3 cannot import redis (python3-redis)" >&2; exit 1; }; \
	if [ ! -d $(NODE_DIR)/node_modules ] || [ $(NODE_DIR)/package-lock.json -nt $(NODE_DIR)/node_modules ]; then \
	  echo "make: npm ci in $(NODE_DIR)"; \
	  ( cd $(NODE_DIR) && npm ci --no-audit --no-fund ) >/tmp/redlockctl-npm.log 2>&1 \
	    || { cat /tmp/redlockctl-npm.log >&2; echo "make: npm ci failed in $(NODE_DIR) (see above)" >&2; exit 1; }; \
	fi

# sim runs SEEDS seeded schedules of the live feed's simulator (inspect/live/sim) from
# SEED_FIRST; a failing seed prints its replay command.
SEEDS ?= 100000
SEED_FIRST ?= 1
sim:
	$(GO) test -count=1 -timeout 0 -run '^TestSchedules$$' ./inspect/live/sim -sim.seeds $(SEEDS) -sim.first $(SEED_FIRST) -v

# sim-table: the simulator's table in docs/benchmarks.md: each workload alone, seeds 1-300.
SIM_WORKLOADS = pipelined keepalive sequential run fenced redisson plainhash reacquire race handoff
sim-table:
	@echo '| workload | failing schedules of 300 | of them with the feed stalled | key reads per lifecycle | split rounds reported as a lock |'
	@echo '|---|---|---|---|---|'
	@for w in $(SIM_WORKLOADS); do \
		$(GO) test -count=1 -run '^TestSchedules$$$$' ./inspect/live/sim -sim.seeds 300 -sim.workloads $$w -sim.maxfails 0 -v 2>&1 | \
		sed -nE "s/.*schedules \(seeds [0-9-]+\), [0-9]+ lifecycles, ([0-9.]+) key reads each, ([0-9]+) split rounds[^;]*; ([0-9]+) failed \(([0-9]+) of them with the feed stalled\).*/| $$w | \3 | \4 | \1 | \2 |/p"; \
	done

bench: deps
	$(GO) test -run '^$$' -bench '$(BENCH)' -benchtime 1x -timeout 20m $(PKGS)

# bench-large: the end-to-end figures at 5 masters x 1M keys (a few minutes; the
# redis-servers hold about 1 GiB in all). REDLOCKCTL_BENCH_* knobs: bench_e2e_test.go.
bench-large: deps
	$(GO) test -tags benchlarge -run '^$$' -bench 'EndToEndLarge|ConsoleLarge|KeystrokeLarge' -benchtime 1x -timeout 30m ./e2e/ ./ui/

# bench-dump: `dump -o json` and `dump -o table` at 5 masters x 100k keys (default
# config) beside a parallel SCAN of the same keys and the binary built from DUMP_BASE
# (git archive of that commit, built with today's toolchain), interleaved, best of
# REDLOCKCTL_BENCH_ROUNDS (3); it prints the rows of docs/benchmarks.md's dump table.
DUMP_BASE ?= 57ea69b
bench-dump: deps
	@tmp=$$(mktemp -d /tmp/redlockctl-dump-base.XXXXXX) && trap 'rm -rf "$$tmp"' EXIT && \
	git archive --format=tar $(DUMP_BASE) | tar -x -C "$$tmp" && \
	echo "make: building $(DUMP_BASE) in $$tmp" && \
	( cd "$$tmp" && $(GO) build -o "$$tmp/redlockctl-base" . ) && \
	REDLOCKCTL_BENCH_BASE="$$tmp/redlockctl-base" REDLOCKCTL_BENCH_BASE_NAME=$(DUMP_BASE) \
	  $(GO) test -count=1 -run '^$$' -bench '^BenchmarkDump$$' -benchtime 1x -timeout 20m ./e2e/

# bench-serve-load: what `serve` (default config) costs 5 masters x 100k unchanged lock
# keys (INFO cpu, CPU-s/s beyond the same fleet idle, REDLOCKCTL_BENCH_FOR each, 20s by
# default) beside the binary built from SERVE_BASE (polling every key every second),
# in the same run, and how long a lock set or deleted behind its back takes to show in
# /metrics, then the masters' CPU per lock cycle under churn beside a bare tracking
# subscriber, then the console and `dump --watch 1s` with their live feed and with
# --no-live (docs/benchmarks.md's serve tables; REDLOCKCTL_BENCH_KEYS per master).
SERVE_BASE ?= 7035ad5
bench-serve-load: deps
	@tmp=$$(mktemp -d /tmp/redlockctl-serve-base.XXXXXX) && trap 'rm -rf "$$tmp"' EXIT && \
	git archive --format=tar $(SERVE_BASE) | tar -x -C "$$tmp" && \
	echo "make: building $(SERVE_BASE) in $$tmp" && \
	( cd "$$tmp" && $(GO) build -o "$$tmp/redlockctl-base" . ) && \
	REDLOCKCTL_BENCH_BASE="$$tmp/redlockctl-base" REDLOCKCTL_BENCH_BASE_NAME=$(SERVE_BASE) \
	  $(GO) test -count=1 -run '^$$' -bench '^Benchmark(Serve(Load|Churn)|WatchLoad)$$' -benchtime 1x -timeout 50m ./e2e/

# bench-live: the live feed (`events`) against redsync's and this library's own logs of
# what they did, and its cost to the servers beside no feed and a bare tracking
# subscriber, on masters as they come and again with keyspace notifications on, then
# the cycle again with a busy loop per core beside it (starved), then this library's Do
# with keep-alive, re-acquire, fenced and `run` patterns, and the feed on idle masters
# (its fixed cost), all in one run (about six
# minutes; REDLOCKCTL_BENCH_LIVE_SECONDS per phase, REDLOCKCTL_BENCH_LIVE_LIBS=redlock
# one library, REDLOCKCTL_BENCH_LIVE_FEED_NICE=N the feed under nice -n N,
# REDLOCKCTL_BENCH_LIVE_DUMP=DIR each phase's log and events written there).
bench-live: deps
	$(GO) test -run '^$$' -bench 'BenchmarkLive' -benchtime 1x -timeout 20m ./e2e/

# bench-history: the history store's engines (bbolt, the one used, and pebble) and the
# shared PostgreSQL store on one workload: write rate, CPU (this process and, for
# PostgreSQL, the server's) and bytes a lifecycle at 5,000 lifecycles/s, the recorder's
# share of a core, `--at` and `--since 24h --expired` on a generated store of
# HISTORY_BENCH_N lifecycles (the embedded ones built once into HISTORY_BENCH_DIR,
# about 1.5 GB and three minutes at 10M; 4.6 GB and 14 minutes at 100M) and
# HISTORY_BENCH_PG_N for PostgreSQL (bulk-loaded anew in a server the run starts: about
# 4.5 GB and two to three minutes at 10M; or kept in the database HISTORY_BENCH_PG_URL
# names, postgres://user:password@host/db, and built there only when it holds no store
# of that size). It ends with the rows of docs/benchmarks.md's history table.
# HISTORY_BENCH_ENGINES (a comma list) runs some engines only, HISTORY_BENCH picks
# benchmarks, e.g. the issue's targets on bbolt at 100M:
#   make bench-history HISTORY_BENCH_N=100000000 HISTORY_BENCH_ENGINES=bbolt HISTORY_BENCH='(At|ExpiredSince24h)' HISTORY_BENCH_TIME=20x
HISTORY_BENCH_N ?= 10000000
HISTORY_BENCH_PG_N ?= 10000000
HISTORY_BENCH_ENGINES ?= bbolt,pebble,postgres
HISTORY_BENCH_DIR ?= $(CURDIR)/.bench-history
HISTORY_BENCH ?= .
HISTORY_BENCH_TIME ?= 200x
bench-history: deps
	mkdir -p $(HISTORY_BENCH_DIR)
	HISTORY_BENCH_N=$(HISTORY_BENCH_N) HISTORY_BENCH_PG_N=$(HISTORY_BENCH_PG_N) HISTORY_BENCH_ENGINES=$(HISTORY_BENCH_ENGINES) \
	  HISTORY_BENCH_DIR=$(HISTORY_BENCH_DIR) $(GO) test -count=1 -run '^$$' -bench '$(HISTORY_BENCH)' -benchtime $(HISTORY_BENCH_TIME) -timeout 90m ./history/

# soak: serve, `events` and the console run for $(SOAK) under the fault schedule of
# e2e/soak_test.go, beside two lock workloads and an operator's admin actions; the
# report is written to soak-report.json and its table (docs/benchmarks.md) to soak-report.md.
# SOAK_TIMEOUT must exceed SOAK by a few minutes (setup, the end's checks).
SOAK ?= 30m
SOAK_TIMEOUT ?= 45m
soak: deps
	SOAK=$(SOAK) SOAK_REPORT=$(CURDIR)/soak-report.json $(GO) test -count=1 -run '^TestSoak$$' -timeout $(SOAK_TIMEOUT) -v ./e2e/

build:
	$(GO) build -o redlockctl .

demo:
	$(GO) run . demo

# docs regenerates the man pages (docs/man) and the markdown CLI reference (docs/cli)
# from the command tree, and the Kubernetes PrometheusRule and dashboard ConfigMap from
# the shipped rules and dashboard; tests fail when the committed ones are stale.
docs:
	rm -rf docs/man docs/cli
	$(GO) run ./internal/app/cli/gendocs docs
	$(GO) run . serve --print-alerts -o prometheusrule > deploy/kubernetes/prometheusrule.yaml
	$(GO) run . serve --print-dashboard -o configmap > deploy/kubernetes/grafana-dashboard.yaml

# release-snapshot builds what a release would publish into dist/ (archives, checksums,
# .deb and .rpm), without publishing. The container image is left to the tests:
# goreleaser builds it with `docker buildx`, which needs a Docker engine; the tests
# build the same Dockerfile from the same binaries with podman.
release-snapshot:
	$(GORELEASER) check
	$(GORELEASER_ENV) $(GORELEASER) release --snapshot --clean --skip=docker

# release-check: release-snapshot, then e2e/release tests every artifact in dist/:
# each archive's contents and checksum, the .deb installed with dpkg (and removed), the
# .rpm's files and scripts, the systemd unit (systemd-analyze verify), and the image
# built with podman serving a real redis-server's locks. A few minutes; not part of
# `make test`.
release-check: release-deps release-snapshot
	$(GO) vet -tags release ./e2e/release/
	$(GO) test -tags release -count=1 -timeout 10m -v ./e2e/release/

# release-deps installs what release-check needs (podman and runc for the image, rpm to
# read the .rpm, systemd for systemd-analyze, redis-server for the image's test) and
# fails loudly when it cannot.
release-deps:
	@missing=""; \
	command -v podman >/dev/null 2>&1 || missing="$$missing podman"; \
	command -v runc >/dev/null 2>&1 || missing="$$missing runc"; \
	command -v rpm >/dev/null 2>&1 || missing="$$missing rpm"; \
	command -v systemd-analyze >/dev/null 2>&1 || missing="$$missing systemd"; \
	command -v redis-server >/dev/null 2>&1 || missing="$$missing redis-server"; \
	[ -r /etc/ssl/certs/ca-certificates.crt ] || missing="$$missing ca-certificates"; \
	$(call apt_install,redlockctl-apt-release); \
	podman --version && systemd-analyze --version | head -1
