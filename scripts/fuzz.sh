#!/usr/bin/env bash
# Builds the libFuzzer targets (fuzz/, clang, in build/fuzz) and runs each one
# for a while on a scratch copy of its seed corpus (make fuzz; docs/fuzzing.md).
# Prints a table (target, executions, executions/s, corpus size, new coverage,
# crashes) and exits non-zero when a target found a crash, a leak, a timeout or
# an out-of-memory, printing the input that reproduces it.
# Environment:
#   FUZZ_SECONDS   seconds per target (default 30)
#   FUZZ_TARGETS   targets to run (default: all of fuzz/targets.cmake)
#   FUZZ_JOBS      targets run at once (default: the number of CPUs)
#   FUZZ_RSS_MB    memory limit of one target process, MB (default 2048)
#   FUZZ_TIMEOUT   seconds one input may take before it counts as a hang (default 10)
#   FUZZ_BUILD     build directory (default build/fuzz)
#   FUZZ_ARGS      more libFuzzer flags for every target (e.g. -max_len=65536)
# The repository's corpus is never written: new inputs go to
# FUZZ_BUILD/run/TARGET/corpus, findings to FUZZ_BUILD/run/TARGET/artifacts.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$here"

seconds=${FUZZ_SECONDS:-30}
jobs=${FUZZ_JOBS:-$(nproc)}
rss_mb=${FUZZ_RSS_MB:-2048}
timeout=${FUZZ_TIMEOUT:-10}
build=${FUZZ_BUILD:-build/fuzz}
all=$(sed -n 's/^set(CHESSRL_FUZZ_TARGETS \(.*\))$/\1/p' fuzz/targets.cmake)
targets=${FUZZ_TARGETS:-$all}
for t in $targets; do
  case " $all " in *" $t "*) ;; *) echo "fuzz: no target '$t' (targets: $all)" >&2; exit 2 ;; esac
done

start=$(date +%s)
if [ ! -f "$build/build.ninja" ]; then
  cmake -S . -B "$build" -G Ninja -DCHESSRL_FUZZ=ON -DCMAKE_CXX_COMPILER=clang++ \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
fi
# shellcheck disable=SC2046
cmake --build "$build" -j "$(nproc)" --target $(printf 'fuzz_%s ' $targets)
built=$(date +%s)
echo "fuzz: built in $((built - start)) s; running $(echo $targets | wc -w) targets for ${seconds} s each, $jobs at a time"

run_one() {
  local t=$1 work="$build/run/$1"
  rm -rf "$work"
  mkdir -p "$work/corpus" "$work/artifacts"
  cp tests/fuzz/corpus/"$t"/* "$work/corpus/"
  local dict=()
  [ -f "fuzz/$t.dict" ] && dict=(-dict="fuzz/$t.dict")
  # shellcheck disable=SC2086
  set +e
  "$build/fuzz/fuzz_$t" -max_total_time="$seconds" -rss_limit_mb="$rss_mb" -timeout="$timeout" \
    -print_final_stats=1 -artifact_prefix="$work/artifacts/" "${dict[@]}" ${FUZZ_ARGS:-} \
    "$work/corpus" >"$work/log" 2>&1
  echo $? >"$work/status"
  set -e
}

running=0
for t in $targets; do
  run_one "$t" &
  running=$((running + 1))
  if [ "$running" -ge "$jobs" ]; then
    wait -n || true
    running=$((running - 1))
  fi
done
wait

stat() { sed -n "s/^stat::$2: *//p" "$build/run/$1/log" | tail -1; }
failed=0
printf '\n%-12s %12s %9s %8s %14s %8s\n' target executions exec/s corpus "coverage" crashes
for t in $targets; do
  work="$build/run/$t"
  seeds=$(find "tests/fuzz/corpus/$t" -type f | wc -l)
  corpus=$(find "$work/corpus" -type f | wc -l)
  cov_start=$(sed -n 's/.*INITED cov: \([0-9]*\).*/\1/p' "$work/log" | head -1)
  cov_end=$(sed -n 's/.* cov: \([0-9]*\) .*/\1/p' "$work/log" | tail -1)
  artifacts=$(find "$work/artifacts" -type f | wc -l)
  status=$(cat "$work/status")
  crashes=$artifacts
  [ "$status" != 0 ] && [ "$artifacts" = 0 ] && crashes="exit $status"
  printf '%-12s %12s %9s %8s %14s %8s\n' "$t" "$(stat "$t" number_of_executed_units)" \
    "$(stat "$t" average_exec_per_sec)" "$seeds->$corpus" "${cov_start:-?}->${cov_end:-?}" "$crashes"
  if [ "$status" != 0 ] || [ "$artifacts" != 0 ]; then failed=1; fi
done

if [ "$failed" != 0 ]; then
  echo
  for t in $targets; do
    work="$build/run/$t"
    [ "$(cat "$work/status")" = 0 ] && [ -z "$(ls -A "$work/artifacts")" ] && continue
    echo "fuzz: $t failed (log: $work/log):"
    grep -E '^(==[0-9]+==ERROR|SUMMARY|.*FUZZ_CHECK|.*runtime error)' "$work/log" | head -5 | sed 's/^/  /'
    for a in "$work"/artifacts/*; do
      [ -e "$a" ] || continue
      echo "  reproduce: $build/fuzz/fuzz_$t $a"
    done
  done
  exit 1
fi
echo "fuzz: no crashes ($(($(date +%s) - start)) s in all)"
