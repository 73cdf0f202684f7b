'use strict';
// templates/NOTES.txt, the text `helm install` prints. `helm template` never renders it and
// `helm install --dry-run` needs a cluster, so the test renders it through a copy of the
// chart in which the same text is the body of a define, placed in a ConfigMap.
const { describe, it, before, after } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { helm, parseManifests, valuesSets, setLabel, F, RELEASE, KEDA_API, yaml } = require('./lib/chart');
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
      const file = args.length ? yaml.load(fs.readFileSync(args[1], 'utf8')) : {};
      const auto = file && file.selfplay && file.selfplay.autoscaling;
      if (auto && auto.enabled) {
        assert.match(notes, /Self-play follows the trainer: /);
        assert.doesNotMatch(notes, /scale deployment\//, 'kubectl scale offered while an autoscaler owns the number');
      } else {
        assert.match(notes, new RegExp(`kubectl -n chess-rl scale deployment/${F}-selfplay --replicas=`));
      }
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

  it('with selfplay.autoscaling and KEDA: who scales self-play, between which bounds, how to hold it', async () => {
    const notes = await renderNotes(['--api-versions', KEDA_API, '--set', 'selfplay.autoscaling.enabled=true',
      '--set', 'selfplay.autoscaling.minReplicas=2', '--set', 'selfplay.autoscaling.maxReplicas=9']);
    assert.match(notes, new RegExp(`self-play  Deployment ${F}-selfplay ×2…9 \\(KEDA\\)`));
    assert.match(notes, new RegExp(`KEDA \\(ScaledObject ${F}-selfplay, through its\\s+HorizontalPodAutoscaler keda-hpa-${F}-selfplay\\) keeps 2 to 9 pods`));
    assert.match(notes, /within 0\.5…0\.9 of its --max-reuse/);
    assert.match(notes, new RegExp(`annotate scaledobject/${F}-selfplay autoscaling\\.keda\\.sh/paused-replicas=N`));
    assert.doesNotMatch(notes, /helm upgrade sets it back/);
  });

  it('with selfplay.autoscaling.provider=hpa: prints prometheus-adapter\'s rule, whose query is the ScaledObject\'s', async () => {
    const band = '{"low":0.4,"target":0.6,"high":0.8}';
    const common = ['--set', 'selfplay.autoscaling.enabled=true', '--set', 'selfplay.autoscaling.rateWindow=7m',
      '--set-json', `selfplay.autoscaling.band=${band}`];
    const notes = await renderNotes([...common, '--set', 'selfplay.autoscaling.provider=hpa']);
    assert.match(notes, new RegExp(`HorizontalPodAutoscaler ${F}-selfplay keeps 1 to 8`));
    assert.match(notes, /rules\.external of the prometheus-community\/prometheus-adapter chart/);
    // The rule: the indented YAML list after the paragraph that announces it.
    const m = /\n\n((?: {2}- seriesQuery:.*\n)(?: {4}.*\n| *\n)+)/.exec(notes);
    assert.ok(m, `no adapter rule in NOTES:\n${notes}`);
    const [rule] = yaml.load(m[1].replace(/^ {2}/gm, ''));
    assert.equal(rule.name.as, 'chessrl_selfplay_scale_ratio');
    assert.equal(rule.name.matches, '^chessrl_selfplay_positions_total$');
    assert.deepEqual(rule.resources, { overrides: { namespace: { resource: 'namespace' } } });
    assert.match(rule.seriesQuery, /^chessrl_selfplay_positions_total\{/);
    assert.match(rule.metricsQuery, /<<\.LabelMatchers>>/);
    assert.doesNotMatch(rule.metricsQuery, /namespace="/, 'the adapter fills in the matchers; the rule must serve every release');
    // The same law as KEDA's query: the matchers the adapter fills in are this release's.
    const r = await helm(['template', RELEASE, tools.chartDir, '--namespace', 'chess-rl', '--api-versions', KEDA_API,
      '--show-only', 'templates/selfplay/scaledobject.yaml', ...common]);
    assert.equal(r.code, 0, r.stderr);
    const [so] = parseManifests(r.stdout);
    const kedaQuery = so.spec.triggers[0].metadata.query;
    assert.match(kedaQuery, /\[7m\]/);
    assert.equal(rule.metricsQuery.replace(/<<\.LabelMatchers>>/g, `namespace="chess-rl",app_kubernetes_io_instance="${RELEASE}"`), kedaQuery);
  });

  it('docs/kubernetes-scaling.md shows the adapter rule NOTES prints with the default values', async () => {
    const notes = await renderNotes(['--set', 'selfplay.autoscaling.enabled=true', '--set', 'selfplay.autoscaling.provider=hpa']);
    const printed = /\n\n((?: {2}- seriesQuery:.*\n)(?: {4}.*\n| *\n)+)/.exec(notes)[1].replace(/^ {2}/gm, '').trimEnd();
    const doc = fs.readFileSync(path.join(tools.repoRoot, 'docs', 'kubernetes-scaling.md'), 'utf8');
    const section = doc.slice(doc.indexOf('### Provider hpa: prometheus-adapter'));
    const m = /```yaml\n([\s\S]*?)\n```/.exec(section);
    assert.ok(m, 'no yaml block in docs/kubernetes-scaling.md, "Provider hpa: prometheus-adapter"');
    assert.equal(m[1], printed, 'docs/kubernetes-scaling.md\'s adapter rule differs from the chart\'s');
  });

  it('with selfplay.replicas=null it leaves the number to kubectl scale', async () => {
    assert.match(await renderNotes(['--set', 'selfplay.replicas=null']), /helm upgrade leaves the number alone/);
    assert.match(await renderNotes([]), /helm upgrade sets it back to selfplay\.replicas=1/);
  });
});
