'use strict';
// Every object the chart renders, with each values file it ships, with and without the
// Prometheus Operator CRDs, at the oldest and the newest Kubernetes version the checks
// cover, is valid against the Kubernetes OpenAPI schemas (kubernetes-models, offline):
// types, enums, required fields, and no unknown fields. The `helm test` hook rendered on
// its own (--show-only) too. How the validation works: lib/k8s-validate.js.
const { describe, it, before } = require('node:test');
const assert = require('node:assert/strict');
const {
  render, valuesSets, setLabel, KUBE_VERSIONS, MONITORING_API, nameOf, inventory,
} = require('./lib/chart');
const { validateObject } = require('./lib/k8s-validate');

const MONITORING_ON = ['--set', 'monitoring.enabled=true'];
const isMonitoring = (o) => /^monitoring\.coreos\.com\//.test(o.apiVersion || '');

function problemsOf(objs) {
  const problems = [];
  const seen = new Set();
  for (const o of objs) {
    problems.push(...validateObject(o));
    const key = `${o.kind}/${nameOf(o)}`;
    if (seen.has(key)) problems.push(`${key} is rendered twice (${o.__source})`);
    seen.add(key);
  }
  return problems;
}

const cases = [];
for (const [set, args] of Object.entries(valuesSets())) {
  for (const kubeVersion of KUBE_VERSIONS) {
    cases.push({ set, kubeVersion, monitoring: false, args, opts: { kubeVersion } });
    cases.push({ set, kubeVersion, monitoring: true, args: [...args, ...MONITORING_ON],
                 opts: { kubeVersion, apiVersions: [MONITORING_API] } });
  }
}

describe('rendered objects are valid Kubernetes objects (offline OpenAPI schemas, unknown fields included)', () => {
  // Render everything up front, in parallel; each test awaits its own render.
  before(() => Promise.allSettled(cases.map((c) => render(c.args, c.opts))));

  for (const c of cases) {
    const title = `${setLabel(c.set)}, Kubernetes ${c.kubeVersion}, ` +
      (c.monitoring ? `with ${MONITORING_API} and monitoring.enabled=true` : `without ${MONITORING_API}`);
    it(title, async () => {
      const objs = await render(c.args, c.opts);
      assert.ok(objs.length > 0, 'the chart rendered no objects');
      assert.deepEqual(problemsOf(objs), [], `invalid objects (${inventory(objs)})`);
      const mon = objs.filter(isMonitoring);
      if (c.monitoring) {
        assert.ok(mon.length > 0, `monitoring.enabled=true with ${MONITORING_API} available renders no ` +
          'PodMonitor/ServiceMonitor/PrometheusRule (so none was validated)');
      } else {
        assert.deepEqual(mon.map((o) => `${o.kind}/${nameOf(o)}`), [],
          `monitoring objects rendered although the cluster has no ${MONITORING_API} API`);
      }
    });
  }

  it('negative control: a typo injected into the rendered trainer StatefulSet is reported', async () => {
    const objs = await render([]);
    const sts = objs.find((o) => o.kind === 'StatefulSet' && /-trainer$/.test(nameOf(o)));
    assert.ok(sts, `no trainer StatefulSet: ${inventory(objs)}`);
    const copy = JSON.parse(JSON.stringify(sts));
    copy.spec.template.spec.containers[0].imagePullPolicyy = copy.spec.template.spec.containers[0].imagePullPolicy;
    copy.spec.volumeClaimTemplatess = [];
    assert.deepEqual(validateObject(copy).sort(), [
      `StatefulSet ${nameOf(sts)}: unknown field spec.template.spec.containers[0].imagePullPolicyy`,
      `StatefulSet ${nameOf(sts)}: unknown field spec.volumeClaimTemplatess`,
    ]);
  });

  it('the helm test hook, rendered alone with --show-only', async () => {
    const objs = await render([]);
    const hooks = objs.filter((o) => /(^|,)\s*test(-success)?\s*(,|$)/.test(
      (o.metadata && o.metadata.annotations && o.metadata.annotations['helm.sh/hook']) || ''));
    assert.ok(hooks.length > 0, 'no object with annotation helm.sh/hook: test');
    const sources = [...new Set(hooks.map((o) => o.__source))];
    for (const source of sources) {
      const alone = await render(['--show-only', source]);
      assert.ok(alone.length > 0, `--show-only ${source} rendered nothing`);
      assert.deepEqual(problemsOf(alone), [], `invalid objects in ${source}`);
    }
  });
});

describe('k8s/: the cluster-side examples outside the chart', () => {
  it('k8s/namespace.yaml holds valid objects (a Namespace and its ResourceQuota)', () => {
    const fs = require('node:fs');
    const path = require('node:path');
    const yaml = require('js-yaml');
    const file = path.join(__dirname, '..', '..', 'k8s', 'namespace.yaml');
    const objs = yaml.loadAll(fs.readFileSync(file, 'utf8')).filter(Boolean);
    assert.deepEqual(objs.map((o) => o.kind), ['Namespace', 'ResourceQuota']);
    assert.deepEqual(objs.flatMap((o) => validateObject(o)), []);
  });
});
