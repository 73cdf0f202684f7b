'use strict';
// Checks of the deployment test's harness itself (lib/cluster.js), with no container:
// what it would run for each pod of the rendered chart. `node --test`, a ctest unit test.
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { execFileSync } = require('node:child_process');
const { Cluster, expand, templateHash, quantityBytes, parseSubnet, macFor } = require('./lib/cluster');
const tools = require('../helm/lib/tools');

const yaml = tools.requireTool('js-yaml');

function render(extra = []) {
  const out = execFileSync(tools.helmBin, ['template', 'chess-rl', tools.chartDir,
    '-f', path.join(tools.chartDir, 'ci', 'values-tiny.yaml'), '-f', path.join(__dirname, 'values.yaml'), ...extra],
  { maxBuffer: 64 << 20, env: { PATH: process.env.PATH, HOME: os.tmpdir() } }).toString();
  return yaml.loadAll(out).filter(Boolean);
}

// The podman arguments of every pod the release would start, without starting any.
function plan(manifests) {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'chessrl-harness-'));
  const c = new Cluster({ name: 'harness-test', dataDir });
  c.subnet = parseSubnet('10.89.0.0/24');
  c.objects = manifests.filter((o) => !(o.metadata.annotations || {})['helm.sh/hook']);
  const pods = {};
  for (const o of c.objects.filter((x) => x.kind === 'Deployment' || x.kind === 'StatefulSet')) {
    for (let i = 0; i < (o.spec.replicas ?? 1); i++) {
      const name = o.kind === 'StatefulSet' ? `${o.metadata.name}-${i}` : `${o.metadata.name}-abc-${i}`;
      const spec = o.spec.template.spec;
      const pod = { name, labels: o.spec.template.metadata.labels, spec, container: spec.containers[0],
        ctr: `x-${name}`, dir: path.join(dataDir, 'pods', name) };
      fs.mkdirSync(pod.dir, { recursive: true });
      pods[name] = { args: c.runArgs(pod, o), env: pod.env, aliases: c.aliases(pod, o) };
    }
  }
  return { pods, dataDir, cluster: c };
}

const after = (args, flag) => args.filter((_, i) => args[i - 1] === flag);

test('$(VAR) expands as the kubelet does', () => {
  assert.equal(expand('--pass $(P) $$(P) $(NOPE)', { P: 'x' }), '--pass x $(P) $(NOPE)');
  assert.equal(quantityBytes('256Mi'), 256 * 1024 * 1024);
  assert.equal(quantityBytes('1Gi'), 1024 ** 3);
  assert.throws(() => quantityBytes('lots'), /lots/);
  assert.equal(templateHash({ a: 1 }), templateHash({ a: 1 }));
  assert.notEqual(templateHash({ a: 1 }), templateHash({ a: 2 }));
});

test('a pod keeps one address for its life; addresses go round robin, not at once to the next pod', () => {
  assert.deepEqual(parseSubnet('10.89.3.0/24'), { cidr: '10.89.3.0/24', base: (10 << 24) + (89 << 16) + (3 << 8), size: 256 });
  assert.equal(parseSubnet('10.89.3.77/29').base % 8, 0);
  assert.throws(() => parseSubnet('fd00::/64'), /fd00::\/64/);
  assert.throws(() => parseSubnet('10.0.0.0/31'), /10.0.0.0\/31/);
  const c = new Cluster({ name: 'harness-test', dataDir: os.tmpdir() });
  c.subnet = parseSubnet('10.89.3.0/29'); // hosts .2 .. .6 (.1 is the gateway, .7 broadcast)
  const a = c.allocateIP();
  const b = c.allocateIP();
  assert.deepEqual([a, b], ['10.89.3.2', '10.89.3.3']);
  c.releaseIP(a); // a deleted pod's address goes back last, not to the next pod
  assert.deepEqual([c.allocateIP(), c.allocateIP(), c.allocateIP()], ['10.89.3.4', '10.89.3.5', '10.89.3.6']);
  assert.equal(c.allocateIP(), '10.89.3.2'); // wrapped round: .3 is still held
  assert.throws(() => c.allocateIP(), /no free address left/);
  // runArgs: the pod's address is fixed at creation (podman --ip), so a restarted
  // container comes back on it.
  const { pods } = plan(render());
  const ips = Object.values(pods).map((p) => after(p.args, '--ip')[0]);
  assert.equal(new Set(ips).size, ips.length, `every pod its own address: ${ips}`);
  assert.ok(ips.every((ip) => /^10\.89\.0\.\d+$/.test(ip)), ips.join(' '));
  // ... and its MAC with it, so the other pods' ARP entries stay right.
  assert.equal(macFor('10.89.0.6'), '02:63:0a:59:00:06');
  for (const p of Object.values(pods)) assert.equal(after(p.args, '--mac-address')[0], macFor(after(p.args, '--ip')[0]));
});

test('every pod of the release: names, security, env, volumes as rendered', () => {
  const m = render();
  const secret = m.find((o) => o.kind === 'Secret' && o.metadata.name === 'chess-rl-redis');
  const password = Buffer.from(secret.data['redis-password'], 'base64').toString();
  const { pods, dataDir } = plan(m);
  assert.deepEqual(Object.keys(pods).sort(), ['chess-rl-evaluator-abc-0', 'chess-rl-redis-0', 'chess-rl-replay-abc-0',
    'chess-rl-selfplay-abc-0', 'chess-rl-trainer-0', 'chess-rl-trainer-1', 'chess-rl-web-abc-0']);
  // DNS: Services by name, StatefulSet pods as <pod>.<headless service>.
  assert.ok(pods['chess-rl-trainer-0'].aliases.includes('chess-rl-trainer-0.chess-rl-trainer-headless'));
  assert.ok(pods['chess-rl-trainer-1'].aliases.includes('chess-rl-trainer-1.chess-rl-trainer-headless'));
  assert.ok(pods['chess-rl-redis-0'].aliases.includes('chess-rl-redis'));
  assert.ok(pods['chess-rl-replay-abc-0'].aliases.includes('chess-rl-replay'));
  assert.ok(!pods['chess-rl-replay-abc-0'].aliases.includes('chess-rl-redis'));
  // The Secret resolved into the env; Redis's command is a script that reads it
  // ($REDIS_PASSWORD), with the chart's $$( arriving as the shell's $(, and no
  // password among its args.
  assert.equal(pods['chess-rl-replay-abc-0'].env.CHESSRL_REDIS_PASSWORD, password);
  assert.equal(pods['chess-rl-redis-0'].env.REDIS_PASSWORD, password);
  const redis = pods['chess-rl-redis-0'].args;
  const script = redis[redis.length - 1];
  assert.ok(!redis.some((a) => a.includes(password) && !a.startsWith('REDIS_PASSWORD=') && !a.startsWith('REDISCLI_AUTH=')),
    'the password among Redis\'s args');
  assert.match(script, /exec redis-server \/etc\/redis\/redis\.conf - <<EOF\nrequirepass "\$\(printf '%s' "\$REDIS_PASSWORD"/);
  // The downward API: the pod's name.
  assert.equal(pods['chess-rl-selfplay-abc-0'].env.CHESSRL_REPLICA, 'chess-rl-selfplay-abc-0');
  // The securityContext.
  for (const [name, p] of Object.entries(pods)) {
    assert.ok(p.args.includes('--read-only'), `${name} read-only`);
    assert.deepEqual(after(p.args, '--cap-drop'), ['ALL'], name);
    assert.ok(p.args.includes('no-new-privileges'), name);
    assert.match(after(p.args, '--user')[0], /^[1-9][0-9]*:[1-9][0-9]*$/, name);
  }
  assert.equal(after(redis, '--user')[0], '999:999');
  // Volumes: the ConfigMap's file written, claims per ordinal, the config read-only.
  const trainer = pods['chess-rl-trainer-1'].args;
  const vols = after(trainer, '--volume');
  assert.ok(vols.some((v) => v === `${path.join(dataDir, 'pvc', 'checkpoints-chess-rl-trainer-1')}:/var/lib/chessrl/checkpoints`), vols.join(' '));
  assert.ok(vols.some((v) => v.endsWith(':/etc/chessrl:ro')));
  const cfg = fs.readFileSync(path.join(dataDir, 'pods', 'chess-rl-trainer-1', 'configmap', 'config', 'config.yaml'), 'utf8');
  assert.match(cfg, /batch-size: 16/);
  // The command as rendered: entrypoint and args.
  assert.equal(after(trainer, '--entrypoint')[0], JSON.stringify(['/usr/local/bin/chessrl-trainer']));
  assert.equal(pods['chess-rl-trainer-0'].env.MASTER_ADDR, 'chess-rl-trainer-0.chess-rl-trainer-headless');
});

test('what the harness cannot do faithfully is refused, naming the object', () => {
  const m = render();
  const svc = m.find((o) => o.kind === 'Service' && o.metadata.name === 'chess-rl-replay');
  svc.spec.ports[0].port = 80; // a remapped port: no DNS alias can do that
  assert.throws(() => plan(m), /Service chess-rl-replay: port 80 maps to 50051/);
  const m2 = render();
  const dep = m2.find((o) => o.kind === 'Deployment' && o.metadata.name === 'chess-rl-replay');
  dep.spec.template.spec.containers[0].env.push({ name: 'X', valueFrom: { fieldRef: { fieldPath: 'status.hostIP' } } });
  assert.throws(() => plan(m2), /env X: the harness does not provide fieldRef status.hostIP/);
  const m3 = render();
  const sp = m3.find((o) => o.kind === 'Deployment' && o.metadata.name === 'chess-rl-selfplay');
  sp.spec.template.spec.securityContext.runAsUser = 0;
  assert.throws(() => plan(m3), /runAsNonRoot without a non-zero runAsUser/);
});

test('Secret volumes as the kubelet makes them: each client gets only its own token, readable through fsGroup', () => {
  const m = render();
  const secret = m.find((o) => o.kind === 'Secret' && o.metadata.name === 'chess-rl-auth');
  assert.ok(secret, 'no Secret chess-rl-auth (auth.enabled is the default)');
  const { pods, dataDir } = plan(m);
  const dirOf = (pod) => path.join(dataDir, 'pods', pod, 'secret', 'auth');
  assert.deepEqual(fs.readdirSync(dirOf('chess-rl-replay-abc-0')).sort(), ['evaluator', 'selfplay', 'trainer']);
  assert.ok(after(pods['chess-rl-replay-abc-0'].args, '--volume').includes(`${dirOf('chess-rl-replay-abc-0')}:/run/secrets/chessrl/auth:ro`));
  for (const [pod, role] of [['chess-rl-selfplay-abc-0', 'selfplay'], ['chess-rl-trainer-1', 'trainer'], ['chess-rl-evaluator-abc-0', 'evaluator']]) {
    assert.deepEqual(fs.readdirSync(dirOf(pod)), ['token'], pod);
    const file = path.join(dirOf(pod), 'token');
    assert.equal(fs.readFileSync(file, 'utf8'), Buffer.from(secret.data[role], 'base64').toString(), pod);
    const st = fs.statSync(file);
    assert.equal(st.mode & 0o777, 0o440, `${pod}: mode ${(st.mode & 0o777).toString(8)}`);
    assert.equal(st.gid, 10001, `${pod}: group ${st.gid}, not the pod's fsGroup`);
    assert.ok(after(pods[pod].args, '--volume').includes(`${dirOf(pod)}:/run/secrets/chessrl/auth:ro`), pod);
  }
});

// ---- the autoscaler the harness runs for a ScaledObject (lib/autoscaler.js) -----------
const { Autoscaler, proposal, settingsOf } = require('./lib/autoscaler');
const { podMonitorTargets } = require('./lib/prometheus');

test("the HPA's replica calculator: Value and AverageValue, its 10% tolerance", () => {
  // Value: ceil(ratio x ready pods) outside the tolerance, the current count inside it.
  assert.equal(proposal({ value: 2.5, threshold: 1, metricType: 'Value', current: 2 }).replicas, 5);
  assert.equal(proposal({ value: 1.09, threshold: 1, metricType: 'Value', current: 7 }).replicas, 7);
  assert.equal(proposal({ value: 0.2, threshold: 1, metricType: 'Value', current: 6 }).replicas, 2);
  assert.equal(proposal({ value: 1.5, threshold: 1, metricType: 'Value', current: 4, ready: 2 }).replicas, 3);
  // AverageValue: ceil(value / threshold), tolerance against threshold x current.
  assert.equal(proposal({ value: 10, threshold: 3, metricType: 'AverageValue', current: 1 }).replicas, 4);
  assert.equal(proposal({ value: 10, threshold: 5, metricType: 'AverageValue', current: 2 }).replicas, 2);
  assert.throws(() => proposal({ value: Infinity, threshold: 1, metricType: 'Value', current: 1 }), /Infinity/);
  assert.throws(() => proposal({ value: 1, threshold: 1, metricType: 'Utilization', current: 1 }), /Utilization/);
});

function scaledObject(behavior) {
  return { metadata: { name: 'so' }, spec: {
    scaleTargetRef: { name: 'x-selfplay' }, minReplicaCount: 1, maxReplicaCount: 6, pollingInterval: 5,
    advanced: behavior ? { horizontalPodAutoscalerConfig: { behavior } } : undefined,
    triggers: [{ type: 'prometheus', metricType: 'Value', metadata: { query: 'q', threshold: '1' } }] } };
}

test('the ScaledObject read with KEDA and Kubernetes defaults; one prometheus trigger only', () => {
  const s = settingsOf(scaledObject());
  assert.deepEqual([s.min, s.max, s.pollingInterval, s.threshold, s.metricType, s.ignoreNullValues], [1, 6, 5, 1, 'Value', true]);
  assert.equal(s.scaleDown.stabilizationWindowSeconds, 300);
  assert.equal(s.scaleUp.policies.length, 2);
  const bad = scaledObject();
  bad.spec.triggers.push({ type: 'cpu', metadata: {} });
  assert.throws(() => settingsOf(bad), /one prometheus trigger/);
});

test('replicas: clamped to min and max, stabilized on the way down, rate limited on the way up', () => {
  const a = new Autoscaler(settingsOf(scaledObject({ scaleDown: { stabilizationWindowSeconds: 20 } })));
  // Up: 1 pod, ratio 10 -> proposal 10; Kubernetes' default policies allow +4 or +100%
  // per 15 s (the larger): 5, within max 6.
  assert.equal(a.decide({ value: 10, current: 1, at: 0 }).desired, 5);
  // 5 s later, within the same 15 s period, at most 1 + 4 = 5 in the period: stays 5.
  assert.equal(a.decide({ value: 10, current: 5, at: 5 }).desired, 5);
  // After the period: max 6.
  assert.equal(a.decide({ value: 10, current: 5, at: 20 }).desired, 6);
  // Down: a low ratio proposes 1, but the 20 s window still holds higher proposals.
  assert.equal(a.decide({ value: 0.1, current: 6, at: 25 }).desired, 6);
  assert.equal(a.decide({ value: 0.1, current: 6, at: 36 }).desired, 6);
  // Once the window holds only low proposals: the floor, 1.
  assert.equal(a.decide({ value: 0.1, current: 6, at: 46 }).desired, 1);
  // Inside the tolerance nothing moves.
  assert.equal(a.decide({ value: 1.05, current: 1, at: 80 }).desired, 1);
  // KEDA's value from the query: one element; empty is 0 with ignoreNullValues.
  assert.equal(a.metricValue([]), 0);
  assert.equal(a.metricValue([{ metric: {}, value: 2 }]), 2);
  assert.throws(() => a.metricValue([{ value: 1 }, { value: 2 }]), /2 elements/);
});

test("PodMonitor targets as the Prometheus Operator makes them: selector, named port, relabelings", () => {
  const pm = { metadata: { name: 'r-selfplay' }, spec: {
    namespaceSelector: { matchNames: ['default'] },
    selector: { matchLabels: { 'app.kubernetes.io/component': 'selfplay' } },
    podMetricsEndpoints: [{ port: 'metrics', path: '/metrics', relabelings: [
      { sourceLabels: ['__meta_kubernetes_pod_label_app_kubernetes_io_instance'], targetLabel: 'app_kubernetes_io_instance' },
      { sourceLabels: ['__meta_kubernetes_pod_name'], targetLabel: 'instance' }] }] } };
  const pod = (name, component, running = true) => ({ name, ip: '10.0.0.7', running,
    labels: { 'app.kubernetes.io/component': component, 'app.kubernetes.io/instance': 'r' },
    container: { ports: [{ name: 'grpc', containerPort: 50051 }, { name: 'metrics', containerPort: 9101 }] } });
  const t = podMonitorTargets(pm, [pod('r-selfplay-a', 'selfplay'), pod('r-replay-b', 'replay'), pod('r-selfplay-c', 'selfplay', false)], 'default');
  assert.equal(t.length, 1);
  assert.deepEqual(t[0].targets, ['10.0.0.7:9101']);
  assert.equal(t[0].labels.instance, 'r-selfplay-a');
  assert.equal(t[0].labels.app_kubernetes_io_instance, 'r');
  assert.equal(t[0].labels.job, 'default/r-selfplay');
  assert.deepEqual(podMonitorTargets(pm, [pod('r-selfplay-a', 'selfplay')], 'other'), []);
});

test("helm upgrade keeps the live generated Secrets, as the chart's lookup does", async () => {
  const c = new Cluster({ name: 'harness-test', dataDir: fs.mkdtempSync(path.join(os.tmpdir(), 'chessrl-harness-')) });
  await c.apply([{ kind: 'Secret', metadata: { name: 'r-auth' }, data: { selfplay: 'b2xk' } }]);
  await c.upgrade([{ kind: 'Secret', metadata: { name: 'r-auth' }, data: { selfplay: 'bmV3' } },
    { kind: 'Secret', metadata: { name: 'r-other' }, data: { k: 'ZnJlc2g=' } }]);
  assert.equal(c.find('Secret', 'r-auth').data.selfplay, 'b2xk', 'a regenerated token would lock the running pods out');
  assert.equal(c.find('Secret', 'r-other').data.k, 'ZnJlc2g=', 'a new Secret is applied as rendered');
});

test('the shards scenario (values-shards.yaml): each shard a pod with its own claim, each of replay\'s --redis-shards a name of one', () => {
  const { pods, dataDir } = plan(render(['-f', path.join(__dirname, 'values-shards.yaml')]));
  const shards = Object.keys(pods).filter((n) => n.startsWith('chess-rl-redis-')).sort();
  assert.deepEqual(shards, ['chess-rl-redis-0', 'chess-rl-redis-1']);
  const replay = pods[Object.keys(pods).find((n) => n.startsWith('chess-rl-replay-'))].args;
  const list = after(replay, '--redis-shards')[0];
  assert.ok(list, `replay has no --redis-shards: ${replay.join(' ')}`);
  const addresses = list.split(',');
  assert.equal(addresses.length, 2);
  addresses.forEach((a, i) => {
    const [host, port] = a.split(':');
    assert.equal(port, '6379');
    assert.deepEqual(shards.filter((s) => pods[s].aliases.includes(host)), [`chess-rl-redis-${i}`], `${host}: not a name of shard ${i} alone`);
    const vols = after(pods[`chess-rl-redis-${i}`].args, '--volume');
    assert.ok(vols.includes(`${path.join(dataDir, 'pvc', `data-chess-rl-redis-${i}`)}:/data`), vols.join(' '));
  });
});
