'use strict';
// helm/values-spot.yaml: self-play on spot nodes, with a stop that fits the grace a spot
// node gives; every other pod kept off spot nodes. Where a pod may run is decided here the
// way the scheduler's filters decide it (nodeSelector, required node affinity, taints
// against tolerations), on made-up nodes: regular, GKE spot with and without the taint GKE
// puts on tainted spot pools, GKE preemptible.
const { describe, it, before } = require('node:test');
const assert = require('node:assert/strict');
const {
  render, prefetch, valuesSets, setLabel, podTemplates, workloadOf, configOf, mainContainer,
} = require('./lib/chart');

const SPOT_TAINT = { key: 'cloud.google.com/gke-spot', value: 'true', effect: 'NoSchedule' };
const AKS_SPOT_TAINT = { key: 'kubernetes.azure.com/scalesetpriority', value: 'spot', effect: 'NoSchedule' };
const node = (name, labels, taints = []) => ({
  name, labels: { 'kubernetes.io/os': 'linux', 'kubernetes.io/hostname': name, ...labels }, taints,
});
const REGULAR = node('regular', {});
const SPOT_NODES = [
  node('gke-spot', { 'cloud.google.com/gke-spot': 'true' }),
  node('gke-spot-tainted', { 'cloud.google.com/gke-spot': 'true' }, [SPOT_TAINT]),
  node('gke-preemptible', { 'cloud.google.com/gke-preemptible': 'true' }),
];
// GKE's kubelet gives pods that are not system-critical the first 15 s of the 30 s after a
// preemption notice (graceful node shutdown), and cuts a longer grace to that.
const GKE_POD_SHUTDOWN_S = 15;

function tolerates(t, taint) {
  if (t.effect && t.effect !== taint.effect) return false;
  if (!t.key) return t.operator === 'Exists'; // no key: Exists tolerates every taint
  if (t.key !== taint.key) return false;
  return t.operator === 'Exists' || String(t.value || '') === String(taint.value || '');
}
function matchesExpression(labels, { key, operator, values = [] }) {
  const has = Object.prototype.hasOwnProperty.call(labels, key);
  switch (operator) {
    case 'In': return has && values.includes(labels[key]);
    case 'NotIn': return !has || !values.includes(labels[key]);
    case 'Exists': return has;
    case 'DoesNotExist': return !has;
    case 'Gt': return has && Number(labels[key]) > Number(values[0]);
    case 'Lt': return has && Number(labels[key]) < Number(values[0]);
    default: throw new Error(`unknown node selector operator ${operator}`);
  }
}
// Why the scheduler would not put a pod with this spec on the node; null: it fits.
function whyNot(spec, n) {
  for (const [k, v] of Object.entries(spec.nodeSelector || {})) {
    if (n.labels[k] !== v) return `nodeSelector ${k}=${v}`;
  }
  const required = (((spec.affinity || {}).nodeAffinity || {}).requiredDuringSchedulingIgnoredDuringExecution);
  if (required) {
    // The terms are ORed, the expressions of a term ANDed; a term without expressions matches nothing.
    const ok = (required.nodeSelectorTerms || []).some((term) => (term.matchExpressions || []).length > 0 &&
      term.matchExpressions.every((e) => matchesExpression(n.labels, e)));
    if (!ok) return 'required node affinity';
  }
  for (const taint of n.taints) {
    if (['NoSchedule', 'NoExecute'].includes(taint.effect) &&
        !(spec.tolerations || []).some((t) => tolerates(t, taint))) return `taint ${taint.key}=${taint.value}:${taint.effect}`;
  }
  return null;
}

const spot = () => valuesSets().spot;
const gpuSpot = () => [...valuesSets().gpu, ...valuesSets().spot];
before(() => prefetch([spot()], [gpuSpot()]));

describe(`spot values (${setLabel('spot')})`, () => {
  it('self-play: only on spot nodes, tainted or not, and tolerating the spot taint', async () => {
    const spec = workloadOf(await render(spot()), 'selfplay').spec.template.spec;
    assert.equal((spec.nodeSelector || {})['cloud.google.com/gke-spot'], 'true', JSON.stringify(spec.nodeSelector));
    assert.ok((spec.tolerations || []).some((t) => tolerates(t, SPOT_TAINT)),
      `no toleration of ${JSON.stringify(SPOT_TAINT)}: ${JSON.stringify(spec.tolerations)}`);
    for (const n of SPOT_NODES.filter((x) => x.labels['cloud.google.com/gke-spot'])) {
      assert.equal(whyNot(spec, n), null, `self-play does not fit on ${n.name}`);
    }
    assert.notEqual(whyNot(spec, REGULAR), null, 'self-play fits on a regular node: the spot values do not hold it to spot');
  });

  it(`self-play: its stop fits in the grace (at most GKE's ${GKE_POD_SHUTDOWN_S} s), the flush inside it`, async () => {
    const objs = await render(spot());
    const grace = workloadOf(objs, 'selfplay').spec.template.spec.terminationGracePeriodSeconds;
    assert.equal(grace, 15, 'selfplay.terminationGracePeriodSeconds');
    assert.ok(grace <= GKE_POD_SHUTDOWN_S, `a grace of ${grace} s is cut to ${GKE_POD_SHUTDOWN_S} s on a preemption`);
    const flush = Number(configOf(objs, 'selfplay')['flush-timeout']);
    const wait = Number(configOf(objs, 'selfplay')['final-scrape-wait']);
    assert.equal(flush, 9, 'selfplay.config.flush-timeout');
    assert.equal(wait, 3, 'selfplay.config.final-scrape-wait');
    // The worst stop measured (docs/benchmarks.md, Self-play stop on a spot node): 0.2 s to
    // abandon the games in progress and 1.3 s to exit, around the flush and the wait.
    assert.ok(0.2 + flush + wait + 1.3 < grace, `a stop of ${flush} s flush and ${wait} s wait does not fit in the grace of ${grace} s`);
  });

  it('no other pod tolerates a spot taint or can land on a spot node, and each fits on a regular node', async () => {
    const objs = await render(spot());
    const others = podTemplates(objs).filter((p) => p.podMeta.labels['app.kubernetes.io/component'] !== 'selfplay');
    const components = others.map((p) => p.podMeta.labels['app.kubernetes.io/component']);
    for (const c of ['redis', 'replay', 'trainer', 'evaluator', 'web']) assert.ok(components.includes(c), `no ${c} pod rendered`);
    assert.ok(others.some((p) => p.owner.kind === 'Pod'), 'the helm test pod was not rendered');
    for (const p of others) {
      for (const taint of [SPOT_TAINT, AKS_SPOT_TAINT]) {
        const t = (p.podSpec.tolerations || []).find((x) => tolerates(x, taint));
        assert.equal(t, undefined, `${p.what} tolerates ${taint.key}: ${JSON.stringify(t)}`);
      }
      for (const n of SPOT_NODES) assert.notEqual(whyNot(p.podSpec, n), null, `${p.what} can land on ${n.name}`);
      assert.equal(whyNot(p.podSpec, REGULAR), null, `${p.what} fits on no regular node`);
    }
  });

  it('with values-gpu.yaml first: self-play keeps its GPU and the spot rules, the trainer stays off spot', async () => {
    const objs = await render(gpuSpot());
    const sp = workloadOf(objs, 'selfplay').spec.template.spec;
    assert.equal(sp.nodeSelector['nvidia.com/gpu.present'], 'true');
    assert.equal(sp.nodeSelector['cloud.google.com/gke-spot'], 'true');
    assert.ok(sp.tolerations.some((t) => t.key === 'nvidia.com/gpu'), 'the GPU toleration is gone');
    assert.ok(sp.tolerations.some((t) => tolerates(t, SPOT_TAINT)), 'the spot toleration is gone');
    assert.ok(mainContainer(workloadOf(objs, 'selfplay'), 'selfplay').resources.limits['nvidia.com/gpu'] >= 1);
    const gpuSpotNode = node('gpu-spot', { 'cloud.google.com/gke-spot': 'true', 'nvidia.com/gpu.present': 'true' },
      [SPOT_TAINT, { key: 'nvidia.com/gpu', value: 'present', effect: 'NoSchedule' }]);
    assert.equal(whyNot(sp, gpuSpotNode), null, 'self-play does not fit on a tainted GPU spot node');
    const tr = workloadOf(objs, 'trainer').spec.template.spec;
    assert.notEqual(whyNot(tr, gpuSpotNode), null, 'a trainer rank can land on a GPU spot node');
    assert.equal(whyNot(tr, node('gpu', { 'nvidia.com/gpu.present': 'true' })), null, 'a trainer rank fits on no regular GPU node');
  });
});

describe('the scheduling model of this test', () => {
  it('has teeth: an Exists toleration without key tolerates the spot taint, NotIn lets a node without the label pass', () => {
    assert.ok(tolerates({ operator: 'Exists' }, SPOT_TAINT));
    assert.ok(!tolerates({ key: SPOT_TAINT.key, operator: 'Equal', value: 'false' }, SPOT_TAINT));
    assert.ok(!tolerates({ key: SPOT_TAINT.key, operator: 'Exists', effect: 'NoExecute' }, SPOT_TAINT));
    assert.equal(whyNot({ tolerations: [{ operator: 'Exists' }] }, SPOT_NODES[1]), null);
    const notSpot = { affinity: { nodeAffinity: { requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: [
      { matchExpressions: [{ key: 'cloud.google.com/gke-spot', operator: 'NotIn', values: ['true'] }] }] } } } };
    assert.equal(whyNot(notSpot, REGULAR), null);
    assert.notEqual(whyNot(notSpot, SPOT_NODES[0]), null);
    assert.notEqual(whyNot({ affinity: { nodeAffinity: { requiredDuringSchedulingIgnoredDuringExecution: {
      nodeSelectorTerms: [{}] } } } }, REGULAR), null, 'a term without expressions matches no node');
  });
});
