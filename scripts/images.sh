#!/usr/bin/env bash
# Builds the container images from docker/Dockerfile (make images): the targets
# chessrl-replay and chessrl, tagged NAME:VERSION and NAME:latest, with docker when
# its engine answers (`docker info`), otherwise podman (installed through
# scripts/install-deps.sh deps/apt-images.txt). Prints each image's size and how
# long each build took. See docker/README.md.
# The binaries are compiled once, in one of two places:
#   prebuilt  this host's build/dev (brought up to date here, then stripped into
#             build/images/bin), when the host is the base image's Debian release
#             (bookworm: the same libraries) and build/dev targets x86-64-v3 (the
#             default on a CPU that has it): the tests and the images share one build
#   compiled  the Dockerfile's build stage (ccache in a cache mount between runs)
# `scripts/images.sh --base-only` (make base-image) stops after the base image:
# CI makes it while the tests build.
# Environment:
#   IMAGES      targets to build (default "chessrl-replay chessrl"; "chessrl-cuda"
#               builds docker/Dockerfile.cuda, which needs a CUDA-capable builder)
#   ENGINE      docker or podman (default: docker if `docker info` works, else podman)
#   VERSION     image version and tag (default: the project version in CMakeLists.txt)
#   BASE_IMAGE  base of the CPU images (default debian:bookworm-slim; made locally
#               with debootstrap by scripts/debian-base.sh when it cannot be pulled)
#   IMAGES_BINARIES  prebuilt, compiled or auto (the default: prebuilt when possible)
#   ARCH        -march of a compiled build (default x86-64-v3; x86-64-v2 for older CPUs)
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$here"

images=${IMAGES:-chessrl-replay chessrl}
version=${VERSION:-$(sed -n 's/^project(chessrl VERSION \([0-9.]*\).*/\1/p' CMakeLists.txt)}
revision=$(git rev-parse HEAD 2>/dev/null || echo unknown)
base=${BASE_IMAGE:-debian:bookworm-slim}
build_args=(--build-arg "BASE_IMAGE=$base" --build-arg "VERSION=$version"
            --build-arg "REVISION=$revision")
oci=org.opencontainers.image
labels=(--label "$oci.version=$version" --label "$oci.revision=$revision")
source=$(git remote get-url origin 2>/dev/null || true)
case "$source" in   # a URL (not a local path), otherwise the Dockerfile's default
  *://*|git@*) ;;
  *) source=$(sed -n 's/^ARG SOURCE=//p' docker/Dockerfile | head -1) ;;
esac
build_args+=(--build-arg "SOURCE=$source")
labels+=(--label "$oci.source=$source")
if [ -n "$(git status --porcelain --untracked-files=no 2>/dev/null)" ]; then
  echo "images: note: the working tree has uncommitted changes; the revision label says $revision"
fi

engine=${ENGINE:-}
if [ -z "$engine" ]; then
  if command -v docker >/dev/null && docker info >/dev/null 2>&1; then
    engine=docker
  else
    scripts/install-deps.sh deps/apt-images.txt
    engine=podman
  fi
fi
if [ "$engine" = docker ]; then
  export DOCKER_BUILDKIT=1   # RUN --mount=type=cache
else
  # runc and lowered default ulimits on this kind of host (docker/README.md).
  export CONTAINERS_CONF=${CONTAINERS_CONF:-$here/docker/podman/containers.conf}
fi
echo "images: $engine, version $version, revision $revision"

# The base image: present, pulled, or (debian:bookworm-slim only) made with debootstrap.
if ! "$engine" image inspect "$base" >/dev/null 2>&1; then
  echo "images: $base is not here; trying to pull it (30 s at most)"
  if ! timeout 30 "$engine" pull "$base" >/dev/null 2>&1; then
    [ "$base" = debian:bookworm-slim ] || { echo "images: cannot pull $base" >&2; exit 1; }
    echo "images: pull failed; making $base with debootstrap"
    scripts/debian-base.sh "$engine" "$base"
  fi
fi

if [ "${1:-}" = --base-only ]; then
  echo "images: base image $base is here"
  exit 0
fi
mkdir -p build/images

# Where the binaries come from.
binaries=${IMAGES_BINARIES:-auto}
arch=${ARCH:-x86-64-v3}
host_release=$(. /etc/os-release 2>/dev/null && echo "${ID:-}-${VERSION_CODENAME:-}")
dev_arch=$(sed -n 's/^CHESSRL_ARCH:STRING=//p' build/dev/CMakeCache.txt 2>/dev/null || true)
if [ "$binaries" = auto ]; then
  binaries=compiled
  if [ "$base" = debian:bookworm-slim ] && [ "$host_release" = debian-bookworm ] &&
     [ "$dev_arch" = "$arch" ] && [[ "$images" != *chessrl-cuda* ]]; then
    binaries=prebuilt
  fi
fi
rm -rf build/images/bin
case "$binaries" in
  prebuilt)
    echo "images: binaries from build/dev ($host_release, -march=$dev_arch), brought up to date"
    cmake --build --preset dev --target chessrl chessrl-selfplay chessrl-trainer \
      chessrl-evaluator chessrl-replay chessrl-web
    mkdir -p build/images/bin
    install -m 0755 -s build/dev/tools/chessrl/chessrl \
      build/dev/services/selfplay/chessrl-selfplay build/dev/services/trainer/chessrl-trainer \
      build/dev/services/evaluator/chessrl-evaluator build/dev/services/replay/chessrl-replay \
      build/dev/services/web/chessrl-web build/images/bin/ ;;
  compiled)
    echo "images: binaries compiled in the image's build stage (-march=$arch)" ;;
  *) echo "images: IMAGES_BINARIES=$binaries is not prebuilt, compiled or auto" >&2; exit 2 ;;
esac
build_args+=(--build-arg "BINARIES=$binaries" --build-arg "ARCH=$arch")
empty=$(mktemp -d)   # the build context of the relabelling step
trap 'rmdir "$empty"' EXIT
summary=()
for image in $images; do
  case "$image" in
    chessrl-cuda) file=docker/Dockerfile.cuda; target=() ;;
    *)            file=docker/Dockerfile; target=(--target "$image") ;;
  esac
  log=build/images/$image.log
  echo "images: building $image:$version from $file (log: $log)"
  start=$(date +%s)
  if [ "$engine" = docker ]; then
    "$engine" build -f "$file" "${target[@]}" "${build_args[@]}" "${labels[@]}" \
      -t "$image:$version" -t "$image:latest" . 2>&1 | tee "$log"
  else
    # --network host: the build steps' apt-get reaches the mirror as the host does,
    # whatever state podman's container networks are in (docker/README.md); a
    # build needs no network of its own.
    "$engine" build --network host -f "$file" "${target[@]}" "${build_args[@]}" \
      -t "$image:$version" -t "$image:latest" . 2>&1 | tee "$log"
    # buildah 1.28 reuses a cached LABEL step when only a build argument changed (the
    # image would keep an older revision), and applies --label to the Dockerfile's
    # last stage rather than the --target one: set the labels with a one-line build.
    echo "FROM $image:$version" | "$engine" build -q "${labels[@]}" \
      -t "$image:$version" -t "$image:latest" -f - "$empty" >/dev/null
  fi
  seconds=$(( $(date +%s) - start ))
  bytes=$("$engine" image inspect --format '{{.Size}}' "$image:$version")
  summary+=("$(awk -v n="$image:$version" -v b="$bytes" -v s="$seconds" \
    'BEGIN { printf "%-24s %8.1f MB %6d:%02d", n, b / 1e6, s / 60, s % 60 }')")
done

echo
printf '%-24s %11s %9s\n' image size 'build m:s'
printf '%s\n' "${summary[@]}"
