#!/usr/bin/env bash
# make deploy-test: the chart run for real (tests/deploy/README.md).
#   1. podman (with netavark and aardvark-dns), helm and the test's npm packages;
#   2. the images: scripts/images.sh (reuses every cached layer when nothing changed)
#      and the test's Redis image (tests/deploy/redis.Dockerfile);
#   3. node tests/deploy/scenario.js: render, install, scale, faults, uninstall,
#      reinstall; a summary table and the figures at the end;
#   4. node tests/deploy/shards.js: two Redis shards, each killed or hung while
#      self-play pushes (0 acknowledged games lost). Exit 1 on any failure.
# --main or --shards first: that scenario alone. Other arguments go to scenario.js
# (--keep leaves the containers running; --data DIR).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$here"
start=$(date +%s)
say() { echo "deploy-test: $* ($(( $(date +%s) - start )) s)"; }

scripts/install-deps.sh deps/apt-images.txt
scripts/install-deps.sh deps/apt-deploy.txt
scripts/install-chart-tools.sh
say "tools ready"
scripts/images.sh
say "images ready"
export CONTAINERS_CONF=${CONTAINERS_CONF:-$here/docker/podman/containers.conf}
podman build --quiet --network host --file tests/deploy/redis.Dockerfile \
  --tag localhost/chessrl-test-redis:7.0-bookworm tests/deploy >/dev/null
say "test Redis image ready"
unset CONTAINERS_CONF   # scenario.js adds the netavark backend to the project's settings
case "${1:-}" in
  --shards) shift; exec node tests/deploy/shards.js "$@" ;;
  --main) shift; exec node tests/deploy/scenario.js "$@" ;;
esac
node tests/deploy/scenario.js "$@"
say "main scenario passed"
node tests/deploy/shards.js
say "shards scenario passed"
