#!/usr/bin/env node
'use strict';
// The shards scenario of the deployment test: the chart with redis.shards=2 (two Redis
// primaries; replay told both through the headless Service) run as podman containers
// (lib/cluster.js), then one shard broken at a time while self-play pushes:
//
//   1. install: every pod Ready, replay given both shards; games reach both shards; the
//      trainer steps.
//   2. kill -9 shard 1, right after an acknowledged push: it restarts on its address and
//      Ready, games reach it again; every acknowledged game is on exactly one shard.
//   3. shard 1 hangs (SIGSTOP, 20 s): replay reports it down (chessrl_replay_shard_up 0),
//      games keep reaching shard 0 and the trainer keeps stepping (sampling goes on from
//      shard 0); after SIGCONT games reach shard 1 again and every acknowledged game is
//      on exactly one shard.
//   4. kill -9 shard 0 (which also holds the model registry), likewise.
//
// Through every fault replay stays Ready (on a cluster an unready replay pod would leave
// its Service, and with it every shard).
//
//   node tests/deploy/shards.js [--keep] [--name NAME] [--data DIR]
//
// `tests/deploy/run.sh --shards` builds what it needs first. Prints each step, a summary table and the figures; exits 1 when a step failed.
const { execFile } = require('node:child_process');
const path = require('node:path');
const { Cluster, sleep } = require('./lib/cluster');
const obs = require('./lib/observe');
const tools = require('../helm/lib/tools');

const yaml = tools.requireTool('js-yaml');

const args = process.argv.slice(2);
const opt = (name, def) => { const i = args.indexOf(name); return i >= 0 ? args[i + 1] : def; };
const NAME = opt('--name', 'chessrl-deploy-shards');
const DATA = path.resolve(opt('--data', path.join(tools.repoRoot, 'build', 'deploy-test-shards')));
const KEEP = args.includes('--keep');

const RELEASE = 'chess-rl';
const F = 'chess-rl';
const VALUES = [path.join(tools.chartDir, 'ci', 'values-tiny.yaml'), path.join(tools.chartDir, 'values-spot.yaml'),
  path.join(__dirname, 'values.yaml'), path.join(__dirname, 'values-shards.yaml')];
const SHARDS = 2; // values-shards.yaml
const ACKED_LOG = 'acked-games.log'; // selfplay.config.acked-log in values.yaml, under /tmp
const KEY = 'chessrl'; // the replay service's key prefix (its default)
const PORTS = { replay: 9102, trainer: 9100 };

const READY_BOUND_S = 120; // install: every pod Ready
const FLOW_BOUND_S = 30; // a shard back: games reach it again
const RECOVER_BOUND_S = 60; // a killed shard restarted and Ready
const HANG_S = 20; // how long shard 1 hangs

const t0 = Date.now();
const elapsed = () => ((Date.now() - t0) / 1000).toFixed(1).padStart(6);
const say = (line) => console.log(`[${elapsed()}s] ${line}`);

function render() {
  const a = ['template', RELEASE, tools.chartDir, '--namespace', 'default'];
  for (const v of VALUES) a.push('-f', v);
  return new Promise((resolve, reject) => {
    execFile(tools.helmBin, a, { maxBuffer: 64 << 20 }, (err, stdout, stderr) => {
      if (err) return reject(new Error(`helm ${a.join(' ')}: ${stderr}`));
      resolve(yaml.loadAll(stdout).filter(Boolean));
    });
  });
}

// ---- the summary ---------------------------------------------------------------------
const steps = [];
const figures = [];
class Failure extends Error {}
function check(cond, message) {
  if (!cond) throw new Failure(message);
}
async function step(name, fn) {
  say(`== ${name}`);
  const s = { name, start: Date.now(), ok: false, detail: '' };
  steps.push(s);
  try {
    s.detail = (await fn()) || '';
    s.ok = true;
    say(`   ok: ${s.detail}`);
  } catch (e) {
    s.detail = e.message;
    say(`   FAILED: ${e.message}`);
    if (!(e instanceof Failure)) console.log(e.stack);
  }
  s.seconds = (Date.now() - s.start) / 1000;
  return s.ok;
}
const figure = (name, value) => figures.push([name, value]);
function table(rows, header) {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => String(r[i]).length)));
  const line = (r) => r.map((x, i) => String(x).padEnd(widths[i])).join('  ');
  return [line(header), line(widths.map((w) => '-'.repeat(w))), ...rows.map(line)].join('\n');
}

// ---- the pods and what they say ------------------------------------------------------
let c;
const shardPod = (i) => `${F}-redis-${i}`;
const replayPod = () => c.podsOf('Deployment', `${F}-replay`)[0].name;
const trainerPod = () => `${F}-trainer-0`;
const stat = async (i, field) => Number((await obs.redisOr(c, shardPod(i), ['HGET', `${KEY}:stats`, field], ['-1']))[0] || 0);
const gamesOn = (i) => stat(i, 'games_total');
const trainerStep = () => obs.scrapeMetric(c, trainerPod(), PORTS.trainer, 'chessrl_trainer_step');
async function shardUp(i) {
  const s = await obs.scrape(c, replayPod(), PORTS.replay).catch(() => []);
  return obs.metric(s, 'chessrl_replay_shard_up', { shard: String(i) });
}

// Every game a self-play pod saw acknowledged STORED is on exactly one shard: on none is a
// lost game, on both a game stored twice. The window is larger than the scenario's play
// (values-shards.yaml), so no game may have been evicted: each shard's games_total equals
// its window's games (checked too), and a game on no shard is lost, no excuse.
// Returns {acked, perShard, lost, twice}.
async function checkAcked(label) {
  const acked = obs.ackedGames(c, ACKED_LOG).filter((g) => g.status === 'stored');
  check(acked.length > 0, `${label}: no acknowledged game in the self-play pods' ${ACKED_LOG}`);
  const ids = [...new Set(acked.map((g) => g.id))];
  check(ids.length === acked.length, `${label}: ${acked.length - ids.length} game ids acknowledged STORED twice`);
  const input = ids.map((id) => `EXISTS ${KEY}:game:${id}`).join('\n') + '\n';
  const on = [];
  for (let i = 0; i < SHARDS; i++) {
    const [total, windowGames] = (await obs.redis(c, shardPod(i), ['HMGET', `${KEY}:stats`, 'games_total', 'window_games'])).map(Number);
    check(total === windowGames, `${label}: shard ${i} evicted games (${total} stored, ${windowGames} in its window): the window must hold the whole scenario`);
    const out = await obs.redis(c, shardPod(i), [], { input });
    check(out.length === ids.length, `${label}: shard ${i}: redis-cli answered ${out.length} of ${ids.length} EXISTS`);
    const odd = out.filter((l) => !['0', '1'].includes(l.trim()));
    check(odd.length === 0, `${label}: shard ${i}: EXISTS answered ${odd.length} times neither 0 nor 1: ${odd.slice(0, 3).join(' | ')}`);
    on.push(out.map((l) => l.trim() === '1'));
  }
  const count = ids.map((_, k) => on.filter((s) => s[k]).length);
  const lost = ids.filter((_, k) => count[k] === 0);
  const twice = ids.filter((_, k) => count[k] > 1);
  const perShard = on.map((s) => s.filter(Boolean).length);
  check(lost.length === 0, `${label}: ${lost.length} of ${ids.length} acknowledged games are on no shard (lost): ${lost.slice(0, 5).join(', ')}`);
  check(twice.length === 0, `${label}: ${twice.length} of ${ids.length} acknowledged games are on more than one shard: ${twice.slice(0, 5).join(', ')}`);
  return { acked: ids.length, perShard, lost: lost.length, twice: twice.length,
    text: `${ids.length} acknowledged games, each on exactly one shard (${perShard.map((n, i) => `shard ${i}: ${n}`).join(', ')}); 0 lost, 0 on two shards` };
}

// What self-play's log says since `from` (a length of it): the answers that refused some
// or all of a push (games kept and pushed again), and the games shed during outages.
const selfplayPod = () => c.podsOf('Deployment', `${F}-selfplay`)[0].name;
async function selfplaySince(from) {
  const log = (await c.logs(selfplayPod())).slice(from);
  const refused = (log.match(/could not store \d+ of \d+ games|cannot push to the replay service/g) || []).length;
  const shed = [...log.matchAll(/(\d+) shed during the outage/g)].reduce((a, m) => a + Number(m[1]), 0);
  return { refused, shed };
}

// Polls a pod's readiness every 250 ms until stopped: {polls, unready, stop()}. Replay must
// stay Ready while one shard is down: on a cluster an unready replay pod leaves its
// Service, and then no shard is reachable (the harness's Services ignore readiness, so
// this is checked here).
function watchReady(podName) {
  const w = { polls: 0, unready: 0, running: true };
  const loop = (async () => {
    while (w.running) {
      w.polls++;
      if (!c.pods.get(podName)?.ready) w.unready++;
      await sleep(250);
    }
  })();
  w.stop = async () => { w.running = false; await loop; return w; };
  return w;
}

// Right after an acknowledged push: watch the acknowledged-games logs grow, then act.
async function afterAnAck() {
  const size0 = obs.ackedLogBytes(c, ACKED_LOG);
  await c.waitFor(() => obs.ackedLogBytes(c, ACKED_LOG) > size0, 30000, 'a new acknowledged game', 2);
  return Date.now();
}

// Games reach shard i: its games_total grows past its first answer after `since`.
async function gamesReach(i, boundS, what) {
  let base = -1;
  const tStart = Date.now();
  await c.waitFor(async () => {
    const n = await gamesOn(i);
    if (n < 0) return false;
    if (base < 0) { base = n; return false; }
    return n > base;
  }, boundS * 1000, what, 250);
  return (Date.now() - tStart) / 1000;
}

// ---- the steps -----------------------------------------------------------------------
async function install() {
  const tApply = Date.now();
  await c.apply(await render());
  await c.waitFor(() => c.allReady(), READY_BOUND_S * 1000, `every pod Ready (${[...c.pods.values()].filter((p) => !p.ready).map((p) => p.name).join(', ')} not yet)`);
  const s = (Date.now() - tApply) / 1000;
  figure('install: every pod Ready after (s)', s.toFixed(1));
  const shards = c.podsOf('StatefulSet', `${F}-redis`).map((p) => p.name);
  check(shards.length === SHARDS, `${shards.length} Redis pods, expected ${SHARDS}: ${shards.join(', ')}`);
  const replay = c.mustPod(replayPod());
  const a = replay.container.args;
  const list = a[a.indexOf('--redis-shards') + 1];
  check(list === `${F}-redis-0.${F}-redis-headless:6379,${F}-redis-1.${F}-redis-headless:6379`, `replay's --redis-shards is ${list}`);
  return `${c.pods.size} pods Ready in ${s.toFixed(1)} s; replay --redis-shards ${list}`;
}

async function bothShardsFill() {
  await c.waitFor(async () => (await gamesOn(0)) > 0 && (await gamesOn(1)) > 0, 90000, 'games on both shards');
  const counts = [await gamesOn(0), await gamesOn(1)];
  let step0;
  await c.waitFor(async () => (step0 = await trainerStep()) > 0, 120000, 'the trainer stepping');
  const up = [await shardUp(0), await shardUp(1)];
  check(up[0] === 1 && up[1] === 1, `chessrl_replay_shard_up is ${up.join('/')} for shards 0/1, expected 1/1`);
  const r = await checkAcked('install');
  return `games on shard 0/1: ${counts.join('/')}; trainer at step ${step0}; chessrl_replay_shard_up 1/1; ${r.text}`;
}

async function killShard(i) {
  const pod = shardPod(i);
  const p = c.mustPod(pod);
  const restarts = p.restarts;
  const pid = await c.pid(pod);
  const logFrom = (await c.logs(selfplayPod())).length;
  const tAck = await afterAnAck();
  const replayReady = watchReady(replayPod());
  process.kill(pid, 'SIGKILL');
  const tKill = Date.now();
  const ackToKill = tKill - tAck;
  const other = 1 - i;
  const [ready, flowing, otherFlowing] = await Promise.all([
    c.waitFor(() => c.pods.get(pod).restarts > restarts && c.pods.get(pod).ready, RECOVER_BOUND_S * 1000, `${pod} restarted and Ready`)
      .then(() => (Date.now() - tKill) / 1000),
    gamesReach(i, FLOW_BOUND_S, `games reaching shard ${i} within ${FLOW_BOUND_S} s of the kill`).then(() => (Date.now() - tKill) / 1000),
    gamesReach(other, FLOW_BOUND_S, `games reaching shard ${other} within ${FLOW_BOUND_S} s of the kill`).then(() => (Date.now() - tKill) / 1000),
  ]);
  const rr = await replayReady.stop();
  check(rr.unready === 0, `replay was unready in ${rr.unready} of ${rr.polls} polls while shard ${i} was down (a cluster would take it out of its Service)`);
  const ipAfter = await c.refreshIP(c.mustPod(pod));
  check(ipAfter === p.podIP, `${pod} came back on ${ipAfter}, not its address ${p.podIP}`);
  await afterAnAck(); // a push after the restart, then every acknowledged game
  const r = await checkAcked(`after killing shard ${i}`);
  const sp = await selfplaySince(logFrom);
  check(sp.shed === 0, `self-play shed ${sp.shed} games while shard ${i} was down`);
  figure(`kill -9 shard ${i}: self-play answers refusing games (kept, pushed again) / games shed`, `${sp.refused} / ${sp.shed}`);
  figure(`kill -9 shard ${i}: Ready again / games on it again / on shard ${other} (s after kill)`, `${ready.toFixed(1)} / ${flowing.toFixed(1)} / ${otherFlowing.toFixed(1)}`);
  figure(`kill -9 shard ${i}: acknowledged games lost / on two shards`, `${r.lost} / ${r.twice} of ${r.acked}`);
  return `killed ${ackToKill} ms after an acknowledged push; Ready again after ${ready.toFixed(1)} s, games on it after ${flowing.toFixed(1)} s, on shard ${other} after ${otherFlowing.toFixed(1)} s; self-play: ${sp.refused} answers refusing games, kept and pushed again, 0 shed; replay Ready throughout (${rr.polls} polls); ${r.text}`;
}

async function hangShard(i) {
  const pod = shardPod(i);
  const pid = await c.pid(pod);
  const other = 1 - i;
  const logFrom = (await c.logs(selfplayPod())).length;
  await afterAnAck();
  const stepBefore = await trainerStep();
  const replayReady = watchReady(replayPod());
  process.kill(pid, 'SIGSTOP');
  const tStop = Date.now();
  let downAfter;
  let otherGames;
  let stepDuring;
  try {
    // replay reads each shard's stats every interval: the hung one is reported down.
    await c.waitFor(async () => (await shardUp(i)) === 0, (HANG_S - 2) * 1000, `chessrl_replay_shard_up{shard="${i}"} 0 while it hangs`);
    downAfter = (Date.now() - tStop) / 1000;
    // Pushes routed to shard 0 are stored meanwhile; the trainer samples on from it.
    otherGames = await gamesReach(other, HANG_S, `games reaching shard ${other} while shard ${i} hangs`);
    await c.waitFor(async () => (stepDuring = await trainerStep()) > stepBefore, Math.max(1000, HANG_S * 1000 - (Date.now() - tStop)),
      `the trainer stepping past ${stepBefore} while shard ${i} hangs`);
    await sleep(Math.max(0, HANG_S * 1000 - (Date.now() - tStop)));
  } finally {
    process.kill(pid, 'SIGCONT');
  }
  const tCont = Date.now();
  const rr = await replayReady.stop();
  check(rr.unready === 0, `replay was unready in ${rr.unready} of ${rr.polls} polls while shard ${i} hung (a cluster would take it out of its Service)`);
  await c.waitFor(async () => (await shardUp(i)) === 1, 30000, `chessrl_replay_shard_up{shard="${i}"} 1 after SIGCONT`);
  await gamesReach(i, FLOW_BOUND_S, `games reaching shard ${i} within ${FLOW_BOUND_S} s of SIGCONT`);
  const flowing = (Date.now() - tCont) / 1000;
  await afterAnAck();
  const r = await checkAcked(`after shard ${i} hung`);
  const sp = await selfplaySince(logFrom);
  check(sp.shed === 0, `self-play shed ${sp.shed} games while shard ${i} hung`);
  check(sp.refused > 0, `self-play's log shows no push refused while shard ${i} hung ${HANG_S} s: did any game go to it?`);
  figure(`shard ${i} hung ${HANG_S} s: reported down after / games on shard ${other} after (s)`, `${downAfter.toFixed(1)} / ${otherGames.toFixed(1)}`);
  figure(`shard ${i} hung: trainer steps during the hang`, `${stepBefore} -> ${stepDuring}`);
  figure(`shard ${i} hung: games on it again after SIGCONT (s)`, flowing.toFixed(1));
  figure(`shard ${i} hung: self-play answers refusing games (kept, pushed again) / games shed`, `${sp.refused} / ${sp.shed}`);
  figure(`shard ${i} hung: acknowledged games lost / on two shards`, `${r.lost} / ${r.twice} of ${r.acked}`);
  return `reported down after ${downAfter.toFixed(1)} s; games on shard ${other} after ${otherGames.toFixed(1)} s and the trainer stepped ${stepBefore} -> ${stepDuring} while it hung; games on it ${flowing.toFixed(1)} s after SIGCONT; self-play: ${sp.refused} answers refusing games, kept and pushed again, 0 shed; replay Ready throughout (${rr.polls} polls); ${r.text}`;
}

async function main() {
  say(`deployment test, shards scenario: cluster ${NAME}, data in ${DATA}`);
  await Cluster.clean(NAME, DATA);
  c = new Cluster({ name: NAME, dataDir: DATA, log: (l) => console.log(`           ${l}`) });
  await c.create();
  if (!await step(`install: ${SHARDS} Redis shards, every pod Ready`, install)) return false;
  if (!await step('install: games on both shards, the trainer steps', bothShardsFill)) return false;
  await step('fault: kill -9 shard 1 right after an acknowledged push', () => killShard(1));
  await step(`fault: shard 1 hangs (SIGSTOP ${HANG_S} s): shard 0 takes games, sampling goes on`, () => hangShard(1));
  await step('fault: kill -9 shard 0 (the registry\'s) right after an acknowledged push', () => killShard(0));
  return steps.every((s) => s.ok);
}

(async () => {
  let ok = false;
  try {
    ok = await main();
  } catch (e) {
    console.log(e.stack);
    steps.push({ name: 'harness', ok: false, seconds: 0, detail: e.message });
  } finally {
    if (c) {
      for (const p of c.pods.values()) await c.saveLogs(p).catch(() => {});
      if (!KEEP) await c.destroy().catch((e) => console.log(`cleanup: ${e.message}`));
      else c.stopped = true;
    }
  }
  console.log('\n# Deployment test (shards) summary\n');
  console.log(table(steps.map((s) => [s.name, s.seconds.toFixed(1), s.ok ? 'pass' : 'FAIL']), ['step', 'seconds', 'result']));
  const failed = steps.filter((s) => !s.ok);
  for (const s of failed) console.log(`\nFAILED ${s.name}: ${s.detail}`);
  console.log('\n# Figures\n');
  console.log(table(figures, ['figure', 'value']));
  console.log(`\n${steps.length - failed.length} passed, ${failed.length} failed in ${elapsed().trim()} s; pod logs in ${path.join(DATA, 'logs')}`);
  process.exit(ok && !failed.length ? 0 : 1);
})();
