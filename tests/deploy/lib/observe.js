'use strict';
// What the scenario looks at: Prometheus text from a pod's /metrics, Redis through
// redis-cli inside the Redis pod, the self-play pods' acknowledged-games logs and the
// trainer's checkpoint files on its claim.
const fs = require('node:fs');
const path = require('node:path');
const http = require('node:http');

// GET http://<pod ip>:<port>/metrics -> [{name, labels, value}]
function scrape(cluster, podName, port, timeoutMs = 5000) {
  const pod = cluster.mustPod(podName);
  return new Promise((resolve, reject) => {
    if (!pod.ip) return reject(new Error(`${podName} has no address (not running)`));
    const req = http.get({ host: pod.ip, port, path: '/metrics', timeout: timeoutMs }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d) => { body += d; });
      res.on('end', () => (res.statusCode === 200 ? resolve(parseMetrics(body))
        : reject(new Error(`${podName}:${port}/metrics: HTTP ${res.statusCode}`))));
    });
    req.on('timeout', () => req.destroy(new Error(`${podName}:${port}/metrics timed out`)));
    req.on('error', reject);
  });
}

// GET http://<pod ip>:<port><path> -> the parsed JSON body (the game viewer's api/state).
function getJson(cluster, podName, port, path, timeoutMs = 5000) {
  const pod = cluster.mustPod(podName);
  return new Promise((resolve, reject) => {
    if (!pod.ip) return reject(new Error(`${podName} has no address (not running)`));
    const req = http.get({ host: pod.ip, port, path, timeout: timeoutMs }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d) => { body += d; });
      res.on('end', () => {
        if (res.statusCode !== 200) return reject(new Error(`${podName}:${port}${path}: HTTP ${res.statusCode}`));
        try { resolve(JSON.parse(body)); } catch (e) { reject(new Error(`${podName}:${port}${path}: ${e.message}`)); }
      });
    });
    req.on('timeout', () => req.destroy(new Error(`${podName}:${port}${path} timed out`)));
    req.on('error', reject);
  });
}

function parseMetrics(text) {
  const out = [];
  for (const line of text.split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})?\s+(\S+)/.exec(line);
    if (!m) continue;
    const labels = {};
    for (const l of (m[3] || '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) labels[l[1]] = l[2];
    out.push({ name: m[1], labels, value: Number(m[4]) });
  }
  return out;
}

// The value of a metric (the sum over its series), or undefined when absent.
function metric(samples, name, labels = {}) {
  const hits = samples.filter((s) => s.name === name &&
    Object.entries(labels).every(([k, v]) => s.labels[k] === v));
  return hits.length ? hits.reduce((a, s) => a + s.value, 0) : undefined;
}

async function scrapeMetric(cluster, podName, port, name) {
  try {
    return metric(await scrape(cluster, podName, port), name);
  } catch {
    return undefined;
  }
}

// redis-cli inside the Redis pod (its env has REDISCLI_AUTH). Lines of output, or throws.
async function redis(cluster, podName, args, { input } = {}) {
  const r = await cluster.exec(podName, input !== undefined ? ['redis-cli'] : ['redis-cli', ...args], { input });
  if (r.code !== 0 || /^(ERR|NOAUTH|LOADING|WRONGTYPE)/m.test(r.stdout)) {
    throw new Error(`redis-cli ${args.join(' ')}: exit ${r.code}: ${(r.stdout + r.stderr).trim().slice(0, 300)}`);
  }
  return r.stdout.replace(/\n$/, '').split('\n');
}
async function redisOr(cluster, podName, args, fallback) {
  try { return await redis(cluster, podName, args); } catch { return fallback; }
}

// The acknowledged-games logs of every self-play pod there ever was (deleted pods' emptyDirs
// are kept under deleted-pods/): [{pod, id, status, source, file}], each file in its own
// order (the order its pod saw the acknowledgements).
function ackedGames(cluster, file) {
  const out = [];
  for (const base of ['pods', 'deleted-pods']) {
    const dir = path.join(cluster.dataDir, base);
    if (!fs.existsSync(dir)) continue;
    for (const podDir of fs.readdirSync(dir)) {
      const f = path.join(dir, podDir, 'empty', 'tmp', file);
      if (!fs.existsSync(f)) continue;
      const pod = base === 'pods' ? podDir : podDir.replace(/-[0-9]+$/, '');
      for (const line of fs.readFileSync(f, 'utf8').split('\n')) {
        const [id, status] = line.trim().split(/\s+/);
        if (id && status) out.push({ pod, id, status, source: base, file: `${base}/${podDir}` });
      }
    }
  }
  return out;
}

// The total size of the live self-play pods' acknowledged-games logs (cheap to poll).
function ackedLogBytes(cluster, file) {
  let total = 0;
  for (const pod of cluster.pods.values()) {
    try { total += fs.statSync(path.join(pod.dir, 'empty', 'tmp', file)).size; } catch { /* none yet */ }
  }
  return total;
}

// The newest checkpoint step on a trainer claim (0: none).
function lastCheckpointStep(cluster, claim) {
  const dir = path.join(cluster.dataDir, 'pvc', claim);
  if (!fs.existsSync(dir)) return 0;
  let best = 0;
  for (const f of fs.readdirSync(dir)) {
    const m = /^ckpt-([0-9]+)\.chrl$/.exec(f);
    if (m) best = Math.max(best, Number(m[1]));
  }
  return best;
}

module.exports = { scrape, getJson, parseMetrics, metric, scrapeMetric, redis, redisOr, ackedGames, ackedLogBytes, lastCheckpointStep };
