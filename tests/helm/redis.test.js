'use strict';
// Redis and its password: the Secret F-redis (a random password made once, kept across
// upgrades with lookup), or redis.auth.existingSecret; nothing but secretKeyRefs in the pods;
// redis.enabled=false renders no Redis and points replay at redis.external.
const { describe, it, before } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const {
  render, prefetch, helm, F, get, find, nameOf, inventory, mainContainer, envOf, optionValue, configOf,
  chartFile, valuesSets, yaml,
} = require('./lib/chart');
const { chartDir } = require('./lib/tools');

const EXTERNAL = ['--set', 'redis.enabled=false', '--set', 'redis.external.host=redis.example.internal',
                  '--set', 'redis.external.port=6380'];
const EXISTING = ['--set', 'redis.auth.existingSecret=team-redis', '--set', 'redis.auth.existingSecretPasswordKey=pw'];
before(() => prefetch([[]], [EXISTING], [[...EXTERNAL, ...EXISTING]], [valuesSets()['external-redis']]));

const replayContainer = (objs) => mainContainer(get(objs, 'Deployment', `${F}-replay`), 'replay');
const secretRef = (e) => e && e.valueFrom && e.valueFrom.secretKeyRef;
// Every secretKeyRef of a workload's containers: ["name/key", ...]
const secretRefsOf = (w) => w.spec.template.spec.containers.concat(w.spec.template.spec.initContainers || [])
  .flatMap((c) => (c.env || []).map(secretRef).filter(Boolean).map((r) => `${r.name}/${r.key}`));

describe('the Redis password', () => {
  it('the Secret F-redis holds a non-empty redis-password', async () => {
    for (const objs of [await render([]), await render(['--set', 'redis.persistence.enabled=false'])]) {
      const s = get(objs, 'Secret', `${F}-redis`);
      const b64 = (s.data || {})['redis-password'];
      assert.ok(b64, 'no data.redis-password');
      assert.ok(Buffer.from(b64, 'base64').toString().length >= 16, 'the password is shorter than 16 characters');
    }
  });

  it('the Secret\'s template keeps an existing password with lookup', () => {
    // The template of Secret F-redis (the chart has others, such as F-auth).
    const source = fs.readdirSync(chartFile('templates'), { recursive: true })
      .filter((f) => /\.(ya?ml|tpl)$/.test(f))
      .map((f) => fs.readFileSync(chartFile('templates', f), 'utf8'))
      .find((t) => /kind:\s*Secret\b/.test(t) && /redis-password:/.test(t));
    assert.ok(source, 'no template with kind: Secret and redis-password');
    assert.match(source, /lookup\s+"v1"\s+"Secret"/, 'the Secret template does not lookup the existing Secret');
  });

  it('replay reads it from the Secret (CHESSRL_REDIS_PASSWORD secretKeyRef), as does Redis', async () => {
    const objs = await render([]);
    const env = envOf(replayContainer(objs));
    assert.deepEqual(secretRef(env.CHESSRL_REDIS_PASSWORD), { name: `${F}-redis`, key: 'redis-password' });
    assert.ok(secretRefsOf(get(objs, 'StatefulSet', `${F}-redis`)).includes(`${F}-redis/redis-password`),
      'the Redis StatefulSet does not read the password from the Secret');
  });

  it('with redis.auth.existingSecret, the pods read that Secret and the chart makes none', async () => {
    const objs = await render(EXISTING);
    assert.equal(find(objs, 'Secret', `${F}-redis`), undefined, 'Secret F-redis rendered anyway');
    assert.deepEqual(secretRef(envOf(replayContainer(objs)).CHESSRL_REDIS_PASSWORD), { name: 'team-redis', key: 'pw' });
    const redisRefs = secretRefsOf(get(objs, 'StatefulSet', `${F}-redis`));
    assert.ok(redisRefs.length > 0 && redisRefs.every((r) => r === 'team-redis/pw'), `Redis reads ${redisRefs}`);
  });
});

describe('in-cluster and external Redis', () => {
  it('by default replay uses the in-cluster Redis: --store redis, host F-redis, port 6379', async () => {
    const objs = await render([]);
    const c = replayContainer(objs);
    const config = configOf(objs, 'replay');
    assert.equal(optionValue(c, 'store', config), 'redis');
    assert.equal(optionValue(c, 'redis-host', config), `${F}-redis`);
    assert.equal(optionValue(c, 'redis-port', config), '6379');
  });

  it('redis.enabled=false renders no Redis objects and points replay at redis.external', async () => {
    const objs = await render([...EXTERNAL, ...EXISTING]);
    const redisObjs = objs.filter((o) => o.kind !== 'Secret' &&
      (nameOf(o) === `${F}-redis` || (o.metadata.labels || {})['app.kubernetes.io/component'] === 'redis'));
    assert.deepEqual(redisObjs.map((o) => `${o.kind}/${nameOf(o)}`), [], 'Redis objects with redis.enabled=false');
    const c = replayContainer(objs);
    const config = configOf(objs, 'replay');
    assert.equal(optionValue(c, 'redis-host', config), 'redis.example.internal');
    assert.equal(optionValue(c, 'redis-port', config), '6380');
    assert.deepEqual(secretRef(envOf(c).CHESSRL_REDIS_PASSWORD), { name: 'team-redis', key: 'pw' });
  });

  it('redis.enabled=false without redis.external.host is refused, naming the value', async () => {
    const r = await helm(['template', 'chess-rl', chartDir, '--set', 'redis.enabled=false', ...EXISTING]);
    assert.notEqual(r.code, 0, 'rendered without an external host');
    assert.match(r.stderr, /redis\.external\.host/);
  });

  it('helm/ci/values-external-redis.yaml points replay at its external host', async () => {
    const args = valuesSets()['external-redis'];
    const file = yaml.load(fs.readFileSync(args[1], 'utf8'));
    assert.equal(file.redis.enabled, false, `${args[1]}: redis.enabled is not false`);
    const objs = await render(args);
    assert.equal(find(objs, 'StatefulSet', `${F}-redis`), undefined, `a Redis StatefulSet: ${inventory(objs)}`);
    const c = replayContainer(objs);
    const config = configOf(objs, 'replay');
    assert.equal(optionValue(c, 'redis-host', config), file.redis.external.host);
    assert.equal(optionValue(c, 'redis-port', config), String(file.redis.external.port || 6379));
  });
});

describe('redis.conf: no acknowledged game lost, no key evicted', () => {
  const conf = (objs) => Object.values(get(objs, 'ConfigMap', `${F}-redis`).data).join('\n');
  it('AOF with appendfsync always and maxmemory-policy noeviction by default', async () => {
    const text = conf(await render([]));
    assert.match(text, /^appendonly yes$/m);
    assert.match(text, /^appendfsync always$/m);
    assert.match(text, /^maxmemory-policy noeviction$/m);
  });
  it('redis.config cannot set maxmemory-policy (an allkeys-* policy evicts the window)', async () => {
    const r = await helm(['template', 'chess-rl', chartDir, '--set', 'redis.config.maxmemory-policy=allkeys-lru']);
    assert.notEqual(r.code, 0, 'rendered with redis.config.maxmemory-policy');
    assert.match(r.stderr, /redis\.config\.maxmemory-policy/);
  });
});
