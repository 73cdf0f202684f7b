'use strict';
// A real Prometheus (Debian's /usr/bin/prometheus) for the deployment test. It scrapes
// the pods the harness runs the way the Prometheus Operator would scrape them for the
// chart's PodMonitors, loads the chart's PrometheusRule groups as a rules file, and
// answers PromQL over its HTTP API.
//
// What the operator would make of a PodMonitor, made here: every running pod whose labels
// match the PodMonitor's selector, in its namespaceSelector, is a target at the pod's
// address and the containerPort named by podMetricsEndpoints[].port, with the
// endpoint's path; `namespace` and `job` (<namespace>/<PodMonitor name>) are set as the
// operator sets them, and the endpoint's relabelings are applied for the source labels
// the chart uses (__meta_kubernetes_pod_name, __meta_kubernetes_pod_label_<label>,
// action replace). Targets go to Prometheus through file-based discovery, rewritten
// whenever a pod starts, restarts on a new address or goes.
const { spawn } = require('node:child_process');
const fs = require('node:fs');
const http = require('node:http');
const net = require('node:net');
const path = require('node:path');

function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.on('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

function getJson(url, timeoutMs = 10000) {
  return new Promise((resolve, reject) => {
    const req = http.get(url, { timeout: timeoutMs }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d) => { body += d; });
      res.on('end', () => {
        let parsed;
        try { parsed = JSON.parse(body); } catch { parsed = undefined; }
        if (res.statusCode !== 200) {
          return reject(new Error(`${url.split('?')[0]}: HTTP ${res.statusCode} ${parsed?.error || body.slice(0, 200)}`));
        }
        resolve(parsed);
      });
    });
    req.on('timeout', () => req.destroy(new Error(`${url.split('?')[0]} timed out`)));
    req.on('error', reject);
  });
}

// The label a Kubernetes pod label becomes in __meta_kubernetes_pod_label_<name>.
const metaLabel = (k) => `__meta_kubernetes_pod_label_${k.replace(/[^a-zA-Z0-9_]/g, '_')}`;

// The scrape targets of one PodMonitor among the pods: [{targets: ['ip:port'], labels}].
function podMonitorTargets(pm, pods, namespace) {
  const spec = pm.spec || {};
  const names = (spec.namespaceSelector || {}).matchNames;
  if (names && !names.includes(namespace)) return [];
  const match = (spec.selector || {}).matchLabels || {};
  if ((spec.selector || {}).matchExpressions) {
    throw new Error(`PodMonitor ${pm.metadata.name}: the harness reads matchLabels only`);
  }
  const out = [];
  for (const pod of pods) {
    if (!pod.ip || !pod.running) continue;
    if (!Object.entries(match).every(([k, v]) => (pod.labels || {})[k] === v)) continue;
    for (const ep of spec.podMetricsEndpoints || []) {
      const port = (pod.container.ports || []).find((p) => p.name === ep.port);
      if (!port) continue;
      const meta = { __meta_kubernetes_pod_name: pod.name };
      for (const [k, v] of Object.entries(pod.labels || {})) meta[metaLabel(k)] = v;
      const labels = { namespace, job: `${pm.metadata.namespace || namespace}/${pm.metadata.name}`, __metrics_path__: ep.path || '/metrics' };
      for (const r of ep.relabelings || []) {
        if ((r.action || 'replace').toLowerCase() !== 'replace' || !r.targetLabel) {
          throw new Error(`PodMonitor ${pm.metadata.name}: the harness applies replace relabelings only`);
        }
        const value = (r.sourceLabels || []).map((s) => meta[s] ?? labels[s] ?? '').join(r.separator ?? ';');
        if (value !== '') labels[r.targetLabel] = value;
      }
      out.push({ targets: [`${pod.ip}:${port.containerPort}`], labels });
    }
  }
  return out;
}

class Prometheus {
  // dir: its config, rules, targets and data. interval: scrape and rule evaluation.
  constructor({ dir, bin = 'prometheus', interval = '2s', namespace = 'default', log = () => {} }) {
    this.dir = dir;
    this.bin = bin;
    this.interval = interval;
    this.namespace = namespace;
    this.log = log;
    this.proc = null;
    this.port = null;
    this.targetsJson = '';
    this.staticTargets = [];
  }

  get url() { return `http://127.0.0.1:${this.port}`; }

  // podMonitors and rules: the rendered PodMonitor and PrometheusRule objects.
  // staticTargets: more targets, [{targets: ['host:port'], labels}] (the harness's own).
  async start({ podMonitors, rules, staticTargets = [] }) {
    this.podMonitors = podMonitors;
    this.staticTargets = staticTargets;
    fs.mkdirSync(path.join(this.dir, 'data'), { recursive: true });
    const groups = rules.flatMap((r) => r.spec.groups || []);
    const ruleFile = path.join(this.dir, 'rules.json');
    fs.writeFileSync(ruleFile, JSON.stringify({ groups }, null, 1));
    this.targetsFile = path.join(this.dir, 'targets.json');
    this.writeTargets([]);
    const config = {
      global: { scrape_interval: this.interval, scrape_timeout: this.interval, evaluation_interval: this.interval },
      rule_files: [ruleFile],
      scrape_configs: [{ job_name: 'pods', file_sd_configs: [{ files: [this.targetsFile] }] }],
    };
    const configFile = path.join(this.dir, 'prometheus.json');
    fs.writeFileSync(configFile, JSON.stringify(config, null, 1));
    this.port = await freePort();
    const logFile = fs.openSync(path.join(this.dir, 'prometheus.log'), 'a');
    this.proc = spawn(this.bin, [
      `--config.file=${configFile}`, `--storage.tsdb.path=${path.join(this.dir, 'data')}`,
      `--web.listen-address=127.0.0.1:${this.port}`, '--storage.tsdb.retention.time=1d',
      '--log.level=warn',
    ], { stdio: ['ignore', logFile, logFile] });
    this.exited = new Promise((resolve) => this.proc.on('exit', (code, signal) => resolve({ code, signal })));
    const deadline = Date.now() + 60000;
    for (;;) {
      try {
        await getJson(`${this.url}/api/v1/status/runtimeinfo`, 2000);
        break;
      } catch (e) {
        if (this.proc.exitCode !== null || Date.now() > deadline) {
          throw new Error(`prometheus did not start (${e.message}); its log: ${path.join(this.dir, 'prometheus.log')}`);
        }
        await new Promise((r) => setTimeout(r, 250));
      }
    }
    const loaded = await getJson(`${this.url}/api/v1/rules`);
    const n = loaded.data.groups.reduce((a, g) => a + g.rules.length, 0);
    const want = groups.reduce((a, g) => a + (g.rules || []).length, 0);
    if (n !== want) throw new Error(`prometheus loaded ${n} of the chart's ${want} rules`);
    this.log(`prometheus on ${this.url}: ${this.podMonitors.length} PodMonitors, ${n} rules, every ${this.interval}`);
    return n;
  }

  writeTargets(groups) {
    const all = [...groups, ...this.staticTargets];
    const text = JSON.stringify(all, null, 1);
    if (text === this.targetsJson) return false;
    const tmp = `${this.targetsFile}.tmp`;
    fs.writeFileSync(tmp, text);
    fs.renameSync(tmp, this.targetsFile); // atomic: Prometheus never reads half a file
    this.targetsJson = text;
    return true;
  }

  // Rewrites the targets from the pods as they are now.
  sync(pods) {
    return this.writeTargets(this.podMonitors.flatMap((pm) => podMonitorTargets(pm, pods, this.namespace)));
  }

  // An instant query: [{metric, value}] with value a Number.
  async query(expr) {
    const r = await getJson(`${this.url}/api/v1/query?query=${encodeURIComponent(expr)}`);
    if (r.status !== 'success') throw new Error(`query ${expr}: ${r.error}`);
    if (r.data.resultType === 'scalar') return [{ metric: {}, value: Number(r.data.result[1]) }];
    return r.data.result.map((s) => ({ metric: s.metric, value: Number(s.value[1]) }));
  }

  // The targets Prometheus scrapes and their health: [{pod, job, health, lastError}].
  async targets() {
    const r = await getJson(`${this.url}/api/v1/targets?state=active`);
    return r.data.activeTargets.map((t) => ({ pod: t.labels.pod, job: t.labels.job, health: t.health, lastError: t.lastError, labels: t.labels }));
  }

  // The alerts in the state Prometheus holds them: [{name, state, labels}].
  async alerts() {
    const r = await getJson(`${this.url}/api/v1/alerts`);
    return r.data.alerts.map((a) => ({ name: a.labels.alertname, state: a.state, labels: a.labels, value: Number(a.value) }));
  }

  async stop() {
    if (!this.proc || this.proc.exitCode !== null) return;
    this.proc.kill('SIGTERM');
    const timer = setTimeout(() => this.proc.kill('SIGKILL'), 10000);
    await this.exited;
    clearTimeout(timer);
  }
}

module.exports = { Prometheus, podMonitorTargets, freePort, getJson };
