'use strict';
// NetworkPolicies: only replay reaches Redis; everything that talks to replay, the trainer
// ranks to each other, the helm test and outside scrapers to the metrics ports, and DNS
// still work. Checked with a NetworkPolicy evaluator (lib/netpol.js) on the rendered objects.
const { describe, it, before } = require('node:test');
const assert = require('node:assert/strict');
const { render, prefetch, F, nameOf } = require('./lib/chart');
const { network } = require('./lib/netpol');

const NS = 'chess-rl';
const EXTERNAL = ['--set', 'redis.enabled=false', '--set', 'redis.external.host=redis.example.internal',
                  '--set', 'redis.auth.existingSecret=team-redis'];
before(() => prefetch([[]], [EXTERNAL]));
const net = async (args = []) => network(await render(args), NS);

// The viewer (web) serves /metrics on its page port.
const PORTS = { redis: 6379, grpc: 50051, rendezvous: 29500, metrics: { replay: 9102, selfplay: 9101, trainer: 9100, evaluator: 9104, web: 8080 },
  probes: { replay: 9202, selfplay: 9201, trainer: 9200, evaluator: 9204, web: 9205 } };

describe('NetworkPolicy', () => {
  it('a NetworkPolicy selects the Redis pods, with Ingress in its policyTypes', async () => {
    const n = await net();
    const pols = n.selecting(n.pod('redis'), 'Ingress');
    assert.ok(pols.length > 0, 'no NetworkPolicy restricts ingress to the Redis pods');
  });

  it('Redis admits ingress only from replay pods', async () => {
    const n = await net();
    const redis = n.pod('redis');
    const verdicts = [];
    for (const src of n.pods) {
      if (src === redis) continue;
      const v = n.ingressAllowed(src, redis, PORTS.redis);
      const want = src.labels['app.kubernetes.io/component'] === 'replay';
      if (v.ok !== want) verdicts.push(`${src.what} -> redis:${PORTS.redis}: ${v.ok ? 'allowed' : 'refused'} (${v.why})`);
    }
    for (const outsider of [n.outsider({ app: 'debug' }, NS), n.outsider({ app: 'prometheus' }, 'monitoring'),
      n.outsider({ 'app.kubernetes.io/component': 'replay', 'app.kubernetes.io/name': 'chess-rl', 'app.kubernetes.io/instance': 'chess-rl' }, 'other')]) {
      const v = n.ingressAllowed(outsider, redis, PORTS.redis);
      if (v.ok) verdicts.push(`${outsider.what} -> redis: allowed (${v.why})`);
    }
    assert.deepEqual(verdicts, []);
  });

  it('replay reaches Redis', async () => {
    const n = await net();
    const v = n.allowed(n.pod('replay'), n.pod('redis'), PORTS.redis);
    assert.ok(v.ok, v.why);
  });

  it('self-play, the trainer, the evaluator and the helm test reach replay\'s gRPC port', async () => {
    const n = await net();
    for (const c of ['selfplay', 'trainer', 'evaluator', 'test']) {
      const v = n.allowed(n.pod(c), n.pod('replay'), PORTS.grpc);
      assert.ok(v.ok, `${c} -> replay:${PORTS.grpc}: ${v.why}`);
    }
  });

  it('trainer ranks reach each other on the rendezvous port and on ephemeral ports', async () => {
    const n = await net();
    for (const port of [PORTS.rendezvous, 40123]) {
      const v = n.allowed(n.pod('trainer'), n.pod('trainer'), port);
      assert.ok(v.ok, `trainer -> trainer:${port}: ${v.why}`);
    }
  });

  it('the helm test pod and a scraper in another namespace reach every metrics port', async () => {
    const n = await net();
    const scraper = n.outsider({ 'app.kubernetes.io/name': 'prometheus' }, 'monitoring');
    for (const [c, port] of Object.entries(PORTS.metrics)) {
      for (const src of [n.pod('test'), scraper]) {
        const v = n.allowed(src, n.pod(c), port);
        assert.ok(v.ok, `${src.what} -> ${c}:${port}: ${v.why}`);
      }
    }
  });

  it('no other pod and no scraper reaches a probe port (the kubelet probes from the node)', async () => {
    const n = await net();
    const scraper = n.outsider({ 'app.kubernetes.io/name': 'prometheus' }, 'monitoring');
    const refused = [];
    for (const [c, port] of Object.entries(PORTS.probes)) {
      for (const src of [...n.pods, scraper]) {
        // A trainer rank reaches the other ranks on every port (Gloo, NCCL).
        if (c === 'trainer' && src.labels['app.kubernetes.io/component'] === 'trainer') continue;
        if (src === n.pod(c)) continue;
        const v = n.allowed(src, n.pod(c), port);
        if (v.ok) refused.push(`${src.what} -> ${c}:${port}: allowed (${v.why})`);
      }
    }
    assert.deepEqual(refused, []);
  });

  it('every pod whose egress is restricted may still resolve names (UDP and TCP 53)', async () => {
    const n = await net();
    for (const p of n.pods) {
      if (!n.selecting(p, 'Egress').length) continue;
      if (p.labels['app.kubernetes.io/component'] === 'redis') continue; // Redis connects nowhere
      for (const proto of ['UDP', 'TCP']) {
        const v = n.egressAnywhere(p, 53, proto);
        assert.ok(v.ok, `${p.what} -> DNS 53/${proto}: ${v.why}`);
      }
    }
  });

  it('every NetworkPolicy selects some pod of the chart', async () => {
    const n = await net();
    for (const pol of n.policies) {
      assert.ok(n.pods.some((p) => n.selecting(p, 'Ingress').includes(pol) || n.selecting(p, 'Egress').includes(pol)),
        `NetworkPolicy ${nameOf(pol)} selects no pod`);
    }
  });

  it('with redis.enabled=false, replay may reach the external Redis port', async () => {
    const n = await net(EXTERNAL);
    const v = n.egressAnywhere(n.pod('replay'), 6379, 'TCP', 'redis-ns', { app: 'redis' });
    assert.ok(v.ok, v.why);
    assert.ok(!n.policies.some((p) => nameOf(p) === `${F}-redis`), 'a Redis NetworkPolicy without Redis');
  });
});

describe('the NetworkPolicy evaluator itself', () => {
  const deploy = (component, ports) => ({
    apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: component },
    spec: { template: { metadata: { labels: { 'app.kubernetes.io/component': component } },
                        spec: { containers: [{ name: component, ports }] } } },
  });
  const policy = (name, component, spec) => ({
    apiVersion: 'networking.k8s.io/v1', kind: 'NetworkPolicy', metadata: { name },
    spec: { podSelector: { matchLabels: { 'app.kubernetes.io/component': component } }, ...spec },
  });
  const objs = [deploy('a', []), deploy('b', [{ name: 'db', containerPort: 6379 }]), deploy('c', [])];

  it('no policy: everything open; an ingress policy admits only its peers and ports', () => {
    let n = network(objs, NS);
    assert.ok(n.allowed(n.pod('a'), n.pod('b'), 6379).ok);
    n = network([...objs, policy('b', 'b', { policyTypes: ['Ingress'], ingress: [{
      from: [{ podSelector: { matchLabels: { 'app.kubernetes.io/component': 'a' } } }], ports: [{ port: 'db' }] }] })], NS);
    assert.ok(n.allowed(n.pod('a'), n.pod('b'), 6379).ok, 'named port');
    assert.ok(!n.allowed(n.pod('a'), n.pod('b'), 6380).ok, 'other port');
    assert.ok(!n.allowed(n.pod('c'), n.pod('b'), 6379).ok, 'other pod');
    assert.ok(!n.ingressAllowed(n.outsider({ 'app.kubernetes.io/component': 'a' }, 'elsewhere'), n.pod('b'), 6379).ok,
      'same labels in another namespace');
  });

  it('egress policies of the source count too; an empty `to` means anywhere', () => {
    const n = network([...objs, policy('a', 'a', { policyTypes: ['Egress'], egress: [{ ports: [{ port: 53, protocol: 'UDP' }] }] })], NS);
    assert.ok(!n.allowed(n.pod('a'), n.pod('b'), 6379).ok);
    assert.ok(n.egressAnywhere(n.pod('a'), 53, 'UDP').ok);
    assert.ok(!n.egressAnywhere(n.pod('a'), 53, 'TCP').ok);
  });
});
