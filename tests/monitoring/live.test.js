'use strict';
// The dashboard and the rules against live data: `chessrl local` runs the whole loop with a
// tiny network and starts a real Prometheus scraping every child with the chart's rules.
// Every query of the dashboard must return data (a query may stay empty only when it reads
// a metric nothing exports yet, or when every metric it reads is a GPU metric on a machine
// without a GPU, DCGM's or kube-state-metrics'), no query may fail, and every rule must
// load and evaluate without error.
// ctest `monitoring.live` (label e2e); CHESSRL_TOOL is the chessrl binary.
const test = require('node:test');
const assert = require('node:assert/strict');
const { spawn } = require('node:child_process');
const fs = require('node:fs');
const http = require('node:http');
const path = require('node:path');
const mon = require('../helm/lib/monitoring');

const TOOL = process.env.CHESSRL_TOOL;
const TINY = ['--net', '1x8', '--visits', '8', '--reduced-visits', '4', '--full-fraction', '0.5',
  '--concurrent', '8', '--max-plies', '60', '--window', '20000', '--batch-size', '64',
  '--publish-every', '10', '--checkpoint-every', '10', '--min-window', '200', '--max-reuse', '100',
  '--eval-visits', '4', '--eval-pairs', '1', '--anchor-pairs', '1', '--status-every', '1'];
const DATA_BOUND_S = 300; // every panel with data, from the start of the run

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function getJson(url) {
  return new Promise((resolve, reject) => {
    http.get(url, { timeout: 10000 }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d) => { body += d; });
      res.on('end', () => {
        try { resolve({ status: res.statusCode, json: JSON.parse(body) }); } catch (e) { reject(new Error(`${url}: ${body.slice(0, 200)}`)); }
      });
    }).on('error', reject).on('timeout', function timeout() { this.destroy(new Error(`${url} timed out`)); });
  });
}

async function query(base, expr) {
  const r = await getJson(`${base}/api/v1/query?query=${encodeURIComponent(expr)}`);
  if (r.json.status !== 'success') throw new Error(`PromQL error in ${expr}: ${r.json.errorType}: ${r.json.error}`);
  return r.json.data.result;
}

const FILTERED = /\s*>\s*0$/;

// May this query be empty on this machine? Only when it reads a pending metric (nothing
// exports it, so the ratio or join it takes part in has no series), or when everything it
// reads is external or a GPU metric without a GPU.
function mayBeEmpty(expr, hasGpu) {
  const names = mon.metricNames(expr);
  if (names.some((name) => mon.metricOrigin(name) === 'pending')) return true;
  return names.every((name) => {
    const origin = mon.metricOrigin(name);
    return origin === 'pending' || origin === 'external' || (!hasGpu && name.startsWith('chessrl_gpu_')) ||
      (!hasGpu && /^chessrl:gpu/.test(name));
  });
}

test('a live Prometheus over chessrl local: every panel has data, every rule evaluates', { timeout: 600000 }, async (t) => {
  assert.ok(TOOL && fs.existsSync(TOOL), `CHESSRL_TOOL (${TOOL}) is not the chessrl binary`);
  const dir = mon.tempDir('chessrl-live-');
  const log = fs.openSync(path.join(dir, 'local.out'), 'w');
  const child = spawn(TOOL, ['local', '--dir', dir, ...TINY, '--duration', '900', '--quiet'], { stdio: ['ignore', log, log] });
  let exited = null;
  child.on('exit', (code) => { exited = code; });
  t.after(async () => {
    if (exited === null) {
      child.kill('SIGINT');
      for (let i = 0; i < 120 && exited === null; i++) await sleep(500);
      if (exited === null) child.kill('SIGKILL');
    }
  });
  const t0 = Date.now();
  let base;
  while (!base) {
    assert.equal(exited, null, `chessrl local exited with ${exited}: ${fs.readFileSync(path.join(dir, 'local.out'), 'utf8').slice(-2000)}`);
    assert.ok(Date.now() - t0 < 120000, 'no Prometheus URL in local.json within 120 s');
    try { base = JSON.parse(fs.readFileSync(path.join(dir, 'local.json'), 'utf8')).prometheus; } catch { /* not yet */ }
    if (!base) await sleep(500);
  }
  // Prometheus answers.
  for (;;) {
    try { if ((await getJson(`${base}/api/v1/status/buildinfo`)).status === 200) break; } catch { /* starting */ }
    assert.ok(Date.now() - t0 < 120000, `Prometheus at ${base} did not answer`);
    await sleep(500);
  }
  const hasGpu = (await query(base, 'chessrl_gpu_info')).length > 0;
  const queries = mon.dashboardQueries().map((q) => ({ ...q, expr: mon.substitute(q.expr) }));
  assert.ok(queries.length > 20, `only ${queries.length} dashboard queries`);
  let empty;
  let withData;
  for (;;) {
    empty = [];
    withData = 0;
    for (const q of queries) {
      const result = await query(base, q.expr); // a PromQL error fails the test here
      if (result.length) withData++;
      else if (mayBeEmpty(q.expr, hasGpu)) continue;
      // "expr > 0" hides a zero on purpose (Redis's maxmemory when unlimited): the
      // expression without the filter must have data.
      else if (FILTERED.test(q.expr) && (await query(base, q.expr.replace(FILTERED, ''))).length) withData++;
      else empty.push(`${q.title}: ${q.expr}`);
    }
    if (!empty.length) break;
    assert.equal(exited, null, `chessrl local exited with ${exited}`);
    if (Date.now() - t0 > DATA_BOUND_S * 1000) break;
    await sleep(5000);
  }
  assert.deepEqual(empty, [], `panels without data ${DATA_BOUND_S} s into the run`);
  // Every rule of the file loaded, evaluated, without error.
  const groups = (await getJson(`${base}/api/v1/rules`)).json.data.groups;
  const loaded = groups.flatMap((g) => g.rules);
  assert.equal(loaded.length, mon.rules().length, 'rules loaded by Prometheus vs the rule file');
  const bad = loaded.filter((r) => r.health !== 'ok').map((r) => `${r.name}: ${r.health} ${r.lastError || ''}`);
  assert.deepEqual(bad, [], 'rules that did not evaluate cleanly');
  t.diagnostic(`${withData} of ${queries.length} queries with data (the rest: GPU or DCGM panels without one) after ${((Date.now() - t0) / 1000).toFixed(0)} s; ${loaded.length} rules ok; GPU: ${hasGpu}`);
});
