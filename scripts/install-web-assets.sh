#!/usr/bin/env bash
# Installs the pinned npm packages of the game viewer (chessrl-web):
#   services/web   the page's libraries (cm-chessboard, chess.js, uPlot), which the build
#                  embeds into the chessrl-web binary (services/web/CMakeLists.txt)
#   tests/web      puppeteer-core, which drives Debian's chromium in the browser test
# npm ci runs only where node_modules is missing or package.json/the lock changed, so a
# second run takes a fraction of a second. --ignore-scripts: no package runs code at install
# (puppeteer-core downloads no browser; the test uses the system's chromium).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

die() { echo "install-web-assets: $*" >&2; exit 1; }
command -v node >/dev/null || die "node (>= 20) not found; install Node.js 20 and npm"
command -v npm  >/dev/null || die "npm not found; install npm (it comes with Node.js 20)"
node_major=$(node --version); node_major=${node_major#v}; node_major=${node_major%%.*}
[ "$node_major" -ge 20 ] || die "node $(node --version) is too old; need node >= 20"

for dir in services/web tests/web; do
  pkg_dir="$here/$dir"
  [ -f "$pkg_dir/package-lock.json" ] || die "missing $dir/package-lock.json"
  stamp="$pkg_dir/node_modules/.chessrl-npm-ci.stamp"
  want=$(cat "$pkg_dir/package.json" "$pkg_dir/package-lock.json" | sha256sum | cut -d' ' -f1)-node$node_major
  if [ ! -d "$pkg_dir/node_modules" ] || [ "$want" != "$(cat "$stamp" 2>/dev/null || true)" ]; then
    echo "install-web-assets: npm ci in $dir"
    start=$(date +%s)
    (cd "$pkg_dir" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error)
    echo "$want" >"$stamp"
    echo "install-web-assets: npm ci in $dir took $(( $(date +%s) - start )) s"
  fi
done
