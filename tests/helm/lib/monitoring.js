'use strict';
// The monitoring artefacts of the chart and what their checks share: the dashboard
// (helm/dashboards/chess-rl.json), the rule file (helm/rules/chess-rl.yaml), the metric
// names the project exports (read from the C++ sources), the metrics the dashboard uses
// that nothing exports yet, PromQL helpers and promtool.
const { execFile } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const tools = require('./tools');

const yaml = tools.requireTool('js-yaml');

const DASHBOARD_FILE = path.join(tools.chartDir, 'dashboards', 'chess-rl.json');
const RULES_FILE = path.join(tools.chartDir, 'rules', 'chess-rl.yaml');
const dashboard = () => JSON.parse(fs.readFileSync(DASHBOARD_FILE, 'utf8'));
const ruleFile = () => yaml.load(fs.readFileSync(RULES_FILE, 'utf8'), { schema: yaml.CORE_SCHEMA });
const rules = () => ruleFile().groups.flatMap((g) => g.rules);
const recordedNames = () => new Set(rules().filter((r) => r.record).map((r) => r.record));

// Metrics the dashboard or the rules need that no chess-rl process exports yet (a panel
// shows "No data", an alert stays silent, until one does), as name: 'type{labels},
// component: what it means'. Remove an entry once the metric exists in the sources:
// monitoring.test.js fails while an exported metric is still listed here.
const PENDING_METRICS = {
};
// Metrics of kube-state-metrics (part of kube-prometheus-stack), about Kubernetes objects:
// they carry the object's namespace and name, not the release label.
const KUBE_STATE_METRICS = new Set([
  'kube_horizontalpodautoscaler_status_desired_replicas', 'kube_deployment_status_replicas_available',
]);
// Metrics from elsewhere: Prometheus's own, NVIDIA's DCGM exporter, kube-state-metrics.
const EXTERNAL_METRICS = new Set(['up', 'DCGM_FI_DEV_GPU_UTIL', ...KUBE_STATE_METRICS]);

// Every "chessrl_..." string literal of the C++ sources (libs/, services/, tools/): the
// names the registry creates. Read once per process.
let exported;
function exportedMetrics() {
  if (exported) return exported;
  exported = new Set();
  const walk = (dir) => {
    for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
      const p = path.join(dir, e.name);
      if (e.isDirectory()) walk(p);
      else if (/\.(cpp|cc|h|hpp)$/.test(e.name)) {
        for (const m of fs.readFileSync(p, 'utf8').matchAll(/"(chessrl_[a-z0-9_]+)"/g)) exported.add(m[1]);
      }
    }
  };
  for (const d of ['libs', 'services', 'tools']) {
    const dir = path.join(tools.repoRoot, d);
    if (fs.existsSync(dir)) walk(dir);
  }
  return exported;
}

// Where a metric name comes from: 'exported', 'recorded', 'pending', 'external' or null.
// A histogram's _bucket, _sum and _count series belong to its family.
function metricOrigin(name, recorded = recordedNames()) {
  const family = name.replace(/_(bucket|sum|count)$/, '');
  const has = (set) => set.has(name) || set.has(family);
  if (has(exportedMetrics())) return 'exported';
  if (recorded.has(name)) return 'recorded';
  if (Object.prototype.hasOwnProperty.call(PENDING_METRICS, name) ||
      Object.prototype.hasOwnProperty.call(PENDING_METRICS, family)) return 'pending';
  if (EXTERNAL_METRICS.has(name)) return 'external';
  return null;
}

const PROMQL_WORDS = new Set(['by', 'without', 'on', 'ignoring', 'group_left', 'group_right', 'and', 'or',
  'unless', 'bool', 'offset', 'atan2', 'inf', 'nan', 'Inf', 'NaN']);
// The metric names an expression selects: identifiers that are not functions, keywords,
// label names (in {...} or by/on/... lists), durations or numbers.
function metricNames(expr) {
  const stripped = expr
    .replace(/"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|`[^`]*`/g, '""')
    .replace(/\{[^}]*\}/g, ' ')
    .replace(/\[[^\]]*\]/g, ' ')
    .replace(/\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, ' ');
  const names = new Set();
  for (const m of stripped.matchAll(/(?<![\w.])([a-zA-Z_:][a-zA-Z0-9_:]*)(\s*\()?/g)) {
    if (m[2] || PROMQL_WORDS.has(m[1])) continue;
    names.add(m[1]);
  }
  return [...names];
}

// The selectors of chess-rl's metrics (chessrl_*) and of `up` in an expression:
// [{name, matchers}] (matchers: the text between the braces, "" without braces).
function selectors(expr) {
  const out = [];
  for (const m of expr.matchAll(/(?<![\w:"])(chessrl_[a-zA-Z0-9_]*|up)(?![\w:(])\s*(?:\{([^}]*)\})?/g)) {
    out.push({ name: m[1], matchers: m[2] || '' });
  }
  return out;
}

// Grafana's variables replaced by values Prometheus accepts, for promtool.
function substitute(expr) {
  return expr
    .replace(/\$__rate_interval|\$\{__rate_interval\}/g, '5m')
    .replace(/\$__interval|\$\{__interval\}/g, '1m')
    .replace(/\$__range|\$\{__range\}/g, '20m')
    .replace(/\$\{?(namespace|release)\}?/g, '.*');
}

// Every query of the dashboard: [{panel, title, target, expr}].
function dashboardQueries(d = dashboard()) {
  const out = [];
  const walk = (panels) => {
    for (const p of panels || []) {
      if (p.type === 'row') { walk(p.panels); continue; }
      for (const t of p.targets || []) out.push({ panel: p, title: p.title, target: t, expr: t.expr });
    }
  };
  walk(d.panels);
  return out;
}

// ---------------------------------------------------------------- promtool
class MissingPromtool extends tools.MissingToolError {}
let promtoolPath;
function promtool() {
  if (promtoolPath) return promtoolPath;
  for (const dir of (process.env.PATH || '').split(path.delimiter)) {
    const p = path.join(dir || '.', 'promtool');
    try { fs.accessSync(p, fs.constants.X_OK); promtoolPath = p; return p; } catch { /* next */ }
  }
  throw new MissingPromtool('promtool not found in PATH: apt-get install prometheus (deps/apt.txt; scripts/install-deps.sh installs it)');
}
// Runs promtool; resolves {code, stdout, stderr}.
function runPromtool(args, opts = {}) {
  const bin = promtool();
  return new Promise((resolve) => {
    execFile(bin, args, { maxBuffer: 32 << 20, ...opts }, (err, stdout, stderr) => {
      resolve({ code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, stdout, stderr });
    });
  });
}
// A private temporary directory, removed when the process exits.
function tempDir(prefix) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  process.on('exit', () => fs.rmSync(dir, { recursive: true, force: true }));
  return dir;
}

module.exports = {
  yaml, DASHBOARD_FILE, RULES_FILE, dashboard, ruleFile, rules, recordedNames,
  PENDING_METRICS, KUBE_STATE_METRICS, EXTERNAL_METRICS, exportedMetrics, metricOrigin, metricNames, selectors,
  substitute, dashboardQueries, promtool, runPromtool, tempDir,
};
