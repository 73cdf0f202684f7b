'use strict';
// Monitoring: with the Prometheus Operator's API (monitoring.coreos.com/v1) the chart's
// PodMonitors scrape every chess-rl component on a port its pods really have; without the
// API, or with monitoring.enabled=false, the chart renders no monitoring objects.
const { describe, it, before } = require('node:test');
const assert = require('node:assert/strict');
const {
  render, prefetch, MONITORING_API, CHESSRL_COMPONENTS, ofKind, nameOf, workloadOf, containerPort, selects,
} = require('./lib/chart');

const WITH_API = { apiVersions: [MONITORING_API] };
const isMonitoring = (o) => /^monitoring\.coreos\.com\//.test(o.apiVersion || '');
before(() => prefetch([[], WITH_API], [['--set', 'monitoring.enabled=false'], WITH_API], [[]]));

describe('monitoring', () => {
  it(`with ${MONITORING_API}: every chess-rl component is scraped by a PodMonitor on a declared port`, async () => {
    const objs = await render([], WITH_API);
    const monitors = ofKind(objs, 'PodMonitor');
    assert.ok(monitors.length > 0, 'no PodMonitor');
    for (const c of CHESSRL_COMPONENTS) {
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
    for (const c of CHESSRL_COMPONENTS) {
      const w = workloadOf(objs, c);
      const ann = w.spec.template.metadata.annotations || {};
      if (ann['prometheus.io/port'] === undefined) continue;
      assert.ok(containerPort(w.spec.template.spec, Number(ann['prometheus.io/port'])),
        `${nameOf(w)}: prometheus.io/port ${ann['prometheus.io/port']} is no container port`);
    }
  });
});
