'use strict';
// Scaling self-play is one number: --set selfplay.replicas=3 changes the self-play
// Deployment's replicas and nothing else (no pod restarts elsewhere, no checksum change).
// Two renders of the same values differ only in the generated secrets, the Redis password and
// the bearer tokens (helm has no cluster to lookup the existing ones), which the comparison
// measures and leaves out.
const { describe, it, before } = require('node:test');
const assert = require('node:assert/strict');
const { render, prefetch, F, diffRenders } = require('./lib/chart');

const SCALED = ['--set', 'selfplay.replicas=3'];
// A second, separate render of the defaults (different args, so not served from the cache).
const AGAIN = ['--set', 'selfplay.replicas=1'];
before(() => prefetch([[]], [AGAIN], [SCALED], [['--set', 'trainer.replicas=3']]));

// A difference in a secret the chart generates (Secret F-redis's password, F-auth's tokens).
const generated = (d) => d.startsWith(`Secret/${F}-redis: data.redis-password:`) ||
  /^Secret\/[^:]+-auth: data\.(selfplay|trainer|evaluator): /.test(d);

async function noise() {
  return new Set(diffRenders(await render([]), await render(AGAIN)));
}

describe('scaling', () => {
  it('two renders of the same values differ only in the generated password and tokens', async () => {
    const n = [...await noise()];
    const stray = n.filter((d) => !generated(d));
    assert.deepEqual(stray, [], 'renders of the same values differ outside the generated secrets');
  });

  it('selfplay.replicas=3 changes only the self-play Deployment\'s replicas', async () => {
    const n = await noise();
    const d = diffRenders(await render([]), await render(SCALED))
      .filter((x) => !generated(x) && !n.has(x));
    assert.deepEqual(d, [`Deployment/${F}-selfplay: spec.replicas: 1 -> 3`]);
  });

  it('trainer.replicas=3 changes only the trainer StatefulSet\'s replicas and WORLD_SIZE (and what the helm test probes)', async () => {
    const d = diffRenders(await render([]), await render(['--set', 'trainer.replicas=3']))
      .filter((x) => !generated(x));
    const stray = d.filter((x) => !/^StatefulSet\/[^:]+-trainer: spec\.(replicas|template\.spec\.containers\[0\]\.env\[\d+\]\.value): /.test(x) &&
      !x.startsWith(`Pod/${F}-test: spec.containers[0].`)); // the test pod probes every rank
    assert.deepEqual(stray, [], 'unexpected differences');
    assert.ok(d.includes(`StatefulSet/${F}-trainer: spec.replicas: 1 -> 3`), d.join('\n'));
    assert.ok(d.some((x) => /env\[\d+\]\.value: "1" -> "3"$/.test(x)), `WORLD_SIZE did not change: ${d.join('\n')}`);
  });
});
