#!/usr/bin/env bash
# Smoke test of the built images (make images first): chessrl:VERSION and
# chessrl-replay:VERSION. Every container runs as the chart runs it: read-only
# root file system, UID 10001, a tmpfs at /tmp, no capabilities, no new privileges.
# One line per check, then "N passed, M failed, K skipped" (with why, when K > 0);
# exits 1 when any check failed. A skip is a check this image cannot take (a
# command it is older than), said on its own line and counted, never silent.
#   tests/images/smoke.sh          (make images-smoke)
# Environment: ENGINE (docker or podman; default as scripts/images.sh), VERSION.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
version=${VERSION:-$(sed -n 's/^project(chessrl VERSION \([0-9.]*\).*/\1/p' "$here/CMakeLists.txt")}
engine=${ENGINE:-}
if [ -z "$engine" ]; then
  if command -v docker >/dev/null && docker info >/dev/null 2>&1; then engine=docker; else engine=podman; fi
fi
[ "$engine" = podman ] && export CONTAINERS_CONF=${CONTAINERS_CONF:-$here/docker/podman/containers.conf}

main=chessrl:$version
replay=chessrl-replay:$version
secure=(--read-only --user 10001 --tmpfs /tmp --cap-drop ALL --security-opt no-new-privileges)
prefix=chessrl-smoke-$$
started=()
cleanup() { for c in "${started[@]}"; do "$engine" rm -f "$c" >/dev/null 2>&1 || true; done; }
trap cleanup EXIT

passed=0 failed=0 skipped=0 skips=()
skip() {  # skip NAME WHY: a check not run, said and counted
  echo "skip  $1: $2"; skipped=$((skipped + 1)); skips+=("$1 ($2)")
}
check() {  # check NAME COMMAND...: runs COMMAND quietly, prints ok/FAIL NAME
  local name=$1; shift
  if "$@" >/dev/null 2>&1; then echo "ok    $name"; passed=$((passed + 1))
  else echo "FAIL  $name"; failed=$((failed + 1)); fi
}
run() { "$engine" run --rm "${secure[@]}" "$@"; }
inspect() { "$engine" image inspect --format "$2" "$1"; }

# Image metadata.
for image in "$replay" "$main"; do
  check "$image exists" "$engine" image inspect "$image"
  check "$image runs as UID 10001" bash -c "[[ \$($engine image inspect --format '{{.Config.User}}' $image) =~ ^10001(:10001)?$ ]]"
  for label in source version revision; do
    check "$image has label org.opencontainers.image.$label" \
      test -n "$(inspect "$image" "{{index .Config.Labels \"org.opencontainers.image.$label\"}}" 2>/dev/null)"
  done
  check "$image version label is $version" \
    test "$(inspect "$image" '{{index .Config.Labels "org.opencontainers.image.version"}}' 2>/dev/null)" = "$version"
  check "$image has no compiler or C++ headers" \
    run --entrypoint sh "$image" -c '! test -e /usr/bin/g++ && ! test -e /usr/include/c++ && ! command -v cc && ! command -v c++'
  check "$image entrypoint is exec form" \
    bash -c "$engine image inspect --format '{{json .Config.Entrypoint}}' $image | grep -q '^\[\"/usr/local/bin/'"
done

# Binaries: every --help, shared libraries all found, LibTorch only where it belongs.
check "chessrl-replay --help" run "$replay" --help
check "chessrl-web --help" run --entrypoint /usr/local/bin/chessrl-web "$replay" --help
check "chessrl-web does not link LibTorch" \
  run --entrypoint sh "$replay" -c '! ldd /usr/local/bin/chessrl-web | grep -q -e "not found" -e libtorch'
check "chessrl-replay does not link LibTorch" \
  run --entrypoint sh "$replay" -c '! ldd /usr/local/bin/chessrl-replay | grep -q -e "not found" -e libtorch'
for bin in chessrl chessrl-selfplay chessrl-trainer chessrl-evaluator; do
  check "$bin --help" run --entrypoint "/usr/local/bin/$bin" "$main" --help
  check "$bin finds all its libraries" \
    run --entrypoint sh "$main" -c "! ldd /usr/local/bin/$bin | grep -q 'not found'"
done
check "chessrl (default command) prints its help" run "$main"
check "stockfish on PATH answers uci" \
  bash -c "printf 'uci\nquit\n' | $engine run --rm -i ${secure[*]} --entrypoint stockfish $main | grep -q uciok"
check "chessrl match against stockfish (an evaluator anchor)" \
  run "$main" match --first random --second 'uci:stockfish;Skill Level=0;movetime=10' --pairs 1

# Services: started detached (as the chart starts them), /metrics and /healthz
# answer on a published port, SIGTERM stops them with exit status 0.
start() {  # start NAME PORT RUN-ARGS... IMAGE ARGS...: sets addr to the host address of PORT
  local name=$prefix-$1 port=$2; shift 2
  started+=("$name")
  addr=none
  "$engine" run -d --name "$name" "${secure[@]}" -p "127.0.0.1::$port" "$@" >/dev/null || return 0
  addr=$("$engine" port "$name" "$port" | head -1 | sed 's/^0\.0\.0\.0:/127.0.0.1:/') || addr=none
}
answers() {  # answers URL [GREP]: polls URL for up to 60 s
  case $1 in http://none/*) return 1 ;; esac
  for _ in $(seq 60); do
    if body=$(curl -fsS --max-time 2 "$1" 2>/dev/null); then
      [ -z "${2:-}" ] || grep -q -- "$2" <<<"$body"; return
    fi
    sleep 1
  done
  return 1
}
stops() {  # stops NAME: SIGTERM (podman/docker stop) ends it in under 20 s with status 0
  "$engine" stop -t 20 "$1" >/dev/null &&
    test "$("$engine" inspect --format '{{.State.ExitCode}}' "$1")" = 0
}

start replay 9102 "$replay" --store memory
check "chessrl-replay --store memory: /healthz" answers "http://$addr/healthz"
check "chessrl-replay --store memory: /metrics" answers "http://$addr/metrics" chessrl_build_info
if run "$main" --help 2>/dev/null | grep -qw probe; then   # chessrl probe is newer than some images
  grpc=$("$engine" inspect --format '{{.NetworkSettings.IPAddress}}' "$prefix-replay")
  check "chessrl probe --grpc-health replay" \
    run --entrypoint /usr/local/bin/chessrl "$main" probe --grpc-health "$grpc:50051"
else
  skip "chessrl probe --grpc-health replay" "$main has no chessrl probe (an image older than the command)"
fi
check "chessrl-replay stops on SIGTERM with status 0" stops "$prefix-replay"

# No replay service for these: each serves /metrics while it waits for one.
start selfplay 9101 --entrypoint /usr/local/bin/chessrl-selfplay "$main" \
  --replay 127.0.0.1:1 --rpc-deadline 1 --threads 1 --concurrent 2 --flush-timeout 2
check "chessrl-selfplay without a replay service: /metrics" answers "http://$addr/metrics" chessrl_build_info
check "chessrl-selfplay stops on SIGTERM with status 0" stops "$prefix-selfplay"

start trainer 9100 --entrypoint /usr/local/bin/chessrl-trainer --hostname chessrl-trainer-0 "$main" \
  --replay 127.0.0.1:1 --rpc-deadline 1 --checkpoint-dir /tmp/checkpoints
check "chessrl-trainer without a replay service: /metrics" answers "http://$addr/metrics" chessrl_build_info
check "chessrl-trainer stops on SIGTERM with status 0" stops "$prefix-trainer"

start evaluator 9104 --entrypoint /usr/local/bin/chessrl-evaluator "$main" \
  --registry 127.0.0.1:1 --rpc-deadline 1 --state-dir /tmp/evaluator
check "chessrl-evaluator without a registry: /metrics" answers "http://$addr/metrics" chessrl_build_info
check "chessrl-evaluator stops on SIGTERM with status 0" stops "$prefix-evaluator"

if [ "$skipped" -eq 0 ]; then
  echo "$passed passed, $failed failed, 0 skipped"
else
  echo "$passed passed, $failed failed, $skipped skipped: $(IFS=';'; echo "${skips[*]}")"
fi
[ "$failed" -eq 0 ]
