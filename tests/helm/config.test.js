'use strict';
// Pods roll when their configuration changes: every workload's pod template carries a
// checksum/config annotation that follows its own config (and only its own: changing one
// component's config restarts no other component).
const { describe, it, before } = require('node:test');
const assert = require('node:assert/strict');
const { render, prefetch, COMPONENTS, workloadOf, defaultValues, configOf } = require('./lib/chart');

// For each component, a --set that changes one value of its `config` map in values.yaml:
// the first number there, plus one (redis.config and replay.config are empty by default:
// add maxmemory, or a window other than the binary's own).
function changeFor(component) {
  const config = (defaultValues()[component] || {}).config || {};
  const key = Object.keys(config).find((k) => typeof config[k] === 'number');
  if (component === 'redis' && !key) return { key: 'maxmemory', args: ['--set', 'redis.config.maxmemory=1gb'] };
  if (component === 'replay' && !key) {
    return { key: 'window-positions', args: ['--set', 'replay.config.window-positions=100000'] };
  }
  assert.ok(key, `values.yaml ${component}.config has no number to change`);
  return { key, args: ['--set', `${component}.config.${key}=${config[key] + 1}`] };
}
const checksum = (objs, c) => ((workloadOf(objs, c).spec.template.metadata.annotations) || {})['checksum/config'];

before(() => prefetch([[]], ...COMPONENTS.map((c) => [changeFor(c).args])));

describe('checksum/config', () => {
  it('every workload\'s pod template has a checksum/config annotation', async () => {
    const objs = await render([]);
    for (const c of COMPONENTS) assert.match(checksum(objs, c) || '', /^[0-9a-f]{16,}$/, `${c}: checksum/config`);
  });

  for (const c of COMPONENTS) {
    it(`changing ${c}.config changes ${c}'s checksum/config, and no other component's`, async () => {
      const { key, args } = changeFor(c);
      const before_ = await render([]);
      const after = await render(args);
      assert.notEqual(checksum(after, c), checksum(before_, c), `${c}: checksum/config unchanged after ${args[1]}`);
      if (c !== 'redis') {
        assert.notDeepEqual(configOf(after, c)[key], configOf(before_, c)[key], `${c}: config.yaml did not change`);
      }
      for (const other of COMPONENTS.filter((o) => o !== c)) {
        assert.equal(checksum(after, other), checksum(before_, other), `${other}'s checksum changed with ${args[1]}`);
      }
    });
  }
});
