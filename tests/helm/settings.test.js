'use strict';
// One source of settings: the chart with its default values and `chessrl local` (make run)
// start self-play, the trainer, the evaluator and replay with the same training settings. Both
// leave the learning settings to the binaries' own defaults (the ones docs/learning.md
// measured) and set only what differs by machine; this test renders the chart, asks
// `chessrl local --print-settings` for what it passes, and compares every option that is
// not an address, port, file, token, device or timeout. A difference fails unless
// DELIBERATE lists it with its reason.
const { describe, it, before } = require('node:test');
const assert = require('node:assert/strict');
const { execFileSync } = require('node:child_process');
const fs = require('node:fs');
const { render, prefetch, workloadOf, mainContainer, argv, envOf, configOf } = require('./lib/chart');

const COMPONENTS = ['selfplay', 'trainer', 'evaluator', 'replay'];

// Options that say where things are, who calls, or on what hardware and for how long a
// process waits: they differ by environment and do not change how the loop trains.
const NOT_SETTINGS = new Set([
  'config', 'replay', 'registry', 'metrics-listen', 'probe-listen', 'replica', 'state-dir', 'checkpoint-dir',
  'version-stats', 'acked-log', 'token-file', 'tls-ca', 'tls-server-name', 'device',
  'precision', 'mixed-precision', 'rendezvous-timeout', 'collective-timeout', 'engine',
  'listen', 'redis-host', 'redis-port', 'redis-shards', 'redis-password-file', 'auth-dir',
  'tls-cert', 'tls-key', 'models-http-listen',
]);

// component -> option -> why the chart and make run differ on purpose. Empty: they agree
// on every training setting.
const DELIBERATE = {
  selfplay: {
    threads: "make run shares a laptop's cores out over its self-play threads (--selfplay-threads, run niced); a pod's CPU request sizes the chart's",
    workers: 'one network worker per search thread, as --threads',
  },
  trainer: {},
  evaluator: {
    ladder: "make run plays the Stockfish ladder (chessrl local --ladder; Stockfish at depth 1-2 is cheap on a laptop); the chart's evaluator.ladder is off by default",
  },
  replay: {},
};

// "--name value" pairs of a command line (a flag without a value: "true").
function optionsOf(words) {
  const out = {};
  for (let i = 0; i < words.length; i++) {
    const w = String(words[i]);
    if (!w.startsWith('--')) continue;
    const eq = w.indexOf('=');
    if (eq > 0) { out[w.slice(2, eq)] = w.slice(eq + 1); continue; }
    const next = words[i + 1];
    if (next === undefined || String(next).startsWith('--')) out[w.slice(2)] = 'true';
    else { out[w.slice(2)] = String(next); i++; }
  }
  return out;
}
// 1, "1", "1.000000" are one value; so are "random,greedy" and itself.
function same(a, b) {
  if (a === undefined || b === undefined) return a === b;
  const x = Number(a), y = Number(b);
  if (String(a).trim() !== '' && String(b).trim() !== '' && !Number.isNaN(x) && !Number.isNaN(y)) {
    return Math.abs(x - y) <= 1e-6 * Math.max(1, Math.abs(x));
  }
  return String(a) === String(b);
}
// What the chart starts a component with: its flags, its CHESSRL_* variables, then its
// config.yaml (a flag beats a variable beats the file, as the binaries read them).
function chartSettings(objs, component) {
  const c = mainContainer(workloadOf(objs, component), component);
  const words = argv(c).slice(1);  // the binary's path first
  const settings = {};
  for (const [k, v] of Object.entries(configOf(objs, component))) settings[k] = String(v);
  for (const [name, e] of Object.entries(envOf(c))) {
    if (!name.startsWith('CHESSRL_') || e.value === undefined) continue;
    settings[name.slice(8).toLowerCase().replace(/_/g, '-')] = String(e.value);
  }
  Object.assign(settings, optionsOf(words));
  return settings;
}
function withoutNonSettings(settings) {
  return Object.fromEntries(Object.entries(settings).filter(([k]) => !NOT_SETTINGS.has(k)));
}
function localSettings(extra = []) {
  const bin = process.env.CHESSRL_BIN;
  assert.ok(bin, 'CHESSRL_BIN is not set: CMake sets it to the chessrl binary (build it first)');
  assert.ok(fs.existsSync(bin), `CHESSRL_BIN=${bin} does not exist: build it (make build)`);
  const out = execFileSync(bin, ['local', '--print-settings', ...extra], { encoding: 'utf8' });
  const parsed = JSON.parse(out);
  const result = {};
  for (const c of COMPONENTS) {
    assert.ok(Array.isArray(parsed[c]), `chessrl local --print-settings has no "${c}" list: ${out}`);
    result[c] = optionsOf(parsed[c]);
  }
  return result;
}
// Every training setting on which the two disagree and DELIBERATE does not excuse:
// ["selfplay --max-plies: chart 300, make run (the binary's default)", ...].
function disagreements(chart, local, component) {
  const a = withoutNonSettings(chart);
  const b = withoutNonSettings(local);
  const out = [];
  for (const key of [...new Set([...Object.keys(a), ...Object.keys(b)])].sort()) {
    if (same(a[key], b[key]) || DELIBERATE[component][key]) continue;
    const show = (v) => (v === undefined ? "(the binary's default)" : v);
    out.push(`${component} --${key}: chart ${show(a[key])}, make run ${show(b[key])}`);
  }
  return out;
}

before(() => prefetch([[]], [['--set', 'selfplay.config.max-plies=300']],
  [['--set', 'replay.config.window-positions=2000000']]));

describe('one source of settings: the chart and make run', () => {
  it('start self-play, the trainer, the evaluator and replay with the same training settings', async () => {
    const objs = await render([]);
    const local = localSettings();
    const problems = [];
    for (const c of COMPONENTS) problems.push(...disagreements(chartSettings(objs, c), local[c], c));
    assert.deepEqual(problems, [], `the chart and chessrl local disagree:\n  ${problems.join('\n  ')}`);
  });

  it('leave the learning settings to the binaries (neither sets one)', async () => {
    const objs = await render([]);
    const local = localSettings();
    const learning = {
      selfplay: ['visits', 'reduced-visits', 'full-fraction', 'max-plies', 'adjudicate-material',
        'final-temperature', 'short-games', 'draw-contempt', 'gumbel', 'net'],
      trainer: ['net', 'batch-size', 'optimizer', 'lr', 'value-q-ratio', 'publish-every',
        'min-window', 'max-reuse'],
      evaluator: ['visits', 'leaves', 'pairs', 'anchor-pairs', 'anchors', 'max-plies'],
      replay: ['window-positions', 'dedup-ttl-hours', 'max-sample'],
    };
    for (const c of COMPONENTS) {
      const chart = chartSettings(objs, c);
      for (const key of learning[c]) {
        assert.equal(chart[key], undefined, `the chart sets ${c} --${key} ${chart[key]}: leave it to the binary's default`);
        assert.equal(local[c][key], undefined, `chessrl local sets ${c} --${key} ${local[c][key]}: leave it to the binary's default`);
      }
    }
  });

  it('a value the chart changes is found and named (the check can fail)', async () => {
    const objs = await render(['--set', 'selfplay.config.max-plies=300']);
    const local = localSettings();
    assert.deepEqual(disagreements(chartSettings(objs, 'selfplay'), local.selfplay, 'selfplay'),
      ["selfplay --max-plies: chart 300, make run (the binary's default)"]);
  });

  it("a replay window the chart sets is found and named (replay's settings are compared too)", async () => {
    const objs = await render(['--set', 'replay.config.window-positions=2000000']);
    const local = localSettings();
    assert.deepEqual(disagreements(chartSettings(objs, 'replay'), local.replay, 'replay'),
      ["replay --window-positions: chart 2000000, make run (the binary's default)"]);
  });

  it('a value given to chessrl local reaches the command line it prints', () => {
    const local = localSettings(['--max-plies', '150', '--eval-visits', '4', '--lr', '0.01', '--window', '20000']);
    assert.ok(same(local.selfplay['max-plies'], 150), JSON.stringify(local.selfplay));
    assert.ok(same(local.evaluator.visits, 4) && same(local.evaluator.leaves, 4), JSON.stringify(local.evaluator));
    assert.ok(same(local.trainer.lr, 0.01), JSON.stringify(local.trainer));
    assert.ok(same(local.replay['window-positions'], 20000), JSON.stringify(local.replay));
  });
});
