'use strict';
// helm/values.schema.json refuses bad values before anything renders, with a message that
// names the offending key.
const { describe, it } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const { helm, chartFile, KUBE_VERSION } = require('./lib/chart');
const { chartDir } = require('./lib/tools');

const SCHEMA_ERROR = /values don't meet the specifications of the schema/;
const cases = [
  { set: 'selfplay.replicas=two', names: /selfplay[./]replicas/, why: 'not an integer' },
  { set: 'trainer.replicas=0', names: /trainer[./]replicas/, why: 'a trainer needs at least one rank' },
  { set: 'selfplay.precision=fp8', names: /selfplay[./]precision/, why: 'not fp32, fp16 or bf16' },
  { set: 'selfplayy.replicas=2', names: /selfplayy/, why: 'a misspelt top-level key' },
  { set: 'trainer.replicass=2', names: /replicass/, why: 'a misspelt key in a component' },
  { set: 'monitoring.dashboards.labelValue=1', names: /dashboards[./]labelValue/, why: 'a number: the sidecar compares strings (--set-string)' },
  { set: 'monitoring.dashboards.namespace=Monitoring', names: /dashboards[./]namespace/, why: 'not a namespace name' },
  { set: 'monitoring.dashboards.label=', names: /dashboards[./]label/, why: 'an empty label key' },
  { set: 'monitoring.prometheusRule.enabeld=true', names: /enabeld/, why: 'a misspelt key of the PrometheusRule' },
  { set: 'monitoring.prometheusRule.alertLabels.team-name=ml', names: /alertLabels/, why: 'not a Prometheus label name' },
  { set: 'evaluator.ladder=stockfish:0', names: /evaluator[./]ladder/, why: 'a rung without its DEPTH (PROGRAM:SKILL:DEPTH)' },
];

describe('values.schema.json', () => {
  it('the chart has a values schema', () => {
    assert.ok(fs.existsSync(chartFile('values.schema.json')), 'helm/values.schema.json is missing');
  });

  for (const c of cases) {
    it(`refuses --set ${c.set} (${c.why}), naming the key`, async () => {
      const r = await helm(['template', 'chess-rl', chartDir, '--kube-version', KUBE_VERSION, '--set', c.set]);
      assert.notEqual(r.code, 0, `helm accepted --set ${c.set}`);
      assert.match(r.stderr, SCHEMA_ERROR, `refused, but not by the schema:\n${r.stderr}`);
      assert.match(r.stderr, c.names, `the message does not name the key:\n${r.stderr}`);
    });
  }
});
