'use strict';
// Renders the chart with the pinned helm and answers questions about the result.
//   const m = await render(['--set', 'trainer.replicas=3']);   // array of objects
//   get(m, 'StatefulSet', `${F}-trainer`)                        // throws, listing what exists
// Renders are cached per argument list within a test file (each file is its own process).
const { execFile } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');
const assert = require('node:assert/strict');
const tools = require('./tools');

tools.checkHelm();
const yaml = tools.requireTool('js-yaml');

const RELEASE = 'chess-rl';
const F = 'chess-rl'; // fullname of release chess-rl (the release name contains the chart name)
// The oldest Kubernetes the chart supports (Chart.yaml kubeVersion) and the newest that the
// pinned kubernetes-models (4.5.1) has schemas for.
const KUBE_VERSIONS = ['1.28.0', '1.33.0'];
const KUBE_VERSION = KUBE_VERSIONS[KUBE_VERSIONS.length - 1];
const MONITORING_API = 'monitoring.coreos.com/v1';
const KEDA_API = 'keda.sh/v1alpha1';
const COMPONENTS = ['redis', 'replay', 'selfplay', 'trainer', 'evaluator'];
// Components running chess-rl binaries with a ConfigMap F-<component> (config.yaml).
const CHESSRL_COMPONENTS = ['replay', 'selfplay', 'trainer', 'evaluator'];

const chartFile = (...p) => path.join(tools.chartDir, ...p);

// The values files the chart ships, each as helm arguments. The named ones must exist; any
// further helm/values-*.yaml or helm/ci/*.yaml is picked up too. A file that needs an API
// the cluster serves besides Kubernetes's own (KEDA's) says so in a comment line
// `# api-versions: keda.sh/v1alpha1[,...]`; its arguments then carry `--api-versions` for
// each, as `helm template` takes them (helm lint cannot: apiVersionsIn(), lint.test.js).
function valuesSets() {
  const sets = { defaults: [] };
  const named = {
    gpu: 'values-gpu.yaml',
    spot: 'values-spot.yaml',
    'external-redis': 'ci/values-external-redis.yaml',
    tiny: 'ci/values-tiny.yaml',
  };
  const argsOf = (rel) => {
    const file = chartFile(rel);
    const text = fs.existsSync(file) ? fs.readFileSync(file, 'utf8') : '';
    const m = /^# api-versions: (\S+)/m.exec(text);
    const apis = m ? m[1].split(',').filter(Boolean) : [];
    return ['-f', file, ...apis.flatMap((v) => ['--api-versions', v])];
  };
  for (const [name, file] of Object.entries(named)) sets[name] = argsOf(file);
  const extra = (dir, re) => (fs.existsSync(chartFile(dir)) ? fs.readdirSync(chartFile(dir)) : [])
    .filter((f) => re.test(f)).map((f) => path.posix.join(dir, f));
  for (const file of [...extra('.', /^values-.+\.ya?ml$/), ...extra('ci', /\.ya?ml$/)]) {
    const rel = file.replace(/^\.\//, '');
    if (!Object.values(named).includes(rel)) sets[rel] = argsOf(rel);
  }
  return sets;
}
// The API versions a values set's arguments declare (--api-versions X), and the arguments
// without them: {apiVersions: [...], rest: [...]}.
function apiVersionsIn(args) {
  const apiVersions = [];
  const rest = [];
  for (let i = 0; i < args.length; i++) {
    if (args[i] === '--api-versions' && i + 1 < args.length) apiVersions.push(args[++i]);
    else rest.push(args[i]);
  }
  return { apiVersions, rest };
}
// "defaults" or the values file's path in the repository ("helm/values-gpu.yaml").
function setLabel(name) {
  const args = valuesSets()[name];
  return !args || !args.length ? 'the default values'
    : path.relative(tools.repoRoot, args[1]);
}
function missingValuesFiles() {
  return Object.values(valuesSets()).filter((a) => a.length && !fs.existsSync(a[1])).map((a) => a[1]);
}

// Runs helm; resolves {code, stdout, stderr, args} (never rejects on a non-zero exit).
// At most a few helm processes at a time (one per core, plus one).
const maxRunning = require('node:os').availableParallelism() + 1;
let running = 0;
const waiting = [];
async function helm(args) {
  if (running >= maxRunning) await new Promise((go) => waiting.push(go));
  running++;
  try {
    return await new Promise((resolve) => {
      execFile(tools.helmBin, args, { maxBuffer: 64 << 20, env: helmEnv() }, (err, stdout, stderr) => {
        resolve({ code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, stdout, stderr, args });
      });
    });
  } finally {
    running--;
    if (waiting.length) waiting.shift()();
  }
}
// Keep helm away from the user's repositories/plugins/cache: a private, empty home.
let home;
function helmEnv() {
  if (!home) home = fs.mkdtempSync(path.join(require('node:os').tmpdir(), 'chessrl-helm-'));
  return {
    PATH: process.env.PATH, HOME: home,
    HELM_CACHE_HOME: path.join(home, 'cache'), HELM_CONFIG_HOME: path.join(home, 'config'),
    HELM_DATA_HOME: path.join(home, 'data'), KUBECONFIG: path.join(home, 'no-kubeconfig'),
  };
}
process.on('exit', () => { if (home) fs.rmSync(home, { recursive: true, force: true }); });

// Parses `helm template` output into objects; each carries a non-enumerable __source
// (the template it came from, "templates/x.yaml").
function parseManifests(text) {
  const objects = [];
  for (const chunk of text.split(/^---[ \t]*$/m)) {
    const m = /^# Source: [^/\n]+\/(.+)$/m.exec(chunk);
    let doc;
    try {
      doc = yaml.load(chunk, { schema: yaml.CORE_SCHEMA });
    } catch (err) {
      throw new Error(`rendered YAML of ${m ? m[1] : '?'} does not parse: ${err.message}`);
    }
    if (doc === null || doc === undefined) continue;
    Object.defineProperty(doc, '__source', { value: m ? m[1] : '?', enumerable: false });
    objects.push(doc);
  }
  return objects;
}

const cache = new Map();
// helm template RELEASE <chart> ARGS; rejects with helm's stderr when it fails.
// opts: release, kubeVersion, apiVersions (array), namespace.
function render(args = [], opts = {}) {
  const release = opts.release || RELEASE;
  const full = ['template', release, tools.chartDir,
    '--namespace', opts.namespace || 'chess-rl',
    '--kube-version', opts.kubeVersion || KUBE_VERSION,
    ...(opts.apiVersions || []).flatMap((v) => ['--api-versions', v]),
    ...args];
  const key = JSON.stringify(full);
  if (!cache.has(key)) {
    cache.set(key, helm(full).then((r) => {
      if (r.code !== 0) {
        throw new Error(`helm ${full.join(' ')} failed (exit ${r.code}):\n${r.stderr}`);
      }
      return parseManifests(r.stdout);
    }));
  }
  return cache.get(key);
}

// Starts renders in parallel (call it in before()); a failing one fails only the tests
// that await it: tests call render() again and get the cached result or error.
const prefetch = (...calls) => Promise.allSettled(calls.map(([args, opts]) => render(args, opts)));

const nameOf = (o) => o && o.metadata && o.metadata.name;
const find = (objs, kind, name) => objs.find((o) => o.kind === kind && nameOf(o) === name);
const ofKind = (objs, ...kinds) => objs.filter((o) => kinds.includes(o.kind));
const inventory = (objs) => objs.map((o) => `${o.kind}/${nameOf(o)}`).join(', ');
function get(objs, kind, name) {
  const o = find(objs, kind, name);
  assert.ok(o, `no ${kind} ${name} in the rendered chart; it has: ${inventory(objs)}`);
  return o;
}

const WORKLOAD_KINDS = ['Deployment', 'StatefulSet', 'DaemonSet', 'Job', 'CronJob', 'ReplicaSet', 'Pod'];
// Every pod template: [{owner, podSpec, podMeta, longRunning}].
function podTemplates(objs) {
  const out = [];
  for (const o of objs) {
    if (!WORKLOAD_KINDS.includes(o.kind)) continue;
    let tpl;
    if (o.kind === 'Pod') tpl = { metadata: o.metadata, spec: o.spec };
    else if (o.kind === 'CronJob') tpl = o.spec && o.spec.jobTemplate && o.spec.jobTemplate.spec.template;
    else tpl = o.spec && o.spec.template;
    out.push({
      owner: o,
      what: `${o.kind} ${nameOf(o)}`,
      podSpec: (tpl && tpl.spec) || {},
      podMeta: (tpl && tpl.metadata) || {},
      longRunning: ['Deployment', 'StatefulSet', 'DaemonSet', 'ReplicaSet'].includes(o.kind),
    });
  }
  return out;
}
// Every container of a pod spec with its kind: [{c, init: bool}].
function containersOf(podSpec) {
  return [
    ...(podSpec.initContainers || []).map((c) => ({ c, init: true })),
    ...(podSpec.containers || []).map((c) => ({ c, init: false })),
  ];
}
// The main container of a workload: the one named like the component, else the first.
function mainContainer(workload, component) {
  const spec = workload.spec.template.spec;
  return spec.containers.find((c) => c.name === component) || spec.containers[0];
}
function envOf(container) {
  return Object.fromEntries((container.env || []).map((e) => [e.name, e]));
}

// The command line of a container: command + args.
const argv = (c) => [...(c.command || []), ...(c.args || [])];
// Values of a long option in a container's command line: --name value and --name=value.
function flagValues(c, name) {
  const a = argv(c);
  const out = [];
  for (let i = 0; i < a.length; i++) {
    if (a[i] === `--${name}` && i + 1 < a.length) out.push(String(a[i + 1]));
    else if (String(a[i]).startsWith(`--${name}=`)) out.push(String(a[i]).slice(name.length + 3));
  }
  return out;
}
// The value a chess-rl binary sees for an option: its flag, else CHESSRL_<NAME> env (a plain
// value), else the key in its config.yaml (the parsed ConfigMap, optional). undefined: unset.
function optionValue(c, name, config) {
  const flag = flagValues(c, name);
  if (flag.length) return flag[flag.length - 1];
  const env = envOf(c)[`CHESSRL_${name.toUpperCase().replace(/-/g, '_')}`];
  if (env && env.value !== undefined) return String(env.value);
  if (config && config[name] !== undefined) return String(config[name]);
  return undefined;
}
// A component's config.yaml (ConfigMap F-<component>), parsed.
function configOf(objs, component, fullname = F) {
  const cm = get(objs, 'ConfigMap', `${fullname}-${component}`);
  assert.ok(cm.data && typeof cm.data['config.yaml'] === 'string',
    `ConfigMap ${fullname}-${component} has no data["config.yaml"]`);
  return yaml.load(cm.data['config.yaml'], { schema: yaml.CORE_SCHEMA }) || {};
}
// The pods of a component: the workload F-<component> (Deployment or StatefulSet).
function workloadOf(objs, component, fullname = F) {
  const name = `${fullname}-${component}`;
  const w = objs.find((o) => ['Deployment', 'StatefulSet'].includes(o.kind) && nameOf(o) === name);
  assert.ok(w, `no Deployment or StatefulSet ${name}; the chart rendered: ${inventory(objs)}`);
  return w;
}
// A container port by name or number ("metrics", 9101) in a pod spec, or undefined.
function containerPort(podSpec, port) {
  for (const c of podSpec.containers || []) {
    for (const p of c.ports || []) {
      if (p.name === port || p.containerPort === port) return p;
    }
  }
  return undefined;
}

// Does a LabelSelector (matchLabels + matchExpressions) select these labels?
function selects(selector, labels = {}) {
  if (!selector) return false;
  const ml = selector.matchLabels || {};
  const me = selector.matchExpressions || [];
  if (!Object.keys(ml).length && !me.length) return true; // {} selects everything
  for (const [k, v] of Object.entries(ml)) if (labels[k] !== v) return false;
  for (const { key, operator, values = [] } of me) {
    const has = Object.prototype.hasOwnProperty.call(labels, key);
    if (operator === 'In' && !(has && values.includes(labels[key]))) return false;
    if (operator === 'NotIn' && has && values.includes(labels[key])) return false;
    if (operator === 'Exists' && !has) return false;
    if (operator === 'DoesNotExist' && has) return false;
  }
  return true;
}
// A Service-style selector (plain map).
const selectsMap = (sel, labels) => !!sel && Object.keys(sel).length > 0 &&
  Object.entries(sel).every(([k, v]) => labels && labels[k] === v);

// Deep differences between two values: ["path: a -> b", ...].
function diff(a, b, where = '') {
  if (Object.is(a, b)) return [];
  const isObj = (v) => v !== null && typeof v === 'object';
  if (!isObj(a) || !isObj(b) || Array.isArray(a) !== Array.isArray(b)) {
    return [`${where || '.'}: ${JSON.stringify(a)} -> ${JSON.stringify(b)}`];
  }
  const out = [];
  const keys = new Set([...Object.keys(a), ...Object.keys(b)]);
  for (const k of keys) {
    const p = Array.isArray(a) ? `${where}[${k}]` : (where ? `${where}.${k}` : k);
    out.push(...diff(a[k], b[k], p));
  }
  return out;
}
// Differences between two renders, per object: ["Kind/name: path: a -> b", ...].
function diffRenders(objsA, objsB) {
  const key = (o) => `${o.kind}/${nameOf(o)}`;
  const mapA = new Map(objsA.map((o) => [key(o), o]));
  const mapB = new Map(objsB.map((o) => [key(o), o]));
  const out = [];
  for (const k of new Set([...mapA.keys(), ...mapB.keys()])) {
    if (!mapA.has(k)) out.push(`${k}: only in the second render`);
    else if (!mapB.has(k)) out.push(`${k}: only in the first render`);
    else out.push(...diff(mapA.get(k), mapB.get(k)).map((d) => `${k}: ${d}`));
  }
  return out;
}

// The chart's values.yaml, parsed.
function defaultValues() {
  return yaml.load(fs.readFileSync(chartFile('values.yaml'), 'utf8'));
}

module.exports = {
  RELEASE, F, KUBE_VERSIONS, KUBE_VERSION, MONITORING_API, KEDA_API, COMPONENTS, CHESSRL_COMPONENTS,
  chartFile, valuesSets, apiVersionsIn, setLabel, missingValuesFiles, helm, render, prefetch, parseManifests,
  find, get, ofKind, nameOf, inventory, podTemplates, containersOf, mainContainer, envOf,
  argv, flagValues, optionValue, configOf, workloadOf, containerPort,
  selects, selectsMap, diff, diffRenders, defaultValues, yaml,
};
