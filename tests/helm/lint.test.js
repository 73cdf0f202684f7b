'use strict';
// helm lint --strict on the chart, alone and with each values file it ships.
const { describe, it } = require('node:test');
const assert = require('node:assert/strict');
const { helm, valuesSets, apiVersionsIn, setLabel, missingValuesFiles, KUBE_VERSION } = require('./lib/chart');
const { chartDir } = require('./lib/tools');

describe('helm lint --strict', () => {
  it('the chart ships the values files the checks use', () => {
    assert.deepEqual(missingValuesFiles(), [], 'values files missing from the chart');
  });

  // helm lint takes no --api-versions (and reports a template's fail only as [INFO]): a
  // set's API versions are left out here; k8s-schema.test.js renders it with them.
  for (const [name, all] of Object.entries(valuesSets())) {
    const args = apiVersionsIn(all).rest;
    it(`passes with ${setLabel(name)}`, async () => {
      const r = await helm(['lint', '--strict', chartDir, '--kube-version', KUBE_VERSION, ...args]);
      assert.equal(r.code, 0, `helm ${r.args.join(' ')} failed:\n${r.stdout}${r.stderr}`);
      assert.match(r.stdout, /1 chart\(s\) linted, 0 chart\(s\) failed/);
    });
  }
});
