#!/usr/bin/env bash
# Installs every Debian package listed in a list file that is not installed yet.
#   scripts/install-deps.sh [LIST]   LIST defaults to deps/apt.txt (the build and tests);
#                                    deps/apt-images.txt is what `make images` needs.
# Safe to run again: with nothing missing it touches nothing and takes a second. Two
# of them at once (.ci/run installs the browser in the background while the build
# installs its packages) take turns: apt runs under a lock file, one at a time.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
list=${1:-"$here/deps/apt.txt"}
[ -f "$list" ] || { echo "install-deps: no such list: $list" >&2; exit 1; }
name=$(basename "$(dirname "$list")")/$(basename "$list")

mapfile -t wanted < <(sed -e 's/#.*//' -e 's/[[:space:]]//g' "$list" | grep -v '^$')
missing=()
for pkg in "${wanted[@]}"; do
  status=$(dpkg-query -W -f='${db:Status-Status}' "$pkg" 2>/dev/null || true)
  [ "$status" = "installed" ] || missing+=("$pkg")
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#wanted[@]} packages from $name are installed"
  exit 0
fi

sudo=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "install-deps: need root (or sudo) to install: ${missing[*]}" >&2; exit 1; }
  sudo="sudo"
fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
lock=${TMPDIR:-/tmp}/chessrl-install-deps.lock
exec 9>>"$lock"
flock -w 1800 9 || { echo "install-deps: another install held $lock for 30 minutes" >&2; exit 1; }
$sudo apt-get update -q
$sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
