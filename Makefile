# The two commands of the README, and a few more. Each target does its own set-up.
#   make run    play the whole loop locally (for now: the chess core's perft demo)
#   make test   install dependencies, configure, build, run every test
PRESET ?= dev
JOBS   ?= $(shell nproc)
BUILD  := build/$(PRESET)
CHESSRL := $(BUILD)/tools/chessrl/chessrl

.PHONY: all deps configure build test unit run bench bench-nn bench-selfplay bench-replay bench-train format clean

all: build

deps:
	@scripts/install-deps.sh

configure: deps
	@cmake --preset $(PRESET) >/dev/null

build: configure
	@cmake --build --preset $(PRESET) -j $(JOBS)

test: build
	@ctest --preset $(PRESET) -j $(JOBS)

unit: build
	@ctest --preset $(PRESET) -j $(JOBS) -L unit

run: build
	@echo "== chessrl perft from the start position, depth 6 (per-move counts)"
	@$(CHESSRL) perft --depth 6 --divide
	@echo "== chessrl perft --bench (one run per position, against stockfish)"
	@$(CHESSRL) perft --bench --repeat 1

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

format:
	@git ls-files '*.cpp' '*.h' | xargs clang-format -i

clean:
	@rm -rf build
