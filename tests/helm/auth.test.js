'use strict';
// Who may call replay's gRPC port. auth (on by default): the Secret F-auth with three random
// tokens kept across upgrades (or auth.existingSecret), replay reads the directory of all
// three (--auth-dir), each client mounts only its own key and gets --token-file; no token in
// any manifest but the Secret. tls (off by default): replay's certificate and key, the
// clients' CA and server name, and a readiness probe that needs no TLS. The NetworkPolicy in
// front of the port.
const { describe, it, before } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const {
  render, prefetch, helm, F, get, find, nameOf, inventory, podTemplates, containersOf, mainContainer,
  flagValues, workloadOf, chartFile, KUBE_VERSION,
} = require('./lib/chart');
const { chartDir } = require('./lib/tools');
const { network } = require('./lib/netpol');

const ROLES = ['selfplay', 'trainer', 'evaluator'];
const CLIENTS = ['selfplay', 'trainer', 'evaluator']; // the components that call replay, by role
const EXISTING = ['--set', 'auth.existingSecret=team-tokens'];
const OFF = ['--set', 'auth.enabled=false'];
const TLS = ['--set', 'tls.enabled=true', '--set', 'tls.existingSecret=replay-tls'];
const TLS_NAMED = [...TLS, '--set', 'tls.serverName=replay.example.internal'];
const NO_FSGROUP = ['--set', 'replay.podSecurityContext.fsGroup=null', '--set', 'selfplay.podSecurityContext.fsGroup=null'];
before(() => prefetch([[]], [EXISTING], [OFF], [TLS], [TLS_NAMED], [[...OFF, ...TLS]], [NO_FSGROUP],
  [['--set', 'trainer.replicas=3']]));

const SCHEMA_ERROR = /values don't meet the specifications of the schema/;
const container = (objs, component) => mainContainer(workloadOf(objs, component), component);
const podSpec = (objs, component) => workloadOf(objs, component).spec.template.spec;
const testPod = (objs) => get(objs, 'Pod', `${F}-test`);
const one = (values, what) => {
  assert.equal(values.length, 1, `${what}: ${values.length} values (${JSON.stringify(values)})`);
  return values[0];
};

// The volume of a pod spec mounted (readOnly) at the directory holding `file`, and the
// file's name in it: {volume, name}. Fails when none is, or the mount is writable.
function mountedFile(spec, c, file) {
  const dir = path.posix.dirname(file);
  const mount = (c.volumeMounts || []).find((m) => m.mountPath === dir && !m.subPath);
  assert.ok(mount, `${c.name}: nothing is mounted at ${dir} (for ${file}); mounts: ${(c.volumeMounts || []).map((m) => m.mountPath).join(', ')}`);
  assert.equal(mount.readOnly, true, `${c.name}: the mount at ${dir} is not readOnly`);
  const volume = (spec.volumes || []).find((v) => v.name === mount.name);
  assert.ok(volume, `${c.name}: the mount at ${dir} names no volume (${mount.name})`);
  return { volume, name: path.posix.basename(file) };
}
// A secret volume's items as "key->path".
const items = (volume) => (volume.secret.items || []).map((i) => `${i.key}->${i.path}`).sort();
// Every reference of a pod spec to a Secret: volumes, projected sources, env, envFrom.
function secretRefs(spec) {
  const out = [];
  for (const v of spec.volumes || []) {
    if (v.secret) out.push({ name: v.secret.secretName, via: `volume ${v.name}` });
    for (const s of (v.projected && v.projected.sources) || []) if (s.secret) out.push({ name: s.secret.name, via: `projected volume ${v.name}` });
  }
  for (const { c } of containersOf(spec)) {
    for (const e of c.env || []) {
      const r = e.valueFrom && e.valueFrom.secretKeyRef;
      if (r) out.push({ name: r.name, via: `${c.name} env ${e.name}` });
    }
    for (const e of c.envFrom || []) if (e.secretRef) out.push({ name: e.secretRef.name, via: `${c.name} envFrom` });
  }
  return out;
}
const tokensOf = (secret) => Object.fromEntries(Object.entries(secret.data || {})
  .map(([k, v]) => [k, Buffer.from(v, 'base64').toString()]));

describe('auth: the tokens (defaults)', () => {
  it('the Secret F-auth holds three random tokens, selfplay, trainer and evaluator', async () => {
    const secret = get(await render([]), 'Secret', `${F}-auth`);
    assert.equal(secret.type, 'Opaque');
    assert.equal(secret.stringData, undefined, 'stringData: the tokens belong in data');
    const tokens = tokensOf(secret);
    assert.deepEqual(Object.keys(tokens).sort(), [...ROLES].sort());
    for (const [role, t] of Object.entries(tokens)) {
      // What chessrl-replay accepts: at least 16 printable ASCII bytes without spaces.
      assert.match(t, /^[\x21-\x7e]{16,}$/, `${role}: not a token chessrl-replay accepts`);
      assert.ok(t.length >= 32, `${role}: only ${t.length} characters`);
    }
    assert.equal(new Set(Object.values(tokens)).size, 3, 'two roles share a token');
  });

  it('the Secret\'s template keeps existing tokens across upgrades with lookup', () => {
    const source = fs.readFileSync(chartFile('templates', 'auth', 'secret.yaml'), 'utf8');
    assert.match(source, /lookup\s+"v1"\s+"Secret"\s+\.Release\.Namespace/);
    assert.match(source, /randAlphaNum\s+40/);
  });

  it('replay gets --auth-dir: a read-only mount of the Secret with exactly the three role files', async () => {
    const objs = await render([]);
    const c = container(objs, 'replay');
    const dir = one(flagValues(c, 'auth-dir'), 'replay --auth-dir');
    const mount = (c.volumeMounts || []).find((m) => m.mountPath === dir);
    assert.ok(mount && mount.readOnly === true, `replay: no readOnly mount at ${dir}`);
    const volume = podSpec(objs, 'replay').volumes.find((v) => v.name === mount.name);
    assert.equal(volume.secret.secretName, `${F}-auth`);
    assert.deepEqual(items(volume), ROLES.map((r) => `${r}->${r}`).sort());
    assert.equal(volume.secret.defaultMode, 0o440, 'the files are not 0440 (owner and fsGroup read)');
  });

  for (const role of CLIENTS) {
    it(`${role} gets --token-file: a read-only mount of its own key only`, async () => {
      const objs = await render([]);
      const spec = podSpec(objs, role);
      const c = container(objs, role);
      const file = one(flagValues(c, 'token-file'), `${role} --token-file`);
      const { volume, name } = mountedFile(spec, c, file);
      assert.ok(volume.secret, `${role}: the token's volume is not a Secret`);
      assert.equal(volume.secret.secretName, `${F}-auth`);
      assert.deepEqual(items(volume), [`${role}->${name}`], `${role} mounts more than its own key`);
      assert.equal(volume.secret.defaultMode, 0o440);
      // No other way into the tokens: no second volume, env or envFrom of F-auth.
      const refs = secretRefs(spec).filter((r) => r.name === `${F}-auth`);
      assert.deepEqual(refs.map((r) => r.via), [`volume ${volume.name}`]);
    });
  }

  it('every trainer rank (trainer.replicas=3) has the trainer token', async () => {
    const objs = await render(['--set', 'trainer.replicas=3']);
    const spec = podSpec(objs, 'trainer');
    const c = container(objs, 'trainer');
    const { volume } = mountedFile(spec, c, one(flagValues(c, 'token-file'), 'trainer --token-file'));
    assert.deepEqual(items(volume), ['trainer->token']);
  });

  it('the helm test pod needs no token (the health service is open) and mounts none', async () => {
    const pod = testPod(await render([]));
    assert.deepEqual(secretRefs(pod.spec), []);
    assert.deepEqual(flagValues(pod.spec.containers[0], 'token-file'), []);
  });

  it('no token appears anywhere but in the Secret F-auth', async () => {
    const objs = await render([]);
    const secret = get(objs, 'Secret', `${F}-auth`);
    const secrets = [...Object.values(tokensOf(secret)), ...Object.values(secret.data)];
    for (const o of objs) {
      if (o === secret) continue;
      const text = JSON.stringify(o);
      for (const s of secrets) assert.ok(!text.includes(s), `${o.kind}/${nameOf(o)} (${o.__source}) contains a token`);
    }
  });

  it('a pod without fsGroup gets 0444 files (root-owned, else its non-root user could not read them)', async () => {
    const objs = await render(NO_FSGROUP);
    for (const component of ['replay', 'selfplay']) {
      assert.equal(podSpec(objs, component).securityContext.fsGroup, undefined, `${component} still has an fsGroup`);
      const auth = podSpec(objs, component).volumes.find((v) => v.secret && v.secret.secretName === `${F}-auth`);
      assert.equal(auth.secret.defaultMode, 0o444, component);
    }
    const trainer = podSpec(objs, 'trainer').volumes.find((v) => v.secret && v.secret.secretName === `${F}-auth`);
    assert.equal(trainer.secret.defaultMode, 0o440, 'the trainer (fsGroup kept) changed too');
  });
});

describe('auth: existingSecret and auth.enabled=false', () => {
  it('auth.existingSecret: the chart makes no Secret and every pod uses that one', async () => {
    const objs = await render(EXISTING);
    assert.equal(find(objs, 'Secret', `${F}-auth`), undefined, 'Secret F-auth rendered anyway');
    for (const component of ['replay', ...CLIENTS]) {
      const refs = secretRefs(podSpec(objs, component)).filter((r) => r.name !== `${F}-redis`);
      assert.deepEqual(refs.map((r) => r.name), ['team-tokens'], `${component}: ${JSON.stringify(refs)}`);
    }
    assert.equal(one(flagValues(container(objs, 'replay'), 'auth-dir'), 'replay --auth-dir'), '/run/secrets/chessrl/auth');
  });

  it('auth.enabled=false: no Secret, no --auth-dir or --token-file, no token volume', async () => {
    const objs = await render(OFF);
    assert.equal(find(objs, 'Secret', `${F}-auth`), undefined);
    for (const p of podTemplates(objs)) {
      for (const { c } of containersOf(p.podSpec)) {
        for (const flag of ['auth-dir', 'token-file']) {
          assert.deepEqual(flagValues(c, flag), [], `${p.what} ${c.name}: --${flag}`);
        }
      }
      assert.ok(!(p.podSpec.volumes || []).some((v) => v.name === 'auth'), `${p.what}: an auth volume`);
    }
  });

  it('a component\'s config may not set what the chart passes (auth-dir, token-file)', async () => {
    for (const set of ['replay.config.auth-dir=/x', 'selfplay.config.token-file=/x', 'evaluator.config.tls-ca=/x']) {
      const args = set.startsWith('evaluator') ? [...TLS, '--set', set] : ['--set', set];
      const r = await helm(['template', 'chess-rl', chartDir, '--kube-version', KUBE_VERSION, ...args]);
      assert.notEqual(r.code, 0, `rendered with --set ${set}`);
      const key = set.split('=')[0].split('.').pop();
      assert.match(r.stderr, new RegExp(`sets "${key}", which the chart passes itself as --${key}`), r.stderr);
    }
    // With auth off the chart passes no --auth-dir, so the key is the user's to set.
    await render([...OFF, '--set', 'replay.config.auth-dir=/srv/tokens']);
  });
});

describe('tls', () => {
  it('off by default: no TLS flags, and replay\'s readiness is the kubelet\'s gRPC probe', async () => {
    const objs = await render([]);
    for (const p of podTemplates(objs)) {
      for (const { c } of containersOf(p.podSpec)) {
        for (const flag of ['tls-cert', 'tls-key', 'tls-ca', 'tls-server-name']) assert.deepEqual(flagValues(c, flag), [], `${p.what}: --${flag}`);
      }
    }
    const probe = container(objs, 'replay').readinessProbe;
    assert.deepEqual(probe.grpc, { port: 50051 });
  });

  it('replay mounts tls.crt and tls.key (not ca.crt) for --tls-cert and --tls-key', async () => {
    const objs = await render(TLS);
    const spec = podSpec(objs, 'replay');
    const c = container(objs, 'replay');
    const cert = mountedFile(spec, c, one(flagValues(c, 'tls-cert'), 'replay --tls-cert'));
    const key = mountedFile(spec, c, one(flagValues(c, 'tls-key'), 'replay --tls-key'));
    assert.equal(cert.volume, key.volume);
    assert.equal(cert.volume.secret.secretName, 'replay-tls');
    assert.deepEqual(items(cert.volume), [`tls.crt->${cert.name}`, `tls.key->${key.name}`].sort());
    assert.ok(cert.volume.secret.defaultMode <= 0o440 && !(cert.volume.secret.defaultMode & 0o007),
      `the key is world-readable (mode ${cert.volume.secret.defaultMode.toString(8)})`);
    // Tokens stay on beside TLS.
    assert.equal(flagValues(c, 'auth-dir').length, 1);
  });

  it('replay\'s readiness becomes httpGet /healthz on the probe port (kubelet gRPC probes cannot talk TLS)', async () => {
    const c = container(await render(TLS), 'replay');
    assert.equal(c.readinessProbe.grpc, undefined, 'still a grpc probe');
    assert.deepEqual(c.readinessProbe.httpGet, { path: '/healthz', port: 'probes' });
    assert.ok((c.ports || []).some((p) => p.name === 'probes'), 'no port named probes');
    assert.deepEqual(c.livenessProbe.httpGet, { path: '/livez', port: 'probes' });
  });

  for (const role of CLIENTS) {
    it(`${role} mounts only ca.crt for --tls-ca and checks the name F-replay`, async () => {
      const objs = await render(TLS);
      const c = container(objs, role);
      const ca = mountedFile(podSpec(objs, role), c, one(flagValues(c, 'tls-ca'), `${role} --tls-ca`));
      assert.equal(ca.volume.secret.secretName, 'replay-tls');
      assert.deepEqual(items(ca.volume), [`ca.crt->${ca.name}`], `${role} mounts more than the CA`);
      assert.deepEqual(flagValues(c, 'tls-server-name'), [`${F}-replay`]);
      assert.equal(flagValues(c, 'token-file').length, 1, `${role}: no --token-file beside TLS`);
    });
  }

  it('tls.serverName is the name every client and the helm test check', async () => {
    const objs = await render(TLS_NAMED);
    for (const role of CLIENTS) assert.deepEqual(flagValues(container(objs, role), 'tls-server-name'), ['replay.example.internal'], role);
    assert.deepEqual(flagValues(testPod(objs).spec.containers[0], 'tls-server-name'), ['replay.example.internal']);
  });

  it('the helm test checks replay\'s gRPC health over TLS with the CA', async () => {
    const pod = testPod(await render(TLS));
    const c = pod.spec.containers[0];
    assert.equal(flagValues(c, 'grpc-health').length, 1);
    const ca = mountedFile(pod.spec, c, one(flagValues(c, 'tls-ca'), 'test --tls-ca'));
    assert.deepEqual(items(ca.volume), [`ca.crt->${ca.name}`]);
    assert.deepEqual(secretRefs(pod.spec).map((r) => r.name), ['replay-tls']);
  });

  it('TLS without tokens (auth.enabled=false) renders only the TLS pieces', async () => {
    const objs = await render([...OFF, ...TLS]);
    const replay = container(objs, 'replay');
    assert.deepEqual(flagValues(replay, 'auth-dir'), []);
    assert.equal(flagValues(replay, 'tls-cert').length, 1);
    for (const role of CLIENTS) {
      assert.deepEqual(flagValues(container(objs, role), 'token-file'), [], role);
      assert.equal(flagValues(container(objs, role), 'tls-ca').length, 1, role);
    }
  });

  it('tls.enabled without tls.existingSecret is refused by the schema, naming tls.existingSecret', async () => {
    const r = await helm(['template', 'chess-rl', chartDir, '--kube-version', KUBE_VERSION, '--set', 'tls.enabled=true']);
    assert.notEqual(r.code, 0, 'rendered TLS without a certificate');
    assert.match(r.stderr, SCHEMA_ERROR, r.stderr);
    assert.match(r.stderr, /tls[./]existingSecret/, r.stderr);
  });

  it('... and by the chart itself when the schema is skipped', async () => {
    const r = await helm(['template', 'chess-rl', chartDir, '--kube-version', KUBE_VERSION, '--skip-schema-validation',
      '--set', 'tls.enabled=true']);
    assert.notEqual(r.code, 0, 'rendered TLS without a certificate');
    assert.match(r.stderr, /tls\.enabled=true needs tls\.existingSecret/, r.stderr);
  });

  it('the schema types the new keys', async () => {
    for (const [set, names] of [['auth.enabled=maybe', /auth[./]enabled/], ['tls.serverName=bad name', /tls[./]serverName/],
      ['auth.existingSecret=Bad_Name', /auth[./]existingSecret/], ['tls.enabeld=true', /enabeld/]]) {
      const r = await helm(['template', 'chess-rl', chartDir, '--kube-version', KUBE_VERSION, '--set', set]);
      assert.notEqual(r.code, 0, `accepted --set ${set}`);
      assert.match(r.stderr, SCHEMA_ERROR, r.stderr);
      assert.match(r.stderr, names, r.stderr);
    }
  });
});

describe('the NetworkPolicy in front of replay\'s gRPC port', () => {
  it('admits this release\'s pods and refuses everyone else', async () => {
    const n = network(await render([]), 'chess-rl');
    const replay = n.pod('replay');
    for (const c of [...CLIENTS, 'test']) {
      const v = n.allowed(n.pod(c), replay, 50051);
      assert.ok(v.ok, `${c} -> replay:50051: ${v.why}`);
    }
    const release = { 'app.kubernetes.io/name': 'chess-rl', 'app.kubernetes.io/instance': 'chess-rl' };
    for (const outsider of [n.outsider({ app: 'debug' }, 'chess-rl'), n.outsider({ app: 'prometheus' }, 'monitoring'),
      n.outsider(release, 'other'), n.outsider({ 'app.kubernetes.io/name': 'chess-rl', 'app.kubernetes.io/instance': 'other-release' }, 'chess-rl')]) {
      const v = n.ingressAllowed(outsider, replay, 50051);
      assert.ok(!v.ok, `${outsider.what} -> replay:50051 allowed (${v.why})`);
    }
  });
});

describe('shipped values: helm/ci/values-tls.yaml', () => {
  it('turns TLS on with an existing certificate and existing tokens', async () => {
    const objs = await render(['-f', chartFile('ci', 'values-tls.yaml')]);
    assert.equal(find(objs, 'Secret', `${F}-auth`), undefined, inventory(objs));
    assert.equal(container(objs, 'replay').readinessProbe.httpGet.path, '/healthz');
    assert.deepEqual(flagValues(container(objs, 'selfplay'), 'tls-server-name'), [`${F}-replay`]);
  });
});
