'use strict';
// helm/dashboards/chess-rl.json, the Grafana dashboard: valid against Grafana's own
// dashboard schema (generated offline from the pinned @grafana/schema TypeScript types by
// ts-json-schema-generator, checked with ajv), a check that has teeth (a misspelt key or a
// wrong type fails), every panel queried through the datasource variable and filtered by
// the namespace and release variables, every metric name one the project exports (or a
// recording rule, or listed as pending), every PromQL expression parsed by promtool, and
// every query answering on a made-up scrape with and without Kubernetes labels.
const { describe, it, before } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const tools = require('./lib/tools');
const mon = require('./lib/monitoring');
const { syntheticScrape } = require('./lib/synthetic-scrape');

const Ajv = tools.requireTool('ajv');
const tsj = tools.requireTool('ts-json-schema-generator');

const DS = { type: 'prometheus', uid: '${datasource}' };
const NS_MATCHER = 'namespace=~"$namespace"';
const RELEASE_MATCHER = 'app_kubernetes_io_instance=~"$release"';

// Grafana's dashboard JSON model (schemaVersion 3x, the "v1" dashboard): the TypeScript
// types @grafana/schema ships (dist/types/raw/dashboard/x/types.gen.d.ts) turned into a
// JSON schema. Generated at test time (about 3 s) rather than committed, so it always
// matches the pinned package. Every interface becomes additionalProperties: false.
function grafanaSchema() {
  const dir = path.dirname(tools.requireTool.resolve('@grafana/schema/package.json'));
  const types = path.join(dir, 'dist', 'types', 'raw', 'dashboard', 'x', 'types.gen.d.ts');
  assert.ok(fs.existsSync(types), `${types} is missing: has @grafana/schema moved its types?`);
  return tsj.createGenerator({ path: types, type: 'Dashboard', skipTypeCheck: true }).createSchema('Dashboard');
}

// A validator of whole dashboards: the dashboard without its panels against Dashboard,
// then each panel against the definition its type picks (RowPanel for "row", else Panel):
// the schema's anyOf of the two would report every error twice, once per branch.
function makeValidator(schema) {
  const ajv = new Ajv({ allErrors: true, strict: false });
  ajv.addSchema(schema, 'grafana');
  const get = (def) => {
    const v = ajv.getSchema(`grafana#/definitions/${def}`);
    assert.ok(v, `the generated schema has no definition ${def}`);
    return v;
  };
  const vDashboard = get('Dashboard');
  const vPanel = get('Panel');
  const vRow = get('RowPanel');
  const format = (prefix, errors) => (errors || []).map((e) => {
    const extra = e.params && e.params.additionalProperty ? `: ${e.params.additionalProperty}` : '';
    return `${prefix}${e.instancePath || ''} ${e.message}${extra}`;
  });
  return (d) => {
    const errors = [];
    const { panels, ...rest } = d;
    if (!vDashboard({ ...rest, panels: [] })) errors.push(...format('', vDashboard.errors));
    (panels || []).forEach((p, i) => {
      const v = p && p.type === 'row' ? vRow : vPanel;
      if (!v(p)) errors.push(...format(`/panels/${i} (${p && p.title})`, v.errors));
    });
    return errors;
  };
}

let validate;
let d;
before(() => {
  d = mon.dashboard();
  validate = makeValidator(grafanaSchema());
});

const clone = (x) => JSON.parse(JSON.stringify(x));
const firstPanel = (dash) => dash.panels.find((p) => p.type !== 'row');

describe('the dashboard against Grafana\'s schema', () => {
  it('validates', () => {
    assert.deepEqual(validate(d), []);
  });

  const broken = [
    ['a misspelt dashboard key', (x) => { x.templatting = x.templating; delete x.templating; }, /templatting/],
    ['a misspelt panel key', (x) => { const p = firstPanel(x); p.gridpos = p.gridPos; delete p.gridPos; }, /gridpos/],
    ['a misspelt field option', (x) => { const p = firstPanel(x); p.fieldConfig.defaults.units = 'short'; }, /units/],
    ['a misspelt variable key', (x) => { x.templating.list[1].includAll = true; }, /includAll/],
    ['a string schemaVersion', (x) => { x.schemaVersion = '39'; }, /\/schemaVersion must be number/],
    ['a string panel width', (x) => { firstPanel(x).gridPos.w = '12'; }, /gridPos\/w must be number/],
    ['a variable refresh out of its enum', (x) => { x.templating.list[1].refresh = 5; }, /refresh must be equal to one of the allowed values/],
    ['a row without its panels list', (x) => { delete x.panels.find((p) => p.type === 'row').panels; }, /must have required property 'panels'/],
  ];
  for (const [what, breakIt, names] of broken) {
    it(`refuses ${what}`, () => {
      const x = clone(d);
      breakIt(x);
      const errors = validate(x);
      assert.ok(errors.length > 0, `${what}: the broken dashboard validates`);
      assert.ok(errors.some((e) => names.test(e)), `${what}: no error matches ${names}:\n${errors.join('\n')}`);
    });
  }
});

describe('the dashboard\'s structure', () => {
  it('has a fixed uid, a title, schemaVersion 36 or later and unique panel ids', () => {
    assert.equal(d.uid, 'chess-rl');
    assert.ok(d.title);
    assert.ok(d.schemaVersion >= 36, `schemaVersion ${d.schemaVersion}`);
    const ids = d.panels.map((p) => p.id);
    assert.equal(new Set(ids).size, ids.length, `duplicate panel ids: ${ids}`);
  });

  it('lays the panels out on the 24-column grid without overlaps', () => {
    const taken = new Map();
    const overlaps = [];
    for (const p of d.panels) {
      const g = p.gridPos;
      assert.ok(g.x >= 0 && g.w > 0 && g.x + g.w <= 24, `${p.title}: x ${g.x} + w ${g.w} is outside the 24 columns`);
      for (let y = g.y; y < g.y + g.h; y++) {
        for (let x = g.x; x < g.x + g.w; x++) {
          const k = `${x},${y}`;
          if (taken.has(k)) overlaps.push(`${p.title} overlaps ${taken.get(k)} at ${k}`);
          taken.set(k, p.title);
        }
      }
    }
    assert.deepEqual([...new Set(overlaps)], []);
  });

  it('has the rows pipeline, self-play, GPUs, trainer, evaluator, replay and Redis', () => {
    const rows = d.panels.filter((p) => p.type === 'row').map((p) => p.title.toLowerCase());
    for (const want of ['pipeline', 'self-play', 'gpu', 'trainer', 'evaluator', 'redis']) {
      assert.ok(rows.some((r) => r.includes(want)), `no row about ${want}: ${rows.join(', ')}`);
    }
  });

  it('shows the Stockfish ladder in the evaluator row: the rung in play and the score against it', () => {
    const rows = d.panels.filter((p) => p.type === 'row');
    const evaluatorRow = rows.find((r) => r.title.toLowerCase().includes('evaluator'));
    const nextRow = rows.find((r) => r.gridPos.y > evaluatorRow.gridPos.y);
    const ladder = d.panels.find((p) => p.title === 'Stockfish ladder');
    assert.ok(ladder, 'no panel "Stockfish ladder"');
    assert.ok(ladder.gridPos.y > evaluatorRow.gridPos.y && (!nextRow || ladder.gridPos.y < nextRow.gridPos.y),
      'the ladder panel is not in the evaluator row');
    const exprs = ladder.targets.map((t) => t.expr);
    assert.ok(exprs.some((e) => /chessrl_eval_ladder_rung\b/.test(e)), `no query of the rung in play: ${exprs}`);
    assert.ok(exprs.some((e) => /chessrl_eval_score\b/.test(e) && /chessrl_eval_ladder_in_play\b/.test(e)),
      `no query of the score against the rung in play: ${exprs}`);
  });

  it('has the variables datasource (Prometheus), namespace and release, the last two with All = .*', () => {
    const vars = Object.fromEntries(d.templating.list.map((v) => [v.name, v]));
    assert.equal(vars.datasource && vars.datasource.type, 'datasource');
    assert.equal(vars.datasource.query, 'prometheus');
    for (const [name, label] of [['namespace', 'namespace'], ['release', 'app_kubernetes_io_instance']]) {
      const v = vars[name];
      assert.ok(v, `no variable ${name}`);
      assert.equal(v.type, 'query');
      assert.deepEqual(v.datasource, DS, `${name}: not queried through the datasource variable`);
      assert.equal(v.includeAll, true, `${name}: no All option`);
      // An absent label matches =~".*": the laptop case (chessrl local) has no namespace
      // or release label, and All must still show its series.
      assert.equal(v.allValue, '.*', `${name}: All must be .* so that series without the label match`);
      assert.match(String(v.query), new RegExp(`label_values\\(.*, ${label}\\)`), `${name}: its values are not those of ${label}`);
      for (const m of mon.metricNames(String(v.query).replace(/^label_values\((.*), \w+\)$/, '$1'))) {
        assert.ok(mon.metricOrigin(m), `${name}: its query uses ${m}, which no chess-rl process exports`);
      }
    }
  });

  it('every panel but the rows has a query, through the datasource variable', () => {
    const problems = [];
    for (const p of d.panels) {
      if (p.type === 'row') continue;
      if (JSON.stringify(p.datasource) !== JSON.stringify(DS)) problems.push(`${p.title}: datasource ${JSON.stringify(p.datasource)}`);
      const targets = p.targets || [];
      if (!targets.length) problems.push(`${p.title}: no query`);
      const refIds = targets.map((t) => t.refId);
      if (new Set(refIds).size !== refIds.length) problems.push(`${p.title}: duplicate refIds ${refIds}`);
      for (const t of targets) {
        if (!t.expr || !t.expr.trim()) problems.push(`${p.title} ${t.refId}: empty expr`);
        if (JSON.stringify(t.datasource) !== JSON.stringify(DS)) problems.push(`${p.title} ${t.refId}: datasource ${JSON.stringify(t.datasource)}`);
      }
    }
    assert.deepEqual(problems, []);
  });

  it(`every chess-rl series is selected with ${NS_MATCHER} and ${RELEASE_MATCHER}`, () => {
    const problems = [];
    for (const q of mon.dashboardQueries(d)) {
      for (const s of mon.selectors(q.expr)) {
        if (!s.matchers.includes(NS_MATCHER) || !s.matchers.includes(RELEASE_MATCHER)) {
          problems.push(`${q.title} ${q.target.refId}: ${s.name}{${s.matchers}}`);
        }
      }
    }
    assert.deepEqual(problems, []);
  });

  // kube-state-metrics series carry the object's namespace and name, not the release: the
  // self-play Deployment is F-selfplay and its HPA keda-hpa-F-selfplay (KEDA) or
  // F-selfplay (provider hpa), F being the release or <release>-<chart name>.
  it('every kube-state-metrics series is selected by namespace and by the release\'s self-play object name', () => {
    const problems = [];
    let seen = 0;
    for (const q of mon.dashboardQueries(d)) {
      for (const m of q.expr.matchAll(/\b(kube_[a-z_]+)\s*(?:\{([^}]*)\})?/g)) {
        seen++;
        const [, name, matchers = ''] = m;
        const object = name.startsWith('kube_horizontalpodautoscaler_') ? 'horizontalpodautoscaler' : 'deployment';
        const want = object === 'deployment' ? '"$release(-.+)?-selfplay"' : '"(keda-hpa-)?$release(-.+)?-selfplay"';
        if (!mon.KUBE_STATE_METRICS.has(name)) problems.push(`${q.title} ${q.target.refId}: ${name} is not in KUBE_STATE_METRICS`);
        if (!matchers.includes(NS_MATCHER) || !matchers.includes(`${object}=~${want}`)) {
          problems.push(`${q.title} ${q.target.refId}: ${name}{${matchers}} (want ${NS_MATCHER} and ${object}=~${want})`);
        }
      }
    }
    assert.ok(seen > 0, 'no kube-state-metrics query (the self-play replicas panel)');
    assert.deepEqual(problems, []);
  });

  it('those name patterns select the chart\'s self-play objects of one release and nothing else', () => {
    // Every deployment=~ / horizontalpodautoscaler=~ matcher of the dashboard, with $release
    // as Grafana substitutes one release (anchored, as Prometheus anchors =~).
    const patterns = { deployment: new Set(), horizontalpodautoscaler: new Set() };
    for (const q of mon.dashboardQueries(d)) {
      for (const m of q.expr.matchAll(/\b(deployment|horizontalpodautoscaler)=~"([^"]*)"/g)) patterns[m[1]].add(m[2]);
    }
    const cases = {
      // F = the release when it contains "chess-rl", else <release>-chess-rl
      deployment: { 'chess-rl': ['chess-rl-selfplay'], prod: ['prod-chess-rl-selfplay'], 'chess-rl-b': ['chess-rl-b-selfplay'] },
      horizontalpodautoscaler: {
        'chess-rl': ['keda-hpa-chess-rl-selfplay', 'chess-rl-selfplay'],
        prod: ['keda-hpa-prod-chess-rl-selfplay', 'prod-chess-rl-selfplay'],
      },
    };
    const others = ['prod-chess-rl-replay', 'prod-chess-rl-trainer', 'production-chess-rl-selfplay', 'keda-hpa-production-selfplay', 'other-selfplay'];
    for (const [label, set] of Object.entries(patterns)) {
      assert.ok(set.size > 0, `no ${label}=~ matcher in the dashboard`);
      for (const pattern of set) {
        for (const [release, names] of Object.entries(cases[label])) {
          const re = new RegExp(`^(?:${pattern.replace(/\$release/g, release)})$`);
          for (const n of names) assert.match(n, re, `${label}=~"${pattern}" with release ${release}`);
          if (release === 'prod') for (const n of others) assert.doesNotMatch(n, re, `${label}=~"${pattern}" with release prod`);
        }
      }
    }
  });

  it('every metric is one chess-rl exports, a recording rule of helm/rules, or listed as pending', (t) => {
    const unknown = [];
    const pending = new Set();
    for (const q of mon.dashboardQueries(d)) {
      for (const m of mon.metricNames(q.expr)) {
        const origin = mon.metricOrigin(m);
        if (!origin) unknown.push(`${q.title} ${q.target.refId}: ${m}`);
        if (origin === 'pending') pending.add(m.replace(/_(bucket|sum|count)$/, ''));
      }
    }
    assert.deepEqual(unknown, [], 'metrics that exist nowhere (a typo, or a metric to add to PENDING_METRICS in lib/monitoring.js with what it means)');
    for (const m of pending) t.diagnostic(`pending (not exported yet): ${m}: ${mon.PENDING_METRICS[m]}`);
  });
});

describe('the dashboard\'s PromQL', () => {
  it('parses (promtool check rules on every expression as a recording rule)', async () => {
    const dir = mon.tempDir('chessrl-dashboard-');
    const queries = mon.dashboardQueries(d);
    const file = path.join(dir, 'dashboard-exprs.yaml');
    fs.writeFileSync(file, mon.yaml.dump({ groups: [{ name: 'dashboard', rules: queries.map((q, i) => ({
      record: `dashboard:query_${i}`, expr: mon.substitute(q.expr),
    })) }] }, { lineWidth: -1 }));
    const r = await mon.runPromtool(['check', 'rules', file]);
    assert.equal(r.code, 0, `promtool check rules failed:\n${r.stdout}${r.stderr}\n` +
      queries.map((q, i) => `dashboard:query_${i} = ${q.title} ${q.target.refId}`).join('\n'));
  });

  for (const kubernetes of [true, false]) {
    const where = kubernetes ? 'with the PodMonitors\' labels' : 'without Kubernetes labels (chessrl local)';
    it(`every query answers on a made-up scrape ${where}`, async () => {
      const dir = mon.tempDir('chessrl-dashboard-');
      // Without Kubernetes there is no component label (the targets-up panel stays empty)
      // and no kube-state-metrics.
      const kubeOnly = (q) => /component=~/.test(q.expr) ||
        mon.metricNames(q.expr).some((m) => mon.KUBE_STATE_METRICS.has(m));
      const queries = mon.dashboardQueries(d).filter((q) => kubernetes || !kubeOnly(q));
      const tests = queries.map((q) => ({
        expr: `count(${mon.substitute(q.expr)}) > bool 0`, eval_time: '25m',
        exp_samples: [{ labels: '{}', value: 1 }],
      }));
      const file = path.join(dir, 'dashboard.test.yaml');
      fs.writeFileSync(file, mon.yaml.dump({
        evaluation_interval: '1m',
        tests: [{ interval: '1m', input_series: syntheticScrape({ kubernetes }), promql_expr_test: tests }],
      }, { lineWidth: -1 }));
      const r = await mon.runPromtool(['test', 'rules', file]);
      assert.equal(r.code, 0, `queries that return nothing or fail (promtool test rules):\n${r.stdout}${r.stderr}`);
    });
  }
});
