'use strict';
// The trainer's rendezvous wiring: a StatefulSet of ranks behind a headless Service;
// WORLD_SIZE = trainer.replicas, MASTER_ADDR = rank 0's stable DNS name, MASTER_PORT 29500,
// the rank from the hostname ordinal (no RANK env), every rank started at once.
const { describe, it, before } = require('node:test');
const assert = require('node:assert/strict');
const { render, F, get, envOf, mainContainer, flagValues, selectsMap, nameOf } = require('./lib/chart');

const REPLICAS = [1, 3];
const withReplicas = (n) => render(['--set', `trainer.replicas=${n}`]);
const withOverride = () => render(['--set', 'fullnameOverride=lab', '--set', 'trainer.replicas=2']);
before(() => Promise.allSettled([...REPLICAS.map(withReplicas), withOverride()]));

const trainerEnv = (objs, fullname = F) =>
  envOf(mainContainer(get(objs, 'StatefulSet', `${fullname}-trainer`), 'trainer'));

describe('trainer rendezvous', () => {
  for (const n of REPLICAS) {
    it(`trainer.replicas=${n}: ${n} ranks and WORLD_SIZE=${n}`, async () => {
      const sts = get((await withReplicas(n)), 'StatefulSet', `${F}-trainer`);
      assert.equal(sts.spec.replicas, n);
      const env = trainerEnv((await withReplicas(n)));
      assert.ok(env.WORLD_SIZE, 'no WORLD_SIZE env');
      assert.equal(env.WORLD_SIZE.value, String(n));
    });
  }

  it('MASTER_ADDR is rank 0\'s name under the headless Service, MASTER_PORT 29500, no RANK', async () => {
    const env = trainerEnv((await withReplicas(3)));
    assert.equal(env.MASTER_ADDR && env.MASTER_ADDR.value, `${F}-trainer-0.${F}-trainer-headless`);
    assert.equal(env.MASTER_PORT && env.MASTER_PORT.value, '29500');
    assert.equal(env.RANK, undefined, 'RANK must come from the hostname ordinal, not a (shared) env value');
  });

  it('MASTER_ADDR follows fullnameOverride', async () => {
    const env = trainerEnv((await withOverride()), 'lab');
    assert.equal(env.MASTER_ADDR.value, 'lab-trainer-0.lab-trainer-headless');
    assert.equal(env.WORLD_SIZE.value, '2');
  });

  it('the headless Service: clusterIP None, publishNotReadyAddresses, selects the ranks', async () => {
    const objs = (await withReplicas(3));
    const svc = get(objs, 'Service', `${F}-trainer-headless`);
    const sts = get(objs, 'StatefulSet', `${F}-trainer`);
    assert.equal(svc.spec.clusterIP, 'None');
    assert.equal(svc.spec.publishNotReadyAddresses, true,
      'ranks must resolve each other before they are ready (rendezvous happens before readiness)');
    assert.ok(selectsMap(svc.spec.selector, sts.spec.template.metadata.labels),
      `${nameOf(svc)} does not select the trainer pods`);
  });

  it('the StatefulSet: serviceName is the headless Service, podManagementPolicy Parallel', async () => {
    const sts = get((await withReplicas(3)), 'StatefulSet', `${F}-trainer`);
    assert.equal(sts.spec.serviceName, `${F}-trainer-headless`);
    assert.equal(sts.spec.podManagementPolicy, 'Parallel');
  });

  it('checkpoints: PVC template `checkpoints` mounted at --checkpoint-dir', async () => {
    const sts = get((await withReplicas(1)), 'StatefulSet', `${F}-trainer`);
    assert.deepEqual((sts.spec.volumeClaimTemplates || []).map(nameOf), ['checkpoints']);
    const ctr = mainContainer(sts, 'trainer');
    const dir = flagValues(ctr, 'checkpoint-dir');
    assert.equal(dir.length, 1, 'no --checkpoint-dir');
    const mount = (ctr.volumeMounts || []).find((m) => m.name === 'checkpoints');
    assert.ok(mount, 'the checkpoints claim is not mounted');
    assert.equal(mount.mountPath.replace(/\/$/, ''), dir[0].replace(/\/$/, ''));
  });
});
