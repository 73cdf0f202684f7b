'use strict';
// Gang scheduling of the trainer ranks: Volcano's PodGroup (trainer.gangScheduling.volcano)
// and Kueue's admission of the StatefulSet (trainer.kueue.queueName). The PodGroup holds
// every rank or none (minMember = trainer.replicas), the pods name it and go to Volcano's
// scheduler; the chart renders it only where the cluster serves the API, and refuses the
// values (naming the key) where it does not. Both objects pass the offline validator (the
// PodGroup against lib/volcano-podgroup.schema.json).
const { describe, it, before } = require('node:test');
const assert = require('node:assert/strict');
const { render, prefetch, helm, F, get, find, ofKind, inventory, KUBE_VERSION } = require('./lib/chart');
const { chartDir } = require('./lib/tools');
const { validateObject } = require('./lib/k8s-validate');

const VOLCANO_API = 'scheduling.volcano.sh/v1beta1';
const GROUP_ANNOTATION = 'scheduling.k8s.io/group-name';
const KUEUE_LABEL = 'kueue.x-k8s.io/queue-name';
const withVolcano = { apiVersions: [VOLCANO_API] };
const set = (...kv) => kv.flatMap((s) => ['--set', s]);
const volcano = (...more) => set('trainer.gangScheduling.volcano.enabled=true', ...more);
const REPLICAS = [1, 3, 4];

before(() => prefetch(
  [[]], [[], withVolcano],
  ...REPLICAS.map((n) => [volcano(`trainer.replicas=${n}`), withVolcano]),
  [volcano('trainer.gangScheduling.volcano.queue=training', 'trainer.priorityClassName=ml-high'), withVolcano],
  [volcano('trainer.schedulerName=volcano-gpu'), withVolcano],
  [set('trainer.kueue.queueName=team-a', 'trainer.replicas=2')],
));

const trainerOf = (objs) => get(objs, 'StatefulSet', `${F}-trainer`);

describe('gang scheduling of the trainer: nothing by default', () => {
  for (const api of [false, true]) {
    it(`no PodGroup, group annotation, schedulerName or Kueue label${api ? ` (even with ${VOLCANO_API})` : ''}`, async () => {
      const objs = await render([], api ? withVolcano : {});
      assert.deepEqual(ofKind(objs, 'PodGroup').map((o) => o.metadata.name), []);
      const sts = trainerOf(objs);
      assert.equal((sts.spec.template.metadata.annotations || {})[GROUP_ANNOTATION], undefined);
      assert.equal(sts.spec.template.spec.schedulerName, undefined);
      assert.equal((sts.metadata.labels || {})[KUEUE_LABEL], undefined);
      assert.equal((sts.spec.template.metadata.labels || {})[KUEUE_LABEL], undefined);
    });
  }
});

describe('Volcano (trainer.gangScheduling.volcano.enabled)', () => {
  for (const n of REPLICAS) {
    it(`trainer.replicas=${n}: PodGroup ${F}-trainer with minMember ${n}, the pods in it, scheduled by volcano`, async () => {
      const objs = await render(volcano(`trainer.replicas=${n}`), withVolcano);
      const pg = get(objs, 'PodGroup', `${F}-trainer`);
      assert.equal(pg.apiVersion, VOLCANO_API);
      assert.equal(pg.metadata.namespace, 'chess-rl');
      assert.equal(pg.spec.minMember, n);
      const sts = trainerOf(objs);
      assert.equal(sts.spec.replicas, n);
      assert.equal(sts.spec.template.metadata.annotations[GROUP_ANNOTATION], pg.metadata.name);
      assert.equal(sts.spec.template.spec.schedulerName, 'volcano');
      assert.equal(pg.spec.queue, undefined, 'a queue without trainer.gangScheduling.volcano.queue');
      assert.deepEqual(validateObject(pg), []);
      assert.deepEqual(validateObject(sts), []);
    });
  }

  it('the queue, and the PodGroup\'s priority from trainer.priorityClassName (the pods\' too)', async () => {
    const objs = await render(volcano('trainer.gangScheduling.volcano.queue=training', 'trainer.priorityClassName=ml-high'), withVolcano);
    const pg = get(objs, 'PodGroup', `${F}-trainer`);
    assert.equal(pg.spec.queue, 'training');
    assert.equal(pg.spec.priorityClassName, 'ml-high');
    assert.equal(trainerOf(objs).spec.template.spec.priorityClassName, 'ml-high');
    assert.deepEqual(validateObject(pg), []);
  });

  it('trainer.schedulerName names Volcano\'s scheduler when it runs under another name', async () => {
    const objs = await render(volcano('trainer.schedulerName=volcano-gpu'), withVolcano);
    assert.equal(trainerOf(objs).spec.template.spec.schedulerName, 'volcano-gpu');
    assert.ok(find(objs, 'PodGroup', `${F}-trainer`), `no PodGroup: ${inventory(objs)}`);
  });

  it('the other workloads keep the default scheduler and join no group', async () => {
    const objs = await render(volcano('trainer.replicas=3'), withVolcano);
    for (const w of ofKind(objs, 'Deployment', 'StatefulSet').filter((o) => o.metadata.name !== `${F}-trainer`)) {
      assert.equal(w.spec.template.spec.schedulerName, undefined, w.metadata.name);
      assert.equal((w.spec.template.metadata.annotations || {})[GROUP_ANNOTATION], undefined, w.metadata.name);
    }
  });
});

describe('refused values, naming the key', () => {
  const template = (args, apiVersions = []) => helm(['template', 'chess-rl', chartDir, '--kube-version', KUBE_VERSION,
    ...apiVersions.flatMap((v) => ['--api-versions', v]), ...args]);

  it(`Volcano enabled where the cluster has no ${VOLCANO_API} API`, async () => {
    const r = await template(volcano());
    assert.notEqual(r.code, 0, 'rendered a PodGroup request without the API');
    assert.match(r.stderr, /trainer\.gangScheduling\.volcano\.enabled=true needs the scheduling\.volcano\.sh\/v1beta1 API/);
  });

  it('a queue without the PodGroup, and a group-name annotation of one\'s own beside it', async () => {
    let r = await template(set('trainer.gangScheduling.volcano.queue=training'));
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /trainer\.gangScheduling\.volcano\.queue is set but trainer\.gangScheduling\.volcano\.enabled=false/);
    r = await template([...volcano(), '--set', `trainer.podAnnotations.scheduling\\.k8s\\.io/group-name=mine`], [VOLCANO_API]);
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /trainer\.podAnnotations sets scheduling\.k8s\.io\/group-name/);
  });

  const SCHEMA_ERROR = /values don't meet the specifications of the schema/;
  const schemaCases = [
    { set: 'trainer.gangScheduling.volcano.minMember=1', names: /trainer\.gangScheduling\.volcano.*minMember/,
      why: 'minMember is trainer.replicas, not a value' },
    { set: 'trainer.gangScheduling.volcano.enabled=yes', names: /trainer\.gangScheduling\.volcano\.enabled/, why: 'not a boolean' },
    { set: 'trainer.gangScheduling.volcano.queue=Training_Queue', names: /trainer\.gangScheduling\.volcano\.queue/, why: 'not an object name' },
    { set: 'trainer.gangScheduling.kueue.queueName=a', names: /trainer\.gangScheduling.*kueue/, why: 'kueue is not under gangScheduling' },
    { set: 'trainer.kueue.queueName=Team A', names: /trainer\.kueue\.queueName/, why: 'not a LocalQueue name' },
    { set: `trainer.kueue.queueName=${'q'.repeat(64)}`, names: /trainer\.kueue\.queueName/, why: 'longer than a label value' },
    { set: 'trainer.schedulerName=Volcano Scheduler', names: /trainer\.schedulerName/, why: 'not a DNS subdomain' },
  ];
  for (const c of schemaCases) {
    it(`values.schema.json refuses --set ${c.set} (${c.why})`, async () => {
      const r = await template(['--set', c.set], [VOLCANO_API]);
      assert.notEqual(r.code, 0, `helm accepted --set ${c.set}`);
      assert.match(r.stderr, SCHEMA_ERROR, r.stderr);
      assert.match(r.stderr, c.names, r.stderr);
    });
  }
});

describe('Kueue (trainer.kueue.queueName)', () => {
  it('the queue label on the StatefulSet (Kueue\'s webhook copies it to the pods), still a valid StatefulSet', async () => {
    const objs = await render(set('trainer.kueue.queueName=team-a', 'trainer.replicas=2'));
    const sts = trainerOf(objs);
    assert.equal(sts.metadata.labels[KUEUE_LABEL], 'team-a');
    assert.equal((sts.spec.template.metadata.labels || {})[KUEUE_LABEL], undefined,
      'the chart sets the label once, where Kueue reads it; its webhook adds the pod template\'s');
    assert.ok(!Object.keys(sts.spec.selector.matchLabels).includes(KUEUE_LABEL), 'the selector must not change with the queue');
    assert.equal(sts.spec.template.spec.schedulerName, undefined, 'Kueue admits; the default scheduler places');
    assert.deepEqual(ofKind(objs, 'PodGroup'), []);
    assert.deepEqual(validateObject(sts), []);
    for (const o of objs.filter((x) => x.metadata.name !== `${F}-trainer`)) {
      assert.equal(((o.metadata || {}).labels || {})[KUEUE_LABEL], undefined, `${o.kind} ${o.metadata.name} carries the queue label`);
    }
  });
});
