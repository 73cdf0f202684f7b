#!/usr/bin/env bash
# One command per GPU check (docs/benchmarks.md, "One command per GPU check").
#
#   scripts/gpu-check.sh selfplay [--cpu] [--build-dir DIR]
#   scripts/gpu-check.sh train    [--cpu] [--build-dir DIR]
#   scripts/gpu-check.sh loop     [--cpu] [--build-dir DIR] [--minutes N]
#
# selfplay  builds chessrl with CUDA (build/gpu), then `bench nn` (10x128, batch 256 and
#           1,024) and `bench selfplay` (10x128, batch 512, 4, 8 and 16 search threads),
#           each in bf16 and fp16, the GPU's busy share and memory sampled at 10 Hz.
# train     builds chessrl (build/gpu), then `bench train --device cuda` at batch 512 and
#           2,048, fp32 and bf16 autocast (--mixed-precision), each beside PyTorch from
#           Python (bench train runs tools/chessrl/bench/train_yardstick.py).
# loop      builds everything against the dependency bundle (build/gpu-bundle, made by
#           scripts/gpu-bundle.sh; unpacked from build/gpu-bundle.tar.xz when only that is
#           here) in build/gpu-full, then `chessrl local --device cuda` for --minutes (4).
# selfplay and train build against the bundle too when it is there (the core needs
# CLI11, nlohmann-json and zlib's headers, which a GPU image may not have). Every stage
# puts nvcc on PATH when it is only in /usr/local/cuda*/bin (LibTorch's CMake files
# need it), and prints what the build used: PyTorch, CUDA, cuDNN, the NCCL library
# torch loads, nvcc, Protocol Buffers and nccl.h (OUT/versions.txt, and in the table).
# scripts/gpu-run.sh runs one build and several stages as one command.
#
# Options:
#   --cpu            the same steps on the CPU (--device cpu, tiny networks, short runs,
#                    the CPU's busy share from /proc/stat): checks this script without a GPU
#   --build-dir DIR  build there: an already configured directory is only built
#                    (`cmake --build DIR --target ...`, a no-op when it is up to date),
#                    a new one is configured as the stage would configure its own
#   --build-only     stop after the build step
#   --jobs N         compile jobs (default: the CPUs)
#   --minutes N      loop: how long chessrl local runs (default 4, less when the build
#                    took so long that the stage would pass 8 minutes; with --cpu 40 s)
#   --dry-run        print the commands of each step, run nothing
# Environment: OUT (default build/gpu-check/STAGE) receives every log and figure, and
# summary.md, the table printed last; TORCH_CMAKE, LibTorch's CMake directory (default:
# python3 -c 'import torch; print(torch.utils.cmake_prefix_path)'); GPU_CHECK_CMAKE_ARGS,
# more configure options for a new build directory (make bundle-test: a quicker -O1).
# Each stage is meant to end within 8 minutes on a 16-core GPU machine, build included.
set -euo pipefail

usage() { awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "${BASH_SOURCE[0]}"; }

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
HELPER=(python3 "$ROOT/scripts/gpu-check-helper.py")

stage=${1:-}
case $stage in
  selfplay | train | loop) shift ;;
  -h | --help) usage; exit 0 ;;
  *) usage >&2; echo "gpu-check: the first argument is the stage: selfplay, train or loop" >&2; exit 2 ;;
esac
cpu=0 build_dir="" minutes="" dry=0 build_only=0 jobs=$(nproc)
while (($#)); do
  case $1 in
    --cpu) cpu=1 ;;
    --build-dir) build_dir=${2:?--build-dir needs a directory}; shift ;;
    --minutes) minutes=${2:?--minutes needs a number}; shift ;;
    --dry-run) dry=1 ;;
    --build-only) build_only=1 ;;
    --jobs) jobs=${2:?--jobs needs a number}; shift ;;
    -h | --help) usage; exit 0 ;;
    *) echo "gpu-check: unknown option $1 (--help)" >&2; exit 2 ;;
  esac
  shift
done
if [[ -n $minutes && $stage != loop ]]; then echo "gpu-check: --minutes is for the loop stage" >&2; exit 2; fi
if [[ -n $minutes ]] && ! awk -v m="$minutes" 'BEGIN { exit !(m + 0 > 0) }'; then
  echo "gpu-check: --minutes $minutes is not a positive number" >&2; exit 2
fi
[[ $jobs =~ ^[1-9][0-9]*$ ]] || { echo "gpu-check: --jobs $jobs is not a positive whole number" >&2; exit 2; }
if [[ -n $build_dir ]]; then
  mkdir -p "$build_dir"
  build_dir=$(cd "$build_dir" && pwd)
fi

OUT=${OUT:-$ROOT/build/gpu-check/$stage}
mkdir -p "$OUT/logs"
OUT=$(cd "$OUT" && pwd)
LOGS=$OUT/logs
rm -f "$OUT/rows.jsonl" "$OUT/steps.jsonl" "$OUT/samples.csv" "$OUT/summary.md" "$OUT/status.txt" "$OUT/versions.txt"

if ((cpu)); then DEVICE=cpu BUSY=CPU; else DEVICE=cuda BUSY=GPU; fi

# ------------------------------------------------------------------ what each stage runs
# GPU sizes from docs/benchmarks.md ("GPU: NVIDIA H100"): 10x128, the batches where the
# H100's throughput turned (256 and 1,024 for the network; 512 for self-play, where 8
# search threads fed it and 4 did not). --cpu: the same steps, small enough for CI.
if ((cpu)); then
  NET=2x16 PRECISIONS=(fp32)
  NN_BATCHES=16,64 NN_SECONDS=0.3 NN_REPEAT=1
  SP_BATCH=32 SP_THREADS=(1 2) SP_SECONDS=1 SP_WARMUP=0.5 SP_REPEAT=1 SP_VISITS=(--visits 64 --reduced-visits 64)
  TRAIN_CASES=("64 fp32 512" "256 fp32 512") TRAIN_RUN=(--steps 5 --warmup 1 --repeat 1)
else
  NET=10x128 PRECISIONS=(bf16 fp16)
  NN_BATCHES=256,1024 NN_SECONDS=1 NN_REPEAT=3
  SP_BATCH=512 SP_THREADS=(4 8 16) SP_SECONDS=6 SP_WARMUP=3 SP_REPEAT=2 SP_VISITS=()
  # batch, precision, synthetic examples (bf16 = --mixed-precision: bf16 autocast and TF32)
  TRAIN_CASES=("512 fp32 4096" "512 bf16 4096" "2048 fp32 8192" "2048 bf16 8192")
  TRAIN_RUN=(--steps 20 --warmup 5 --repeat 3)
fi

# chessrl local on the GPU machine (16 cores, one GPU). chessrl local gives each
# self-play process one search thread and one evaluator worker (tools/chessrl/local/settings.cpp), and
# bench selfplay found that the GPU needs about 8 search threads to be fed: so 8 self-play
# processes, leaving 8 cores to the trainer, the evaluator, replay and Redis. 64 games at
# once x 8 leaves = forward passes of up to 512 positions, the batch the GPU runs well.
# bf16 self-play: the fastest precision for 10x128 in bench nn. Twice the default visits
# (128 full, 32 reduced): a GPU can afford them. The trainer's batch 1,024: 256 left a
# GPU step launch-bound (bench train). A version every 100 steps and a 200,000-position
# window so that 4 minutes give the evaluator several versions to play. No Prometheus
# (not installed there; the figures come from the children's /metrics).
LOOP_GPU=(--device cuda --net 10x128 --selfplay 8 --concurrent 64 --visits 128 --reduced-visits 32
  --selfplay-args "--precision bf16" --batch-size 1024 --window 200000 --publish-every 100)
# --cpu: the end-to-end test's settings (tests/e2e/local_harness.py), a 1x8 network.
LOOP_CPU=(--device cpu --net 1x8 --visits 8 --reduced-visits 4 --full-fraction 0.5 --concurrent 8
  --max-plies 60 --window 20000 --batch-size 64 --publish-every 10 --checkpoint-every 10
  --min-window 200 --max-reuse 100 --eval-visits 4 --eval-pairs 1 --anchor-pairs 1)
if ((cpu)); then LOOP_ARGS=("${LOOP_CPU[@]}") SCRAPE_EVERY=2 default_seconds=40
else LOOP_ARGS=("${LOOP_GPU[@]}") SCRAPE_EVERY=5 default_seconds=240; fi
if [[ -n $minutes ]]; then LOOP_SECONDS=$(awk -v m="$minutes" 'BEGIN { printf "%d", m * 60 + 0.5 }')
else LOOP_SECONDS=$default_seconds; fi
STAGE_BUDGET=480  # s: a stage must end within 8 minutes on the GPU machine

case $stage in
  selfplay) step_n=$((1 + ${#PRECISIONS[@]} + ${#PRECISIONS[@]} * ${#SP_THREADS[@]})) ;;
  train) step_n=$((1 + ${#TRAIN_CASES[@]})) ;;
  loop) step_n=3 ;;
esac

# ------------------------------------------------------------------ progress and the end
t0=$SECONDS step_i=0 step_name="setup" sampler_pid="" local_pid=""
elapsed() { printf '%d:%02d' $(((SECONDS - t0) / 60)) $(((SECONDS - t0) % 60)); }
step() {
  step_i=$((step_i + 1)) step_name=$1
  printf '[gpu-check %s %d/%d, %s elapsed] %s\n' "$stage" "$step_i" "$step_n" "$(elapsed)" "$1"
}
fail() { echo "gpu-check: $stage: step $step_i/$step_n ($step_name): $*" >&2; exit 1; }

machine="(not measured)"
finish() {
  local rc=$?
  trap - EXIT INT TERM
  if [[ -n $local_pid ]] && kill -0 "$local_pid" 2>/dev/null; then
    kill -INT "$local_pid" 2>/dev/null || true   # it stops its children in order
    wait "$local_pid" 2>/dev/null || true
  fi
  if [[ -n $sampler_pid ]]; then kill "$sampler_pid" 2>/dev/null || true; wait "$sampler_pid" 2>/dev/null || true; fi
  ((dry)) && exit "$rc"
  if ((build_only && rc == 0)); then echo "gpu-check: $stage: built in ${BUILT:-?} after $(elapsed) (--build-only)"; exit 0; fi
  local status=""
  if ((rc != 0)); then
    echo "gpu-check: $stage FAILED at step $step_i/$step_n ($step_name) after $(elapsed), exit status $rc; logs in $LOGS" >&2
    status="**FAILED** at step $step_i/$step_n ($step_name) after $(elapsed) (exit status $rc; logs in $LOGS): the rows below are the steps that completed."
  else
    status="Completed $step_n steps in $(elapsed) (min:s). Logs and raw figures: $OUT."
  fi
  echo
  local flags=()
  ((cpu)) && flags+=(--cpu)
  "${HELPER[@]}" table --stage "$stage" --rows "$OUT/rows.jsonl" --out "$OUT" --busy-name "$BUSY" \
    --machine "$machine" --versions "$OUT/versions.txt" --note "$(stage_note)" --status "$status" "${flags[@]}" ||
    echo "gpu-check: the summary table could not be written" >&2
  exit "$rc"
}
trap finish EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

stage_note() {
  local busy="$BUSY busy %: the median of the $BUSY's busy share sampled at 10 Hz" mem
  if ((cpu)); then busy+=" (/proc/stat, all cores)" mem="the machine's used memory"
  else busy+=" (NVML utilization.gpu: the share of time a kernel ran)" mem="the GPU's used memory"; fi
  case $stage in
    selfplay) echo "$busy within each row's window (selfplay rows: their timed self-play windows; raw: the backend alone at the run's mean batch); mem MiB: the most of $mem in the row's window. nn rows: evals/s through BatchEvaluator, eval ÷ raw per run; selfplay rows: medians of ${SP_REPEAT} run(s) of ${SP_SECONDS} s after ${SP_WARMUP} s warm-up, games at once = threads x batch / 8." ;;
    train) echo "$busy over the whole step (the C++ runs and the Python yardstick), mem MiB the most of $mem; one rank, ${TRAIN_RUN[*]}; bf16 = --mixed-precision (bf16 autocast and TF32)." ;;
    loop) echo "chessrl local ${LOOP_ARGS[*]} --duration $LOOP_SECONDS --no-prometheus. Rates from the children's /metrics scraped every ${SCRAPE_EVERY} s; $busy; memory: $mem." ;;
  esac
}

show() { printf '   '; printf ' %q' "$@"; echo; }  # a command, as it could be pasted

# Runs a bench: its stdout (timestamped) and stderr under logs/NAME.*, echoed indented.
# bench --json NAME ...: the bench prints one JSON document (its --json), which the
# helper reads; not echoed (the helper's reading prints each row's figures).
bench() {
  local json=()
  [[ $1 == --json ]] && { json=(--json); shift; }
  local name=$1; shift
  if ((dry)); then show "$@"; return 0; fi
  "${HELPER[@]}" run "${json[@]}" --log "$LOGS/$name" --steps "$OUT/steps.jsonl" -- "$@" ||
    fail "$name exited with status $? (its stderr: $LOGS/$name.err)"
}
parse() {
  ((dry)) && return 0
  "${HELPER[@]}" "$@" --samples "$OUT/samples.csv" --steps "$OUT/steps.jsonl" --rows "$OUT/rows.jsonl" ||
    fail "its output could not be parsed (see the message above)"
}

start_sampler() {
  ((dry)) && return 0
  local mode=gpu
  ((cpu)) && mode=cpu
  "${HELPER[@]}" sample --mode "$mode" --out "$OUT/samples.csv" 2>"$LOGS/sampler.err" &
  sampler_pid=$!
  local tries
  for ((tries = 0; tries < 50; tries++)); do
    [[ -s $OUT/samples.csv ]] && return 0
    kill -0 "$sampler_pid" 2>/dev/null || break
    sleep 0.1
  done
  cat "$LOGS/sampler.err" >&2
  fail "the $BUSY sampler gave no sample in 5 s"
}

# ------------------------------------------------------------------ building
torch_cmake() {  # prints nothing when python3 has no torch
  if [[ -n ${TORCH_CMAKE:-} ]]; then echo "$TORCH_CMAKE"; return; fi
  python3 -c 'import torch; print(torch.utils.cmake_prefix_path)' 2>/dev/null || true
}

run_logged() {  # run_logged LOG COMMAND...: the command's output to LOG, its tail on failure
  local log=$1; shift
  show "$@" | tee -a "$log"
  ((dry)) && return 0
  if ! "$@" >>"$log" 2>&1; then
    tail -n 40 "$log" | sed 's/^/    /' >&2
    fail "'$*' failed (whole log: $log)"
  fi
}

# nvcc on PATH: a wheel's TorchConfig.cmake finds the CUDA toolkit through it (CMake's
# FindCUDAToolkit), and a GPU image may have the toolkit without it on PATH. Where to
# look is gpu-check-helper.py nvcc's (PATH, /usr/local/cuda*/bin, the pip nvcc wheel),
# which gpu-run.sh's preflight asks too.
cuda_tools() {
  ((cpu)) && return 0
  local found
  if ! found=$("${HELPER[@]}" nvcc); then
    ((dry)) && { echo "    nvcc: none here (the GPU machine's is looked for on PATH, in /usr/local/cuda*/bin and beside torch)"; return 0; }
    fail "no nvcc on PATH, in /usr/local/cuda*/bin or beside torch: LibTorch's CMake files need the CUDA toolkit (put its bin/ on PATH)"
  fi
  found=${found%% *}
  command -v nvcc >/dev/null || export PATH="$(dirname "$found"):$PATH"
}

# build KIND TARGET...: KIND core (no services, build/gpu) or full (build/gpu-full).
# Both build against the dependency bundle when there is one (its toolchain file):
# the core needs CLI11, nlohmann-json and zlib's headers, which a GPU image may lack.
build() {
  local kind=$1; shift
  local log=$LOGS/build.log dir=$build_dir
  : >"$log"
  cuda_tools
  if [[ -z $dir || ! -f $dir/CMakeCache.txt ]]; then
    local prefix config=(-G Ninja -DCMAKE_BUILD_TYPE=Release -DCHESSRL_BUILD_TESTS=OFF -DCHESSRL_WERROR=OFF)
    prefix=$(torch_cmake)
    if [[ -n $prefix ]]; then config+=("-DCMAKE_PREFIX_PATH=$prefix")
    elif ((dry && !cpu)); then config+=("-DCMAKE_PREFIX_PATH=<python3 -c 'import torch; print(torch.utils.cmake_prefix_path)'>")
    elif ((!cpu)); then fail "python3 cannot import torch: set TORCH_CMAKE to LibTorch's share/cmake directory"
    fi  # --cpu: the system's LibTorch (Debian's libtorch-dev), or TORCH_CMAKE's
    if [[ -n $TOOLCHAIN ]]; then config+=(--toolchain "$TOOLCHAIN"); fi
    if [[ $kind == core ]]; then
      dir=${dir:-$ROOT/build/gpu}
      config+=(-DCHESSRL_SERVICES=OFF)
    else
      dir=${dir:-$ROOT/build/gpu-full}
      # The game viewer needs its page's npm packages (services/web/node_modules), which a
      # GPU machine without npm does not have; it is not what this check measures.
      [[ -f $ROOT/services/web/node_modules/chess.js/package.json ]] || config+=(-DCHESSRL_WEB=OFF)
    fi
    # Our code, the bundle and LibTorch must share the C++11 ABI (docs/gpu.md).
    if ((!cpu)) && python3 -c 'import torch' 2>/dev/null; then
      python3 -c 'import sys, torch; sys.exit(0 if torch.compiled_with_cxx11_abi() else 1)' ||
        fail "python3's PyTorch uses the old C++ ABI (PyTorch < 2.7): it cannot link with the bundle's libraries"
    fi
    local extra=()
    read -r -a extra <<<"${GPU_CHECK_CMAKE_ARGS:-}"
    run_logged "$log" cmake -S "$ROOT" -B "$dir" "${config[@]}" "${extra[@]}"
  fi
  run_logged "$log" cmake --build "$dir" -j"$jobs" --target "$@"
  BUILT=$dir
  TOOL=${GPU_CHECK_CHESSRL:-$dir/tools/chessrl/chessrl}  # GPU_CHECK_CHESSRL: tests only
  ((dry)) || [[ -x $TOOL ]] || fail "no $TOOL after the build"
  versions
}

# What the build and the run use, from configure (DIR/chessrl-configure.txt: Protocol
# Buffers, LibTorch's own copy, nccl.h) and from the machine (PyTorch, CUDA, cuDNN, the
# NCCL library torch loads, nvcc): printed, and kept in OUT/versions.txt for the table.
versions() {
  ((dry)) && return 0
  local mode=gpu
  ((cpu)) && mode=cpu
  "${HELPER[@]}" versions --mode "$mode" --build-dir "$BUILT" --bundle "${TOOLCHAIN:+$(dirname "$TOOLCHAIN")}" \
    >"$OUT/versions.txt" 2>"$LOGS/versions.err" || true
  sed 's/^/    /' "$OUT/versions.txt"
}

# Unpacks TARBALL into DIR: tar with xz, or Python's tarfile where xz is missing.
unpack_xz() {
  local tarball=$1 dir=$2
  if command -v xz >/dev/null; then tar -xJf "$tarball" -C "$dir"; return; fi
  echo "    (no xz here: unpacking with python3's tarfile)"
  "${HELPER[@]}" unpack "$tarball" "$dir"
}

# The dependency bundle (scripts/gpu-bundle.sh): build/gpu-bundle, or
# build/gpu-bundle.tar.xz unpacked there. Its toolchain file configures the build
# and its usr/bin (redis-server) goes first on PATH. The loop needs it (the services'
# libraries); selfplay and train use it when it is there.
TOOLCHAIN=""
use_bundle() {
  local need=$1
  local bundle=$ROOT/build/gpu-bundle tarball=$ROOT/build/gpu-bundle.tar.xz
  if [[ ! -d $bundle && -f $tarball ]]; then
    echo "    unpacking $tarball"
    if ((!dry)); then
      local tmp
      tmp=$(mktemp -d "$ROOT/build/gpu-bundle.unpack.XXXXXX") && chmod 755 "$tmp"
      unpack_xz "$tarball" "$tmp" || { rm -rf "$tmp"; fail "cannot unpack $tarball"; }
      if [[ -f $tmp/toolchain.cmake ]]; then mv "$tmp" "$bundle"
      elif [[ -f $tmp/gpu-bundle/toolchain.cmake ]]; then mv "$tmp/gpu-bundle" "$bundle"; rm -rf "$tmp"
      else rm -rf "$tmp"; fail "$tarball holds no toolchain.cmake (nor gpu-bundle/toolchain.cmake)"; fi
    fi
  fi
  if [[ -f $bundle/toolchain.cmake ]] || { ((dry)) && [[ -f $tarball ]]; }; then
    TOOLCHAIN=$bundle/toolchain.cmake
    [[ -d $bundle/usr/bin ]] && export PATH="$bundle/usr/bin:$PATH"
    echo "    bundle: $bundle (toolchain.cmake; usr/bin first on PATH)"
  elif ((dry)); then
    echo "    bundle: none here yet (scripts/gpu-bundle.sh makes build/gpu-bundle.tar.xz; the GPU machine needs it carried)"
    if [[ $need == need ]]; then TOOLCHAIN=$bundle/toolchain.cmake; fi
  elif [[ $need == need && -z $build_dir ]] && ((!cpu)); then
    fail "no $bundle/toolchain.cmake and no $tarball: make the bundle with scripts/gpu-bundle.sh"
  elif [[ $need != need ]]; then
    echo "    bundle: none (building against the system's CLI11, nlohmann-json and zlib headers)"
  fi
}

# ------------------------------------------------------------------ the stages
stage_selfplay() {
  step "build chessrl (no services)"
  use_bundle optional
  build core chessrl
  ((build_only)) && exit 0
  start_sampler
  local p t
  for p in "${PRECISIONS[@]}"; do
    step "bench nn $NET $p, batch $NN_BATCHES"
    bench --json "nn-$p" "$TOOL" bench nn --device "$DEVICE" --precision "$p" --net "$NET" \
      --batch "$NN_BATCHES" --seconds "$NN_SECONDS" --repeat "$NN_REPEAT" --json
    parse nn --log "$LOGS/nn-$p" --precision "$p" --batches "$NN_BATCHES"
  done
  # Thread counts outermost: both precisions of a row run close together in time.
  for t in "${SP_THREADS[@]}"; do
    for p in "${PRECISIONS[@]}"; do
      step "bench selfplay $NET $p, batch $SP_BATCH, $t threads"
      bench --json "selfplay-$p-t$t" "$TOOL" bench selfplay --device "$DEVICE" --precision "$p" \
        --net "$NET" --batch "$SP_BATCH" --threads "$t" --seconds "$SP_SECONDS" \
        --warmup "$SP_WARMUP" --repeat "$SP_REPEAT" "${SP_VISITS[@]}" --json
      parse selfplay --log "$LOGS/selfplay-$p-t$t" --precision "$p" --net "$NET" --batch "$SP_BATCH" \
        --repeat "$SP_REPEAT"
    done
  done
}

stage_train() {
  step "build chessrl (no services)"
  use_bundle optional
  build core chessrl
  ((build_only)) && exit 0
  start_sampler
  local c batch p examples mixed
  for c in "${TRAIN_CASES[@]}"; do
    read -r batch p examples <<<"$c"
    mixed=()
    [[ $p == bf16 ]] && mixed=(--mixed-precision)
    step "bench train $NET batch $batch $p"
    bench --json "train-$batch-$p" "$TOOL" bench train --device "$DEVICE" "${mixed[@]}" --ranks 1 \
      --net "$NET" --batch "$batch" --examples "$examples" "${TRAIN_RUN[@]}" \
      --python auto --python-script "$ROOT/tools/chessrl/bench/train_yardstick.py" --json
    parse train --log "$LOGS/train-$batch-$p" --precision "$p" --batch "$batch"
  done
}

# PyTorch builds its own Protocol Buffers into libtorch_cpu.so; if that library
# exported them, our processes would hold two versions under one name (docs/gpu.md).
protobuf_check() {
  ((cpu || dry)) && return 0
  local lib n
  lib=$(python3 -c 'import os, torch; print(os.path.join(os.path.dirname(torch.__file__), "lib", "libtorch_cpu.so"))' 2>/dev/null) || return 0
  [[ -f $lib ]] || return 0
  n=$(nm -D --defined-only "$lib" 2>/dev/null | c++filt | grep -c 'google::protobuf::' || true)
  if ((n > 0)); then
    echo "    WARNING: $lib exports $n google::protobuf symbols: they may clash with the bundle's Protocol Buffers 3.21 (docs/gpu.md)" | tee "$LOGS/protobuf-check.txt"
  else
    echo "    $lib exports no google::protobuf symbol" | tee "$LOGS/protobuf-check.txt"
  fi
}

stage_loop() {
  step "build chessrl and the services"
  use_bundle need
  build full chessrl chessrl-replay chessrl-trainer chessrl-selfplay chessrl-evaluator
  ((build_only)) && exit 0
  protobuf_check
  if ((!dry)); then
    local s
    for s in replay trainer selfplay evaluator; do
      [[ -x $BUILT/services/$s/chessrl-$s ]] || fail "no $BUILT/services/$s/chessrl-$s after the build"
    done
    command -v redis-server >/dev/null || fail "redis-server is not on PATH (the bundle's usr/bin, or apt-get install redis-server)"
    redis-server --version >"$LOGS/redis-version.txt" 2>&1 ||
      { cat "$LOGS/redis-version.txt" >&2; fail "$(command -v redis-server) does not run"; }
    echo "    $(command -v redis-server): $(cat "$LOGS/redis-version.txt")"
  fi
  start_sampler
  # Without --minutes, a slow build shortens the run (down to 1 minute) so that the
  # stage still ends within 8 minutes: about 75 s go to starting, stopping, the report.
  local left=$((STAGE_BUDGET - (SECONDS - t0) - 75))
  if [[ -z $minutes ]] && ((!cpu && left < LOOP_SECONDS)); then
    LOOP_SECONDS=$((left > 60 ? left : 60))
    echo "    the build took $(elapsed): chessrl local runs $LOOP_SECONDS s instead of $default_seconds (--minutes sets it)"
  fi

  step "chessrl local for $LOOP_SECONDS s"
  local cmd=("$TOOL" local --dir "$OUT/run" "${LOOP_ARGS[@]}" --duration "$LOOP_SECONDS" --no-prometheus)
  show "${cmd[@]}"
  ((dry)) && return 0
  rm -rf "$OUT/run"  # a fresh run: the same --dir would resume the last one
  local started rc=0
  started=$(date +%s.%N)
  "${cmd[@]}" >"$LOGS/local.out" 2>"$LOGS/local.err" &
  local_pid=$!
  "${HELPER[@]}" watch-local --dir "$OUT/run" --pid "$local_pid" --started "$started" \
    --seconds "$LOOP_SECONDS" --every "$SCRAPE_EVERY" --out "$OUT/loop-metrics.jsonl" || rc=$?
  wait "$local_pid" || rc=$?
  local_pid=""
  if ((rc != 0)); then
    tail -n 30 "$LOGS/local.err" | sed 's/^/    /' >&2
    fail "chessrl local failed (exit status $rc; $LOGS/local.err, $OUT/run/logs)"
  fi

  step "read the run's figures (/metrics scrapes, status line, evaluator results)"
  "${HELPER[@]}" loop --stdout "$LOGS/local.out" --metrics "$OUT/loop-metrics.jsonl" \
    --samples "$OUT/samples.csv" --run-dir "$OUT/run" --rows "$OUT/rows.jsonl" --out "$OUT" \
    --seconds "$LOOP_SECONDS" --busy-name "$BUSY" || fail "the run's figures could not be read"
}

if ((!dry)); then
  mode=gpu
  ((cpu)) && mode=cpu
  machine="$("${HELPER[@]}" machine --mode "$mode"), commit $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown), $(date -u '+%Y-%m-%d %H:%M') UTC"
  echo "gpu-check $stage on $machine; output in $OUT"
fi
"stage_$stage"
