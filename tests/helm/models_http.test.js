'use strict';
// replay.modelsHttp: off by default (no flag, no port anywhere); on, replay serves the model
// URLs on replay.ports.models, the Service has the port, and the NetworkPolicy opens it to
// this release's pods and the peers of networkPolicy.modelsHttp.from, nobody else;
// replay.modelsHttp.public adds --models-http-public; a port clash is refused by name.
const { describe, it, before } = require('node:test');
const assert = require('node:assert/strict');
const { render, prefetch, helm, get, F, KUBE_VERSION, flagValues, mainContainer, workloadOf, containerPort } =
  require('./lib/chart');
const { chartDir } = require('./lib/tools');
const { network } = require('./lib/netpol');

const NS = 'chess-rl';
const PORT = 9103;
const CACHE = { app: 'model-cache' };
const ON = ['--set', 'replay.modelsHttp.enabled=true',
            '--set-json', `networkPolicy.modelsHttp.from=[{"namespaceSelector":{"matchLabels":{"kubernetes.io/metadata.name":"edge"}},"podSelector":{"matchLabels":${JSON.stringify(CACHE)}}}]`];
before(() => prefetch([[]], [ON]));

const replayContainer = (objs) => mainContainer(workloadOf(objs, 'replay'), 'replay');
const servicePorts = (objs) => get(objs, 'Service', `${F}-replay`).spec.ports.map((p) => p.name);

describe('replay.modelsHttp', () => {
  it('is off by default: no flag, no container or Service port, nothing open', async () => {
    const objs = await render();
    const c = replayContainer(objs);
    assert.deepEqual(flagValues(c, 'models-http-listen'), []);
    assert.equal(containerPort(workloadOf(objs, 'replay').spec.template.spec, 'models'), undefined);
    assert.ok(!servicePorts(objs).includes('models'));
    const n = network(objs, NS);
    assert.ok(!n.allowed(n.pod('selfplay'), n.pod('replay'), PORT).ok, 'the port is open while off');
  });

  it('on: --models-http-listen on replay.ports.models, a container port and a Service port', async () => {
    const objs = await render(ON);
    const c = replayContainer(objs);
    assert.deepEqual(flagValues(c, 'models-http-listen'), [`0.0.0.0:${PORT}`]);
    assert.ok(!c.args.includes('--models-http-public'), '--models-http-public without replay.modelsHttp.public');
    assert.equal(containerPort(workloadOf(objs, 'replay').spec.template.spec, 'models').containerPort, PORT);
    const svc = get(objs, 'Service', `${F}-replay`).spec.ports.find((p) => p.name === 'models');
    assert.equal(svc.port, PORT);
    assert.equal(svc.targetPort, 'models');
  });

  it('on: this release\'s pods and networkPolicy.modelsHttp.from reach the port, others do not', async () => {
    const n = network(await render(ON), NS);
    // Replay admits them; self-play's and the evaluator's own egress stays on gRPC (they
    // download over gRPC), the helm test pod's is open.
    for (const c of ['selfplay', 'evaluator', 'test']) {
      const v = n.ingressAllowed(n.pod(c), n.pod('replay'), PORT);
      assert.ok(v.ok, `${c} -> replay:${PORT}: ${v.why}`);
    }
    assert.ok(n.allowed(n.pod('test'), n.pod('replay'), PORT).ok, 'the helm test pod cannot reach the port');
    const cache = n.outsider(CACHE, 'edge');
    assert.ok(n.ingressAllowed(cache, n.pod('replay'), PORT).ok, 'the cache is refused');
    for (const stranger of [n.outsider({ app: 'debug' }, 'other'), n.outsider(CACHE, 'other'),
      n.outsider({ app: 'prometheus' }, 'edge')]) {
      const v = n.ingressAllowed(stranger, n.pod('replay'), PORT);
      assert.ok(!v.ok, `${stranger.what} -> replay:${PORT}: allowed (${v.why})`);
    }
  });

  it('replay.modelsHttp.public passes --models-http-public', async () => {
    const objs = await render([...ON, '--set', 'replay.modelsHttp.public=true']);
    assert.ok(replayContainer(objs).args.includes('--models-http-public'));
  });

  it('a port replay already uses is refused, naming replay.ports.models', async () => {
    const r = await helm(['template', 'chess-rl', chartDir, '--kube-version', KUBE_VERSION,
      '--set', 'replay.modelsHttp.enabled=true', '--set', 'replay.ports.models=9102']);
    assert.notEqual(r.code, 0, 'rendered with replay.ports.models equal to replay.ports.metrics');
    assert.match(r.stderr, /replay\.ports\.models is 9102, a port replay already uses/);
  });
});
