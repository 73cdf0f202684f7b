'use strict';
// The deployment test's autoscaling and spot steps (scenario.js runs them after the
// faults): self-play following the trainer through the chart's ScaledObject, run by the
// harness's KEDA and HPA (lib/autoscaler.js) against a real Prometheus (lib/prometheus.js);
// and a spot preemption of a self-play pod with the grace of helm/values-spot.yaml.
const fs = require('node:fs');
const path = require('node:path');
const { podman } = require('./lib/podman');
const { Autoscaler, settingsOf } = require('./lib/autoscaler');
const { sleep, quantityCpus } = require('./lib/cluster');

const AUTOSCALE_VALUES = path.join(__dirname, 'values-autoscaling.yaml');
const UP_BOUND_S = 150; // starving: at maxReplicas, every pod Ready
const DOWN_BOUND_S = 150; // idling: back at minReplicas
const IDLE_CPUS = 0.01; // the trainer ranks' CPU while made to idle (1% of a core each)

// A container's CPU limit changed in place, as a node's contention or a cgroup update
// would: podman update (crun/runc write the cgroup's cpu.max).
async function setCpus(c, podName, cpus) {
  const pod = c.mustPod(podName);
  const r = await podman(['update', '--cpus', String(cpus), pod.ctr]);
  if (r.code !== 0) throw new Error(`podman update --cpus ${cpus} ${pod.ctr}: ${r.stderr.trim()}`);
}

// The parts of the control law, for the table (the decisions use the chart's own query).
async function lawParts(prom, so, windowText) {
  const sel = `{namespace="${so.metadata.namespace || 'default'}"}`;
  const one = async (expr) => {
    const r = await prom.query(expr).catch(() => []);
    return r.length ? r[0].value : NaN;
  };
  const A = await one(`max(rate(chessrl_trainer_samples_total${sel}[${windowText}])) / (max(rate(chessrl_trainer_step_seconds_total${sel}[${windowText}])) > 0) or max(chessrl_trainer_samples_per_second${sel})`);
  const P = await one(`sum(rate(chessrl_selfplay_positions_total${sel}[${windowText}]))`);
  const C = await one(`max(chessrl_trainer_max_reuse${sel})`);
  const paused = await one(`max(chessrl_trainer_paused${sel})`);
  const reuse = await one(`max(rate(chessrl_trainer_samples_total${sel}[${windowText}])) / sum(rate(chessrl_replay_positions_stored_total${sel}[${windowText}]))`);
  return { A, P, C, D: A / P, paused, reuse };
}

const fmt = (x, d = 2) => (Number.isFinite(x) ? x.toFixed(d) : '-');

// Runs the autoscaler every pollingInterval until `done(state)` or the bound; returns the rows.
async function follow(ctx, a, so, phase, boundS, done) {
  const { c, prom, rows, t0 } = ctx;
  const target = a.s.target.name;
  const deadline = Date.now() + boundS * 1000;
  for (;;) {
    const tick = Date.now();
    const pods = c.podsOf('Deployment', target);
    const current = pods.length;
    const ready = pods.filter((p) => p.ready).length;
    const result = await prom.query(a.s.query);
    const value = a.metricValue(result);
    const d = a.decide({ value, current, ready, at: (tick - t0) / 1000 });
    const parts = await lawParts(prom, so, ctx.rateWindow);
    const row = { t: (tick - t0) / 1000, phase, ...parts, value, proposal: d.proposal, desired: d.desired, current, ready };
    rows.push(row);
    ctx.say(`   ${phase} t=${row.t.toFixed(0)} s: demanded reuse ${fmt(parts.D)} (cap ${fmt(parts.C, 0)}), query ${fmt(value)}, pods ${current} (${ready} Ready) -> ${d.desired}`);
    if (d.desired !== current) {
      ctx.scaled.push({ at: row.t, from: current, to: d.desired, value });
      await c.scale('Deployment', target, d.desired);
    }
    if (done({ current: c.podsOf('Deployment', target).length, desired: d.desired, pods: c.podsOf('Deployment', target) })) return row;
    if (Date.now() > deadline) throw new ctx.Failure(`${phase}: not done within ${boundS} s (pods ${current}, desired ${d.desired}, last query value ${fmt(value)})`);
    await sleep(Math.max(0, a.s.pollingInterval * 1000 - (Date.now() - tick)));
  }
}

async function autoscale(ctx) {
  const { c, F, check, figure, render, selfplayPods, trainerPod, checkAcked } = ctx;
  const before = new Map(selfplayPods().map((p) => [p, c.pods.get(p).startedAt]));
  // helm upgrade with selfplay.autoscaling.enabled: the Deployment loses its replicas field
  // (the autoscaler owns it), the ScaledObject appears; the pods are not touched.
  const manifests = await render(['--api-versions', 'keda.sh/v1alpha1', '-f', AUTOSCALE_VALUES]);
  const dep = manifests.find((o) => o.kind === 'Deployment' && o.metadata.name === `${F}-selfplay`);
  check(dep && dep.spec.replicas === undefined, 'with autoscaling on, the self-play Deployment still sets replicas');
  const so = manifests.find((o) => o.kind === 'ScaledObject');
  check(so, 'no ScaledObject rendered with selfplay.autoscaling.enabled and keda.sh/v1alpha1');
  check(so.spec.scaleTargetRef.name === `${F}-selfplay`, `the ScaledObject scales ${so.spec.scaleTargetRef.name}`);
  await c.upgrade(manifests);
  for (const [p, startedAt] of before) check(c.pods.get(p)?.startedAt === startedAt, `the upgrade touched ${p}`);
  const a = new Autoscaler(settingsOf(so));
  ctx.rateWindow = /\[([0-9a-z]+)\]/.exec(a.s.query)?.[1] || '1m';
  check(a.s.max > a.s.min && a.s.min >= 1, `min ${a.s.min}, max ${a.s.max}: the test needs room to move`);
  ctx.say(`   ScaledObject ${so.metadata.name}: ${a.s.min}..${a.s.max} pods, every ${a.s.pollingInterval} s, ${a.s.metricType} threshold ${a.s.threshold}, down window ${a.s.scaleDown.stabilizationWindowSeconds} s`);
  ctx.scaled = [];

  // 1. Starving: the trainer at full speed wants more than one pod makes.
  const tUp = Date.now();
  await follow(ctx, a, so, 'starve', UP_BOUND_S, (s) => s.current === a.s.max && s.pods.every((p) => p.ready));
  const upS = (Date.now() - tUp) / 1000;
  const ups = ctx.scaled.filter((e) => e.to > e.from);
  check(ups.length > 0 && ups.every((e) => e.value > 1.1), `scale-ups at query values ${ups.map((e) => fmt(e.value)).join(', ')} (each must be above 1 + tolerance)`);
  figure('autoscale: starving, 1 -> max pods after (s)', `${upS.toFixed(1)} (max ${a.s.max})`);
  // Give the new pods a few polls at max: the law holds them there while starving.
  await follow(ctx, a, so, 'starve', 3 * a.s.pollingInterval + 1, () => false).catch((e) => { if (!(e instanceof ctx.Failure)) throw e; });
  check(c.podsOf('Deployment', `${F}-selfplay`).length === a.s.max, 'self-play left max while the trainer still starved');

  // 2. Idling: the trainer ranks slowed to 1% of a core each take far fewer samples.
  for (const r of [0, 1]) await setCpus(c, trainerPod(r), IDLE_CPUS);
  const stopsBefore = c.stops.length;
  const tDown = Date.now();
  const nUp = ctx.scaled.length;
  try {
    await follow(ctx, a, so, 'idle', DOWN_BOUND_S, (s) => s.current === a.s.min);
  } finally {
    // Back to the limit the chart gives them.
    for (const r of [0, 1]) {
      const limit = c.mustPod(trainerPod(r)).container.resources?.limits?.cpu;
      await setCpus(c, trainerPod(r), limit ? quantityCpus(limit) : 0);
    }
  }
  const downS = (Date.now() - tDown) / 1000;
  const downs = ctx.scaled.slice(nUp).filter((e) => e.to < e.from);
  check(downs.length > 0 && downs.every((e) => e.value < 0.9), `scale-downs at query values ${downs.map((e) => fmt(e.value)).join(', ')} (each must be below 1 - tolerance)`);
  figure('autoscale: idling, max -> min pods after (s)', `${downS.toFixed(1)} (min ${a.s.min}, down window ${a.s.scaleDown.stabilizationWindowSeconds} s)`);
  // Nothing acknowledged lost on the way down: every stop flushed within its grace.
  const stopped = c.stops.slice(stopsBefore);
  check(stopped.length === a.s.max - a.s.min, `${stopped.length} pods stopped while idling (${a.s.max} -> ${a.s.min})`);
  for (const s of stopped) {
    check(s.seconds <= s.grace && s.exitCode === 0, `${s.pod} stopped in ${s.seconds.toFixed(1)} s with exit ${s.exitCode} (grace ${s.grace} s)`);
    const log = fs.readFileSync(path.join(c.dataDir, 'logs', `${s.pod}.log`), 'utf8');
    const m = /done: .* (\d+) shed, (\d+) could not be pushed/.exec(log);
    check(m && m[1] === '0' && m[2] === '0', `${s.pod} lost games on scale-down: ${m ? m[0] : 'no "done:" line'}`);
  }
  const acked = await checkAcked('after autoscaling down');

  // helm upgrade back to the values without autoscaling: replicas 1 again, pods untouched.
  await c.upgrade(await render());
  check(selfplayPods().length === 1, `${selfplayPods().length} self-play pods after turning autoscaling off`);
  figure('autoscale: stop times on scale-down (s)', stopped.map((s) => s.seconds.toFixed(1)).join(', '));
  return `starving: 1 -> ${a.s.max} pods in ${upS.toFixed(0)} s; idling: ${a.s.max} -> ${a.s.min} in ${downS.toFixed(0)} s; ${ctx.scaled.length} scale events at query values ${ctx.scaled.map((e) => `${e.from}->${e.to}@${fmt(e.value)}`).join(', ')}; ${stopped.length} pods stopped within grace, nothing lost; ${acked}`;
}

function autoscaleTable(rows) {
  return rows.map((r) => [r.t.toFixed(0), r.phase, fmt(r.A, 0), fmt(r.P, 1), fmt(r.D), fmt(r.C, 0),
    fmt(r.reuse), fmt(r.paused, 0), fmt(r.value), r.proposal, r.desired, `${r.current} (${r.ready})`]);
}
const AUTOSCALE_HEADER = ['t (s)', 'phase', 'trainer samples/s', 'positions/s', 'demanded reuse', 'cap',
  'reuse', 'paused', 'query', 'proposal', 'desired', 'pods (Ready)'];

// A spot preemption: the node's graceful shutdown deletes the pod with its grace period
// (values-spot.yaml: 15 s), the Deployment starts a replacement elsewhere.
async function preempt(ctx, { hungReplay }) {
  const { c, F, check, figure, prom, selfplayPods, replayPod, checkAcked, PORTS, obs } = ctx;
  const pod = selfplayPods()[0];
  const p = c.mustPod(pod);
  const grace = p.spec.terminationGracePeriodSeconds;
  check(grace === 15, `self-play's terminationGracePeriodSeconds is ${grace}, not values-spot.yaml's 15`);
  let replayPid;
  if (hungReplay) {
    // Replay stops answering: the finished games stay in self-play's buffer and the stop's
    // flush cannot push them. What a preemption then loses must be counted and alerted on.
    replayPid = await c.pid(replayPod());
    process.kill(replayPid, 'SIGSTOP');
    await c.waitFor(async () => (await obs.scrapeMetric(c, pod, PORTS.selfplay, 'chessrl_selfplay_games_buffered')) > 0, 30000, `${pod} holding finished games`);
  } else {
    const size0 = obs.ackedLogBytes(c, ctx.ACKED_LOG);
    await c.waitFor(() => obs.ackedLogBytes(c, ctx.ACKED_LOG) > size0, 30000, 'a new acknowledged game');
  }
  let rec;
  try {
    rec = await c.deletePod(pod);
  } finally {
    if (replayPid) process.kill(replayPid, 'SIGCONT');
  }
  await c.reconcile(c.mustFind('Deployment', `${F}-selfplay`, 'preempt'));
  check(rec.seconds <= grace && rec.exitCode === 0, `${pod} stopped in ${rec.seconds.toFixed(1)} s with exit ${rec.exitCode} (grace ${grace} s)`);
  const log = fs.readFileSync(path.join(c.dataDir, 'logs', `${pod}.log`), 'utf8');
  const m = /done: .* (\d+) could not be pushed/.exec(log);
  check(m, `${pod}: no "done: ..." line`);
  const lost = Number(m[1]);
  // What Prometheus saw of the stopped pod's counter (its last scrape).
  const seen = await prom.query(`max_over_time(chessrl_selfplay_games_lost_total{pod="${pod}"}[5m])`);
  check(seen.length === 1, `Prometheus has no chessrl_selfplay_games_lost_total for ${pod}`);
  check(seen[0].value === lost, `Prometheus saw ${seen[0].value} games lost by ${pod}, its log says ${lost}`);
  let alert = 'not firing';
  if (hungReplay) {
    check(lost > 0, `${pod} lost no game with replay hung (its flush pushed into a stopped process?)`);
    await c.waitFor(async () => (await prom.alerts()).some((x) => x.name === 'ChessRLSelfplayGamesLostOnStop'), 30000, 'ChessRLSelfplayGamesLostOnStop pending or firing');
    alert = (await prom.alerts()).filter((x) => x.name === 'ChessRLSelfplayGamesLostOnStop').map((x) => x.state).join(', ');
  } else {
    check(lost === 0, `${pod} lost ${lost} games on a preemption with replay up`);
    const firing = (await prom.alerts()).filter((x) => x.name === 'ChessRLSelfplayGamesLostOnStop');
    check(firing.length === 0, 'ChessRLSelfplayGamesLostOnStop is pending or firing with nothing lost');
  }
  const next = selfplayPods();
  check(next.length === 1 && next[0] !== pod, `no replacement for ${pod}: ${next.join(', ')}`);
  await c.waitFor(() => c.pods.get(next[0]).ready, 120000, `${next[0]} Ready`);
  const acked = await checkAcked(`after preempting ${pod}`);
  const label = hungReplay ? 'spot preemption, replay hung' : 'spot preemption';
  figure(`${label}: stop (s) / lost games / alert`, `${rec.seconds.toFixed(1)} (grace ${grace}) / ${lost} / ${alert}`);
  return `${pod} stopped in ${rec.seconds.toFixed(1)} s (grace ${grace} s), exit 0, ${lost} finished games lost (Prometheus saw ${seen[0].value}), ChessRLSelfplayGamesLostOnStop ${alert}; replacement ${next[0]} Ready; ${acked}`;
}

module.exports = { autoscale, preempt, autoscaleTable, AUTOSCALE_HEADER };
