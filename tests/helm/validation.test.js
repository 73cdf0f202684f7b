'use strict';
// The chart's own value checks (helm/templates/_validate.tpl, run by validate.yaml): each
// refuses its bad value naming the key, and several bad values at once fail one render that
// lists every one of them (a user fixes all in one round, not one per attempt). The checks
// that values.schema.json makes are in values-schema.test.js.
const { describe, it } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { helm, chartFile, KUBE_VERSION } = require('./lib/chart');
const { chartDir } = require('./lib/tools');

const SKIP_SCHEMA = '--skip-schema-validation'; // for values the schema refuses first
const set = (...kv) => kv.flatMap((s) => ['--set', s]);

// One case per check helper (chess-rl.validateValues.<check>): values that trip it alone
// and what its message must say (the key first).
const cases = {
  'redis.external': { args: set('redis.enabled=false', 'redis.auth.existingSecret=team-redis'),
    says: /redis\.enabled=false needs redis\.external\.host \(and redis\.external\.port\), or redis\.external\.shards/ },
  'redis.shards': { args: set('redis.enabled=false', 'redis.external.host=redis.example.internal', 'redis.auth.existingSecret=team-redis', 'redis.shards=2'),
    says: /redis\.shards=2 is for the chart's Redis \(redis\.enabled=true\); with redis\.enabled=false list the external Redis's shards in redis\.external\.shards/ },
  'redis.externalAuth': { args: set('redis.enabled=false', 'redis.external.host=redis.example.internal'),
    says: /redis\.enabled=false with redis\.auth\.enabled=true needs .*redis\.auth\.existingSecret/ },
  'redis.openAuth': { args: set('redis.auth.enabled=false', 'networkPolicy.enabled=false'),
    says: /redis\.auth\.enabled=false with the chart's Redis \(redis\.enabled=true\) needs networkPolicy\.enabled=true/ },
  'redis.config': { args: set('redis.config.maxmemory-policy=allkeys-lru'),
    says: /redis\.config\.maxmemory-policy: the chart sets this directive itself/ },
  tls: { args: [SKIP_SCHEMA, ...set('tls.enabled=true')], says: /tls\.enabled=true needs tls\.existingSecret/ },
  'replay.ports': { args: set('replay.ports.metrics=50051'), says: /replay\.ports\.grpc and replay\.ports\.metrics are both 50051/ },
  'selfplay.precision': { args: set('selfplay.precision=fp16'), says: /selfplay\.precision=fp16 needs selfplay\.gpu\.enabled=true/ },
  // No --api-versions keda.sh/v1alpha1: a cluster without KEDA.
  'selfplay.autoscaling.api': { args: set('selfplay.autoscaling.enabled=true'),
    says: /selfplay\.autoscaling\.enabled=true with provider keda needs KEDA's keda\.sh\/v1alpha1 API.*install KEDA, or render with --api-versions keda\.sh\/v1alpha1, or set selfplay\.autoscaling\.provider=hpa/ },
  'selfplay.autoscaling.band': { args: ['--set-json', 'selfplay.autoscaling.band={"low":0.5,"target":0.95,"high":0.9}'],
    says: /selfplay\.autoscaling\.band must have low < target < high .*low=0\.5, target=0\.95, high=0\.9/ },
  'selfplay.autoscaling.replicas': { args: set('selfplay.autoscaling.minReplicas=3', 'selfplay.autoscaling.maxReplicas=2'),
    says: /selfplay\.autoscaling\.minReplicas=3 is above selfplay\.autoscaling\.maxReplicas=2/ },
  'trainer.mixedPrecision': { args: set('trainer.mixedPrecision=true'), says: /trainer\.mixedPrecision=true needs trainer\.gpu\.enabled=true/ },
  'trainer.persistence': { args: set('trainer.persistence.enabled=false', 'trainer.persistence.existingClaim=shared'),
    says: /trainer\.persistence\.existingClaim is set but trainer\.persistence\.enabled=false/ },
  'trainer.ports': { args: set('trainer.ports.rendezvous=9100'), says: /trainer\.ports\.metrics and trainer\.ports\.rendezvous are both 9100/ },
  // No --api-versions: the cluster serves no scheduling.volcano.sh/v1beta1.
  'trainer.gangScheduling': { args: set('trainer.gangScheduling.volcano.enabled=true'),
    says: /trainer\.gangScheduling\.volcano\.enabled=true needs the scheduling\.volcano\.sh\/v1beta1 API/ },
  config: { args: set('trainer.config.checkpoint-dir=/x'), says: /trainer\.config sets "checkpoint-dir", which the chart passes itself as --checkpoint-dir/ },
  'web.ports': { args: set('web.ports.probes=8080'), says: /web\.ports\.http and web\.ports\.probes are both 8080/ },
  'web.ingress': { args: set('web.ingress.enabled=true'), says: /web\.ingress\.enabled=true needs at least one entry in web\.ingress\.hosts/ },
  // A release name that is no DNS label (helm takes a leading digit): F = 1st-chess-rl.
  fullname: { release: '1st', args: [], says: /the objects' prefix "1st-chess-rl" must be a DNS label.*fullnameOverride/ },
};

const template = (args, release = 'chess-rl') =>
  helm(['template', release, chartDir, '--kube-version', KUBE_VERSION, ...args]);

// The check helpers the chart defines and the ones chess-rl.validateValues runs.
function checkHelpers() {
  const defined = [];
  const walk = (dir) => {
    for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
      const p = path.join(dir, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.name.endsWith('.tpl')) {
        for (const m of fs.readFileSync(p, 'utf8').matchAll(/define "chess-rl\.validateValues\.([^"]+)"/g)) defined.push(m[1]);
      }
    }
  };
  walk(chartFile('templates'));
  const top = fs.readFileSync(chartFile('templates', '_validate.tpl'), 'utf8');
  const list = /\$checks := list([^}]*)-?}}/.exec(top);
  assert.ok(list, 'templates/_validate.tpl: no `$checks := list ...` in chess-rl.validateValues');
  const run = [...list[1].matchAll(/"chess-rl\.validateValues\.([^"]+)"/g)].map((m) => m[1]);
  return { defined: defined.sort(), run: run.sort() };
}

describe('chess-rl.validateValues', () => {
  it('runs every check helper the templates define, and each has a case here', () => {
    const { defined, run } = checkHelpers();
    assert.deepEqual(run, defined, 'templates/_validate.tpl $checks and the chess-rl.validateValues.* defines differ');
    assert.deepEqual(Object.keys(cases).sort(), defined, 'validation.test.js: a check without a case, or a case without a check');
  });

  it('the default values pass', async () => {
    const r = await template([]);
    assert.equal(r.code, 0, r.stderr);
  });

  for (const [check, c] of Object.entries(cases)) {
    it(`${check}: refused alone, naming the value`, async () => {
      const r = await template(c.args, c.release);
      assert.notEqual(r.code, 0, `rendered with ${c.args.join(' ')}`);
      assert.match(r.stderr, /validate\.yaml.*: 1 problem in the values:\n- /, r.stderr);
      assert.match(r.stderr, c.says, r.stderr);
    });
  }

  it('three bad values at once: one failure lists all three', async () => {
    // Two of these were refused by the template that uses them (selfplay's Deployment,
    // Redis's ConfigMap) before the checks were collected: that template rendered first
    // and hid the rest.
    const bad = ['selfplay.precision', 'redis.config', 'trainer.mixedPrecision'];
    const r = await template(bad.flatMap((k) => cases[k].args));
    assert.notEqual(r.code, 0, 'rendered with three bad values');
    assert.match(r.stderr, /validate\.yaml.*: 3 problems in the values:\n- /, r.stderr);
    for (const k of bad) assert.match(r.stderr, cases[k].says, `${k} missing from:\n${r.stderr}`);
  });

  it('and with the schema skipped: an external Redis without a host, TLS without a certificate and a reserved config key', async () => {
    const bad = ['redis.external', 'tls', 'config'];
    const r = await template([SKIP_SCHEMA, ...bad.flatMap((k) => cases[k].args.filter((a) => a !== SKIP_SCHEMA))]);
    assert.notEqual(r.code, 0, 'rendered with three bad values');
    assert.match(r.stderr, /validate\.yaml.*: 3 problems in the values:\n- /, r.stderr);
    for (const k of bad) assert.match(r.stderr, cases[k].says, `${k} missing from:\n${r.stderr}`);
    const lines = r.stderr.split('\n').filter((l) => l.startsWith('- '));
    assert.equal(lines.length, 3, `one line per problem:\n${r.stderr}`);
  });
});
