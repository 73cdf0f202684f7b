'use strict';
// helm/values-fleet.yaml, as its header says to install it (after values-gpu.yaml): 1,000
// GPU self-play pods, 25 Redis shards with appendfsync everysec and replay told every
// shard's address, the total window passed through unchanged, 8 replay pods, 64 trainer
// ranks with WORLD_SIZE 64; every object valid against the Kubernetes schemas at both
// versions the checks cover. (lint.test.js and k8s-schema.test.js render the file alone.)
const { describe, it, before } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const {
  render, prefetch, valuesSets, F, get, workloadOf, mainContainer, configOf, flagValues, optionValue,
  KUBE_VERSIONS, yaml,
} = require('./lib/chart');
const { validateObject } = require('./lib/k8s-validate');

const GPU = 'nvidia.com/gpu';
const args = () => [...valuesSets().gpu, ...valuesSets()['values-fleet.yaml']];
const fleetFile = () => yaml.load(fs.readFileSync(valuesSets()['values-fleet.yaml'][1], 'utf8'));
before(() => prefetch(...KUBE_VERSIONS.map((kubeVersion) => [args(), { kubeVersion }])));

describe('values-fleet.yaml after values-gpu.yaml', () => {
  it('the file is there and the header names both files in its install command', () => {
    assert.ok(valuesSets()['values-fleet.yaml'], 'helm/values-fleet.yaml is missing');
    const text = fs.readFileSync(valuesSets()['values-fleet.yaml'][1], 'utf8');
    assert.match(text, /helm install .* -f helm\/values-gpu\.yaml -f helm\/values-fleet\.yaml/);
  });

  it('1,000 self-play pods with one GPU each', async () => {
    const objs = await render(args());
    const sp = workloadOf(objs, 'selfplay');
    assert.equal(sp.spec.replicas, 1000);
    assert.equal(String(mainContainer(sp, 'selfplay').resources.limits[GPU]), '1');
  });

  it('Redis: one pod per shard, appendfsync everysec, and replay given every shard, shard 0 first', async () => {
    const objs = await render(args());
    const shards = fleetFile().redis.shards;
    assert.ok(shards > 1, `redis.shards is ${shards}`);
    assert.equal(get(objs, 'StatefulSet', `${F}-redis`).spec.replicas, shards);
    const conf = Object.values(get(objs, 'ConfigMap', `${F}-redis`).data).join('\n');
    assert.match(conf, /^appendfsync everysec$/m);
    assert.match(conf, /^maxmemory \S+$/m, 'no maxmemory: a shard would grow until the node kills it');
    const replay = mainContainer(get(objs, 'Deployment', `${F}-replay`), 'replay');
    const [list] = flagValues(replay, 'redis-shards');
    assert.deepEqual(list.split(','), [...Array(shards).keys()].map((i) => `${F}-redis-${i}.${F}-redis-headless:6379`));
  });

  it('replay: several pods, the window the file states (the total, not a shard\'s)', async () => {
    const objs = await render(args());
    const dep = get(objs, 'Deployment', `${F}-replay`);
    assert.equal(dep.spec.replicas, fleetFile().replay.replicas);
    assert.ok(dep.spec.replicas >= 4, `${dep.spec.replicas} replay pods for 1,000 producers`);
    const replay = mainContainer(dep, 'replay');
    assert.equal(optionValue(replay, 'window-positions', configOf(objs, 'replay')),
      String(fleetFile().replay.config['window-positions']));
  });

  it('the trainer: 64 ranks with GPUs, WORLD_SIZE 64', async () => {
    const sts = workloadOf(await render(args()), 'trainer');
    assert.equal(sts.spec.replicas, 64);
    const env = Object.fromEntries(mainContainer(sts, 'trainer').env.map((e) => [e.name, e.value]));
    assert.equal(env.WORLD_SIZE, '64');
    assert.equal(String(mainContainer(sts, 'trainer').resources.limits[GPU]), '1');
  });

  for (const kubeVersion of KUBE_VERSIONS) {
    it(`every object is valid at Kubernetes ${kubeVersion} (offline OpenAPI schemas, unknown fields included)`, async () => {
      const objs = await render(args(), { kubeVersion });
      assert.deepEqual(objs.flatMap((o) => validateObject(o)), []);
    });
  }
});
