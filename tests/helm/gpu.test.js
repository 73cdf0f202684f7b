'use strict';
// helm/values-gpu.yaml: self-play and the trainer get one GPU each (requests = limits, as
// Kubernetes requires for extended resources), the CUDA image and --device cuda; the
// defaults use no GPU and --device cpu.
const { describe, it, before } = require('node:test');
const assert = require('node:assert/strict');
const {
  render, prefetch, valuesSets, setLabel, podTemplates, containersOf, workloadOf, mainContainer,
  optionValue, configOf,
} = require('./lib/chart');

const GPU = 'nvidia.com/gpu';
const gpuArgs = () => valuesSets().gpu;
before(() => prefetch([[]], [gpuArgs()]));

describe(`GPU values (${setLabel('gpu')})`, () => {
  for (const c of ['selfplay', 'trainer']) {
    it(`${c}: ${GPU} in requests and limits, the chessrl-cuda image, --device cuda`, async () => {
      const objs = await render(gpuArgs());
      const ctr = mainContainer(workloadOf(objs, c), c);
      const res = ctr.resources || {};
      const req = res.requests && res.requests[GPU];
      const lim = res.limits && res.limits[GPU];
      assert.ok(lim !== undefined && Number(lim) >= 1, `${c}: no ${GPU} limit (${JSON.stringify(res)})`);
      assert.equal(String(req), String(lim), `${c}: ${GPU} requests must equal limits`);
      assert.match(ctr.image, /(^|\/)chessrl-cuda[:@]/, `${c} image`);
      assert.match(optionValue(ctr, 'device', configOf(objs, c)) || '', /^cuda(:\d+)?$/, `${c}: --device`);
    });
  }

  it('the trainer\'s WORLD_SIZE matches its replicas with GPUs too', async () => {
    const sts = workloadOf(await render(gpuArgs()), 'trainer');
    const env = Object.fromEntries(mainContainer(sts, 'trainer').env.map((e) => [e.name, e.value]));
    assert.equal(env.WORLD_SIZE, String(sts.spec.replicas));
  });
});

describe('default values use no GPU', () => {
  it(`no container asks for ${GPU}, and self-play and the trainer run --device cpu`, async () => {
    const objs = await render([]);
    for (const p of podTemplates(objs)) {
      for (const { c } of containersOf(p.podSpec)) {
        const res = c.resources || {};
        assert.ok(!(res.limits || {})[GPU] && !(res.requests || {})[GPU], `${p.what} ${c.name} asks for a GPU`);
      }
    }
    for (const c of ['selfplay', 'trainer']) {
      const device = optionValue(mainContainer(workloadOf(objs, c), c), 'device', configOf(objs, c));
      assert.ok(device === undefined || device === 'cpu', `${c}: --device ${device}`);
    }
  });
});
