#!/usr/bin/env bash
# make bundle-test: the dependency bundle (scripts/gpu-bundle.sh) is enough to build
# and run the services on a machine that has only a compiler, CMake, ninja and
# LibTorch, as a bare GPU machine has. In a container of the plain Debian base image
# with only those added (docker/Dockerfile.bundle-check: no -dev package of the
# services, no protoc, no redis-server, no network), it
#   1. configures and builds the services and the chessrl tool against the bundle
#      alone (cmake --toolchain build/gpu-bundle/toolchain.cmake), with Debian's
#      LibTorch laid out as a PyTorch wheel's (tests/cmake/fake_torch_wheel.cmake: the
#      wheel's own older google/protobuf on the torch targets' include path and its
#      empty protobuf::libprotobuf), as the GPU machine's build will see it;
#   2. checks with ldd that every program resolves every library, and that each one
#      the bundle holds is loaded from the bundle (also where Debian's LibTorch has
#      its own copy on the system);
#   3. runs `scripts/gpu-check.sh loop --cpu` in it through tests/tools/gpu_check_test.py:
#      redis-server from the bundle, replay, self-play, the trainer and the evaluator
#      under `chessrl local`; it fails unless games are played and stored and the trainer
#      steps, and the test checks that every figure of the stage's table is a number.
# `tests/bundle/run.sh --prepare` makes only the bundle and the image (network and
# disk work, which CI does while it compiles), a later run does the rest.
# Environment:
#   BUNDLE_TEST_IDLE=1   compile at idle CPU priority (chrt --idle), so that CI can run
#                        this beside its tests without taking CPU from them
#   BUNDLE_TEST_JOBS     compile jobs (default: the CPUs)
#   GPU_CHECK_CMAKE_ARGS configure options of the build (default -DCMAKE_CXX_FLAGS_RELEASE=-O1:
#                        a check, not a benchmark, so the quicker optimisation level)
# Writes build/bundle-check/ (the build, the loop's run and logs); prints a summary.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$here"
start=$SECONDS
say() { printf 'bundle-test [%4ds] %s\n' $((SECONDS - start)) "$*"; }
fail() { echo "bundle-test: FAIL: $*" >&2; exit 1; }

scripts/install-deps.sh deps/apt-images.txt >/dev/null
export CONTAINERS_CONF=${CONTAINERS_CONF:-$here/docker/podman/containers.conf}
base=${BASE_IMAGE:-debian:bookworm-slim}
image=chessrl-bundle-check:latest
work=build/bundle-check
mkdir -p "$work"

# The bundle: made again when the script that makes it changed.
if [ ! -f build/gpu-bundle/toolchain.cmake ] ||
   [ scripts/gpu-bundle.sh -nt build/gpu-bundle/MANIFEST.txt ]; then
  say "making the bundle (scripts/gpu-bundle.sh)"
  scripts/gpu-bundle.sh --no-tar
fi
prepare=0
[ "${1:-}" = --prepare ] && prepare=1
say "bundle: $(wc -l <build/gpu-bundle/MANIFEST.txt) packages, $(du -sm build/gpu-bundle | cut -f1) MiB"

say "base image $base"
BASE_IMAGE=$base scripts/images.sh --base-only >"$work/base-image.log" 2>&1 ||
  { cat "$work/base-image.log"; fail "no base image"; }
say "the bundle-check image (Debian 12 + g++, CMake, ninja, LibTorch; log $work/image.log)"
podman build --network host --build-arg "BASE_IMAGE=$base" -f docker/Dockerfile.bundle-check \
  -t "$image" docker >"$work/image.log" 2>&1 || { tail -20 "$work/image.log"; fail "image build"; }

if [ "$prepare" = 1 ]; then say "prepared (the bundle and $image)"; exit 0; fi

jobs=${BUNDLE_TEST_JOBS:-$(nproc)}
cmake_args=${GPU_CHECK_CMAKE_ARGS:--DCMAKE_CXX_FLAGS_RELEASE=-O1}
idle=""
[ "${BUNDLE_TEST_IDLE:-0}" = 1 ] && idle="chrt --idle 0"
# --network none: nothing is fetched; the loop talks over the container's loopback.
# The source is mounted at /src; everything is written under /src/build/bundle-check.
say "building and running in the container (log $work/container.log)"
if ! podman run --rm --network none -v "$here:/src" -w /src \
    -e JOBS="$jobs" -e IDLE="$idle" -e OUT=/src/$work/build-step -e GPU_CHECK_CMAKE_ARGS="$cmake_args" "$image" \
    bash -euo pipefail -c '
      bin=build/bundle-check/build
      # 1. The build, against the bundle alone (gpu-check.sh configures it the same
      #    way on a GPU machine), and LibTorch as a wheel lays it out.
      cmake -DOUT=build/bundle-check/wheel -DTORCH_DIR=/usr/lib/x86_64-linux-gnu/cmake/Torch \
            -DPROTOBUF_INCLUDE=build/gpu-bundle/usr/include -P tests/cmake/fake_torch_wheel.cmake
      export TORCH_CMAKE=/src/build/bundle-check/wheel/torch/share/cmake
      # A build configured against another LibTorch (an earlier run) is made afresh.
      if [ -f "$bin/CMakeCache.txt" ] && ! grep -q "^Torch_DIR:PATH=$TORCH_CMAKE/Torch$" "$bin/CMakeCache.txt"; then
        rm -rf "$bin"
      fi
      $IDLE scripts/gpu-check.sh loop --cpu --build-only --build-dir "$bin" --jobs "$JOBS"
      grep -q "^Torch_DIR:PATH=$TORCH_CMAKE/Torch$" "$bin/CMakeCache.txt" ||
        { echo "the build did not take LibTorch from the stand-in wheel"; exit 1; }
      grep "Protocol Buffers" "$bin/chessrl-configure.txt"
      # 2. Every program resolves every library; the bundle holds the ones it has.
      #    What the globs match that is not a program (a folder, a data file) is
      #    skipped, said and counted; no program at all fails.
      bundle_lib=/src/build/gpu-bundle/usr/lib/x86_64-linux-gnu
      checked=0 skipped=()
      for p in $bin/tools/chessrl/chessrl $bin/services/*/chessrl-*; do
        if ! { [ -x "$p" ] && [ -f "$p" ]; }; then skipped+=("$p"); continue; fi
        checked=$((checked + 1))
        ldd "$p" >/tmp/ldd.txt
        if grep -q "not found" /tmp/ldd.txt; then
          echo "$p: unresolved:"; grep "not found" /tmp/ldd.txt; exit 1
        fi
        while read -r name _ path _; do
          if [ -e "$bundle_lib/$name" ] && [ "$path" != "$bundle_lib/$name" ]; then
            echo "$p loads $name from $path, not from the bundle"; exit 1
          fi
        done < <(grep "=> /" /tmp/ldd.txt)
        echo "ldd: $(basename "$p"): $(grep -c "$bundle_lib" /tmp/ldd.txt) libraries from the bundle, none unresolved"
      done
      echo "ldd: $checked programs checked, ${#skipped[@]} skipped${skipped:+ (not an executable file: ${skipped[*]})}"
      [ "$checked" -ge 5 ] ||
        { echo "ldd: $checked programs, expected chessrl, replay, self-play, trainer, evaluator"; exit 1; }
      # 3. The loop, and its table checked.
      python3 tests/tools/gpu_check_test.py scripts/gpu-check.sh loop "$bin"
    ' >"$work/container.log" 2>&1; then
  tail -40 "$work/container.log"
  fail "the build or the loop in the container (whole log: $work/container.log)"
fi
grep '^ldd:' "$work/container.log"
echo
cat "$work/build/gpu-check-loop.md" 2>/dev/null || tail -20 "$work/container.log"
say "passed"
