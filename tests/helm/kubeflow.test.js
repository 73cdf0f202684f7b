'use strict';
// k8s/kubeflow/: chessrl-trainer as a Kubeflow PyTorchJob (kubeflow.org/v1) and a Kubeflow
// Trainer TrainJob (trainer.kubeflow.org/v1alpha1). The examples are checked for the shape
// the operators accept, for pod templates Kubernetes accepts, for flags the trainer has, for
// the chart's trainer pod (the values they copy), and for the environment the operators give
// each pod: it is fed to `chessrl-trainer --print-rendezvous`, which must take each pod's
// rank, the world size and rank 0's address from it. The operators' variables follow their
// sources: training operator v1.9 (pkg/controller.v1/pytorch/envvar.go, master.go) and
// Kubeflow Trainer v2.3 (pkg/runtime/framework/plugins/torch/torch.go, pkg/constants).
const { describe, it, before } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { execFile } = require('node:child_process');
const tools = require('./lib/tools');
const { render, get, F, yaml, selectsMap } = require('./lib/chart');
const { validateObject } = require('./lib/k8s-validate');

const DIR = path.join(tools.repoRoot, 'k8s', 'kubeflow');
const IMAGE = 'chessrl:0.1.0';
const TRAINER = '/usr/local/bin/chessrl-trainer';
// What the operators set; a manifest that sets one itself fights them (the TrainJob
// webhook refuses the PET_* ones in spec.trainer.env).
const OPERATOR_ENV = ['RANK', 'WORLD_SIZE', 'MASTER_ADDR', 'MASTER_PORT', 'LOCAL_RANK',
  'PET_NNODES', 'PET_NPROC_PER_NODE', 'PET_NODE_RANK', 'PET_MASTER_ADDR', 'PET_MASTER_PORT'];
// Kubeflow Trainer's port for the torch runtime's nodes (constants.ContainerTrainerPort).
const TRAINJOB_PORT = 29500;

function load(file) {
  const docs = yaml.loadAll(fs.readFileSync(path.join(DIR, file), 'utf8'), null,
    { schema: yaml.CORE_SCHEMA }).filter((d) => d !== null && d !== undefined);
  assert.equal(docs.length, 1, `${file}: one object expected, found ${docs.length}`);
  return docs[0];
}
const pytorchJob = () => load('pytorchjob.yaml');
const trainJob = () => load('trainjob.yaml');

// Keys of obj that the API type does not have (the CRDs' schemas are not in the pinned
// packages; these lists are the Go types' json names).
function unknownKeys(obj, allowed, where) {
  return Object.keys(obj || {}).filter((k) => !allowed.includes(k)).map((k) => `${where}.${k}`);
}

// The pod template of a replica type of the PyTorchJob, and its pytorch container.
const replicaTemplate = (job, type) => job.spec.pytorchReplicaSpecs[type].template;
const pytorchContainer = (tpl) => tpl.spec.containers.find((c) => c.name === 'pytorch');

// The TrainJob's patch of the runtime's `node` job: {metadata, spec}.
function nodePatch(job) {
  const patches = job.spec.runtimePatches || [];
  const jobs = patches.flatMap((p) => p.trainingRuntimeSpec.template.spec.replicatedJobs);
  const node = jobs.find((j) => j.name === 'node');
  assert.ok(node, 'no runtimePatches entry for the replicated job `node`');
  return node.template.spec.template;
}
// The pod a TrainJob node runs: the runtime's container `node` with spec.trainer's image,
// command, args, env and resources, and the patch's pod settings and container settings.
function trainJobPod(job) {
  const t = job.spec.trainer;
  const patch = nodePatch(job);
  const { containers = [], ...podSettings } = patch.spec;
  const c = containers.find((x) => x.name === 'node') || {};
  const pod = {
    metadata: patch.metadata,
    spec: {
      ...podSettings,
      containers: [{
        name: 'node', image: t.image, command: t.command, args: t.args, env: t.env,
        resources: t.resourcesPerNode, securityContext: c.securityContext, volumeMounts: c.volumeMounts,
      }],
    },
  };
  return JSON.parse(JSON.stringify(pod));  // without the undefined fields
}

// The environment the training operator v1.9 gives the pod `index` of a replica type.
function pytorchJobEnv(job, type, index) {
  const specs = job.spec.pytorchReplicaSpecs;
  const total = Object.values(specs).reduce((n, s) => n + (s.replicas === undefined ? 1 : s.replicas), 0);
  const nproc = job.spec.nprocPerNode === undefined ? 'auto' : job.spec.nprocPerNode;  // its default
  const perNode = /^\d+$/.test(nproc) ? Number(nproc) : 1;
  const port = (pytorchContainer(replicaTemplate(job, 'Master')).ports || [])
    .find((p) => p.name === 'pytorchjob-port');
  assert.ok(port, 'the Master\'s pytorch container has no port named pytorchjob-port (MASTER_PORT)');
  const rank = type === 'Worker' ? index + 1 : index;
  return {
    MASTER_ADDR: `${job.metadata.name}-master-0`, MASTER_PORT: String(port.containerPort),
    WORLD_SIZE: String(total * perNode), RANK: String(rank), PET_NODE_RANK: String(rank),
    PET_NPROC_PER_NODE: nproc, PET_NNODES: String(total),
  };
}

// CPUs as the Kubernetes quantity rounds them up ("1500m" is 2).
function cpus(q) {
  if (q === undefined) return 0;
  const s = String(q);
  return s.endsWith('m') ? Math.ceil(Number(s.slice(0, -1)) / 1000) : Math.ceil(Number(s));
}
// The environment Kubeflow Trainer v2.3's torch runtime gives node `index`.
function trainJobEnv(job, index) {
  const t = job.spec.trainer;
  const name = job.metadata.name;
  let nproc = t.numProcPerNode === undefined ? 'auto' : String(t.numProcPerNode);
  const res = t.resourcesPerNode || {};
  const gpus = [...Object.keys(res.limits || {}), ...Object.keys(res.requests || {})]
    .some((k) => k.toLowerCase().includes('gpu'));
  // auto without a GPU: the CPU request, else the limit.
  if (nproc === 'auto' && !gpus) {
    const req = cpus((res.requests || {}).cpu);
    nproc = String(Math.max(1, req > 0 ? req : cpus((res.limits || {}).cpu)));
  }
  return {
    PET_NNODES: String(t.numNodes === undefined ? 1 : t.numNodes), PET_NPROC_PER_NODE: nproc,
    PET_NODE_RANK: String(index), PET_MASTER_ADDR: `${name}-node-0-0.${name}`,
    PET_MASTER_PORT: String(TRAINJOB_PORT),
  };
}

function trainerBin() {
  const bin = process.env.CHESSRL_TRAINER_BIN || (process.env.CHESSRL_BIN &&
    path.resolve(path.dirname(process.env.CHESSRL_BIN), '..', '..', 'services', 'trainer', 'chessrl-trainer'));
  assert.ok(bin, 'neither CHESSRL_TRAINER_BIN nor CHESSRL_BIN is set: CMake sets them (build chessrl-trainer)');
  assert.ok(fs.existsSync(bin), `${bin} does not exist: build it (cmake --build build/dev --target chessrl-trainer)`);
  return bin;
}
// Runs the trainer with only `env` (and what finds its libraries): nothing of this
// process's own environment leaks into what it reads.
function runTrainer(args, env = {}) {
  const base = { PATH: process.env.PATH };
  if (process.env.LD_LIBRARY_PATH) base.LD_LIBRARY_PATH = process.env.LD_LIBRARY_PATH;
  return new Promise((resolve) => {
    execFile(trainerBin(), args, { env: { ...base, ...env }, timeout: 30000 }, (err, stdout, stderr) => {
      resolve({ code: err ? (typeof err.code === 'number' ? err.code : -1) : 0, stdout, stderr });
    });
  });
}
async function rendezvous(env) {
  const r = await runTrainer(['--print-rendezvous'], env);
  assert.equal(r.code, 0, `chessrl-trainer --print-rendezvous refused ${JSON.stringify(env)}:\n${r.stderr}`);
  return JSON.parse(r.stdout);
}

let helpText;
async function trainerFlags() {
  if (!helpText) {
    const r = await runTrainer(['--help']);
    assert.equal(r.code, 0, `chessrl-trainer --help failed:\n${r.stderr}`);
    helpText = r.stdout;
  }
  // CLI11 lists each option at the start of a line: "  --name TYPE ..." or "  -h,--help".
  const flags = new Set();
  for (const line of helpText.split('\n')) {
    const m = /^\s*(?:-[A-Za-z],)?--([a-z0-9][a-z0-9-]*)/.exec(line);
    if (m) flags.add(m[1]);
  }
  assert.ok(flags.has('checkpoint-dir') && flags.has('replay'), `no options found in --help:\n${helpText}`);
  return flags;
}
const flagsOf = (argv) => argv.filter((a) => String(a).startsWith('--')).map((a) => String(a).slice(2).split('=')[0]);
// A command line without one option and its value.
function without(argv, name) {
  const out = [];
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === `--${name}`) { i++; continue; }
    out.push(argv[i]);
  }
  return out;
}

before(() => render([]));
const chartTrainer = async () => get(await render([]), 'StatefulSet', `${F}-trainer`).spec.template;

describe('k8s/kubeflow/pytorchjob.yaml', () => {
  it('is a kubeflow.org/v1 PyTorchJob: Master x1 and Workers, each with a container named pytorch', () => {
    const job = pytorchJob();
    assert.equal(job.apiVersion, 'kubeflow.org/v1');
    assert.equal(job.kind, 'PyTorchJob');
    const problems = [
      ...unknownKeys(job.spec, ['runPolicy', 'elasticPolicy', 'pytorchReplicaSpecs', 'nprocPerNode'], 'spec'),
      ...unknownKeys(job.spec.runPolicy, ['cleanPodPolicy', 'ttlSecondsAfterFinished', 'activeDeadlineSeconds',
        'backoffLimit', 'schedulingPolicy', 'suspend', 'managedBy'], 'spec.runPolicy'),
      ...unknownKeys(job.spec.pytorchReplicaSpecs, ['Master', 'Worker'], 'spec.pytorchReplicaSpecs'),
    ];
    assert.ok(job.spec.runPolicy, 'spec.runPolicy is required');
    assert.equal(job.spec.elasticPolicy, undefined, 'an elasticPolicy changes the world size; the trainer needs a fixed one');
    for (const [type, spec] of Object.entries(job.spec.pytorchReplicaSpecs)) {
      problems.push(...unknownKeys(spec, ['replicas', 'template', 'restartPolicy'], `spec.pytorchReplicaSpecs.${type}`));
      const c = pytorchContainer(spec.template);
      assert.ok(c, `${type}: no container named pytorch (the operator requires it)`);
      assert.equal(c.image, IMAGE, `${type}: image`);
      assert.equal(spec.restartPolicy, 'OnFailure', `${type}: a rank that exits non-zero restarts in place`);
    }
    assert.deepEqual(problems, [], `fields PyTorchJob does not have: ${problems.join(', ')}`);
    assert.equal(job.spec.pytorchReplicaSpecs.Master.replicas, 1, 'the operator takes exactly one Master');
    assert.ok(job.spec.pytorchReplicaSpecs.Worker.replicas >= 1, 'at least one Worker');
  });

  it('asks for one process per pod (nprocPerNode "1": the operator\'s default is auto)', () => {
    assert.equal(pytorchJob().spec.nprocPerNode, '1');
  });

  it('Master and Worker run the same pod but for the checkpoint volume', () => {
    const job = pytorchJob();
    const strip = (tpl) => {
      const t = JSON.parse(JSON.stringify(tpl));
      t.spec.volumes = t.spec.volumes.filter((v) => v.name !== 'checkpoints');
      return t;
    };
    assert.deepEqual(strip(replicaTemplate(job, 'Worker')), strip(replicaTemplate(job, 'Master')));
    const ckpt = (type) => replicaTemplate(job, type).spec.volumes.find((v) => v.name === 'checkpoints');
    assert.ok(ckpt('Master').persistentVolumeClaim, 'rank 0 (Master) keeps its checkpoints on a claim');
    assert.ok(ckpt('Worker').emptyDir, 'ranks 1..N never touch the checkpoint directory');
  });
});

describe('k8s/kubeflow/trainjob.yaml', () => {
  it('is a trainer.kubeflow.org/v1alpha1 TrainJob on the torch-distributed ClusterTrainingRuntime', () => {
    const job = trainJob();
    assert.equal(job.apiVersion, 'trainer.kubeflow.org/v1alpha1');
    assert.equal(job.kind, 'TrainJob');
    assert.match(job.metadata.name, /^[a-z]([-a-z0-9]*[a-z0-9])?$/, 'the name must be a DNS label');
    assert.ok(job.metadata.name.length <= 63);
    assert.deepEqual(job.spec.runtimeRef,
      { apiGroup: 'trainer.kubeflow.org', kind: 'ClusterTrainingRuntime', name: 'torch-distributed' });
    const problems = [
      ...unknownKeys(job.spec, ['runtimeRef', 'initializer', 'trainer', 'runtimePatches', 'suspend',
        'activeDeadlineSeconds', 'managedBy'], 'spec'),
      ...unknownKeys(job.spec.trainer, ['image', 'command', 'args', 'env', 'numNodes', 'resourcesPerNode',
        'numProcPerNode'], 'spec.trainer'),
    ];
    for (const [i, p] of (job.spec.runtimePatches || []).entries()) {
      const at = `spec.runtimePatches[${i}]`;
      problems.push(...unknownKeys(p, ['manager', 'time', 'trainingRuntimeSpec'], at));
      // The admission webhook checks it with IsDomainPrefixedPath ("acme.io/foo").
      assert.match(p.manager, /^[a-z0-9]([-a-z0-9.]*[a-z0-9])?\/[A-Za-z0-9/\-._~%!$&'()*+,;=:]+$/,
        `${at}.manager ${p.manager} is not a domain-prefixed path`);
      problems.push(...unknownKeys(p.trainingRuntimeSpec, ['template'], `${at}.trainingRuntimeSpec`));
      const js = p.trainingRuntimeSpec.template;
      problems.push(...unknownKeys(js, ['metadata', 'spec'], `${at}...template`));
      problems.push(...unknownKeys(js.spec, ['replicatedJobs'], `${at}...template.spec`));
      for (const rj of js.spec.replicatedJobs) {
        assert.equal(rj.name, 'node', 'torch-distributed has one replicated job, node');
        problems.push(...unknownKeys(rj, ['name', 'template'], `${at}...${rj.name}`));
        problems.push(...unknownKeys(rj.template, ['metadata', 'spec'], `${at}...${rj.name}.template`));
        problems.push(...unknownKeys(rj.template.spec, ['template'], `${at}...${rj.name}.template.spec`));
        const pod = rj.template.spec.template;
        problems.push(...unknownKeys(pod, ['metadata', 'spec'], `${at}...pod`));
        problems.push(...unknownKeys(pod.spec, ['serviceAccountName', 'volumes', 'initContainers', 'containers',
          'imagePullSecrets', 'securityContext', 'nodeSelector', 'affinity', 'tolerations', 'schedulingGates',
          'terminationGracePeriodSeconds'], `${at}...pod.spec`));
        for (const c of pod.spec.containers || []) {
          problems.push(...unknownKeys(c, ['name', 'env', 'volumeMounts', 'securityContext'], `${at}...${c.name}`));
          assert.equal(c.name, 'node', 'the runtime\'s trainer container is named node');
          assert.equal(c.env, undefined, 'the webhook refuses env in a patch of the node container (use spec.trainer.env)');
        }
      }
    }
    assert.deepEqual(problems, [], `fields TrainJob does not have: ${problems.join(', ')}`);
  });

  it('runs the trainer itself, one process per node, on at least one node', () => {
    const t = trainJob().spec.trainer;
    assert.equal(t.image, IMAGE);
    assert.deepEqual(t.command, [TRAINER], 'the trainer reads the PET_* variables itself: no torchrun');
    assert.ok(!(t.args || []).some((a) => /torchrun/.test(String(a))));
    assert.equal(t.numProcPerNode, 1, 'one process per node (left out, the runtime counts CPUs)');
    assert.ok(Number.isInteger(t.numNodes) && t.numNodes >= 1, `numNodes ${t.numNodes}`);
  });

  it('every volume mount of the node container names a volume of the patch', () => {
    const pod = trainJobPod(trainJob());
    const volumes = new Set(pod.spec.volumes.map((v) => v.name));
    for (const m of pod.spec.containers[0].volumeMounts) assert.ok(volumes.has(m.name), `no volume ${m.name}`);
  });
});

describe('both examples', () => {
  const pods = () => [
    ['PyTorchJob Master', replicaTemplate(pytorchJob(), 'Master')],
    ['PyTorchJob Worker', replicaTemplate(pytorchJob(), 'Worker')],
    ['TrainJob node', trainJobPod(trainJob())],
  ];
  const trainerContainer = (tpl) => tpl.spec.containers.find((c) => (c.command || [])[0] === TRAINER);

  it('have pod templates that validate as core/v1 PodTemplateSpec', () => {
    for (const [what, template] of pods()) {
      const problems = validateObject({ apiVersion: 'v1', kind: 'PodTemplate', metadata: { name: 'x' }, template });
      assert.deepEqual(problems, [], `${what}:\n  ${problems.join('\n  ')}`);
    }
  });

  it('pass only flags that chessrl-trainer --help lists', async () => {
    const flags = await trainerFlags();
    for (const [what, tpl] of pods()) {
      const c = trainerContainer(tpl);
      assert.ok(c, `${what}: no container runs ${TRAINER}`);
      const unknown = flagsOf(c.args || []).filter((f) => !flags.has(f));
      assert.deepEqual(unknown, [], `${what}: flags chessrl-trainer does not have: ${unknown.join(', ')}`);
    }
  });

  it('run the chart\'s trainer pod: flags, mounts, security settings, account, resources', async () => {
    const chart = await chartTrainer();
    const cc = chart.spec.containers.find((c) => c.name === 'trainer');
    const chartVolumes = chart.spec.volumes;
    for (const [what, tpl] of pods()) {
      const c = trainerContainer(tpl);
      assert.deepEqual(without(c.args, 'steps'), cc.args, `${what}: args differ from the chart's trainer`);
      assert.deepEqual(c.command, cc.command, `${what}: command`);
      assert.deepEqual(c.securityContext, cc.securityContext, `${what}: container securityContext`);
      assert.deepEqual(c.volumeMounts, cc.volumeMounts, `${what}: volumeMounts`);
      assert.deepEqual(c.resources, cc.resources, `${what}: resources`);
      assert.deepEqual(tpl.spec.securityContext, chart.spec.securityContext, `${what}: pod securityContext`);
      assert.equal(tpl.spec.serviceAccountName, chart.spec.serviceAccountName, `${what}: serviceAccountName`);
      assert.equal(tpl.spec.terminationGracePeriodSeconds, chart.spec.terminationGracePeriodSeconds, what);
      const others = (vs) => vs.filter((v) => v.name !== 'checkpoints');
      assert.deepEqual(others(tpl.spec.volumes), others(chartVolumes), `${what}: volumes (but checkpoints)`);
      assert.equal(tpl.metadata.annotations['prometheus.io/port'],
        chart.metadata.annotations['prometheus.io/port'], `${what}: metrics port annotation`);
    }
    // The probes, where the API lets them be set (a TrainJob patch cannot).
    for (const type of ['Master', 'Worker']) {
      const c = pytorchContainer(replicaTemplate(pytorchJob(), type));
      assert.deepEqual(c.readinessProbe, cc.readinessProbe, `${type}: readinessProbe`);
      assert.deepEqual(c.livenessProbe, cc.livenessProbe, `${type}: livenessProbe`);
    }
  });

  it('carry labels that replay\'s NetworkPolicy and the plain Prometheus admit and the chart\'s trainer objects do not select', async () => {
    const objs = await render([]);
    const replay = get(objs, 'NetworkPolicy', `${F}-replay`);
    const grpc = replay.spec.ingress.find((r) => (r.ports || []).some((p) => p.port === 50051));
    const sts = get(objs, 'StatefulSet', `${F}-trainer`);
    const pdb = get(objs, 'PodDisruptionBudget', `${F}-trainer`);
    const svc = get(objs, 'Service', `${F}-trainer-headless`);
    for (const [what, tpl] of pods()) {
      const labels = tpl.metadata.labels;
      assert.ok(grpc.from.some((f) => f.podSelector && selectsMap(f.podSelector.matchLabels, labels)),
        `${what}: replay's NetworkPolicy does not let ${JSON.stringify(labels)} reach its gRPC port`);
      assert.ok(!selectsMap(sts.spec.selector.matchLabels, labels), `${what}: the chart's trainer StatefulSet selects it`);
      assert.ok(!selectsMap(pdb.spec.selector.matchLabels, labels), `${what}: the chart's trainer PDB selects it`);
      assert.ok(!selectsMap(svc.spec.selector, labels), `${what}: the chart's trainer Service selects it`);
      // k8s/monitoring/prometheus.yaml keeps pods labelled part-of chess-rl that ask to be scraped.
      assert.equal(labels['app.kubernetes.io/part-of'], 'chess-rl', `${what}: not part-of chess-rl`);
      assert.equal(tpl.metadata.annotations['prometheus.io/scrape'], 'true', `${what}: prometheus.io/scrape`);
    }
  });

  it('leave every rendezvous variable to the operators', () => {
    for (const [what, tpl] of pods()) {
      for (const c of tpl.spec.containers) {
        const set = (c.env || []).map((e) => e.name).filter((n) => OPERATOR_ENV.includes(n));
        assert.deepEqual(set, [], `${what}: ${c.name} sets ${set.join(', ')}, which the operator sets`);
        assert.deepEqual(flagsOf(c.args || []).filter((f) => /^master-/.test(f)), [],
          `${what}: --master-* flags lose to the operator's variables anyway`);
      }
    }
  });
});

describe('the operators\' environment, read by chessrl-trainer', () => {
  it('PyTorchJob: each pod gets its rank, the pod count and the Master\'s address', async () => {
    const job = pytorchJob();
    const workers = job.spec.pytorchReplicaSpecs.Worker.replicas;
    const pods = [['Master', 0], ...Array.from({ length: workers }, (_, i) => ['Worker', i])];
    for (const [type, index] of pods) {
      const env = pytorchJobEnv(job, type, index);
      const r = await rendezvous(env);
      assert.equal(r.rank, Number(env.RANK), `${type} ${index}: ${r.origin}`);
      assert.equal(r.world_size, 1 + workers, r.origin);
      assert.equal(r.master_addr, `${job.metadata.name}-master-0`, r.origin);
      assert.equal(r.master_port, 29500, r.origin);
      assert.match(r.origin, /RANK=\d+\) of \d+ \(WORLD_SIZE=/, r.origin);
    }
  });

  it('TrainJob: each node gets its rank from PET_NODE_RANK and the world from PET_NNODES', async () => {
    const job = trainJob();
    const n = job.spec.trainer.numNodes;
    for (let index = 0; index < n; index++) {
      const r = await rendezvous(trainJobEnv(job, index));
      assert.equal(r.rank, index, r.origin);
      assert.equal(r.world_size, n, r.origin);
      assert.equal(r.master_addr, `${job.metadata.name}-node-0-0.${job.metadata.name}`, r.origin);
      assert.equal(r.master_port, TRAINJOB_PORT, r.origin);
      assert.match(r.origin, /PET_NODE_RANK=\d+\) of \d+ \(PET_NNODES=/, r.origin);
    }
  });

  it('without one process per pod the trainer refuses to start, naming the count', async () => {
    // A TrainJob left at the runtime's default on 4-CPU nodes, and one on GPU nodes.
    const job = trainJob();
    delete job.spec.trainer.numProcPerNode;
    job.spec.trainer.resourcesPerNode = { requests: { cpu: '4' } };
    let r = await runTrainer(['--print-rendezvous'], trainJobEnv(job, 0));
    assert.notEqual(r.code, 0, r.stdout);
    assert.match(r.stderr, /PET_NPROC_PER_NODE=4 .* RANK is not set/);
    job.spec.trainer.resourcesPerNode = { limits: { 'nvidia.com/gpu': 1 } };
    r = await runTrainer(['--print-rendezvous'], trainJobEnv(job, 0));
    assert.notEqual(r.code, 0, r.stdout);
    assert.match(r.stderr, /PET_NPROC_PER_NODE=auto/);
    // A PyTorchJob with two processes per pod and nothing to start them.
    const pj = pytorchJob();
    pj.spec.nprocPerNode = '2';
    r = await runTrainer(['--print-rendezvous'], pytorchJobEnv(pj, 'Worker', 0));
    assert.notEqual(r.code, 0, r.stdout);
    assert.match(r.stderr, /PET_NPROC_PER_NODE=2 .* no LOCAL_RANK/);
  });
});
