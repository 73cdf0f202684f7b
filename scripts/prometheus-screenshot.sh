#!/usr/bin/env bash
# A screenshot of Prometheus's graph page for a `chessrl local` run (make run): games per
# hour (the recording rule) above the trainer's losses by head, over the last RANGE.
#   scripts/prometheus-screenshot.sh [RUN_DIR] [OUT.png] [RANGE]
# RUN_DIR defaults to run (make run's), OUT to docs/images/prometheus-local.png, RANGE 15m.
# Needs a running `chessrl local` (its run/local.json names the Prometheus) and Debian's
# chromium (installed here when missing: about 2 minutes).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
run_dir=${1:-run}
out=${2:-$here/docs/images/prometheus-local.png}
range=${3:-15m}
state="$run_dir/local.json"
[ -f "$state" ] || { echo "prometheus-screenshot: no $state: is chessrl local running there?" >&2; exit 1; }
url=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1])).get("prometheus",""))' "$state")
[ -n "$url" ] || { echo "prometheus-screenshot: $state names no Prometheus (--no-prometheus?)" >&2; exit 1; }
command -v chromium >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends chromium >/dev/null
enc() { python3 -c 'import sys,urllib.parse; print(urllib.parse.quote(sys.argv[1], safe=""))' "$1"; }
page="$url/graph?g0.expr=$(enc 'chessrl:selfplay_games_per_hour:rate5m')&g0.tab=0&g0.range_input=$range"
page+="&g1.expr=$(enc 'max by (head) (chessrl_trainer_loss)')&g1.tab=0&g1.range_input=$range"
mkdir -p "$(dirname "$out")"
profile=$(mktemp -d)
trap 'rm -rf "$profile"' EXIT
chromium --headless --no-sandbox --disable-gpu --disable-background-networking --no-first-run \
  --disable-component-update --disable-sync --user-data-dir="$profile" --hide-scrollbars \
  --window-size=1400,1300 --virtual-time-budget=10000 --screenshot="$out" "$page" 2>/dev/null
echo "prometheus-screenshot: $out ($page)"
