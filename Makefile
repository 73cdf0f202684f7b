# The two commands of the README, and a few more. Each target does its own set-up.
#   make run    the whole loop on this machine (chessrl local): Ctrl-C stops, a rerun resumes
#   make test   install dependencies, configure, build, run every test
#   make fuzz   build the libFuzzer targets (clang, build/fuzz) and run each FUZZ_SECONDS
#   make tsan   the concurrent suites under ThreadSanitizer (build/tsan)
PRESET ?= dev
JOBS   ?= $(shell nproc)
BUILD  := build/$(PRESET)
CHESSRL := $(BUILD)/tools/chessrl/chessrl
RUN_DIR ?= run
RUN_ARGS ?=

.PHONY: all deps configure build test unit e2e fuzz tsan run doctor bench bench-nn bench-selfplay bench-replay bench-train bench-scale format clean images base-image images-smoke deploy-test bundle-test

all: build

deps:
	@scripts/install-deps.sh
	@scripts/install-chart-tools.sh
	@scripts/install-web-assets.sh

configure: deps
	@cmake --preset $(PRESET) >/dev/null

build: configure
	@cmake --build --preset $(PRESET) -j $(JOBS)

test: build
	@scripts/install-deps.sh deps/apt-browser.txt
	@ctest --preset $(PRESET) -j $(JOBS)

unit: build
	@ctest --preset $(PRESET) -j $(JOBS) -L unit

e2e: build
	@scripts/install-deps.sh deps/apt-browser.txt
	@ctest --preset $(PRESET) -L e2e --output-on-failure

# The parsers under libFuzzer (docs/fuzzing.md): every target FUZZ_SECONDS (30) on a
# scratch copy of its seed corpus; FUZZ_TARGETS picks some. Fails on any crash.
fuzz:
	@scripts/install-deps.sh
	@scripts/fuzz.sh

# The concurrent suites (BatchEvaluator, GameRunner, the self-play push buffer and
# pusher, the replay service's PushGames/Sample handlers without a gRPC server, the
# training loop and its prefetch thread; tests/CMakeLists.txt says why not the
# gRPC, c10d and protobuf-map ones) under ThreadSanitizer: the tsan preset builds
# only them (target tsan_suites) and runs the tests labelled tsan. Any report fails
# its test; tests/tsan.supp lists the few from third-party code.
tsan: deps
	@cmake --preset tsan >/dev/null
	@cmake --build --preset tsan -j $(JOBS)
	@ctest --preset tsan -j $(JOBS)

run: build
	@$(CHESSRL) local --dir $(RUN_DIR) $(RUN_ARGS)

doctor: build
	@$(CHESSRL) doctor

bench: build
	@$(CHESSRL) perft --bench

bench-nn: build
	@$(CHESSRL) bench nn --net 6x64,10x128 --batch 1,64,256

bench-selfplay: build
	@$(CHESSRL) bench selfplay --blocks 6 --filters 64 --repeat 5

bench-replay: build
	@$(CHESSRL) bench replay --repeat 5

bench-train: build
	@$(CHESSRL) bench train

# The replay service at fleet scale on one machine (docs/benchmarks.md): 1,000
# producers at 1/100 of a 1,000-GPU fleet's rate for 10 minutes; four Redis
# shards with one SIGKILLed and restarted; 3x overload, then half load. First
# the per-unit Redis and replay costs, the capacity model, one step of shard
# scaling and the window's memory per position (bench capacity, ~15 min). Then
# model fan-out (docs/scaling.md, "Model fan-out"): 1,000 model followers over 1
# and 2 replay processes, a 14 MB version a minute for 10 minutes (4 with 2
# replicas: the bench's own memory grows with each version) and a 3.3 MB one for
# 4, and 2,000 idle watch streams (~25 min). Last, self-play's model switch with a
# version every quarter of a game, overlap against drain (bench swap, ~30 min).
# About an hour and a half in all.
bench-scale: build
	@$(CHESSRL) bench capacity
	@$(CHESSRL) bench load --producers 1000 --rate 0.111 --seconds 600
	@$(CHESSRL) bench load --producers 64 --rate 11.1 --shards 4 --kill-shard-at 20 --restart-after 2 --seconds 60
	@$(CHESSRL) bench load --producers 1000 --overload 3 --buffer-games 64 --plies 80 --measure 20 --seconds 90 --drain 180 --samplers 1
	@$(CHESSRL) bench fanout --followers 1000 --replicas 1 --versions 10 --interval 60s --model-bytes 14MB
	@$(CHESSRL) bench fanout --followers 1000 --replicas 2 --versions 4 --interval 60s --model-bytes 14MB
	@$(CHESSRL) bench fanout --followers 1000 --replicas 1 --versions 4 --interval 60s --model-bytes 3.3MB
	@$(CHESSRL) bench fanout --followers 1000 --replicas 2 --versions 4 --interval 60s --model-bytes 3.3MB
	@$(CHESSRL) bench fanout --idle-watchers 2000 --idle-seconds 60
	@$(CHESSRL) bench swap --repeat 3 --seconds 120

# Container images (docker/README.md): docker if its engine answers, else podman.
images:
	@scripts/images.sh

# Only the images' base (pulled, or made with debootstrap when it cannot be).
base-image:
	@scripts/images.sh --base-only

images-smoke:
	@tests/images/smoke.sh

# The dependency bundle for GPU machines (docs/gpu.md): the services built and a short
# loop run against it alone, in a container with only a compiler, CMake and LibTorch.
bundle-test:
	@tests/bundle/run.sh

# The chart as podman containers on one machine (not a cluster): helm template's pods, scaled, broken on
# purpose, reinstalled (tests/deploy/README.md).
deploy-test:
	@tests/deploy/run.sh

format:
	@git ls-files '*.cpp' '*.h' | xargs clang-format -i

clean:
	@rm -rf build
