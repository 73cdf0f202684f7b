'use strict';
// selfplay.autoscaling: self-play that follows the trainer's appetite. The ScaledObject
// (provider keda) and the HorizontalPodAutoscaler (provider hpa) take their fields from the
// values, the Deployment then has no replicas, the chart refuses keda without KEDA's API
// and bad values naming the key, and the control law (chess-rl.selfplay.scaleQuery),
// evaluated by promtool on made-up series, answers what docs/kubernetes.md says it does.
// NOTES.txt's text and prometheus-adapter's rule are checked in notes.test.js.
const { describe, it, before } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const {
  render, prefetch, helm, valuesSets, get, ofKind, workloadOf, defaultValues, F, RELEASE,
  KUBE_VERSION, KEDA_API, yaml,
} = require('./lib/chart');
const { chartDir } = require('./lib/tools');
const { validateObject } = require('./lib/k8s-validate');
const mon = require('./lib/monitoring');

const ON = ['--set', 'selfplay.autoscaling.enabled=true'];
const HPA = [...ON, '--set', 'selfplay.autoscaling.provider=hpa'];
const WITH_KEDA = { apiVersions: [KEDA_API] };
const KEDA_SET = valuesSets()['ci/values-autoscaling-keda.yaml'];
const HPA_SET = valuesSets()['ci/values-autoscaling-hpa.yaml'];
const fileValues = (args) => yaml.load(fs.readFileSync(args[1], 'utf8')).selfplay.autoscaling;
const defaults = () => defaultValues().selfplay.autoscaling;
const NAME = `${F}-selfplay`;

// The law as docs/kubernetes.md writes it, for release REL in namespace NS: what the chart
// must render, character for character.
function expectedQuery({ ns = 'chess-rl', release = RELEASE, window = '5m', low = 0.5, target = 0.75, high = 0.9 } = {}) {
  const m = `namespace="${ns}",app_kubernetes_io_instance="${release}"`;
  const A = `(max(rate(chessrl_trainer_samples_total{${m}}[${window}])) / (max(rate(chessrl_trainer_step_seconds_total{${m}}[${window}])) > 0) or max(chessrl_trainer_samples_per_second{${m}}))`;
  const P = `sum(rate(chessrl_selfplay_positions_total{${m}}[${window}]))`;
  const C = `max(chessrl_trainer_max_reuse{${m}})`;
  const D = `(${A} / ${P})`;
  return `(\n  ${D} / (${target} * ${C})\n    and on() (${D} > ${high} * ${C} or ${D} < ${low} * ${C})\n` +
    `    and on() (${P} > 0)\n    and on() (${C} > 0)\n)\nor on() vector(1)\n`;
}

before(() => prefetch([KEDA_SET], [[...ON], WITH_KEDA], [HPA_SET], [HPA], [[]], [[...ON, '--set', 'selfplay.replicas=5'], WITH_KEDA]));

describe('provider keda: the ScaledObject', () => {
  it(`its fields come from the values (${path.relative(path.dirname(chartDir), KEDA_SET[1])})`, async () => {
    const v = fileValues(KEDA_SET);
    const d = defaults();
    const objs = await render(KEDA_SET);
    const so = get(objs, 'ScaledObject', NAME);
    assert.equal(so.apiVersion, 'keda.sh/v1alpha1');
    assert.equal(so.metadata.namespace, 'chess-rl');
    assert.deepEqual(so.spec.scaleTargetRef, { apiVersion: 'apps/v1', kind: 'Deployment', name: NAME });
    assert.equal(workloadOf(objs, 'selfplay').kind, 'Deployment', 'scaleTargetRef names the self-play Deployment');
    assert.equal(so.spec.minReplicaCount, v.minReplicas);
    assert.equal(so.spec.maxReplicaCount, v.maxReplicas);
    assert.equal(so.spec.pollingInterval, v.pollingInterval);
    assert.equal(so.spec.cooldownPeriod, d.cooldownPeriod, 'not in the file: values.yaml\'s');
    assert.deepEqual(so.spec.advanced, { horizontalPodAutoscalerConfig: { behavior: {
      scaleUp: { stabilizationWindowSeconds: v.behavior.scaleUp.stabilizationWindowSeconds, policies: v.behavior.scaleUp.policies },
      scaleDown: { stabilizationWindowSeconds: v.behavior.scaleDown.stabilizationWindowSeconds },
    } } });
    assert.equal(so.spec.triggers.length, 1);
    const [t] = so.spec.triggers;
    assert.deepEqual(Object.keys(t).sort(), ['authenticationRef', 'metadata', 'metricType', 'type']);
    assert.equal(t.type, 'prometheus');
    assert.equal(t.metricType, 'Value');
    assert.deepEqual(t.authenticationRef, { name: v.authenticationRef });
    assert.deepEqual(t.metadata, {
      serverAddress: v.prometheus.serverAddress,
      query: expectedQuery({ window: v.rateWindow }),
      threshold: '1',
      ignoreNullValues: 'false',
    });
    assert.deepEqual(validateObject(so), []);
  });

  it('with the defaults: values.yaml\'s numbers, no policies, no authenticationRef', async () => {
    const d = defaults();
    const so = get(await render([...ON], WITH_KEDA), 'ScaledObject', NAME);
    assert.equal(so.spec.minReplicaCount, d.minReplicas);
    assert.equal(so.spec.maxReplicaCount, d.maxReplicas);
    assert.equal(so.spec.pollingInterval, d.pollingInterval);
    assert.equal(so.spec.cooldownPeriod, d.cooldownPeriod);
    assert.deepEqual(so.spec.advanced.horizontalPodAutoscalerConfig.behavior, {
      scaleUp: { stabilizationWindowSeconds: d.behavior.scaleUp.stabilizationWindowSeconds },
      scaleDown: { stabilizationWindowSeconds: d.behavior.scaleDown.stabilizationWindowSeconds },
    });
    assert.equal(so.spec.triggers[0].authenticationRef, undefined);
    assert.equal(so.spec.triggers[0].metadata.serverAddress, d.prometheus.serverAddress);
    assert.equal(so.spec.triggers[0].metadata.query, expectedQuery());
    assert.deepEqual(validateObject(so), []);
  });

  it('the band, the rate window, the namespace and the release reach the query', async () => {
    const objs = await render([...ON, '--set', 'selfplay.autoscaling.rateWindow=2m',
      '--set-json', 'selfplay.autoscaling.band={"low":0.3,"target":0.6,"high":0.8}'],
    { ...WITH_KEDA, namespace: 'ml', release: 'other' });
    const so = get(objs, 'ScaledObject', 'other-chess-rl-selfplay');
    assert.equal(so.spec.scaleTargetRef.name, 'other-chess-rl-selfplay');
    assert.equal(so.spec.triggers[0].metadata.query,
      expectedQuery({ ns: 'ml', release: 'other', window: '2m', low: 0.3, target: 0.6, high: 0.8 }));
  });

  it('nothing autoscales by default, even where KEDA runs; provider keda makes no HorizontalPodAutoscaler', async () => {
    const off = await render([], WITH_KEDA);
    assert.deepEqual(ofKind(off, 'ScaledObject', 'HorizontalPodAutoscaler').map((o) => o.metadata.name), []);
    assert.equal(workloadOf(off, 'selfplay').spec.replicas, defaultValues().selfplay.replicas);
    assert.deepEqual(ofKind(await render([...ON], WITH_KEDA), 'HorizontalPodAutoscaler'), []);
  });

  it('enabled without the keda.sh/v1alpha1 API: refused, naming the key and what to do', async () => {
    const r = await helm(['template', RELEASE, chartDir, '--kube-version', KUBE_VERSION, ...ON]);
    assert.notEqual(r.code, 0, 'rendered a self-play nobody scales');
    assert.match(r.stderr, /selfplay\.autoscaling\.enabled=true with provider keda needs KEDA's keda\.sh\/v1alpha1 API/);
    assert.match(r.stderr, /install KEDA, or render with --api-versions keda\.sh\/v1alpha1, or set selfplay\.autoscaling\.provider=hpa/);
    // provider hpa needs no KEDA
    await render(HPA);
  });
});

describe('the self-play Deployment', () => {
  it('has no replicas while an autoscaler owns the number (even with selfplay.replicas set)', async () => {
    for (const [args, opts] of [[[...ON, '--set', 'selfplay.replicas=5'], WITH_KEDA], [HPA_SET, {}], [KEDA_SET, {}]]) {
      const dep = workloadOf(await render(args, opts), 'selfplay');
      assert.equal(Object.prototype.hasOwnProperty.call(dep.spec, 'replicas'), false,
        `replicas ${dep.spec.replicas} with ${args.join(' ')}`);
    }
    const fixed = workloadOf(await render(['--set', 'selfplay.replicas=5']), 'selfplay');
    assert.equal(fixed.spec.replicas, 5);
  });
});

describe('provider hpa: an autoscaling/v2 HorizontalPodAutoscaler', () => {
  it(`is valid and takes its fields from the values (${path.relative(path.dirname(chartDir), HPA_SET[1])})`, async () => {
    const v = fileValues(HPA_SET);
    const d = defaults();
    const objs = await render(HPA_SET);
    assert.deepEqual(ofKind(objs, 'ScaledObject'), []);
    const hpa = get(objs, 'HorizontalPodAutoscaler', NAME);
    assert.equal(hpa.apiVersion, 'autoscaling/v2');
    assert.deepEqual(validateObject(hpa), []);
    assert.deepEqual(hpa.spec, {
      scaleTargetRef: { apiVersion: 'apps/v1', kind: 'Deployment', name: NAME },
      minReplicas: v.minReplicas,
      maxReplicas: v.maxReplicas,
      metrics: [{ type: 'External', external: {
        metric: { name: 'chessrl_selfplay_scale_ratio', selector: { matchLabels: { app_kubernetes_io_instance: RELEASE } } },
        target: { type: 'Value', value: '1' },
      } }],
      behavior: {
        scaleUp: { stabilizationWindowSeconds: d.behavior.scaleUp.stabilizationWindowSeconds },
        scaleDown: { stabilizationWindowSeconds: d.behavior.scaleDown.stabilizationWindowSeconds },
      },
    });
  });

  it('carries scaling policies when the values give some', async () => {
    const pol = [{ type: 'Percent', value: 50, periodSeconds: 120 }];
    const hpa = get(await render([...HPA, '--set-json', `selfplay.autoscaling.behavior.scaleDown.policies=${JSON.stringify(pol)}`]),
      'HorizontalPodAutoscaler', NAME);
    assert.deepEqual(hpa.spec.behavior.scaleDown.policies, pol);
    assert.equal(hpa.spec.behavior.scaleUp.policies, undefined);
    assert.deepEqual(validateObject(hpa), []);
  });

  it('minReplicas 0 is refused (an HPA keeps at least one pod), naming the key', async () => {
    const r = await helm(['template', RELEASE, chartDir, '--kube-version', KUBE_VERSION, ...HPA,
      '--set', 'selfplay.autoscaling.minReplicas=0']);
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /selfplay\.autoscaling\.minReplicas=0 needs provider keda/);
    const so = get(await render([...ON, '--set', 'selfplay.autoscaling.minReplicas=0'], WITH_KEDA), 'ScaledObject', NAME);
    assert.equal(so.spec.minReplicaCount, 0, 'KEDA takes 0');
  });
});

describe('values.schema.json refuses bad autoscaling values, naming the key', () => {
  const SCHEMA_ERROR = /values don't meet the specifications of the schema/;
  const cases = [
    [['--set', 'selfplay.autoscaling.provider=knative'], /selfplay\.autoscaling\.provider/, 'neither keda nor hpa'],
    [['--set', 'selfplay.autoscaling.minReplicas=-1'], /selfplay\.autoscaling\.minReplicas/, 'a negative floor'],
    [['--set', 'selfplay.autoscaling.maxReplicas=0'], /selfplay\.autoscaling\.maxReplicas/, 'a ceiling of 0'],
    [['--set', 'selfplay.autoscaling.pollingInterval=0'], /selfplay\.autoscaling\.pollingInterval/, 'polling every 0 s'],
    [['--set-json', 'selfplay.autoscaling.band.high=1.2'], /selfplay\.autoscaling\.band\.high/, 'above the cap'],
    [['--set-json', 'selfplay.autoscaling.band.low=0'], /selfplay\.autoscaling\.band\.low/, 'zero'],
    [['--set-string', 'selfplay.autoscaling.band.target=most'], /selfplay\.autoscaling\.band\.target/, 'not a number'],
    [['--set-string', 'selfplay.autoscaling.rateWindow=5'], /selfplay\.autoscaling\.rateWindow/, 'no unit'],
    [['--set', 'selfplay.autoscaling.rateWindow=5min'], /selfplay\.autoscaling\.rateWindow/, 'not a Prometheus duration'],
    [['--set', 'selfplay.autoscaling.rateWindow=0m'], /selfplay\.autoscaling\.rateWindow/, 'a zero window'],
    [['--set', 'selfplay.autoscaling.behavior.scaleUp.stabilizationWindowSeconds=3601'], /selfplay\.autoscaling\.behavior\.scaleUp\.stabilizationWindowSeconds/, 'above Kubernetes\' 3600'],
    [['--set-json', 'selfplay.autoscaling.behavior.scaleDown.policies=[{"type":"Pod","value":1,"periodSeconds":60}]'], /selfplay\.autoscaling\.behavior\.scaleDown\.policies\.0\.type/, 'a policy type that is neither Pods nor Percent'],
    [['--set', 'selfplay.autoscaling.prometheus.serverAddress=prometheus:9090'], /selfplay\.autoscaling\.prometheus\.serverAddress/, 'no http(s)://'],
    [['--set', 'selfplay.autoscaling.authenticationRef=My_Auth'], /selfplay\.autoscaling\.authenticationRef/, 'not an object name'],
    [['--set', 'selfplay.autoscaling.enabeld=true'], /enabeld/, 'a misspelt key'],
  ];
  for (const [args, names, why] of cases) {
    it(`${args.join(' ')} (${why})`, async () => {
      const r = await helm(['template', RELEASE, chartDir, '--kube-version', KUBE_VERSION, ...args]);
      assert.notEqual(r.code, 0, `helm accepted ${args.join(' ')}`);
      assert.match(r.stderr, SCHEMA_ERROR, `refused, but not by the schema:\n${r.stderr}`);
      assert.match(r.stderr, names, `the message does not name the key:\n${r.stderr}`);
    });
  }
  it('and the defaults and the shipped autoscaling files pass', async () => {
    await render([]);
    await render(KEDA_SET);
    await render(HPA_SET);
  });
});

// ---------------------------------------------------------------- the control law
// What an autoscaling/v2 HPA does with an External metric of target type Value 1:
// ceil(ready pods × value), unless the value is within its tolerance (0.1) of 1, then
// clamped to [min, max] (before the stabilization windows and policies).
function hpaDesired(ready, value, min, max) {
  const want = Math.abs(value - 1) <= 0.1 ? ready : Math.ceil(ready * value);
  return Math.min(max, Math.max(min, want));
}

// Made-up series for promtool: trainer ranks with samples per second A and cap C (null: no
// such series), self-play pods each making `pods[i]` positions per second. Series of
// another release and of another namespace ride along: the query must not see them.
function scrape({ A, C, pods, ranks = 2, paused = false }) {
  const series = [];
  const add = (metric, labels, values) => series.push({
    series: `${metric}{${Object.entries(labels).map(([k, v]) => `${k}="${v}"`).join(',')}}`, values });
  const own = (pod) => ({ namespace: 'ml', app_kubernetes_io_instance: RELEASE, pod });
  for (let r = 0; r < ranks; r++) {
    // Stepping all the time (a step second per second) at A samples per second, unless
    // paused for the whole window (no step: the rate is 0 and the last step's gauge counts).
    if (A !== null) {
      add('chessrl_trainer_samples_total', own(`chess-rl-trainer-${r}`), paused ? `${A * 60}x30` : `0+${A * 60}x30`);
      add('chessrl_trainer_step_seconds_total', own(`chess-rl-trainer-${r}`), paused ? '60x30' : '0+60x30');
      add('chessrl_trainer_samples_per_second', own(`chess-rl-trainer-${r}`), `${A}x30`);
    }
    if (C !== null) add('chessrl_trainer_max_reuse', own(`chess-rl-trainer-${r}`), `${C}x30`);
  }
  pods.forEach((p, i) => add('chessrl_selfplay_positions_total', own(`chess-rl-selfplay-${i}`), `0+${p * 60}x30`));
  add('chessrl_trainer_samples_per_second', { namespace: 'ml', app_kubernetes_io_instance: 'other', pod: 'other-trainer-0' }, '99999x30');
  add('chessrl_trainer_samples_total', { namespace: 'ml', app_kubernetes_io_instance: 'other', pod: 'other-trainer-0' }, '0+99999x30');
  add('chessrl_trainer_step_seconds_total', { namespace: 'ml', app_kubernetes_io_instance: 'other', pod: 'other-trainer-0' }, '0+1x30');
  add('chessrl_trainer_max_reuse', { namespace: 'ml', app_kubernetes_io_instance: 'other', pod: 'other-trainer-0' }, '100x30');
  add('chessrl_selfplay_positions_total', { namespace: 'elsewhere', app_kubernetes_io_instance: RELEASE, pod: 'x' }, '0+1x30');
  return series;
}

describe('the control law (chess-rl.selfplay.scaleQuery), evaluated by promtool', () => {
  // The worked example of docs/kubernetes.md: cap 4, band [2, 3.6], target 3.
  const cases = [
    { what: 'starving: the trainer takes 4,000/s, 4 pods make 250/s each: D = 4 > 3.6, r = 4/3',
      A: 4000, C: 4, pods: [250, 250, 250, 250], r: 4 / 3, hpa: [4, 6] },
    { what: 'in the band: 3,000/s from 1,000/s: D = 3, r = 1', A: 3000, C: 4, pods: [250, 250, 250, 250], r: 1, hpa: [4, 4] },
    { what: 'overproducing: 1,000/s from 6 pods making 1,500/s: D = 0.67 < 2, r = 2/9',
      A: 1000, C: 4, pods: [250, 250, 250, 250, 250, 250], r: 2 / 9, hpa: [6, 2] },
    { what: 'just inside the band\'s upper edge (D = 3.5 < 3.6): r = 1', A: 3500, C: 4, pods: [500, 500], r: 1 },
    { what: 'just outside it (D = 3.7): r = 3.7/3', A: 3700, C: 4, pods: [500, 500], r: 3.7 / 3 },
    { what: 'just inside the band\'s lower edge (D = 2.1 > 2): r = 1', A: 1050, C: 4, pods: [250, 250], r: 1 },
    { what: 'just outside it (D = 1.9): r = 1.9/3', A: 950, C: 4, pods: [250, 250], r: 1.9 / 3 },
    { what: 'a trainer that has not stepped (A = 0) reads as overproduction: r = 0, the floor',
      A: 0, C: 4, pods: [250, 250], r: 0, hpa: [2, 1] },
    { what: 'no positions (P = 0): r = 1', A: 4000, C: 4, pods: [0, 0], r: 1 },
    { what: 'no self-play series at all: r = 1', A: 4000, C: 4, pods: [], r: 1 },
    { what: 'no trainer series: r = 1', A: null, C: 4, pods: [250, 250], r: 1 },
    { what: 'no cap (C = 0): r = 1', A: 4000, C: 0, pods: [250, 250], r: 1 },
    { what: 'no cap series (a trainer without the gauge): r = 1', A: 4000, C: null, pods: [250, 250], r: 1 },
    { what: 'a trainer paused by its data gates for the whole window: its last step\'s speed counts (D = 4, r = 4/3)',
      A: 4000, C: 4, pods: [250, 250, 250, 250], r: 4 / 3, paused: true },
    { what: 'one trainer rank: the same as two', A: 4000, C: 4, pods: [250, 250, 250, 250], r: 4 / 3, ranks: 1 },
  ];
  let query;
  before(async () => {
    const so = get(await render([...ON], { ...WITH_KEDA, namespace: 'ml' }), 'ScaledObject', NAME);
    query = so.spec.triggers[0].metadata.query;
  });

  it('parses (promtool check rules)', async () => {
    const dir = mon.tempDir('chessrl-autoscaling-');
    const file = path.join(dir, 'law.yaml');
    fs.writeFileSync(file, yaml.dump({ groups: [{ name: 'law', rules: [{ record: 'chessrl:selfplay_scale_ratio', expr: query }] }] }));
    const r = await mon.runPromtool(['check', 'rules', file]);
    assert.equal(r.code, 0, `${r.stdout}${r.stderr}`);
  });

  it('answers r on each case (the value, scaled by 10^6 and rounded, exactly)', async () => {
    const dir = mon.tempDir('chessrl-autoscaling-');
    const file = path.join(dir, 'law.test.yaml');
    fs.writeFileSync(file, yaml.dump({
      evaluation_interval: '1m',
      tests: cases.map((c) => ({
        name: c.what, interval: '1m', input_series: scrape(c),
        promql_expr_test: [{ expr: `round(1e6 * (${query}))`, eval_time: '25m',
          exp_samples: [{ labels: '{}', value: Math.round(1e6 * c.r) }] }],
      })),
    }, { lineWidth: -1 }));
    const r = await mon.runPromtool(['test', 'rules', file]);
    assert.equal(r.code, 0, `promtool test rules:\n${r.stdout}${r.stderr}`);
  });

  it('an HPA on that answer goes 4 -> 6 pods when starving, 6 -> 2 when overproducing, stays in the band', () => {
    for (const c of cases.filter((x) => x.hpa)) {
      const [ready, want] = c.hpa;
      assert.equal(hpaDesired(ready, c.r, 1, 8), want, c.what);
    }
    // After either step the demanded reuse is inside the band: 4,000/1,500 = 2.67, 1,000/500 = 2.
    assert.ok(4000 / 1500 >= 2 && 4000 / 1500 <= 3.6);
    assert.ok(1000 / 500 >= 2 && 1000 / 500 <= 3.6);
  });

  it('the default band leaves no dead zone: its edges are beyond the HPA\'s 10% tolerance', () => {
    const { low, target, high } = defaults().band;
    assert.ok(high / target > 1.1, `high/target = ${high / target}`);
    assert.ok(low / target < 0.9, `low/target = ${low / target}`);
  });
});
