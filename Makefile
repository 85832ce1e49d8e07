# stormsim: the two commands a new machine needs are `make sim` and `make test`.
GO       ?= go
SCENARIO ?= deploy-restart
OUT      ?= results
ARGS     ?=
REDIS    ?=
IMAGE    ?= stormsim:dev
BIN      := bin/stormsim
# MEASURE runs a measuring command and writes its figures, date, machine and
# command as that target's section of docs/measurements.md.
MEASURE  := $(GO) run ./internal/measure
export GORACE := atexit_sleep_ms=0

.PHONY: all build image test-deploy node conformance-deps conformance interop sim live plan orderings agree agree-live-smoke agree-crash-round-robin agree-long-outage calibrate test test-long lint bench bench-live fuzz nightly baseline clean help

all: build

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-12s %s\n", $$1, $$2}'

build: ## build bin/stormsim
	$(GO) build -o $(BIN) ./cmd/stormsim

# make image: the Dockerfile's static stormsim on distroless, which deploy/k8s runs
# (docs/distributed.md); push it where your cluster pulls from and set the manifests' image.
image: ## build the container image IMAGE (default stormsim:dev) with docker build
	@command -v docker >/dev/null 2>&1 || { echo "make image: docker is not installed: install Docker (or build the Dockerfile with another builder)"; exit 1; }
	@docker info >/dev/null 2>&1 || { echo "make image: docker cannot reach a Docker daemon (docker info fails): start one, or set DOCKER_HOST"; exit 1; }
	docker build -t $(IMAGE) .

# make node: the official MCP TypeScript SDK (node/package.json pins 1.32.2, node/package-lock.json
# the rest), installed by npm ci into node/node_modules, for server = "ts-sdk" and client.impl = "ts-sdk".
# Like conformance-deps, it installs again only when the package files change.
node: node/node_modules/.installed ## install the MCP TypeScript SDK for the ts-sdk flavours: npm ci in node/ (needs Node.js 20 and npm)

node/node_modules/.installed: node/package.json node/package-lock.json
	cd node && npm ci --no-audit --no-fund
	touch $@

# make conformance-deps: the official MCP conformance suite (conformance/package.json pins
# @modelcontextprotocol/conformance 0.1.16, and the npm package node 22.23.3, whose install fetches
# Node.js 22 from the npm registry: the suite needs Node >= 22, and the ts-sdk flavours keep running
# on the machine's Node 20), installed by npm ci into conformance/node_modules; and the pre-release
# suite that checks the 2026-07-28 revision (conformance/2026/package.json pins 0.2.0-alpha.12), into
# conformance/2026/node_modules, so that the 2025 eras keep 0.1.16.
# Each installs again only when its lockfile changes (the stamp file is newer than it), so that make test
# does not fetch Node.js each time.
conformance-deps: conformance/node_modules/.installed conformance/2026/node_modules/.installed ## install the MCP conformance suites (0.1.16, and 0.2.0-alpha.12 for 2026-07-28) and the Node.js 22 they run on: npm ci in conformance/ and conformance/2026/ (needs npm)

conformance/node_modules/.installed: conformance/package.json conformance/package-lock.json
	cd conformance && npm ci --no-audit --no-fund
	touch $@

conformance/2026/node_modules/.installed: conformance/2026/package.json conformance/2026/package-lock.json
	cd conformance/2026 && npm ci --no-audit --no-fund
	touch $@

# make conformance: the suite's server scenarios against every server stormsim ships and its
# client scenarios against stormsim client with each client kind; conformance/expected-failures.toml
# lists what does not apply, with why (docs/own-server.md).
conformance: node conformance-deps ## the MCP conformance suite against stormsim's servers and clients (live/conformance)
	$(GO) test -count=1 -timeout 30m -v -run '^TestConformance' ./live/conformance/

sim: build ## run SCENARIO (default deploy-restart) in the simulator: make sim SCENARIO=crash
	./$(BIN) run $(SCENARIO) --out $(OUT) $(ARGS)

live: SCENARIO = live-smoke
live: build ## run SCENARIO (default live-smoke) on the live engine: replica processes, LB, redis-server, SSE clients
	./$(BIN) run $(SCENARIO) --engine live --out $(OUT) $(ARGS)

plan: build ## capacity plan for SCENARIO (default deploy-restart): sweep the load, size the store; ARGS="--sweep KEY=VALUES --goal metric_max=N ..."
	./$(BIN) plan $(SCENARIO) --out $(OUT) $(ARGS)

# make agree: the simulator against the live engine on the same seed; exit 98 where they disagree.
# Two branches run at once, so that the samples are large enough (one standard error of each compared
# fraction at most a third of its tolerance) within 6 minutes: long-outage-eviction (its outage stays
# at 150-240 s), and live-smoke twice (--seeds 2, 300 clients, random drops every 3 s) then crash (its
# fault stays at 120 s; 200 clients, 3 designs) then round-robin (no faults, so it runs shortened)
# twice. Their expect tables are sized for the scenarios as written, so these runs judge agreement only.
AGREE_SHORT := --set workload.think=1s --set workload.events_min=10 --set workload.events_max=30 --set workload.drop_every=1500ms
agree: build ## --engine both on live-smoke, round-robin, crash and long-outage-eviction: agreement.md per run, exit 98 on a disagreement
	$(MEASURE) -agreement $(OUT)/live-smoke/latest/agreement.json -agreement $(OUT)/round-robin/latest/agreement.json \
		-agreement $(OUT)/crash/latest/agreement.json -agreement $(OUT)/long-outage-eviction/latest/agreement.json \
		agree -- $(MAKE) --no-print-directory -j2 agree-long-outage agree-live-smoke agree-crash-round-robin
	@for s in live-smoke round-robin crash long-outage-eviction; do echo "$(OUT)/$$s/latest/agreement.md"; grep -m1 ' disagree, ' $(OUT)/$$s/latest/agreement.md; done

agree-live-smoke:
	./$(BIN) run live-smoke --engine both --seeds 2 --parallel 3 --no-charts --quiet --no-thresholds --out $(OUT) \
		--set workload.clients=300 --set workload.arrival_rate=150 --set workload.drop_every=3s $(ARGS)

agree-crash-round-robin:
	./$(BIN) run crash --engine both --parallel 3 --no-charts --quiet --no-thresholds --out $(OUT) $(AGREE_SHORT) \
		--set duration=135s --set drain=5s --set workload.clients=200 --set workload.arrival_rate=50 \
		--set 'designs=["memory-sticky","redis-events","redis-shared"]' $(ARGS)
	./$(BIN) run round-robin --engine both --seeds 2 --parallel 4 --no-charts --quiet --no-thresholds --out $(OUT) $(AGREE_SHORT) \
		--set duration=25s --set drain=5s --set workload.clients=300 $(ARGS)

# long-outage-eviction: retention, both engines evicting the same events (the memory store at the
# append that overflows its cap, Redis streams trimmed to exactly redis_maxlen). Its clients go away
# at 150 s for 90 s, so it runs to 255 s, in a -j2 slot of its own: 300 clients with the memory cap
# scaled to them (2 MiB for 2000), random drops every 20 s for the sample.
agree-long-outage:
	./$(BIN) run long-outage-eviction --engine both --parallel 2 --no-charts --quiet --no-thresholds --out $(OUT) \
		--set duration=255s --set drain=5s --set workload.clients=300 --set workload.arrival_rate=100 \
		--set workload.drop_every=20s --set store.memory_cap_bytes=314573 --set 'designs=["memory-sticky","redis-events"]' $(ARGS)

# make interop: every client {native compliant, go-sdk, ts-sdk} against every server {reference,
# go-sdk, ts-sdk} on memory-sticky and redis-shared (reference only), through a hard restart and a
# client drop; results/interop/matrix.md and matrix.json, and its section of docs/measurements.md.
interop: build node ## the real-client × real-server matrix: results/interop/matrix.md and matrix.json
	$(MEASURE) interop -- ./$(BIN) interop --out $(OUT)/interop $(ARGS)

calibrate: build ## measure a Redis (a private redis-server, or REDIS=URL) and write calibrated/redis.toml, the store model scenarios include with store_model
	$(MEASURE) calibrate -- ./$(BIN) calibrate $(if $(REDIS),--redis $(REDIS),--private-redis) $(ARGS)

# make test: the two npm installs first (make -j2; each runs only when its package files changed),
# then lint: go vet ./... walks every folder, and an npm ci beside it once failed the walk on a
# node_modules folder npm had just removed; then every live/ test under the race detector (real processes, sockets
# and timers: they run once, raced) in the background, while the rest runs beside it at a lower
# CPU priority: every package outside live/, then the race detector on the concurrent ones. The
# live tests mostly wait on real time, and the priority keeps the CPU-bound simulator tests from
# starving them. Every stage runs even when one fails, and make exits 2 at the end if any did.
# In live/runner, the tests marked `t.Parallel() // make test: see the Makefile's note` run two at
# a time (go test's -parallel, GOMAXPROCS) once the serial ones are done, so that one's waits on
# real time overlap another's: the longest of those that neither count the test process's
# children, look for leftover processes by executable, set the environment, burn CPU on purpose
# (TestSaturationInjected), run Node (the ts-sdk tests, the most load-sensitive) nor compare the
# model with a live run's recovery (TestGoSDKFlavours: under load, live dips where the model does not).
# RACED are the tests of sim, cli and plan that run under the race detector (the concurrent paths):
# they run there only, not a second time without it; calibrate's tests all run raced, once. Each
# name is anchored, so a test of the same name in another package outside live/ would be skipped
# by the first stage and run by none: name a new test apart. Every go test has a -timeout of its
# own (go test's default, 10 minutes a package, is what a loaded machine reaches first).
# live/conformance's TestConformanceReference runs the MCP conformance suite's server scenarios
# against the reference replica (one run of the suite, about 10 s); the rest of the suite, every
# other server and the client scenarios, is in LONG_TESTS (TestConformanceServers, TestConformanceClients),
# with the pre-release suite's 2026-07-28 server scenarios against the replica at that era
# (TestConformance2026, about 10 s). The model against live runs at 2026-07-28 (TestGoSDK2026Agree,
# about 30 s: --engine both with the reference and the go-sdk flavours) and live listen streams
# (TestListenLive, about 20 s) are LONG_TESTS too; the go-sdk drift tests at the revision (a few
# seconds each) stay in make test. TestGoSDKFlavours (live-smoke with the go-sdk server and clients,
# about 45 s) is a LONG_TEST: beside make test's other stages on a slow day it failed 2 runs in 3
# (a resume answered 404 after a client-side drop; a request after the hard kill unanswered
# instead of 404), while 3 runs of it alone passed. TestTSServer (live-smoke on ts-memory-sticky,
# about 45 s) is one too: on a fresh clone beside the other stages its Node replica came back so
# late after the hard kill that 4 calls, not the 10 it needs, began before the client drop (1 run
# of 6 that day); alone it passed. TestConservation checks every shipped scenario as it ships;
# TestConservationProfiles, the same identities with every scenario run again at each of the four
# client profiles (104 runs), is a LONG_TEST.
# examples/ci's TestStormScript runs the own-server CI script (examples/ci/storm.sh) live, four
# short seeds (about 120 s, mostly waiting on real time), in the live stage beside the live
# packages: the stage outside live/ is the longer one (the CLI's and the simulator's CPU-bound tests).
# The deploy/ module (make test-deploy: the Kubernetes manifests) is one more stage, about 5 s.
# Its budget is 8 minutes on a 2-core machine (make test-time writes what it took to docs/measurements.md); the tests that do not fit (long real-time runs,
# sweeps over seeds) are LONG_TESTS, which make test-long runs.
LONG_TESTS := ^(TestConservationProfiles|TestGoSDKFlavours|TestTSServer|TestListenLive|TestGoSDK2026Agree|TestConformanceServers|TestConformanceClients|TestConformance2026|TestShardsAgree|TestInteropFull|TestSDKClientsAgree|TestReconciliation|TestIsolationShippedServers|TestIsolationTSSharedStore|TestSignalWhileJudging|TestFiveCallsAgreement|TestFiveCallsTSSDKLive|TestTSClients|TestLiveSmoke|TestAgreementBites|TestThresholdsAtEverySeed|TestOrderingsAsDocumented|TestSaturationQuiet|TestSaturationCPUBurn|TestHostileLong|TestFluidGrid|TestThresholdsAtFewSeeds)$$
RACED := ^(TestRunParallel|TestDesignSubsetUnknown|TestRunCancelled|TestHelpEverywhere|TestBadArguments|TestRunWritesAtomically|TestPlotRun|TestPlotOverlay|TestPlotHelp|TestPlotBadInput|TestValidateAndList|TestPlanJobsSameBytes|TestRunJobsDeterministic)$$
# go test builds and runs the packages in the order it is given them (two at a time on 2 cores), so
# the longest go first and the short ones fill in beside them: LIVE_FIRST in the live stage (the
# runner's real-time runs, the own-server CI script's storms, the interop matrix, up and its faults,
# the sharded run), REST_FIRST in the other (the CLI, the simulator, the README's commands, the charts).
LIVE_FIRST := ./live/runner/ ./examples/ci/ ./live/interop/ ./live/topo/ ./live/distributed/
REST_FIRST := ./cli/ ./sim/ ./internal/doccheck/ ./plots/
test: ## lint, then every test, with the race detector on the concurrent and live packages (under 8 minutes on 2 cores: make test-time)
	@$(MAKE) --no-print-directory -j2 node conformance-deps
	@$(MAKE) --no-print-directory lint
	@failed=0; \
	stage() { echo "--- $$*"; "$$@" || { failed=$$((failed + 1)); echo "--- FAILED: $$*"; }; }; \
	live="$(GO) test -count=1 -race -timeout 30m -skip $(LONG_TESTS) $(LIVE_FIRST) ./live/..."; \
	echo "--- $$live (in the background)"; $$live & livepid=$$!; \
	stage nice -n 10 $(GO) test -count=1 -timeout 30m -skip '$(LONG_TESTS)|$(RACED)' $(REST_FIRST) $$($(GO) list ./... | grep -v -e /live/ -e /calibrate$$ -e /examples/ci$$); \
	stage nice -n 10 $(GO) test -count=1 -timeout 30m -race -run '$(RACED)' ./sim/ ./cli/ ./plan/; \
	stage nice -n 10 $(GO) test -count=1 -timeout 30m -race ./calibrate/; \
	stage nice -n 10 $(MAKE) --no-print-directory test-deploy; \
	wait $$livepid || { failed=$$((failed + 1)); echo "--- FAILED: $$live"; }; \
	if [ $$failed -gt 0 ]; then echo "make test: $$failed stage(s) failed, each marked --- FAILED above"; exit 2; fi

# make test-deploy: deploy/ is a Go module of its own (the Kubernetes API types stay out of
# stormsim's module): every manifest under deploy/k8s decoded strictly, both kustomizations
# built, the fields a sharded run depends on checked, the start-time substitution run. About a second.
test-deploy: ## check the Kubernetes manifests of deploy/k8s (go vet and go test in the deploy/ module)
	cd deploy && $(GO) vet ./... && $(GO) test -count=1 ./...

test-long: node conformance-deps ## the tests beyond make test's budget (LONG_TESTS: the live smoke run, the MCP conformance suite against every server and client, the agreement check, the threshold sweep over seeds 1-30 and 42, the documented orderings); the nightly workflow runs it
	$(GO) test -count=1 -timeout 60m -run '$(LONG_TESTS)' ./...

lint: ## gofmt and go vet
	@out=$$(gofmt -l .); if [ -n "$$out" ]; then echo "gofmt needed on:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...

orderings: build ## how often each claim of docs/model.md about the backoff variants holds over 20 seeds of thundering-herd
	$(MEASURE) orderings -- ./$(BIN) run thundering-herd --seeds 20 --no-charts --no-thresholds --out $(OUT)

# make bench: the engine on the pinned workload, then the plan sweep of deploy-restart at
# 1,000..10,000 clients (10 loads × 6 designs), each 3 times; then where the engine's time goes:
# a CPU profile of one more run of the pinned workload, its top functions and their share.
bench: ## the pinned 100,000-client deploy-restart, 3 runs: queue events, stream events, wall time, cost per event / heap op (designs at once; one at a time on the thread CPU clock); the plan sweep's wall time; a CPU profile
	$(MEASURE) bench -- $(GO) test -run '^$$' -bench BenchmarkEngine -benchtime 1x -count 3 -timeout 60m ./sim/
	$(MEASURE) -make bench bench-sweep -- $(GO) test -run '^$$' -bench BenchmarkPlanSweep -benchtime 1x -count 3 -timeout 60m ./cli/
	$(GO) test -c -o bin/sim.test ./sim/
	$(MEASURE) -make bench cpu-profile -- sh -c 'cd sim && ../bin/sim.test -test.run "^$$" -test.bench BenchmarkEngine -test.benchtime 1x -test.cpuprofile ../bin/engine.prof >/dev/null && cd .. && $(GO) tool pprof -top -nodecount 15 bin/sim.test bin/engine.prof 2>/dev/null | sed -n "/^Showing nodes/,$$ p"'

# make bench-1m: deploy-restart with all six designs at 100,000 and at 1,000,000 clients, each in
# a child process (BenchmarkMillion), 3 times. At 1,000,000 the arrival rate (20,000 clients/s),
# the Redis concurrency (80 shards) and the memory store's cap per replica (100 MiB) are 10 times
# the pinned workload's, so that the arrivals take as long and each store is as loaded per stream.
# It prints both wall times and their ratio, queue and stream events per client, peak RSS and
# bytes per client, and bare-loop floors measured after both runs (docs/architecture.md). A round at 1,000,000 clients takes minutes and gigabytes of memory;
# BENCH_1M_COUNT=1 runs one round.
.PHONY: bench-1m
BENCH_1M_COUNT ?= 3
bench-1m: ## deploy-restart at 1,000,000 clients beside 100,000 (each a child process): wall times and ratio, events and peak RSS per client
	$(MEASURE) -make bench-1m bench-1m -- $(GO) test -run '^$$' -bench '^BenchmarkMillion$$' -benchtime 1x -count $(BENCH_1M_COUNT) -timeout 180m ./sim/

# make bench-1m-work: bench-1m's two children (all six designs at 100,000 and 1,000,000 clients),
# once, under valgrind's cachegrind with no cache model: it counts the instructions each process
# executes, which no cache or TLB changes, and prints instructions per queue event at each size and
# the 1M run's over the 100k run's, for the whole process, the code outside the Go runtime and the
# runtime's. Beside bench-1m's wall ratio it tells work that grows from time per instruction that
# grows. The test binary is built with go test -c, which keeps the symbols that name the runtime's
# functions (go test strips them). It needs valgrind (installed if missing) and takes about 25 minutes.
.PHONY: bench-1m-work
bench-1m-work: ## bench-1m's two runs once under valgrind: instructions per queue event at 100k and 1M and their ratio (the work, apart from the time each instruction takes)
	@command -v valgrind >/dev/null || { [ "$$(id -u)" = 0 ] && apt-get update -qq && apt-get install -y valgrind >/dev/null; } || { echo "make bench-1m-work needs valgrind (Debian: apt-get install valgrind)" >&2; exit 1; }
	$(GO) test -c -o bin/sim.test ./sim/
	$(MEASURE) -make bench-1m-work bench-1m-work -- sh -c 'cd sim && ../bin/sim.test -test.run "^$$" -test.bench BenchmarkMillionWork -test.benchtime 1x -test.count 1 -test.timeout 180m'

bench-live: ## live engine figures: streams held at 1 event/s, storm absorption, CPU per event beside a bare relay's, Redis appends / redis-benchmark, calibrate's rates and latencies
	$(MEASURE) -make bench-live bench-live-store -- $(GO) test -run '^$$' -bench BenchmarkRedisAppend -benchtime 1x -count 5 ./live/store/
	$(MEASURE) -make bench-live bench-live-streams -- $(GO) test -run '^$$' -bench BenchmarkLiveStreams -benchtime 1x -timeout 30m ./live/runner/
	$(MEASURE) -make bench-live bench-live-floor -- $(GO) test -run '^$$' -bench BenchmarkRelayFloor -benchtime 1x -timeout 10m ./live/runner/
	$(MEASURE) -make bench-live bench-live-calibrate -- $(GO) test -run '^$$' -bench BenchmarkCalibrateRedis -benchtime 1x -count 3 ./calibrate/

# make host-lateness: how late an ordinary live run (live-smoke as make live runs it) runs on this
# machine, three times; the saturation bounds of live/runner/host.go are set from these figures.
.PHONY: host-lateness
host-lateness: ## how late an ordinary live run's timers, producers and goroutines run here (the saturation bounds' evidence)
	$(MEASURE) -make host-lateness bench-host-lateness -- $(GO) test -run '^$$' -bench BenchmarkHostLateness -benchtime 1x -count 3 ./live/runner/

.PHONY: test-time
test-time: ## run make test and write how long it took to docs/measurements.md
	$(MEASURE) -make test-time test-time -- $(MAKE) --no-print-directory test

# make nightly: every scenario on the engine its [nightly] table names (live-smoke live, 3 seeds),
# then the own-server storm of examples/ci/storm.sh against examples/byo-server (live, 3 seeds);
# writes how long it took to docs/measurements.md when both pass.
nightly: build ## every scenario (the simulator, and live-smoke live over 3 seeds), then examples/ci/storm.sh: thresholds, baselines, junit.xml in results/nightly/<date>/ and results/ci/
	$(MEASURE) nightly -- $(MAKE) --no-print-directory nightly-run

.PHONY: nightly-run
nightly-run:
	./$(BIN) nightly --out $(OUT)/nightly $(ARGS)
	OUT=$(OUT)/ci STORMSIM=$(CURDIR)/$(BIN) examples/ci/storm.sh

baseline: build ## refresh results/baseline/*.json (live-smoke.live.json live, over its seeds) on purpose; prints every changed value, writes results/baseline/CHANGES.md; commit both
	./$(BIN) baseline $(ARGS)

fuzz: ## fuzz the scenario loader for 30 s
	$(GO) test -run '^$$' -fuzz FuzzLoadScenario -fuzztime 30s ./scenario/

clean: ## remove build output (results/ is kept)
	rm -rf bin
