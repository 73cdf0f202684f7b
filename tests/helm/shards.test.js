'use strict';
// Redis shards (redis.shards, redis.external.shards): one shard renders exactly what the
// chart rendered before shards existed (replay's --redis-host/--redis-port); N shards make
// the StatefulSet N pods, each with its own claim, and give replay --redis-shards with every
// pod's address through the headless Service, shard 0 first; an external list likewise;
// the NetworkPolicy opens every external shard's port; bad values are refused naming the key.
const { describe, it, before } = require('node:test');
const assert = require('node:assert/strict');
const {
  render, prefetch, helm, F, get, mainContainer, optionValue, configOf, flagValues, diffRenders, KUBE_VERSION,
} = require('./lib/chart');
const { network } = require('./lib/netpol');
const { chartDir } = require('./lib/tools');

const set = (...kv) => kv.flatMap((s) => ['--set', s]);
const THREE = set('redis.shards=3');
const ONE = set('redis.shards=1');
const EXTERNAL = set('redis.enabled=false', 'redis.auth.existingSecret=team-redis',
  'redis.external.shards[0].host=redis-a.data.svc', 'redis.external.shards[1].host=redis-b.data.svc',
  'redis.external.shards[1].port=6390', 'redis.external.shards[2].host=redis-c.data.svc',
  'redis.external.shards[2].port=6391');
const EXTERNAL_ONE = set('redis.enabled=false', 'redis.auth.existingSecret=team-redis',
  'redis.external.shards[0].host=redis-a.data.svc', 'redis.external.shards[0].port=6380');
before(() => prefetch([[]], [ONE], [THREE], [EXTERNAL], [EXTERNAL_ONE]));

const replay = (objs) => mainContainer(get(objs, 'Deployment', `${F}-replay`), 'replay');
const redisSts = (objs) => get(objs, 'StatefulSet', `${F}-redis`);
// A generated secret (the Redis password, the bearer tokens): differs between any two renders.
const generated = (d) => d.startsWith(`Secret/${F}-redis: data.redis-password:`) ||
  /^Secret\/[^:]+-auth: data\.(selfplay|trainer|evaluator): /.test(d);

describe('redis.shards=1 (the default)', () => {
  it('renders exactly what the defaults render: only the generated secrets differ', async () => {
    const d = diffRenders(await render([]), await render(ONE)).filter((x) => !generated(x));
    assert.deepEqual(d, []);
  });

  it('replay gets --redis-host F-redis and --redis-port 6379, and no --redis-shards', async () => {
    const objs = await render([]);
    const c = replay(objs);
    const config = configOf(objs, 'replay');
    assert.equal(optionValue(c, 'redis-host', config), `${F}-redis`);
    assert.equal(optionValue(c, 'redis-port', config), '6379');
    assert.deepEqual(flagValues(c, 'redis-shards'), []);
    assert.equal(redisSts(objs).spec.replicas, 1);
  });
});

describe('redis.shards=3', () => {
  it('the Redis StatefulSet has 3 replicas, each with its own claim (volumeClaimTemplate data)', async () => {
    const sts = redisSts(await render(THREE));
    assert.equal(sts.spec.replicas, 3);
    assert.equal(sts.spec.serviceName, `${F}-redis-headless`);
    assert.deepEqual(sts.spec.volumeClaimTemplates.map((t) => t.metadata.name), ['data']);
    // No data volume in the pod template: a shared one would put every shard on one claim.
    assert.ok(!sts.spec.template.spec.volumes.some((v) => v.name === 'data'), 'a data volume shared by every pod');
  });

  it('replay gets --redis-shards with every pod\'s address through the headless Service, shard 0 first', async () => {
    const objs = await render(THREE);
    const c = replay(objs);
    const config = configOf(objs, 'replay');
    const want = [0, 1, 2].map((i) => `${F}-redis-${i}.${F}-redis-headless:6379`).join(',');
    assert.deepEqual(flagValues(c, 'redis-shards'), [want]);
    assert.equal(optionValue(c, 'redis-host', config), undefined, '--redis-host beside --redis-shards');
    assert.equal(optionValue(c, 'redis-port', config), undefined, '--redis-port beside --redis-shards');
    // The headless Service exists and selects the Redis pods on that port.
    const svc = get(objs, 'Service', `${F}-redis-headless`);
    assert.equal(svc.spec.clusterIP, 'None');
    assert.deepEqual(svc.spec.ports.map((p) => p.port), [6379]);
  });

  it('changes only the Redis StatefulSet\'s replicas and replay\'s Redis flags', async () => {
    const d = diffRenders(await render([]), await render(THREE)).filter((x) => !generated(x));
    const stray = d.filter((x) => x !== `StatefulSet/${F}-redis: spec.replicas: 1 -> 3` &&
      !x.startsWith(`Deployment/${F}-replay: spec.template.spec.containers[0].args`));
    assert.deepEqual(stray, []);
  });

  it('every shard reads the one password Secret, and the redis.port moves every address', async () => {
    const objs = await render([...THREE, ...set('redis.port=6400')]);
    const env = mainContainer(redisSts(objs), 'redis').env;
    assert.ok(env.some((e) => e.name === 'REDIS_PASSWORD' && e.valueFrom.secretKeyRef.name === `${F}-redis`));
    const [list] = flagValues(replay(objs), 'redis-shards');
    assert.deepEqual(list.split(',').map((a) => a.split(':')[1]), ['6400', '6400', '6400']);
  });

  it('the NetworkPolicy lets replay reach every shard and nothing else reach any', async () => {
    const n = network(await render(THREE), 'chess-rl');
    assert.ok(n.allowed(n.pod('replay'), n.pod('redis'), 6379).ok);
    assert.ok(!n.ingressAllowed(n.pod('selfplay'), n.pod('redis'), 6379).ok);
  });
});

describe('redis.external.shards', () => {
  it('replay gets --redis-shards host:port of each entry, in order (port 6379 when left out)', async () => {
    const objs = await render(EXTERNAL);
    assert.deepEqual(flagValues(replay(objs), 'redis-shards'),
      ['redis-a.data.svc:6379,redis-b.data.svc:6390,redis-c.data.svc:6391']);
    assert.equal(objs.find((o) => o.kind === 'StatefulSet' && o.metadata.name === `${F}-redis`), undefined);
  });

  it('one entry is one Redis: --redis-host and --redis-port, as with redis.external.host', async () => {
    const objs = await render(EXTERNAL_ONE);
    const c = replay(objs);
    const config = configOf(objs, 'replay');
    assert.equal(optionValue(c, 'redis-host', config), 'redis-a.data.svc');
    assert.equal(optionValue(c, 'redis-port', config), '6380');
    assert.deepEqual(flagValues(c, 'redis-shards'), []);
  });

  it('replay\'s NetworkPolicy lets it reach every shard\'s port', async () => {
    const n = network(await render(EXTERNAL), 'chess-rl');
    const outside = n.outsider({ app: 'redis' }, 'data');
    for (const port of [6379, 6390, 6391]) {
      const v = n.allowed(n.pod('replay'), outside, port);
      assert.ok(v.ok, `replay -> external shard port ${port}: ${v.why}`);
    }
    assert.ok(!n.allowed(n.pod('replay'), outside, 6392).ok, 'replay may reach a port no shard uses');
  });
});

describe('bad shard values are refused, naming the key', () => {
  const template = (args) => helm(['template', 'chess-rl', chartDir, '--kube-version', KUBE_VERSION, ...args]);
  const cases = [
    { args: set('redis.shards=0'), says: /redis\.shards: Must be greater than or equal to 1/ },
    { args: set('redis.shards=65'), says: /redis\.shards: Must be less than or equal to 64/ },
    { args: set('redis.shards=two'), says: /redis\.shards: Invalid type/ },
    { args: set('redis.enabled=false', 'redis.external.shards[0].host=a:6379'), says: /redis\.external\.shards\.0\.host: Does not match pattern/ },
    { args: set('redis.enabled=false', 'redis.external.shards[0].port=6379'), says: /redis\.external\.shards\.0: host is required/ },
    { args: set('redis.enabled=false', 'redis.external.shards[0].host=a', 'redis.external.shards[0].port=0'),
      says: /redis\.external\.shards\.0\.port: Must be greater than or equal to 1/ },
    { args: set('redis.enabled=false', 'redis.external.shards[0].host=a', 'redis.external.shards[0].db=1'),
      says: /redis\.external\.shards\.0: Additional property db is not allowed/ },
    { args: set('redis.external.shards[0].host=a'),
      says: /redis\.external\.shards is for an external Redis \(redis\.enabled=false\)/ },
    { args: set('redis.enabled=false', 'redis.auth.existingSecret=s', 'redis.external.host=a', 'redis.external.shards[0].host=b'),
      says: /redis\.external\.host and redis\.external\.shards are both set/ },
    { args: set('redis.enabled=false', 'redis.auth.existingSecret=s', 'redis.external.shards[0].host=a',
      'redis.external.shards[1].host=b', 'redis.external.shards[2].host=a', 'redis.external.shards[2].port=6379'),
      says: /redis\.external\.shards\[2\] \(a:6379\) repeats redis\.external\.shards\[0\]/ },
  ];
  for (const c of cases) {
    it(`refuses ${c.args.filter((a) => a !== '--set').join(' ')}`, async () => {
      const r = await template(c.args);
      assert.notEqual(r.code, 0, 'rendered');
      assert.match(r.stderr, c.says);
    });
  }
});
