'use strict';
// The objects of the deployment contract, their names, labels, selectors, ports, binaries
// and config files, rendered with the default values (release chess-rl, so F = chess-rl).
const { describe, it, before } = require('node:test');
const assert = require('node:assert/strict');
const {
  render, prefetch, F, CHESSRL_COMPONENTS, get, find, nameOf, inventory, podTemplates, mainContainer,
  argv, flagValues, workloadOf, containerPort, selects, selectsMap, yaml,
} = require('./lib/chart');

const COMMON_LABELS = {
  'helm.sh/chart': 'chess-rl-0.1.0',
  'app.kubernetes.io/name': 'chess-rl',
  'app.kubernetes.io/instance': 'chess-rl',
  'app.kubernetes.io/version': '0.1.0',
  'app.kubernetes.io/managed-by': 'Helm',
  'app.kubernetes.io/part-of': 'chess-rl',
};
const selectorOf = (component) => ({
  'app.kubernetes.io/name': 'chess-rl',
  'app.kubernetes.io/instance': 'chess-rl',
  'app.kubernetes.io/component': component,
});
const FULLNAME_CASES = [
  { release: 'chess-rl', args: [], prefix: 'chess-rl' },
  { release: 'prod', args: [], prefix: 'prod-chess-rl' },
  { release: 'chess-rl-prod', args: [], prefix: 'chess-rl-prod' },
  { release: 'prod', args: ['--set', 'fullnameOverride=lab'], prefix: 'lab' },
];
const METRICS_PORTS = { replay: 9102, selfplay: 9101, trainer: 9100, evaluator: 9104 };

let objs;
before(async () => {
  await prefetch([[]], ...FULLNAME_CASES.map((c) => [c.args, { release: c.release }]));
  objs = await render([]);
});

describe('objects of the contract (default values)', () => {
  it('the workloads, Services, Secret, claims and the test pod exist under their names', () => {
    const want = [
      ['Secret', `${F}-redis`], ['StatefulSet', `${F}-redis`], ['Service', `${F}-redis`],
      ['Deployment', `${F}-replay`], ['Service', `${F}-replay`],
      ['Deployment', `${F}-selfplay`],
      ['StatefulSet', `${F}-trainer`], ['Service', `${F}-trainer-headless`],
      ['Deployment', `${F}-evaluator`], ['PersistentVolumeClaim', `${F}-evaluator`],
      ['Deployment', `${F}-web`], ['Service', `${F}-web`], ['Service', `${F}-selfplay-pods`],
      ['Pod', `${F}-test`],
    ];
    const missing = want.filter(([k, n]) => !find(objs, k, n)).map(([k, n]) => `${k}/${n}`);
    assert.deepEqual(missing, [], `missing; the chart rendered: ${inventory(objs)}`);
  });

  it('one ConfigMap F-<component> with config.yaml (a YAML map) per chess-rl component', () => {
    for (const c of CHESSRL_COMPONENTS) {
      const cm = get(objs, 'ConfigMap', `${F}-${c}`);
      assert.equal(typeof (cm.data || {})['config.yaml'], 'string', `${nameOf(cm)}: data["config.yaml"]`);
      const parsed = yaml.load(cm.data['config.yaml']);
      assert.ok(parsed === null || parsed === undefined || (typeof parsed === 'object' && !Array.isArray(parsed)),
        `${nameOf(cm)}: config.yaml is not a YAML map: ${cm.data['config.yaml']}`);
    }
  });

  it('one ServiceAccount F-<component> per component, and F-test', () => {
    for (const c of ['redis', ...CHESSRL_COMPONENTS, 'web', 'test']) get(objs, 'ServiceAccount', `${F}-${c}`);
  });

  it('Redis: one replica, PVC template `data`, Service port 6379', () => {
    const sts = get(objs, 'StatefulSet', `${F}-redis`);
    assert.equal(sts.spec.replicas, 1);
    assert.deepEqual((sts.spec.volumeClaimTemplates || []).map(nameOf), ['data']);
    const svc = get(objs, 'Service', `${F}-redis`);
    assert.ok(svc.spec.ports.some((p) => p.port === 6379), `${F}-redis ports: ${JSON.stringify(svc.spec.ports)}`);
  });

  it('replay\'s Service has ports grpc 50051 and metrics 9102', () => {
    const ports = Object.fromEntries(get(objs, 'Service', `${F}-replay`).spec.ports.map((p) => [p.name, p.port]));
    assert.equal(ports.grpc, 50051);
    assert.equal(ports.metrics, 9102);
  });

  it('the evaluator: one replica, strategy Recreate, its claim mounted', () => {
    const d = get(objs, 'Deployment', `${F}-evaluator`);
    assert.equal(d.spec.replicas, 1);
    assert.equal(d.spec.strategy && d.spec.strategy.type, 'Recreate');
    const vols = d.spec.template.spec.volumes || [];
    assert.ok(vols.some((v) => v.persistentVolumeClaim && v.persistentVolumeClaim.claimName === `${F}-evaluator`),
      'no volume of claim F-evaluator');
  });

  it('every object carries the common labels, and a component label when it belongs to one', () => {
    const problems = [];
    for (const o of objs) {
      const labels = (o.metadata && o.metadata.labels) || {};
      for (const [k, v] of Object.entries(COMMON_LABELS)) {
        if (labels[k] !== v) problems.push(`${o.kind}/${nameOf(o)}: label ${k}=${JSON.stringify(labels[k])}, want ${v}`);
      }
      const m = new RegExp(`^${F}-(redis|replay|selfplay|trainer|evaluator|web|test)(-|$)`).exec(nameOf(o) || '');
      if (m && labels['app.kubernetes.io/component'] !== m[1]) {
        problems.push(`${o.kind}/${nameOf(o)}: app.kubernetes.io/component=${labels['app.kubernetes.io/component']}, want ${m[1]}`);
      }
    }
    assert.deepEqual(problems, []);
  });

  it('every object names the release\'s namespace', () => {
    const wrong = objs.filter((o) => (o.metadata || {}).namespace !== 'chess-rl')
      .map((o) => `${o.kind}/${nameOf(o)}: ${(o.metadata || {}).namespace}`);
    assert.deepEqual(wrong, [], 'objects outside the release namespace (helm template --namespace chess-rl)');
  });

  it('workload selectors are name + instance + component, and their pod templates match them', () => {
    for (const c of ['redis', ...CHESSRL_COMPONENTS, 'web']) {
      const w = workloadOf(objs, c);
      assert.deepEqual(w.spec.selector, { matchLabels: selectorOf(c) }, `${w.kind}/${nameOf(w)} selector`);
      assert.ok(selects(w.spec.selector, w.spec.template.metadata.labels), `${nameOf(w)}: template labels do not match its selector`);
      for (const [k, v] of Object.entries(COMMON_LABELS)) {
        assert.equal(w.spec.template.metadata.labels[k], v, `${nameOf(w)} pod label ${k}`);
      }
    }
  });

  it('every Service selects the pods of exactly one component, and its targetPorts are container ports there', () => {
    const pods = podTemplates(objs).filter((p) => p.longRunning);
    for (const svc of objs.filter((o) => o.kind === 'Service')) {
      const selected = pods.filter((p) => selectsMap(svc.spec.selector, p.podMeta.labels));
      assert.equal(selected.length, 1, `Service ${nameOf(svc)} selects ${selected.map((p) => p.what).join(', ') || 'no pods'}`);
      for (const port of svc.spec.ports) {
        const target = port.targetPort === undefined ? port.port : port.targetPort;
        assert.ok(containerPort(selected[0].podSpec, target),
          `Service ${nameOf(svc)} port ${port.name || port.port}: targetPort ${target} is no container port of ${selected[0].what}`);
      }
    }
  });

  it('each chess-rl component runs its binary by absolute path, with its metrics port', () => {
    for (const c of CHESSRL_COMPONENTS) {
      const w = workloadOf(objs, c);
      const ctr = mainContainer(w, c);
      const bin = `/usr/local/bin/chessrl-${c}`;
      const cmd = argv(ctr);
      if (ctr.command) assert.equal(ctr.command[0], bin, `${nameOf(w)} command`);
      else assert.ok(c === 'replay' && /chessrl-replay[:@]/.test(ctr.image), `${nameOf(w)}: no command (want ${bin})`);
      assert.ok(cmd.length > 0);
      assert.ok(containerPort(w.spec.template.spec, METRICS_PORTS[c]), `${nameOf(w)}: no container port ${METRICS_PORTS[c]}`);
      const listen = flagValues(ctr, 'metrics-listen');
      if (listen.length) assert.match(listen[0], new RegExp(`:${METRICS_PORTS[c]}$`), `${nameOf(w)} --metrics-listen`);
    }
  });

  it('images: chessrl-replay:0.1.0 for replay, chessrl:0.1.0 for the others', () => {
    for (const c of CHESSRL_COMPONENTS) {
      const ctr = mainContainer(workloadOf(objs, c), c);
      assert.match(ctr.image, c === 'replay' ? /(^|\/)chessrl-replay:0\.1\.0$/ : /(^|\/)chessrl:0\.1\.0$/, `${c} image`);
    }
  });

  it('each chess-rl container reads /etc/chessrl/config.yaml from its ConfigMap and has an emptyDir at /tmp', () => {
    for (const c of CHESSRL_COMPONENTS) {
      const w = workloadOf(objs, c);
      const spec = w.spec.template.spec;
      const ctr = mainContainer(w, c);
      assert.deepEqual(flagValues(ctr, 'config'), ['/etc/chessrl/config.yaml'], `${nameOf(w)}: --config`);
      const cfgVol = (spec.volumes || []).find((v) => v.configMap && v.configMap.name === `${F}-${c}`);
      assert.ok(cfgVol, `${nameOf(w)}: no volume of ConfigMap ${F}-${c}`);
      const mount = (ctr.volumeMounts || []).find((m) => m.name === cfgVol.name);
      assert.ok(mount, `${nameOf(w)}: ConfigMap volume not mounted`);
      const file = mount.subPath ? mount.mountPath : `${mount.mountPath.replace(/\/$/, '')}/config.yaml`;
      assert.equal(file, '/etc/chessrl/config.yaml', `${nameOf(w)}: the config file lands at ${file}`);
      if (mount.subPath) assert.equal(mount.subPath, 'config.yaml');
      const tmp = (ctr.volumeMounts || []).find((m) => m.mountPath === '/tmp');
      assert.ok(tmp, `${nameOf(w)}: nothing mounted at /tmp`);
      const tmpVol = (spec.volumes || []).find((v) => v.name === tmp.name);
      assert.ok(tmpVol && tmpVol.emptyDir, `${nameOf(w)}: /tmp is not an emptyDir`);
    }
  });

  it('pods that mount a PersistentVolumeClaim set fsGroup (the non-root user can write it)', () => {
    for (const p of podTemplates(objs)) {
      const claims = (p.podSpec.volumes || []).some((v) => v.persistentVolumeClaim) ||
        ((p.owner.spec && p.owner.spec.volumeClaimTemplates) || []).length > 0;
      if (!claims) continue;
      assert.ok(p.podSpec.securityContext && Number.isInteger(p.podSpec.securityContext.fsGroup),
        `${p.what}: mounts a claim but sets no securityContext.fsGroup`);
    }
  });
});

describe('fullname', () => {
  for (const c of FULLNAME_CASES) {
    it(`release ${c.release}${c.args.length ? ` with ${c.args[1]}` : ''} names objects ${c.prefix}-*`, async () => {
      const out = await render(c.args, { release: c.release });
      const names = out.map(nameOf);
      const bad = names.filter((n) => n !== c.prefix && !n.startsWith(`${c.prefix}-`));
      assert.deepEqual(bad, [], 'objects not named by the fullname');
      get(out, 'StatefulSet', `${c.prefix}-trainer`);
      for (const o of out) {
        assert.equal(o.metadata.labels['app.kubernetes.io/instance'], c.release, `${o.kind}/${nameOf(o)} instance label`);
      }
    });
  }
});
