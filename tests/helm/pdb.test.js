'use strict';
// PodDisruptionBudgets: one per long-running component that has a pdb block in values.yaml
// (at least replay, self-play and the trainer); each selects its component's pods and lets
// a node drain proceed (at least one voluntary disruption allowed at the default replicas).
const { describe, it } = require('node:test');
const assert = require('node:assert/strict');
const { render, F, get, nameOf, inventory, podTemplates, selects, defaultValues, ofKind } = require('./lib/chart');

// Pods a PDB lets go at once with `replicas` pods: Kubernetes rounds percentages up.
function allowedDisruptions(pdb, replicas) {
  const scaled = (v) => (typeof v === 'string' && v.endsWith('%')
    ? Math.ceil((parseInt(v, 10) * replicas) / 100) : Number(v));
  if (pdb.spec.maxUnavailable !== undefined) return scaled(pdb.spec.maxUnavailable);
  return replicas - scaled(pdb.spec.minAvailable);
}

describe('PodDisruptionBudgets', () => {
  it('exist for replay, self-play, the trainer, and every component with pdb.enabled', async () => {
    const objs = await render([]);
    const values = defaultValues();
    const want = new Set(['replay', 'selfplay', 'trainer']);
    for (const [c, v] of Object.entries(values)) if (v && v.pdb && v.pdb.enabled) want.add(c);
    const missing = [...want].filter((c) => !ofKind(objs, 'PodDisruptionBudget').some((p) => nameOf(p) === `${F}-${c}`));
    assert.deepEqual(missing, [], `no PodDisruptionBudget F-<component> for these; rendered: ${inventory(objs)}`);
  });

  it('each selects exactly one workload\'s pods, sets one of minAvailable/maxUnavailable, and allows a drain', async () => {
    const objs = await render([]);
    const pods = podTemplates(objs).filter((p) => p.longRunning);
    for (const pdb of ofKind(objs, 'PodDisruptionBudget')) {
      const selected = pods.filter((p) => selects(pdb.spec.selector, p.podMeta.labels));
      assert.equal(selected.length, 1, `${nameOf(pdb)} selects ${selected.map((p) => p.what).join(', ') || 'nothing'}`);
      assert.ok((pdb.spec.minAvailable === undefined) !== (pdb.spec.maxUnavailable === undefined),
        `${nameOf(pdb)}: set exactly one of minAvailable and maxUnavailable`);
      const replicas = selected[0].owner.spec.replicas === undefined ? 1 : selected[0].owner.spec.replicas;
      assert.ok(allowedDisruptions(pdb, replicas) >= 1,
        `${nameOf(pdb)} allows no eviction of ${selected[0].what} (${replicas} replicas): node drains would hang`);
    }
  });

  it('with trainer.replicas=3 the trainer PDB still allows a drain', async () => {
    const objs = await render(['--set', 'trainer.replicas=3']);
    const pdb = get(objs, 'PodDisruptionBudget', `${F}-trainer`);
    assert.ok(allowedDisruptions(pdb, 3) >= 1);
  });
});
