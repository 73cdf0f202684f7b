#!/usr/bin/env node
'use strict';
// The deployment test: the chart's `helm template` output run as podman containers of the
// built images (lib/cluster.js), installed, scaled, broken on purpose and reinstalled,
// with assertions at every step. tests/deploy/README.md says what is emulated and how.
//
//   node tests/deploy/scenario.js [--keep] [--name NAME] [--data DIR]
//
// Prints each step as it runs, then a summary table (step, seconds, pass/fail) and the
// figures; exits 1 when any step failed. The containers and network are removed at the
// end; the data directory (pod logs, claims) stays for inspection.
const { execFile } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');
const { Cluster, sleep } = require('./lib/cluster');
const obs = require('./lib/observe');
const probes = require('./lib/probes');
const { Prometheus } = require('./lib/prometheus');
const { autoscale, preempt, autoscaleTable, AUTOSCALE_HEADER } = require('./autoscale');
const tools = require('../helm/lib/tools');

const yaml = tools.requireTool('js-yaml');

const args = process.argv.slice(2);
const opt = (name, def) => { const i = args.indexOf(name); return i >= 0 ? args[i + 1] : def; };
const NAME = opt('--name', 'chessrl-deploy');
const DATA = path.resolve(opt('--data', path.join(tools.repoRoot, 'build', 'deploy-test')));
const KEEP = args.includes('--keep');

// The release as the test installs it.
const RELEASE = 'chess-rl';
const F = 'chess-rl';
// values-spot.yaml: self-play as on a spot pool (its grace and flush settings; the
// harness does no scheduling, so its affinities and tolerations play no part).
const VALUES = [path.join(tools.chartDir, 'ci', 'values-tiny.yaml'), path.join(tools.chartDir, 'values-spot.yaml'),
  path.join(__dirname, 'values.yaml')];
// The PodMonitors and PrometheusRule are rendered too: the test's Prometheus scrapes and
// evaluates what they say (lib/prometheus.js).
const MONITORING = ['--api-versions', 'monitoring.coreos.com/v1', '--set', 'monitoring.enabled=true'];
const ACKED_LOG = 'acked-games.log'; // selfplay.config.acked-log in values.yaml, under /tmp
const KEY = 'chessrl'; // the replay service's key prefix (its default)

// Bounds the test holds the chart to, on a 2-core machine (docs/kubernetes.md).
const READY_BOUND_S = 120; // install: every pod Ready
const FLOW_BOUND_S = 30; // a fault: games reach Redis again
const RECOVER_BOUND_S = 180; // a fault: the pod restarted and Ready (trainer ranks re-form the group)
const HANG_FLOW_BOUND_S = 45; // a hung replay killed by liveness: games again after its restart
const RESUME_BOUND_S = 120; // a trainer rank killed: rank 0 resumes from its checkpoint (the group re-formed)

const PORTS = { replay: 9102, selfplay: 9101, trainer: 9100, evaluator: 9104, web: 8080 };
const GRPC_PORT = 50051; // replay.ports.grpc
const ROLES = ['selfplay', 'trainer', 'evaluator']; // the auth Secret's keys

const t0 = Date.now();
const elapsed = () => ((Date.now() - t0) / 1000).toFixed(1).padStart(6);
const say = (line) => console.log(`[${elapsed()}s] ${line}`);

function render(extra = []) {
  const a = ['template', RELEASE, tools.chartDir, '--namespace', 'default', ...MONITORING];
  for (const v of VALUES) a.push('-f', v);
  a.push(...extra);
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
// Steps not run because one they need failed: said as they come and counted in the
// summary ("skipped N: why"), never dropped silently.
const skipped = [];
let abandoned = null; // set: why every later step is skipped
class Failure extends Error {}
function check(cond, message) {
  if (!cond) throw new Failure(message);
}
function skip(name, why) {
  say(`== ${name}: skipped, ${why}`);
  skipped.push({ name, why });
}
async function step(name, fn) {
  if (abandoned) {
    skip(name, abandoned);
    return false;
  }
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
function figure(name, value) {
  figures.push([name, value]);
}

function table(rows, header) {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => String(r[i]).length)));
  const line = (r) => r.map((c, i) => String(c).padEnd(widths[i])).join('  ');
  return [line(header), line(widths.map((w) => '-'.repeat(w))), ...rows.map(line)].join('\n');
}

// ---- the cluster's pods by role --------------------------------------------------------
let c;
const redisPod = () => `${F}-redis-0`;
const one = (kind, name) => {
  const pods = c.podsOf(kind, name);
  if (pods.length !== 1) throw new Failure(`${kind} ${name} has ${pods.length} pods, expected 1`);
  return pods[0].name;
};
const replayPod = () => one('Deployment', `${F}-replay`);
const evaluatorPod = () => one('Deployment', `${F}-evaluator`);
const webPod = () => one('Deployment', `${F}-web`);
const selfplayPods = () => c.podsOf('Deployment', `${F}-selfplay`).map((p) => p.name);
const trainerPod = (rank) => `${F}-trainer-${rank}`;

const gamesTotal = async () => Number((await obs.redisOr(c, redisPod(), ['HGET', `${KEY}:stats`, 'games_total'], ['-1']))[0] || 0);
const latestVersion = async () => Number((await obs.redisOr(c, redisPod(), ['GET', `${KEY}:model:latest`], ['0']))[0] || 0);

// Every game a self-play pod saw acknowledged STORED is in Redis, checked by its id, or
// left it the one way the store lets a game go: the window evicted it (oldest first) and,
// a window's worth of games later, its dedup marker went too (redis_scripts.h). So a
// missing game must be older than every game of the same pod that is still there (one
// pod's games enter the window in the order they are acknowledged), and there can be no
// more missing games than games whose markers the store dropped:
// games_total - window_games - LLEN evicted (markers expire after days, not in this test).
async function checkAcked(label) {
  const acked = obs.ackedGames(c, ACKED_LOG).filter((g) => g.status === 'stored');
  check(acked.length > 0, `${label}: no acknowledged game in the self-play pods' ${ACKED_LOG}`);
  const ids = [...new Set(acked.map((g) => g.id))];
  check(ids.length === acked.length, `${label}: ${acked.length - ids.length} game ids acknowledged STORED twice`);
  // Newest first. The store keeps evicting (oldest first) while these EXISTS run; asked
  // oldest first, a game could be seen there and a newer one, evicted a moment later,
  // not, which would look like a hole. Asked newest first, a game seen missing means
  // every older one was gone already, so one of those seen there afterwards is a hole.
  const newestFirst = [...ids].reverse();
  const input = newestFirst.map((id) => `EXISTS ${KEY}:game:${id}`).join('\n') + '\n';
  const out = await obs.redis(c, redisPod(), [], { input });
  check(out.length === ids.length, `${label}: redis-cli answered ${out.length} of ${ids.length} EXISTS`);
  const odd = out.filter((line) => !['0', '1'].includes(line.trim()));
  check(odd.length === 0, `${label}: EXISTS answered ${odd.length} times neither 0 nor 1: ${odd.slice(0, 3).join(' | ')}`);
  const present = new Set(newestFirst.filter((id, i) => out[i].trim() === '1'));
  const missing = ids.filter((id) => !present.has(id));
  if (missing.length === 0) return `all ${ids.length} acknowledged games in Redis`;
  // Missing after a game of the same pod that is there: lost, not evicted.
  const holes = [];
  const seenPresent = new Set();
  for (const g of acked) {
    if (present.has(g.id)) seenPresent.add(g.file);
    else if (seenPresent.has(g.file)) holes.push(g.id);
  }
  check(holes.length === 0, `${label}: ${holes.length} of ${ids.length} acknowledged games are not in Redis although games their pod had acknowledged before them are (lost, not evicted): ${holes.slice(0, 5).join(', ')}`);
  const [total, windowGames] = (await obs.redis(c, redisPod(), ['HMGET', `${KEY}:stats`, 'games_total', 'window_games'])).map(Number);
  const markers = Number((await obs.redis(c, redisPod(), ['LLEN', `${KEY}:evicted`]))[0]);
  const dropped = total - windowGames - markers;
  check(missing.length <= dropped, `${label}: ${missing.length} of ${ids.length} acknowledged games are not in Redis, more than the ${dropped} games whose markers the store dropped (${total} stored, ${windowGames} in the window, ${markers} evicted markers kept): ${missing.slice(0, 5).join(', ')}`);
  return `all ${ids.length} acknowledged games in Redis or evicted (${missing.length} oldest gone with their markers, of ${dropped} dropped)`;
}

// ---- the scenario ----------------------------------------------------------------------
async function install(label) {
  const manifests = await render();
  const tApply = Date.now();
  await c.apply(manifests);
  await c.waitFor(() => c.allReady(), READY_BOUND_S * 1000, `every pod Ready (${[...c.pods.values()].filter((p) => !p.ready).map((p) => p.name).join(', ')} not yet)`);
  const total = (Date.now() - tApply) / 1000;
  const perPod = [...c.pods.values()].map((p) => `${p.name.replace(`${F}-`, '')} ${((p.firstReadyAt - tApply) / 1000).toFixed(1)}`);
  figure(`${label}: every pod Ready after (s)`, `${total.toFixed(1)} (bound ${READY_BOUND_S})`);
  figure(`${label}: Ready per pod (s)`, perPod.join(', '));
  const restarts = [...c.pods.values()].filter((p) => p.restarts > 0).map((p) => `${p.name} ${p.restarts}`);
  figure(`${label}: restarts before Ready`, restarts.length ? restarts.join(', ') : 'none');
  return `${c.pods.size} pods Ready in ${total.toFixed(1)} s (bound ${READY_BOUND_S} s)`;
}

async function main() {
  say(`deployment test: cluster ${NAME}, data in ${DATA}`);
  await Cluster.clean(NAME, DATA);
  c = new Cluster({ name: NAME, dataDir: DATA, log: (l) => console.log(`           ${l}`) });
  await c.create();
  // Prometheus scrapes the pods from the start, as the operator would for the PodMonitors,
  // with the chart's rules loaded: the autoscaling and spot steps read it.
  const manifests = await render();
  prom = new Prometheus({ dir: path.join(DATA, 'prometheus'), log: (l) => say(l) });
  await prom.start({ podMonitors: manifests.filter((o) => o.kind === 'PodMonitor'),
    rules: manifests.filter((o) => o.kind === 'PrometheusRule') });
  promSync = setInterval(() => prom.sync([...c.pods.values()]), 500);
  const ok = await runSteps();
  return ok;
}

let prom;
let promSync;
const autoscaleRows = [];
const ctx = () => ({
  c, F, prom, check, figure, render, say, Failure, obs, PORTS, ACKED_LOG, checkAcked,
  selfplayPods, trainerPod, replayPod, rows: autoscaleRows, t0: ctxT0 ??= Date.now(),
});
let ctxT0;

async function runSteps() {
  if (!await step('install: every pod Ready', () => install('install'))) abandoned = 'the install failed';

  await step('install: games reach Redis', async () => {
    await c.waitFor(async () => (await gamesTotal()) > 0, 60000, 'games in Redis');
    return `${await gamesTotal()} games in Redis`;
  });

  await step('install: replay refuses calls without a valid token', authChecks);

  await step('install: two trainer ranks train together over Gloo', async () => {
    const seen = {};
    await c.waitFor(async () => {
      for (const r of [0, 1]) {
        const s = await obs.scrape(c, trainerPod(r), PORTS.trainer).catch(() => []);
        seen[r] = { world: obs.metric(s, 'chessrl_trainer_world_size'), rank: obs.metric(s, 'chessrl_trainer_rank'),
          steps: obs.metric(s, 'chessrl_trainer_steps_total') || 0, allreduce: obs.metric(s, 'chessrl_trainer_allreduce_seconds_total') || 0 };
      }
      return [0, 1].every((r) => seen[r].world === 2 && seen[r].rank === r && seen[r].steps > 0 && seen[r].allreduce > 0);
    }, 120000, 'both ranks stepping in a world of 2');
    const log = await c.logs(trainerPod(0));
    check(/joined 2 ranks over gloo/.test(log), `rank 0's log has no "joined 2 ranks over gloo"`);
    return `world size 2, steps ${seen[0].steps}/${seen[1].steps} on ranks 0/1, all-reduce ${seen[0].allreduce.toFixed(1)} s`;
  });

  await step('install: the trainer publishes two versions; self-play takes one up', async () => {
    await c.waitFor(async () => (await latestVersion()) >= 2, 180000, 'model version 2 in the registry');
    const sp = selfplayPods()[0];
    let version;
    await c.waitFor(async () => {
      const s = await obs.scrape(c, sp, PORTS.selfplay).catch(() => []);
      version = obs.metric(s, 'chessrl_model_version');
      return version >= 1 && obs.metric(s, 'chessrl_selfplay_model_swaps_total') >= 1;
    }, 120000, 'self-play playing a published version');
    return `registry at version ${await latestVersion()}; self-play plays version ${version}`;
  });

  await step('install: the evaluator reports an Elo', async () => {
    let elos = [];
    await c.waitFor(async () => {
      const s = await obs.scrape(c, evaluatorPod(), PORTS.evaluator).catch(() => []);
      elos = s.filter((x) => x.name === 'chessrl_eval_elo' && Number.isFinite(x.value));
      return elos.length > 0 && obs.metric(s, 'chessrl_eval_matches_total') >= 1;
    }, 240000, 'chessrl_eval_elo after a match');
    const text = elos.map((e) => `${e.value.toFixed(0)} vs ${e.labels.opponent}`).join(', ');
    figure('install: Elo reported (candidate minus opponent)', text);
    return `chessrl_eval_elo ${text}`;
  });

  await step('install: helm test', async () => {
    const results = await c.runTestHooks();
    check(results.length > 0, 'the chart has no test hook Pod');
    for (const r of results) check(r.ok, `${r.name} exited ${r.code}: ${r.logs.trim().split('\n').slice(-4).join(' | ')}`);
    return results.map((r) => `${r.name} passed in ${r.seconds.toFixed(1)} s (${r.logs.match(/(\d+) passed/)?.[0] || ''})`).join('; ');
  });

  if (!await step('scale: self-play to 3 (kubectl scale)', scaleUp)) abandoned ??= 'scaling up failed';
  await step('scale: self-play back to 1', scaleDown);

  // A fault that failed leaves the release broken for the next ones.
  let faultFailed = null;
  for (const target of ['redis', 'replay', 'selfplay', 'evaluator', 'trainer rank 1', 'trainer rank 0']) {
    const name = `fault: kill -9 ${target}`;
    if (faultFailed && !abandoned) skip(name, faultFailed);
    else if (!await step(name, () => fault(target)) && !abandoned) faultFailed = `${name} failed`;
  }
  await step('fault: replay hangs (SIGSTOP): liveness restarts it', hang);

  await step('autoscale: self-play follows the trainer (ScaledObject, real Prometheus)', () => autoscale(ctx()));
  await step('spot: a self-play pod preempted with its grace: nothing lost', () => preempt(ctx(), { hungReplay: false }));
  await step('spot: preempted while replay hangs: the loss counted and alerted', () => preempt(ctx(), { hungReplay: true }));

  let before;
  if (await step('uninstall: every container stops within its grace period', async () => {
    before = await snapshot();
    const { records, removedClaims } = await c.uninstall();
    for (const r of records) check(r.seconds <= r.grace + 1, `${r.pod} took ${r.seconds.toFixed(1)} s to stop (grace ${r.grace} s)`);
    const slow = records.reduce((a, r) => (r.seconds > a.seconds ? r : a));
    figure('uninstall: slowest stop (s)', `${slow.seconds.toFixed(1)} (${slow.pod.replace(`${F}-`, '')}, grace ${slow.grace})`);
    const nonzero = records.filter((r) => r.exitCode !== 0).map((r) => `${r.pod} ${r.exitCode}`);
    check(nonzero.length === 0, `non-zero exit on SIGTERM: ${nonzero.join(', ')}`);
    const claims = fs.readdirSync(path.join(DATA, 'pvc'));
    for (const claim of [`data-${F}-redis-0`, `checkpoints-${F}-trainer-0`, `${F}-evaluator`]) {
      check(claims.includes(claim), `claim ${claim} is gone after uninstall (have: ${claims.join(', ')})`);
    }
    before.checkpoint = obs.lastCheckpointStep(c, `checkpoints-${F}-trainer-0`);
    check(before.checkpoint > 0, 'no trainer checkpoint on its claim after uninstall');
    return `${records.length} pods stopped, all exit 0, slowest ${slow.seconds.toFixed(1)} s; claims kept: ${claims.join(', ')}${removedClaims.length ? `; removed: ${removedClaims.join(', ')}` : ''}`;
  })) {
    await step('reinstall: resumes (same window, model versions, trainer step)', () => reinstall(before));
  } else {
    skip('reinstall: resumes (same window, model versions, trainer step)', abandoned || 'the uninstall failed');
  }
  return steps.every((s) => s.ok) && !abandoned;
}

// Bearer tokens (auth.enabled, the chart's default). replay refuses a call with no token or
// an unknown one (UNAUTHENTICATED) and a role calling what it may not (PERMISSION_DENIED),
// and takes a known token; its health service needs none. Each client pod can read its own
// token and only that; no token is on any pod's command line or in its environment. The
// games already in Redis (the step before) show the clients' tokens work.
async function authChecks() {
  const secret = c.find('Secret', `${F}-auth`);
  check(secret, `no Secret ${F}-auth in the release`);
  const tokens = Object.fromEntries(ROLES.map((r) => [r, Buffer.from(secret.data[r], 'base64').toString()]));
  const replay = c.mustPod(replayPod());
  const UNAUTHENTICATED = 16;
  const PERMISSION_DENIED = 7;
  const cases = [
    ['ReplayService/Stats', undefined, UNAUTHENTICATED, 'no token'],
    ['ReplayService/PushGames', undefined, UNAUTHENTICATED, 'no token'],
    ['ModelRegistry/SetBest', undefined, UNAUTHENTICATED, 'no token'],
    ['ReplayService/Stats', 'x'.repeat(40), UNAUTHENTICATED, 'an unknown token'],
    ['ModelRegistry/SetBest', tokens.selfplay, PERMISSION_DENIED, 'self-play\'s token'],
    ['ReplayService/Sample', tokens.evaluator, PERMISSION_DENIED, 'the evaluator\'s token'],
    ['ReplayService/Stats', tokens.trainer, 0, 'the trainer\'s token'],
  ];
  const seen = [];
  for (const [method, token, want, who] of cases) {
    const r = await probes.grpcUnary(replay.ip, GRPC_PORT, `/chessrl.v1.${method}`, { token });
    check(r.code === want, `${method} with ${who}: status ${r.code} (${r.details}), expected ${want}`);
    seen.push(`${method.split('/')[1]} ${who}: ${r.code}`);
  }
  const health = await probes.grpcHealth(replay.ip, GRPC_PORT, '', 5000);
  check(health.ok, `the health service without a token: ${health.detail}`);
  // Each pod's secret files, as the pod's own (non-root) user sees them.
  const flag = (pod, name) => { const a = pod.container.args || []; return a[a.indexOf(`--${name}`) + 1]; };
  const dir = flag(replay, 'auth-dir');
  check(dir, `${replay.name} has no --auth-dir`);
  const listed = (await c.exec(replay.name, ['ls', dir])).stdout.split(/\s+/).filter(Boolean).sort();
  check(JSON.stringify(listed) === JSON.stringify([...ROLES].sort()), `${replay.name}: ${dir} holds ${listed.join(', ')}`);
  const clients = [[selfplayPods()[0], 'selfplay'], [trainerPod(0), 'trainer'], [trainerPod(1), 'trainer'], [evaluatorPod(), 'evaluator']];
  for (const [name, role] of clients) {
    const file = flag(c.mustPod(name), 'token-file');
    check(file, `${name} has no --token-file`);
    const ls = (await c.exec(name, ['ls', path.dirname(file)])).stdout.split(/\s+/).filter(Boolean);
    check(ls.length === 1 && ls[0] === path.basename(file), `${name}: ${path.dirname(file)} holds ${ls.join(', ')}, not only its token`);
    const read = await c.exec(name, ['cat', file]);
    check(read.code === 0 && read.stdout.trim() === tokens[role], `${name} cannot read its ${role} token (exit ${read.code})`);
  }
  // What ps and /proc/<pid>/environ show of every pod's process.
  for (const p of c.pods.values()) {
    const pid = await c.pid(p.name);
    for (const what of ['cmdline', 'environ']) {
      const text = fs.readFileSync(`/proc/${pid}/${what}`).toString();
      for (const r of ROLES) check(!text.includes(tokens[r]), `${p.name}: the ${r} token is in /proc/${pid}/${what}`);
    }
  }
  return `${seen.join('; ')}; health SERVING without a token; each client reads only its own token; no token in any pod's command line or environment`;
}

async function snapshot() {
  const r = redisPod();
  return {
    window: await obs.redis(c, r, ['LRANGE', `${KEY}:window`, '0', '-1']),
    models: await obs.redis(c, r, ['ZRANGE', `${KEY}:models`, '0', '-1']),
    gamesTotal: await gamesTotal(),
    posNext: Number((await obs.redis(c, r, ['GET', `${KEY}:pos:next`]))[0]),
  };
}

async function scaleUp() {
  const before = new Map([...c.pods.values()].map((p) => [p.name, { restarts: p.restarts, startedAt: p.startedAt }]));
  const stopsBefore = c.stops.length;
  const tScale = Date.now();
  await c.scale('Deployment', `${F}-selfplay`, 3);
  const pods = selfplayPods();
  check(pods.length === 3, `${pods.length} self-play pods after scaling to 3`);
  const added = pods.filter((p) => !before.has(p));
  check(added.length === 2, `${added.length} new pods, expected 2`);
  // Nothing else touched: the same pods, the same containers, no restart, no deletion.
  for (const [name, b] of before) {
    const p = c.pods.get(name);
    check(p && p.restarts === b.restarts && p.startedAt === b.startedAt, `scaling touched ${name}`);
  }
  check(c.stops.length === stopsBefore, 'scaling deleted a pod');
  await c.waitFor(() => pods.every((p) => c.pods.get(p).ready), 120000, 'the new self-play pods Ready');
  figure('scale to 3: new pods Ready after (s)', ((Date.now() - tScale) / 1000).toFixed(1));
  // Every pod pushes games under its own name; no game id twice.
  await c.waitFor(() => {
    const acked = obs.ackedGames(c, ACKED_LOG);
    return pods.every((p) => acked.filter((g) => g.pod === p && g.status === 'stored').length >= 5);
  }, 120000, 'five acknowledged games from each of the three pods');
  const replicas = {};
  for (const p of pods) {
    const m = /replica (\S+), seed (\S+)/.exec(await c.logs(p));
    check(m, `${p}: no "replica ..., seed ..." line in its log`);
    check(m[1] === p, `${p} plays as replica ${m[1]}, not its pod name`);
    replicas[p] = m[2];
  }
  check(new Set(Object.values(replicas)).size === 3, `seeds not distinct: ${JSON.stringify(replicas)}`);
  const acked = obs.ackedGames(c, ACKED_LOG).filter((g) => pods.includes(g.pod));
  const ids = acked.map((g) => g.id);
  check(new Set(ids).size === ids.length, `${ids.length - new Set(ids).size} game ids acknowledged by two pods or twice`);
  const dups = acked.filter((g) => g.status === 'duplicate').length;
  check(dups === 0, `${dups} games acknowledged as DUPLICATE`);
  // Games per hour per pod: chessrl_selfplay_games_total over 30 s, each pod scraped.
  const window = 30;
  const first = {};
  for (const p of pods) first[p] = await obs.scrapeMetric(c, p, PORTS.selfplay, 'chessrl_selfplay_games_total');
  await sleep(window * 1000);
  const rates = [];
  for (const p of pods) {
    const last = await obs.scrapeMetric(c, p, PORTS.selfplay, 'chessrl_selfplay_games_total');
    const rate = ((last - first[p]) / window) * 3600;
    check(rate > 0, `${p}: no games in ${window} s`);
    rates.push(`${p.replace(`${F}-selfplay-`, '')} ${Math.round(rate)}`);
  }
  figure('scale to 3: games/hour per self-play pod', rates.join(', '));
  // The game viewer finds the new pods through the headless Service, without a restart.
  let boards = [];
  const tBoards = Date.now();
  await c.waitFor(async () => {
    const state = await obs.getJson(c, webPod(), PORTS.web, '/api/state').catch(() => null);
    boards = state ? state.boards.filter((b) => !b.stale && b.game).map((b) => b.pod).sort() : [];
    return JSON.stringify(boards) === JSON.stringify([...pods].sort());
  }, 60000, 'the game viewer showing a live board for each self-play pod');
  figure('scale to 3: the game viewer shows every pod after (s)', ((Date.now() - tBoards) / 1000).toFixed(1));
  return `2 pods added, nothing else touched; distinct replicas and seeds; ${ids.length} distinct game ids; games/hour ${rates.join(', ')}; the game viewer shows all 3`;
}

async function scaleDown() {
  const pods = selfplayPods();
  const stopsBefore = c.stops.length;
  await c.scale('Deployment', `${F}-selfplay`, 1);
  const stopped = c.stops.slice(stopsBefore);
  check(stopped.length === 2 && selfplayPods().length === 1, `${stopped.length} pods stopped, ${selfplayPods().length} left`);
  for (const s of stopped) {
    check(s.seconds <= s.grace, `${s.pod} took ${s.seconds.toFixed(1)} s to stop (grace ${s.grace} s)`);
    check(s.exitCode === 0, `${s.pod} exited ${s.exitCode} on SIGTERM`);
    const log = fs.readFileSync(path.join(DATA, 'logs', `${s.pod}.log`), 'utf8');
    const done = /done: (\d+) games played, (\d+) pushed, \d+ rejected, (\d+) shed, (\d+) could not be pushed/.exec(log);
    check(done, `${s.pod}: no "done: ..." line (did it flush?)`);
    check(done[3] === '0' && done[4] === '0', `${s.pod} lost games at stop: ${done[0]}`);
  }
  check(pods.includes(selfplayPods()[0]), 'the pod left is not one of the three');
  const n = await checkAcked('after scale-down');
  figure('scale to 1: stop times (s)', stopped.map((s) => s.seconds.toFixed(1)).join(', '));
  return `2 pods stopped in ${stopped.map((s) => s.seconds.toFixed(1)).join(' and ')} s (grace ${stopped[0].grace} s), buffers flushed; ${n}`;
}

async function fault(target) {
  const pod = {
    redis: redisPod, replay: replayPod, selfplay: () => selfplayPods()[0], evaluator: evaluatorPod,
    'trainer rank 1': () => trainerPod(1), 'trainer rank 0': () => trainerPod(0),
  }[target]();
  const p = c.mustPod(pod);
  const restarts = p.restarts;
  const claim = `checkpoints-${F}-trainer-0`;
  const ckptBefore = obs.lastCheckpointStep(c, claim);
  const trainerLogBefore = (await c.logs(trainerPod(0))).length;
  // The game viewer answers throughout (it keeps the last of what a source said).
  const viewer = { answers: 0, failures: 0, stop: false };
  const viewerPolls = (async () => {
    while (!viewer.stop) {
      await obs.getJson(c, webPod(), PORTS.web, '/api/state', 2000).then(() => viewer.answers++, () => viewer.failures++);
      await sleep(500);
    }
  })();
  let detail = '';
  if (target === 'redis') {
    // Right after an acknowledgement: watch the acknowledged-games logs grow, kill at once.
    const pid = await c.pid(pod);
    const size0 = obs.ackedLogBytes(c, ACKED_LOG);
    await c.waitFor(() => obs.ackedLogBytes(c, ACKED_LOG) > size0, 30000, 'a new acknowledged game', 2);
    const tAck = Date.now();
    process.kill(pid, 'SIGKILL');
    detail = `killed ${Date.now() - tAck} ms after an acknowledged push; `;
  } else {
    await c.kill(pod);
  }
  const tKill = Date.now();
  // Both clocks run from the kill: the pod Ready again, and games reaching Redis. The
  // count to beat is read after the kill (a push answered before it is no sign of
  // recovery); with Redis killed, at its first answer once it is back.
  const since = (t) => (Date.now() - t) / 1000;
  let gamesBefore = target === 'redis' ? -1 : await gamesTotal();
  const flowingAgain = async () => {
    const n = await gamesTotal();
    if (gamesBefore < 0) {
      gamesBefore = n;
      return false;
    }
    return n > gamesBefore;
  };
  const [tReady, flowing] = await Promise.all([
    c.waitFor(() => c.pods.get(pod)?.restarts > restarts && c.pods.get(pod).ready, RECOVER_BOUND_S * 1000, `${pod} restarted and Ready`).then(() => since(tKill)),
    c.waitFor(flowingAgain, FLOW_BOUND_S * 1000, `games reaching Redis within ${FLOW_BOUND_S} s of the kill`, 250).then(() => since(tKill)),
  ]);
  viewer.stop = true;
  await viewerPolls;
  check(viewer.failures === 0, `the game viewer failed ${viewer.failures} of ${viewer.answers + viewer.failures} requests while ${target} was down`);
  if (target === 'evaluator' || target === 'selfplay') {
    await c.waitFor(async () => {
      const state = await obs.getJson(c, webPod(), PORTS.web, '/api/state').catch(() => null);
      return state && (target === 'evaluator' ? state.sources.evaluator.ok
        : state.boards.some((b) => b.pod === pod && !b.stale));
    }, 60000, `the game viewer showing the restarted ${target} again`);
  }
  detail += `the game viewer answered all ${viewer.answers} requests meanwhile; `;
  // A container restart keeps the pod's address, as on a node.
  const ipAfter = await c.refreshIP(c.mustPod(pod));
  check(ipAfter === p.podIP, `${pod} came back on ${ipAfter}, not its address ${p.podIP}`);
  // New games after the restart: wait for one more acknowledged game, then check them all.
  const n = await checkAcked(`after killing ${target}`);
  // The trainer: never back to 0; after its own kill, rank 0 resumes from its last checkpoint.
  let trainerNote = '';
  if (target.startsWith('trainer')) {
    await c.waitFor(() => c.pods.get(trainerPod(0)).ready && c.pods.get(trainerPod(1)).ready, RECOVER_BOUND_S * 1000, 'both trainer ranks Ready');
    // Ready is the metrics port answering: rank 0 resumes once the group has formed
    // again, that is once rank 1 too has seen the kill and come back (after its own
    // restart back-off). Wait for the line rather than read the log once.
    const resumeRe = /resuming from \S*ckpt-(\d+)\.chrl/;
    let log = '';
    try {
      await c.waitFor(async () => {
        log = (await c.logs(trainerPod(0))).slice(trainerLogBefore);
        return resumeRe.test(log);
      }, RESUME_BOUND_S * 1000, `trainer rank 0 resuming from a checkpoint within ${RESUME_BOUND_S} s`, 1000);
    } catch (e) {
      // The check below names what the log holds.
    }
    const m = resumeRe.exec(log);
    check(m, `trainer rank 0 did not resume from a checkpoint after the kill (restarts ${c.pods.get(trainerPod(0)).restarts}): ${log.split('\n').filter((l) => /resum|starting at step 0|joined|rendezvous|failed|stopp/.test(l)).join(' | ')}`);
    const resumed = Number(m[1]);
    check(resumed >= ckptBefore && resumed > 0, `rank 0 resumed at step ${resumed}, below its last checkpoint ${ckptBefore}`);
    let step;
    await c.waitFor(async () => {
      step = await obs.scrapeMetric(c, trainerPod(0), PORTS.trainer, 'chessrl_trainer_step');
      return step > resumed;
    }, 120000, 'the trainer stepping past the resumed checkpoint');
    const r0 = c.pods.get(trainerPod(0)).restarts;
    const r1 = c.pods.get(trainerPod(1)).restarts;
    trainerNote = `; rank 0 resumed at step ${resumed} (last checkpoint before the kill ${ckptBefore}), now ${step}; restarts so far: rank 0 ${r0}, rank 1 ${r1}`;
  }
  const step0 = await obs.scrapeMetric(c, trainerPod(0), PORTS.trainer, 'chessrl_trainer_step');
  if (step0 !== undefined) check(step0 >= ckptBefore, `trainer step ${step0} is below the checkpoint ${ckptBefore} taken before the fault`);
  figure(`fault ${target}: Ready again / games flowing (s after kill)`, `${tReady.toFixed(1)} / ${flowing.toFixed(1)}`);
  return `${detail}restarted on its address ${ipAfter}, Ready after ${tReady.toFixed(1)} s, games flowing after ${flowing.toFixed(1)} s; ${n}${trainerNote}`;
}

// A hung process (SIGSTOP: alive, answering nothing): only the liveness probe can tell.
// The kubelet kills it after failureThreshold failed probes (SIGTERM, which a stopped
// process cannot act on, then SIGKILL after the grace period) and restarts it.
async function hang() {
  const pod = replayPod();
  const p = c.mustPod(pod);
  const probe = p.container.livenessProbe;
  const grace = p.spec.terminationGracePeriodSeconds ?? 30;
  // Failed probes, the grace period a stopped process cannot use, then the restart
  // back-off (10 s or 20 s: the pod was killed before) and slack for a busy machine.
  const bound = probe.failureThreshold * probe.periodSeconds + probe.timeoutSeconds + grace + 60;
  const restarts = p.restarts;
  const pid = await c.pid(pod);
  process.kill(pid, 'SIGSTOP');
  const tStop = Date.now();
  await c.waitFor(() => c.pods.get(pod).restarts > restarts, bound * 1000, `liveness restarting the hung ${pod}`);
  const tRestart = (Date.now() - tStop) / 1000;
  const exit = p.exits[p.exits.length - 1];
  check(exit && exit.reason === 'liveness', `${pod} came back, but not through its liveness probe (${JSON.stringify(exit)})`);
  const gamesBefore = await gamesTotal();
  await c.waitFor(() => c.pods.get(pod).ready, RECOVER_BOUND_S * 1000, `${pod} Ready again`);
  // Self-play's push in flight to the hung process runs into its 10 s deadline, then its
  // retry (5 s at most) and gRPC's reconnect back-off (5 s at most): a wider bound.
  await c.waitFor(async () => (await gamesTotal()) > gamesBefore, HANG_FLOW_BOUND_S * 1000, `games reaching Redis within ${HANG_FLOW_BOUND_S} s of the restart`, 250);
  const tFlow = (Date.now() - tStop) / 1000;
  // Recovered means the backlog pushed too: self-play reports Ready (its /healthz) once its
  // buffer drained. The next steps start from that steady state.
  await c.waitFor(() => selfplayPods().every((sp) => c.pods.get(sp).ready), RECOVER_BOUND_S * 1000, 'self-play Ready again (its buffer pushed)');
  const tDrained = (Date.now() - tStop) / 1000;
  figure('fault replay hung: self-play backlog pushed (s after SIGSTOP)', tDrained.toFixed(1));
  const n = await checkAcked('after the hung replay');
  figure('fault replay hung: restarted by liveness / games flowing (s after SIGSTOP)', `${tRestart.toFixed(1)} / ${tFlow.toFixed(1)} (${probe.failureThreshold} x ${probe.periodSeconds} s of probes + ${grace} s grace + back-off)`);
  return `liveness failed ${probe.failureThreshold} times, killed and restarted ${tRestart.toFixed(1)} s after the hang; games flowing ${tFlow.toFixed(1)} s after it; ${n}`;
}

async function reinstall(before) {
  const manifests = await render();
  const tApply = Date.now();
  // Read Redis as early as it answers: the window before new games move it on.
  const applying = c.apply(manifests);
  let after;
  await c.waitFor(async () => {
    try { after = await snapshot(); return true; } catch { return false; }
  }, READY_BOUND_S * 1000, 'Redis answering after the reinstall', 200);
  figure('reinstall: Redis read back after (s)', ((Date.now() - tApply) / 1000).toFixed(1));
  await applying;
  // The window continues where it stopped: what was there is still there, minus games
  // evicted by games pushed since, which are appended.
  const k = after.window.length ? before.window.indexOf(after.window[0]) : -1;
  check(k >= 0, `the window's first game after the reinstall (${after.window[0]}) was not in it before`);
  const kept = before.window.slice(k);
  check(JSON.stringify(after.window.slice(0, kept.length)) === JSON.stringify(kept), 'the window after the reinstall is not the window before');
  check(after.gamesTotal >= before.gamesTotal && after.posNext >= before.posNext, `counters went back: games ${before.gamesTotal} -> ${after.gamesTotal}, next position ${before.posNext} -> ${after.posNext}`);
  // The registry keeps the newest versions (replay --keep-models) and the best: a version
  // published since the reinstall may have pruned the oldest, and nothing else may go.
  const added = after.models.filter((v) => !before.models.includes(v));
  const gone = before.models.filter((v) => !after.models.includes(v));
  const newest = Math.max(0, ...before.models.map(Number));
  check(added.every((v) => Number(v) > newest), `model versions after the reinstall that are not newer than before's newest ${newest}: ${added.filter((v) => Number(v) <= newest).join(', ')}`);
  check(gone.length <= added.length, `model versions lost in the reinstall: ${gone.join(', ')} gone, only ${added.length} published since (${before.models.length} before, ${after.models.length} after)`);
  check(gone.every((v) => before.models.indexOf(v) <= gone.length), `model versions pruned out of order (not the oldest): ${gone.join(', ')} of ${before.models.join(', ')}`);
  await c.waitFor(() => c.allReady(), READY_BOUND_S * 1000, 'every pod Ready after the reinstall');
  const readyS = (Date.now() - tApply) / 1000;
  figure('reinstall: every pod Ready after (s)', readyS.toFixed(1));
  let log = '';
  await c.waitFor(async () => /resuming from|starting at step 0/.test(log = await c.logs(trainerPod(0))), 120000, 'the trainer choosing its start');
  const m = /resuming from \S*ckpt-(\d+)\.chrl/.exec(log);
  check(m && Number(m[1]) === before.checkpoint, `the trainer did not resume from step ${before.checkpoint}: ${log.split('\n').filter((l) => /resum|starting at step/.test(l)).join(' | ')}`);
  let step;
  await c.waitFor(async () => (step = await obs.scrapeMetric(c, trainerPod(0), PORTS.trainer, 'chessrl_trainer_step')) > before.checkpoint, 120000, 'the trainer stepping on');
  const n = await checkAcked('after the reinstall');
  return `${kept.length} of ${before.window.length} window games still first in line (${k} evicted by new games), ${before.models.length - gone.length} of ${before.models.length} model versions kept (${gone.length} oldest pruned by ${added.length} published since), trainer resumed at step ${before.checkpoint} (now ${step}); ${n}; Ready in ${readyS.toFixed(1)} s`;
}

(async () => {
  let ok = false;
  try {
    ok = await main();
  } catch (e) {
    console.log(e.stack);
    steps.push({ name: 'harness', ok: false, seconds: 0, detail: e.message });
  } finally {
    clearInterval(promSync);
    if (prom) await prom.stop().catch((e) => console.log(`prometheus: ${e.message}`));
    if (c) {
      for (const p of c.pods.values()) await c.saveLogs(p).catch(() => {});
      if (!KEEP) await c.destroy().catch((e) => console.log(`cleanup: ${e.message}`));
      else c.stopped = true;
    }
  }
  console.log('\n# Deployment test summary\n');
  console.log(table([...steps.map((s) => [s.name, s.seconds.toFixed(1), s.ok ? 'pass' : 'FAIL']),
    ...skipped.map((s) => [s.name, '-', 'skipped'])], ['step', 'seconds', 'result']));
  const failed = steps.filter((s) => !s.ok);
  for (const s of failed) console.log(`\nFAILED ${s.name}: ${s.detail}`);
  const why = [...new Set(skipped.map((s) => s.why))];
  if (autoscaleRows.length) {
    console.log('\n# Autoscaling: self-play replicas against the trainer\'s demanded reuse\n');
    console.log(table(autoscaleTable(autoscaleRows), AUTOSCALE_HEADER));
  }
  console.log('\n# Figures\n');
  console.log(table(figures, ['figure', 'value']));
  console.log(`\n${steps.length - failed.length} passed, ${failed.length} failed, skipped ${skipped.length}${why.length ? `: ${why.join('; ')}` : ''} in ${elapsed().trim()} s; pod logs in ${path.join(DATA, 'logs')}`);
  process.exit(ok && !failed.length ? 0 : 1);
})();
