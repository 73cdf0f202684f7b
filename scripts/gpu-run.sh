#!/usr/bin/env bash
# The one command a lent GPU machine runs (docs/gpu.md): a preflight, one build of
# every program against the dependency bundle, then the stages asked for, with every
# log, figure and table written under OUT.
#
#   scripts/gpu-run.sh [STAGE ...] [--minutes N] [--budget S] [--jobs N] [--cpu] [--dry-run]
#
# STAGE     loop (the default), selfplay or train (scripts/gpu-check.sh's stages); all is
#           selfplay, train and loop, which needs more than one 10-minute device call.
# Steps:
#   1. preflight: the GPU (nvidia-smi), python3's PyTorch (its version, CUDA, the C++11
#      ABI), the compiler, CMake, ninja, nvcc, the dependency bundle (build/gpu-bundle or
#      build/gpu-bundle.tar.xz), something to unpack it with (xz or python3's lzma), and
#      free disk. It stops here, naming what is missing, before anything is compiled.
#      OUT/preflight.txt.
#   2. the build: scripts/gpu-check.sh loop --build-only --build-dir build/gpu-full, the
#      services and chessrl (OUT/build).
#   3. each stage: scripts/gpu-check.sh STAGE --build-dir build/gpu-full (OUT/STAGE). A
#      stage that fails does not stop the next one.
#   4. OUT/summary.md: the preflight, then each stage's table, appended as each ends (a
#      run cut short keeps what it finished).
# The loop runs --minutes, or what --budget (default 540 s: the command fits in one
# 10-minute device call, with a minute to spare) leaves after the steps before it, less
# 75 s for starting, stopping and the report; at most 4 minutes, at least 1.
# --cpu runs the same on the CPU (gpu-check.sh --cpu: tiny networks, the system's LibTorch);
# --dry-run prints every command of every step and runs none (CI runs it).
# Exit status: 0 when the build and every stage passed, 1 otherwise (the summary says
# which), 2 for a usage error.
# Environment: OUT (default build/gpu-run); TORCH_CMAKE and GPU_CHECK_CMAKE_ARGS as in
# scripts/gpu-check.sh.
set -euo pipefail

usage() { awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "${BASH_SOURCE[0]}"; }
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CHECK=("$ROOT/scripts/gpu-check.sh")

stages=() minutes="" budget=540 jobs=$(nproc) cpu=0 dry=0
while (($#)); do
  case $1 in
    loop | selfplay | train) stages+=("$1") ;;
    all) stages+=(selfplay train loop) ;;
    --minutes) minutes=${2:?--minutes needs a number}; shift ;;
    --budget) budget=${2:?--budget needs seconds}; shift ;;
    --jobs) jobs=${2:?--jobs needs a number}; shift ;;
    --cpu) cpu=1 ;;
    --dry-run) dry=1 ;;
    -h | --help) usage; exit 0 ;;
    *) usage >&2; echo "gpu-run: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done
((${#stages[@]})) || stages=(loop)
[[ $budget =~ ^[1-9][0-9]*$ ]] || { echo "gpu-run: --budget $budget is not a whole number of seconds" >&2; exit 2; }
[[ $jobs =~ ^[1-9][0-9]*$ ]] || { echo "gpu-run: --jobs $jobs is not a positive whole number" >&2; exit 2; }
if [[ -n $minutes ]] && ! awk -v m="$minutes" 'BEGIN { exit !(m + 0 > 0) }'; then
  echo "gpu-run: --minutes $minutes is not a positive number" >&2; exit 2
fi

OUT=${OUT:-$ROOT/build/gpu-run}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
BUILD_DIR=$ROOT/build/gpu-full
SUMMARY=$OUT/summary.md
t0=$SECONDS
elapsed() { printf '%d:%02d' $(((SECONDS - t0) / 60)) $(((SECONDS - t0) % 60)); }
say() { printf '[gpu-run %s] %s\n' "$(elapsed)" "$*"; }
flags=()
((cpu)) && flags+=(--cpu)
((dry)) && flags+=(--dry-run)

# ------------------------------------------------------------------ 1. preflight
# check NAME OK TEXT: one line of the preflight; a failed one stops the run (not dry).
problems=0
report=()
check() {
  local name=$1 ok=$2 text=$3
  if ((ok)); then report+=("- $name: $text"); printf '    ok   %-10s %s\n' "$name" "$text"
  else report+=("- $name: **missing**: $text"); printf '    FAIL %-10s %s\n' "$name" "$text"; problems=$((problems + 1)); fi
}
preflight() {
  say "1. preflight ($(hostname), ${stages[*]})"
  local v
  if ((!cpu)); then
    if v=$(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null | head -1) && [[ -n $v ]]; then
      check gpu 1 "$v"
    else check gpu 0 "nvidia-smi lists no GPU"; fi
    if v=$(python3 -c 'import torch; print(torch.__version__, "CUDA", torch.version.cuda, "available" if torch.cuda.is_available() else "NOT AVAILABLE", "cxx11-abi" if torch.compiled_with_cxx11_abi() else "OLD ABI")' 2>/dev/null); then
      check pytorch "$([[ $v == *available* && $v != *"NOT AVAILABLE"* && $v == *cxx11-abi* ]] && echo 1 || echo 0)" "$v"
    else check pytorch 0 "python3 cannot import torch (TORCH_CMAKE can name LibTorch's share/cmake)"; fi
  fi
  if v=$(g++ --version 2>/dev/null | head -1); then check compiler 1 "$v"; else check compiler 0 "no g++"; fi
  if v=$(cmake --version 2>/dev/null | head -1); then check cmake 1 "$v"; else check cmake 0 "no cmake"; fi
  if command -v ninja >/dev/null; then check ninja 1 "$(ninja --version)"; else check ninja 0 "no ninja (the builds use -G Ninja)"; fi
  if ((!cpu)); then
    # Where gpu-check.sh looks too (it puts the one found on PATH).
    if v=$(python3 "$ROOT/scripts/gpu-check-helper.py" nvcc); then check nvcc 1 "${v% *} (${v##* })"
    else check nvcc 0 "not on PATH, in /usr/local/cuda*/bin or beside torch (LibTorch's CMake files need the CUDA toolkit)"; fi
  fi
  if [[ -f $ROOT/build/gpu-bundle/toolchain.cmake ]]; then check bundle 1 "$ROOT/build/gpu-bundle"
  elif [[ -f $ROOT/build/gpu-bundle.tar.xz ]]; then
    check bundle 1 "$ROOT/build/gpu-bundle.tar.xz ($(($(stat -c %s "$ROOT/build/gpu-bundle.tar.xz") / 1048576)) MiB, unpacked by the build)"
    if command -v xz >/dev/null; then check unpack 1 "xz $(xz --version | head -1 | awk '{print $NF}')"
    elif python3 -c 'import lzma' 2>/dev/null; then check unpack 1 "python3's lzma (no xz here)"
    else check unpack 0 "neither xz nor python3's lzma to unpack the bundle"; fi
  elif ((cpu)); then check bundle 1 "none (--cpu builds against the system's libraries)"
  else check bundle 0 "no build/gpu-bundle nor build/gpu-bundle.tar.xz: run scripts/gpu-bundle.sh and carry the tarball"; fi
  mkdir -p "$ROOT/build"
  v=$(df -Pm "$ROOT/build" | awk 'NR == 2 { print $4 }')
  check disk "$((v > 4096 ? 1 : 0))" "$v MiB free under build/ (4 GiB asked: the same build at -O1 against Debian's LibTorch took 660 MiB)"
  {
    echo "# gpu-run: ${stages[*]}${flags[*]:+ (${flags[*]})}"
    echo
    echo "Preflight on $(hostname), $(date -u '+%Y-%m-%d %H:%M') UTC, commit $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown):"
    echo
    printf '%s\n' "${report[@]}"
    echo
  } >"$SUMMARY"
  cp "$SUMMARY" "$OUT/preflight.txt"
  if ((problems && !dry)); then
    say "preflight: $problems problem(s) above; nothing was built"
    exit 1
  fi
}

# ------------------------------------------------------------------ 2-3. build, stages
failed=()
run_step() {  # run_step NAME COMMAND...: OUT/NAME, its summary appended to ours
  local name=$1; shift
  local rc=0
  OUT=$OUT/$name "$@" || rc=$?
  if [[ -f $OUT/$name/summary.md ]]; then cat "$OUT/$name/summary.md" >>"$SUMMARY"; echo >>"$SUMMARY"; fi
  if ((rc != 0)); then
    failed+=("$name")
    echo "**$name failed** (exit status $rc; logs in $OUT/$name/logs)" >>"$SUMMARY"; echo >>"$SUMMARY"
  fi
  return $rc
}

preflight
say "2. build every program in $BUILD_DIR"
if ! run_step build "${CHECK[@]}" loop --build-only --build-dir "$BUILD_DIR" --jobs "$jobs" "${flags[@]}"; then
  say "the build failed: no stage runs (logs in $OUT/build/logs)"
  exit 1
fi
n=0
for stage in "${stages[@]}"; do
  n=$((n + 1))
  extra=()
  if [[ $stage == loop ]]; then
    if [[ -n $minutes ]]; then extra=(--minutes "$minutes")
    elif ((!cpu)); then
      left=$((budget - (SECONDS - t0) - 75))
      left=$((left > 240 ? 240 : left))
      left=$((left < 60 ? 60 : left))
      extra=(--minutes "$(awk -v s="$left" 'BEGIN { printf "%.2f", s / 60 }')")
    fi
  fi
  say "3. stage $n/${#stages[@]}: $stage${extra[*]:+ ${extra[*]}}"
  run_step "$stage" "${CHECK[@]}" "$stage" --build-dir "$BUILD_DIR" --jobs "$jobs" "${extra[@]}" "${flags[@]}" || true
done

if ((${#failed[@]})); then
  say "done: failed: ${failed[*]} (summary: $SUMMARY)"
  exit 1
fi
if ((dry)); then say "dry run: the commands above, none run (summary so far: $SUMMARY)"
else say "done: every step passed (summary: $SUMMARY)"; fi
