'use strict';
// templates/NOTES.txt, the text `helm install` prints. `helm template` never renders it and
// `helm install --dry-run` needs a cluster, so the test renders it through a copy of the
// chart in which the same text is the body of a define, placed in a ConfigMap.
const { describe, it, before, after } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { helm, parseManifests, valuesSets, setLabel, F, RELEASE } = require('./lib/chart');
const tools = require('./lib/tools');

let chartCopy;
async function renderNotes(args) {
  const r = await helm(['template', RELEASE, chartCopy, '--namespace', 'chess-rl',
    '--show-only', 'templates/zz-notes-check.yaml', ...args]);
  assert.equal(r.code, 0, `rendering NOTES.txt failed:\n${r.stderr}`);
  const [cm] = parseManifests(r.stdout);
  return cm.data.notes;
}

describe('NOTES.txt (what helm install prints)', () => {
  before(() => {
    chartCopy = fs.mkdtempSync(path.join(os.tmpdir(), 'chessrl-notes-'));
    fs.cpSync(tools.chartDir, chartCopy, { recursive: true });
    const notes = fs.readFileSync(path.join(tools.chartDir, 'templates', 'NOTES.txt'), 'utf8');
    fs.writeFileSync(path.join(chartCopy, 'templates', 'zz-notes-check.yaml'),
      `{{- define "notes-check.body" -}}\n${notes}\n{{- end -}}\n` +
      'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: notes-check\n' +
      'data:\n  notes: {{ include "notes-check.body" . | quote }}\n');
  });
  after(() => fs.rmSync(chartCopy, { recursive: true, force: true }));

  for (const [set, args] of Object.entries(valuesSets())) {
    it(`renders with ${setLabel(set)}`, async () => {
      const notes = await renderNotes(args);
      assert.match(notes, new RegExp(`kubectl -n chess-rl scale deployment/${F}-selfplay --replicas=`));
      assert.match(notes, /3600 \* sum\(rate\(chessrl_selfplay_games_total\[5m\]\)\)/);
      assert.match(notes, new RegExp(`port-forward svc/${F}-replay `));
      assert.match(notes, new RegExp(`helm test ${RELEASE} -n chess-rl`));
      assert.doesNotMatch(notes, /<no value>|%!/, 'a value the text names is missing');
    });
  }

  it('says how to read the chart\'s Redis password, or the existing Secret\'s', async () => {
    assert.match(await renderNotes([]),
      new RegExp(`get secret ${F}-redis -o jsonpath='\\{\\.data\\.redis-password\\}' \\| base64 -d`));
    assert.match(await renderNotes(['--set', 'redis.auth.existingSecret=mine',
      '--set', 'redis.auth.existingSecretPasswordKey=pw']),
    /get secret mine -o jsonpath='\{\.data\.pw\}' \| base64 -d/);
  });

  it('says where the bearer tokens are and how to roll the pods after changing them', async () => {
    const notes = await renderNotes([]);
    assert.match(notes, new RegExp(`get secret ${F}-auth -o jsonpath='\\{\\.data\\.evaluator\\}' \\| base64 -d`));
    assert.match(notes, new RegExp(`rollout restart deployment,statefulset -l app\\.kubernetes\\.io/instance=${RELEASE},app\\.kubernetes\\.io/component!=redis`));
    assert.match(await renderNotes(['--set', 'auth.existingSecret=mine']), /get secret mine -o jsonpath/);
    assert.match(await renderNotes(['--set', 'auth.enabled=false']), /takes gRPC calls from anyone/);
    assert.match(await renderNotes(['--set', 'tls.enabled=true', '--set', 'tls.existingSecret=c']),
      new RegExp(`talks TLS \\(Secret c\\); clients check the name ${F}-replay`));
  });

  it('with selfplay.replicas=null it leaves the number to kubectl scale', async () => {
    assert.match(await renderNotes(['--set', 'selfplay.replicas=null']), /helm upgrade leaves the number alone/);
    assert.match(await renderNotes([]), /helm upgrade sets it back to selfplay\.replicas=1/);
  });
});
