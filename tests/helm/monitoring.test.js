'use strict';
// Monitoring: with the Prometheus Operator's API (monitoring.coreos.com/v1) the chart's
// PodMonitors scrape every chess-rl component on a port its pods really have, and its
// PrometheusRule holds helm/rules/chess-rl.yaml; without the API, or with
// monitoring.enabled=false, the chart renders no monitoring objects. The Grafana dashboard
// ConfigMap holds helm/dashboards/chess-rl.json (its own checks: dashboard.test.js). The
// rule file's content (tests/monitoring runs promtool on it) and k8s/monitoring/.
const { describe, it, before } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const {
  render, prefetch, MONITORING_API, CHESSRL_COMPONENTS, RELEASE, F, ofKind, nameOf, workloadOf, containerPort,
  selects, get, find, defaultValues,
} = require('./lib/chart');
const tools = require('./lib/tools');
const mon = require('./lib/monitoring');

const clone = (x) => JSON.parse(JSON.stringify(x));
// Every component with /metrics: the chess-rl binaries, and the game viewer (web), which
// serves it on its page port `http` rather than on a port `metrics`.
const SCRAPED = [...CHESSRL_COMPONENTS, 'web'];
const metricsPortName = (c) => (c === 'web' ? 'http' : 'metrics');

const WITH_API = { apiVersions: [MONITORING_API] };
const isMonitoring = (o) => /^monitoring\.coreos\.com\//.test(o.apiVersion || '');
before(() => prefetch([[], WITH_API], [['--set', 'monitoring.enabled=false'], WITH_API], [[]]));

describe('monitoring', () => {
  it(`with ${MONITORING_API}: every chess-rl component is scraped by a PodMonitor on a declared port`, async () => {
    const objs = await render([], WITH_API);
    const monitors = ofKind(objs, 'PodMonitor');
    assert.ok(monitors.length > 0, 'no PodMonitor');
    for (const c of SCRAPED) {
      const w = workloadOf(objs, c);
      const pm = monitors.filter((m) => selects(m.spec.selector, w.spec.template.metadata.labels));
      assert.ok(pm.length > 0, `no PodMonitor selects ${w.kind}/${nameOf(w)}`);
      for (const m of pm) {
        for (const ep of m.spec.podMetricsEndpoints || []) {
          const port = ep.port !== undefined ? ep.port : ep.targetPort;
          assert.ok(containerPort(w.spec.template.spec, port), `PodMonitor ${nameOf(m)}: port ${port} is not a port of ${nameOf(w)}`);
        }
        const ns = m.spec.namespaceSelector;
        assert.ok(!ns || ns.any || (ns.matchNames || []).includes('chess-rl'),
          `PodMonitor ${nameOf(m)} looks in namespaces ${JSON.stringify(ns)}, not the release's`);
      }
    }
  });

  it(`without ${MONITORING_API}: no monitoring objects`, async () => {
    assert.deepEqual((await render([])).filter(isMonitoring).map(nameOf), []);
  });

  it(`monitoring.enabled=false with ${MONITORING_API}: no monitoring objects`, async () => {
    assert.deepEqual((await render(['--set', 'monitoring.enabled=false'], WITH_API)).filter(isMonitoring).map(nameOf), []);
  });

  it('prometheus.io/port pod annotations name the metrics container port', async () => {
    const objs = await render([]);
    for (const c of SCRAPED) {
      const w = workloadOf(objs, c);
      const ann = w.spec.template.metadata.annotations || {};
      if (ann['prometheus.io/port'] === undefined) continue;
      assert.ok(containerPort(w.spec.template.spec, Number(ann['prometheus.io/port'])),
        `${nameOf(w)}: prometheus.io/port ${ann['prometheus.io/port']} is no container port`);
    }
  });
});

// ---------------------------------------------------------------- rules and dashboard
const RULE_FILE_GROUPS = () => mon.ruleFile().groups;
const withApi = (args = []) => render(args, WITH_API);

describe('the PrometheusRule (helm/rules/chess-rl.yaml)', () => {
  it(`with ${MONITORING_API}: PrometheusRule ${F}-rules in the release's namespace, its groups those of the rule file`, async () => {
    const pr = get(await withApi(), 'PrometheusRule', `${F}-rules`);
    assert.equal(pr.metadata.namespace, 'chess-rl');
    assert.deepEqual(pr.spec.groups, RULE_FILE_GROUPS());
  });

  it('only where the API exists and monitoring.prometheusRule.enabled (the PodMonitors stay)', async () => {
    assert.deepEqual(ofKind(await render([]), 'PrometheusRule').map(nameOf), []);
    const off = await withApi(['--set', 'monitoring.prometheusRule.enabled=false']);
    assert.deepEqual(ofKind(off, 'PrometheusRule').map(nameOf), []);
    assert.ok(ofKind(off, 'PodMonitor').length > 0, 'prometheusRule.enabled=false took the PodMonitors away');
    assert.deepEqual(ofKind(await withApi(['--set', 'monitoring.enabled=false']), 'PrometheusRule').map(nameOf), []);
  });

  it('labels (what Prometheus selects rules by) and namespace are configurable, as the PodMonitors\'', async () => {
    const objs = await withApi(['--set', 'monitoring.prometheusRule.labels.release=kube-prometheus-stack',
      '--set', 'monitoring.podMonitor.labels.release=kube-prometheus-stack',
      '--set', 'monitoring.prometheusRule.namespace=monitoring']);
    const pr = get(objs, 'PrometheusRule', `${F}-rules`);
    assert.equal(pr.metadata.labels.release, 'kube-prometheus-stack');
    assert.equal(pr.metadata.labels['app.kubernetes.io/instance'], RELEASE, 'the chart\'s own labels are kept');
    assert.equal(pr.metadata.namespace, 'monitoring');
    for (const pm of ofKind(objs, 'PodMonitor')) assert.equal(pm.metadata.labels.release, 'kube-prometheus-stack', nameOf(pm));
  });

  it('alertLabels are added to every alert, an alert\'s own labels win, recording rules are untouched', async () => {
    const pr = get(await withApi(['--set', 'monitoring.prometheusRule.alertLabels.team=ml',
      '--set', 'monitoring.prometheusRule.alertLabels.severity=page']), 'PrometheusRule', `${F}-rules`);
    const want = clone(RULE_FILE_GROUPS());
    for (const g of want) {
      for (const r of g.rules) if (r.alert) r.labels = { team: 'ml', ...r.labels };
    }
    assert.deepEqual(pr.spec.groups, want);
  });
});

describe('the rule file', () => {
  const all = mon.rules();
  const alerts = all.filter((r) => r.alert);
  const records = all.filter((r) => r.record);

  it('has recording rules named level:metric:operations and alerts named ChessRL...', () => {
    assert.ok(records.length > 0 && alerts.length > 0);
    for (const r of records) assert.match(r.record, /^[a-z_]+:[a-z0-9_]+:[a-z0-9_]+$/, r.record);
    for (const r of alerts) assert.match(r.alert, /^ChessRL[A-Z][A-Za-z]+$/, r.alert);
    assert.equal(new Set(alerts.map((r) => r.alert)).size, alerts.length, 'an alert name twice');
  });

  it('every alert has for, a severity (warning or critical), a summary and a description', () => {
    for (const r of alerts) {
      assert.match(String(r.for), /^[0-9]+[smh]$/, `${r.alert}: for`);
      assert.ok(['warning', 'critical'].includes((r.labels || {}).severity), `${r.alert}: severity ${(r.labels || {}).severity}`);
      assert.ok((r.annotations || {}).summary, `${r.alert}: no summary`);
      assert.ok((r.annotations || {}).description, `${r.alert}: no description`);
    }
  });

  it('covers self-play stopping, refused games, a stalled or starved trainer, idle GPUs, a silent evaluator and stale self-play models', () => {
    const names = alerts.map((r) => r.alert).join(' ');
    for (const want of ['SelfplayStopped', 'ReplayRejectingGames', 'TrainerStalled', 'TrainerDataStarved',
      'TrainerPaused', 'GPUIdle', 'EvaluatorSilent', 'SelfplayModelStale']) {
      assert.match(names, new RegExp(`ChessRL${want}\\b`));
    }
  });

  it('uses only metrics chess-rl exports (or its own recording rules, Prometheus\'s up, or ones listed as pending)', (t) => {
    const problems = [];
    for (const r of all) {
      for (const m of mon.metricNames(r.expr)) {
        const origin = mon.metricOrigin(m);
        if (origin === 'pending') t.diagnostic(`${r.alert || r.record}: pending (not exported yet): ${m}: ${mon.PENDING_METRICS[m]}`);
        else if (!['exported', 'recorded'].includes(origin) && m !== 'up') problems.push(`${r.alert || r.record}: ${m} (${origin || 'unknown'})`);
      }
    }
    assert.deepEqual(problems, []);
  });

  it('lists as pending only metrics nothing exports yet (remove an entry once its metric exists)', () => {
    const exported = mon.exportedMetrics();
    assert.deepEqual(Object.keys(mon.PENDING_METRICS).filter((m) => exported.has(m)), [],
      'tests/helm/lib/monitoring.js PENDING_METRICS lists metrics the sources export');
  });
});

describe('the Grafana dashboard ConfigMap', () => {
  const CM = `${F}-grafana-dashboard`;
  it(`${CM} holds dashboards/chess-rl.json byte for byte, labelled grafana_dashboard: "1", with or without ${MONITORING_API}`, async () => {
    const source = fs.readFileSync(mon.DASHBOARD_FILE, 'utf8');
    for (const objs of [await render([]), await withApi()]) {
      const cm = get(objs, 'ConfigMap', CM);
      assert.equal(cm.metadata.namespace, 'chess-rl');
      assert.equal(cm.metadata.labels.grafana_dashboard, '1');
      assert.equal(cm.metadata.annotations.grafana_folder, 'chess-rl');
      assert.deepEqual(Object.keys(cm.data), ['chess-rl.json']);
      assert.ok(cm.data['chess-rl.json'] === source, 'the ConfigMap\'s chess-rl.json differs from helm/dashboards/chess-rl.json');
    }
  });

  it('not with monitoring.dashboards.enabled=false or monitoring.enabled=false', async () => {
    assert.equal(find(await render(['--set', 'monitoring.dashboards.enabled=false']), 'ConfigMap', CM), undefined);
    assert.equal(find(await render(['--set', 'monitoring.enabled=false']), 'ConfigMap', CM), undefined);
  });

  it('label, value, namespace, labels and annotations are configurable', async () => {
    const cm = get(await render(['--set', 'monitoring.dashboards.label=grafana.example/dashboard',
      '--set-string', 'monitoring.dashboards.labelValue=chess', '--set', 'monitoring.dashboards.namespace=monitoring',
      '--set', 'monitoring.dashboards.labels.team=ml', '--set', 'monitoring.dashboards.annotations.grafana_folder=ML']), 'ConfigMap', CM);
    assert.equal(cm.metadata.labels['grafana.example/dashboard'], 'chess');
    assert.equal(cm.metadata.labels.grafana_dashboard, undefined);
    assert.equal(cm.metadata.labels.team, 'ml');
    assert.equal(cm.metadata.labels['app.kubernetes.io/instance'], RELEASE);
    assert.equal(cm.metadata.namespace, 'monitoring');
    assert.deepEqual(cm.metadata.annotations, { grafana_folder: 'ML' });
  });
});

describe('the labels the dashboard and the rules aggregate by', () => {
  it('every PodMonitor gives the series component, app_kubernetes_io_instance, pod and instance (the pod\'s name)', async () => {
    for (const pm of ofKind(await withApi(), 'PodMonitor')) {
      for (const ep of pm.spec.podMetricsEndpoints) {
        const from = Object.fromEntries((ep.relabelings || []).map((r) => [r.targetLabel, (r.sourceLabels || []).join(';')]));
        assert.deepEqual({ component: from.component, app_kubernetes_io_instance: from.app_kubernetes_io_instance,
          pod: from.pod, instance: from.instance }, {
          component: '__meta_kubernetes_pod_label_app_kubernetes_io_component',
          app_kubernetes_io_instance: '__meta_kubernetes_pod_label_app_kubernetes_io_instance',
          pod: '__meta_kubernetes_pod_name', instance: '__meta_kubernetes_pod_name',
        }, nameOf(pm));
      }
    }
  });
});

// ---------------------------------------------------------------- k8s/monitoring
const K8S_MONITORING = path.join(tools.repoRoot, 'k8s', 'monitoring');
const loadK8s = (f) => mon.yaml.load(fs.readFileSync(path.join(K8S_MONITORING, f), 'utf8'));

describe('k8s/monitoring/kube-prometheus-stack-values.yaml', () => {
  it('selects every PodMonitor and PrometheusRule and loads the chart\'s dashboard ConfigMap', () => {
    const v = loadK8s('kube-prometheus-stack-values.yaml');
    const chart = defaultValues().monitoring.dashboards;
    const spec = v.prometheus.prometheusSpec;
    assert.equal(spec.podMonitorSelectorNilUsesHelmValues, false);
    assert.equal(spec.ruleSelectorNilUsesHelmValues, false);
    const sc = v.grafana.sidecar.dashboards;
    assert.equal(sc.enabled, true);
    assert.equal(sc.label, chart.label);
    assert.equal(String(sc.labelValue), chart.labelValue);
    assert.equal(sc.searchNamespace, 'ALL');
    assert.ok(Object.keys(chart.annotations).includes(sc.folderAnnotation),
      `the sidecar's folderAnnotation ${sc.folderAnnotation} is not an annotation of the chart's ConfigMap`);
  });
});

// Prometheus's relabelling (keep, drop, replace) on a label map, as Prometheus applies it.
function relabel(labels, configs) {
  const out = { ...labels };
  for (const c of configs) {
    const value = (c.source_labels || []).map((l) => out[l] || '').join(c.separator === undefined ? ';' : c.separator);
    const re = new RegExp(`^(?:${c.regex === undefined ? '(.*)' : c.regex})$`);
    const m = re.exec(value);
    const action = c.action || 'replace';
    if (action === 'keep' && !m) return null;
    if (action === 'drop' && m) return null;
    if (action === 'replace' && m) {
      const res = (c.replacement === undefined ? '$1' : String(c.replacement))
        .replace(/\$\{?(\d+)\}?/g, (_, n) => m[Number(n)] || '');
      if (res) out[c.target_label] = res; else delete out[c.target_label];
    }
  }
  return out;
}
// The target Prometheus makes of a pod: the pod role's meta labels, relabelled; the
// labels that start with __ dropped (address and path kept apart), instance = address
// unless set, job = the job's name.
function podTarget(job, pod, port) {
  const meta = {
    __address__: pod.ip.includes(':') ? `[${pod.ip}]:${port}` : `${pod.ip}:${port}`,
    __metrics_path__: '/metrics',
    __meta_kubernetes_namespace: pod.namespace,
    __meta_kubernetes_pod_name: pod.name,
    __meta_kubernetes_pod_ip: pod.ip,
    __meta_kubernetes_pod_phase: 'Running',
    __meta_kubernetes_pod_container_port_number: String(port),
  };
  const sanitize = (k) => k.replace(/[^a-zA-Z0-9_]/g, '_');
  for (const [k, v] of Object.entries(pod.labels || {})) meta[`__meta_kubernetes_pod_label_${sanitize(k)}`] = v;
  for (const [k, v] of Object.entries(pod.annotations || {})) meta[`__meta_kubernetes_pod_annotation_${sanitize(k)}`] = v;
  const l = relabel(meta, job.relabel_configs || []);
  if (!l) return null;
  const target = { address: l.__address__, path: l.__metrics_path__, labels: { job: job.job_name, instance: l.__address__ } };
  for (const [k, v] of Object.entries(l)) if (!k.startsWith('__')) target.labels[k] = v;
  return target;
}

describe('k8s/monitoring/prometheus.yaml (a Prometheus without the operator)', () => {
  it('is a valid Prometheus configuration (promtool check config, static targets for the Kubernetes discovery)', async () => {
    const config = loadK8s('prometheus.yaml');
    const dir = mon.tempDir('chessrl-promconfig-');
    for (const job of config.scrape_configs) {
      assert.ok(job.kubernetes_sd_configs && job.kubernetes_sd_configs.every((s) => s.role === 'pod'), `${job.job_name}: not pod discovery`);
      // Debian's promtool is built without the Kubernetes discovery: check the rest.
      delete job.kubernetes_sd_configs;
      job.static_configs = [{ targets: ['localhost:9101'] }];
    }
    config.rule_files = [mon.RULES_FILE];
    const file = path.join(dir, 'prometheus.yaml');
    fs.writeFileSync(file, mon.yaml.dump(config));
    const r = await mon.runPromtool(['check', 'config', file]);
    assert.equal(r.code, 0, `promtool check config:\n${r.stdout}${r.stderr}`);
  });

  it('scrapes each chess-rl pod on its metrics port with the PodMonitors\' labels, and nothing else', async () => {
    const [job] = loadK8s('prometheus.yaml').scrape_configs;
    const objs = await render([]);
    for (const c of SCRAPED) {
      const w = workloadOf(objs, c);
      const meta = w.spec.template.metadata;
      const metricsPort = containerPort(w.spec.template.spec, metricsPortName(c)).containerPort;
      for (const ip of ['10.1.2.3', 'fd00:10:244::7']) {
        const pod = { namespace: 'chess-rl', name: `${nameOf(w)}-0`, ip, labels: meta.labels, annotations: meta.annotations };
        // one target per container port; all must become the metrics port
        for (const p of w.spec.template.spec.containers.flatMap((k) => k.ports || [])) {
          const t = podTarget(job, pod, p.containerPort);
          assert.ok(t, `${nameOf(w)}: dropped`);
          assert.equal(t.address, ip.includes(':') ? `[${ip}]:${metricsPort}` : `${ip}:${metricsPort}`, `${nameOf(w)} port ${p.containerPort}`);
          assert.equal(t.path, '/metrics');
          assert.deepEqual(t.labels, { job: job.job_name, namespace: 'chess-rl', app_kubernetes_io_instance: RELEASE,
            component: c, pod: pod.name, instance: pod.name }, nameOf(w));
        }
      }
    }
    const other = { namespace: 'default', name: 'web-0', ip: '10.1.2.4', labels: { app: 'web' },
      annotations: { 'prometheus.io/scrape': 'true', 'prometheus.io/port': '8080' } };
    assert.equal(podTarget(job, other, 8080), null, 'a pod that is not chess-rl\'s is scraped');
    const quiet = { namespace: 'chess-rl', name: 'x', ip: '10.1.2.5', labels: { 'app.kubernetes.io/part-of': 'chess-rl' } };
    assert.equal(podTarget(job, quiet, 9101), null, 'a chess-rl pod without prometheus.io/scrape is scraped');
  });
});
