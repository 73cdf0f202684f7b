'use strict';
// Every pod the chart makes, with each values file it ships, is hardened: non-root, read-only
// root filesystem, no privilege escalation, no capabilities, seccomp RuntimeDefault, requests
// and limits, probes on long-running containers, its own ServiceAccount without a token,
// and no secret in plain sight.
const { describe, it, before } = require('node:test');
const assert = require('node:assert/strict');
const {
  render, prefetch, valuesSets, setLabel, podTemplates, containersOf, containerPort, get, find, F, nameOf,
} = require('./lib/chart');

const sets = Object.entries(valuesSets());
before(() => prefetch(...sets.map(([, args]) => [args])));

const SECRET_NAME = /PASS(WORD)?|SECRET|TOKEN|CREDENTIAL|API_?KEY|PRIVATE_?KEY/i;

function containerProblems(p, c, init) {
  const where = `${p.what} ${init ? 'init container' : 'container'} ${c.name}`;
  const out = [];
  const pod = p.podSpec.securityContext || {};
  const sc = c.securityContext || {};
  const eff = (k) => (sc[k] !== undefined ? sc[k] : pod[k]);
  if (eff('runAsNonRoot') !== true) out.push(`${where}: runAsNonRoot is not true (pod or container)`);
  if (eff('runAsUser') === 0) out.push(`${where}: runAsUser 0`);
  if (sc.readOnlyRootFilesystem !== true) out.push(`${where}: readOnlyRootFilesystem is not true`);
  if (sc.allowPrivilegeEscalation !== false) out.push(`${where}: allowPrivilegeEscalation is not false`);
  if (sc.privileged === true) out.push(`${where}: privileged`);
  const caps = sc.capabilities || {};
  if (!(caps.drop || []).includes('ALL')) out.push(`${where}: capabilities.drop lacks ALL`);
  if ((caps.add || []).length) out.push(`${where}: capabilities.add ${JSON.stringify(caps.add)}`);
  const seccomp = eff('seccompProfile');
  if (!seccomp || seccomp.type !== 'RuntimeDefault') out.push(`${where}: seccompProfile is not RuntimeDefault (pod or container)`);
  const res = c.resources || {};
  for (const kind of ['requests', 'limits']) {
    for (const r of ['cpu', 'memory']) {
      if (!res[kind] || res[kind][r] === undefined || res[kind][r] === null) out.push(`${where}: no resources.${kind}.${r}`);
    }
  }
  if (p.longRunning && !init) {
    for (const probe of ['readinessProbe', 'livenessProbe']) {
      if (!c[probe]) { out.push(`${where}: no ${probe}`); continue; }
      const h = c[probe].httpGet || c[probe].tcpSocket || c[probe].grpc;
      if (h && h.port !== undefined && !containerPort({ containers: [c] }, h.port)) {
        out.push(`${where}: ${probe} port ${h.port} is not a port of the container`);
      }
    }
  }
  for (const e of c.env || []) {
    if (SECRET_NAME.test(e.name) && e.value !== undefined) out.push(`${where}: env ${e.name} holds a literal value`);
    if (SECRET_NAME.test(e.name) && !(e.valueFrom && e.valueFrom.secretKeyRef)) {
      out.push(`${where}: env ${e.name} does not come from a secretKeyRef`);
    }
  }
  return out;
}

describe('pod hardening', () => {
  for (const [name] of sets) {
    it(`every container is hardened and sized (${setLabel(name)})`, async () => {
      const problems = [];
      const pods = podTemplates(await render(sets.find(([n]) => n === name)[1]));
      assert.ok(pods.length >= 5, `only ${pods.length} pods rendered`);
      for (const p of pods) {
        for (const { c, init } of containersOf(p.podSpec)) problems.push(...containerProblems(p, c, init));
        for (const k of ['hostNetwork', 'hostPID', 'hostIPC']) if (p.podSpec[k]) problems.push(`${p.what}: ${k}`);
        for (const v of p.podSpec.volumes || []) if (v.hostPath) problems.push(`${p.what}: hostPath volume ${v.name}`);
      }
      assert.deepEqual(problems, []);
    });

    it(`every pod has its own ServiceAccount, without a token (${setLabel(name)})`, async () => {
      const objs = await render(sets.find(([n]) => n === name)[1]);
      const problems = [];
      const owners = new Map();
      for (const p of podTemplates(objs)) {
        const sa = p.podSpec.serviceAccountName;
        if (!sa || sa === 'default') { problems.push(`${p.what}: runs as ServiceAccount ${sa || '(default)'}`); continue; }
        if (owners.has(sa)) problems.push(`${p.what} shares ServiceAccount ${sa} with ${owners.get(sa)}`);
        owners.set(sa, p.what);
        const obj = find(objs, 'ServiceAccount', sa);
        if (!obj) problems.push(`${p.what}: ServiceAccount ${sa} is not part of the chart`);
        else if (obj.automountServiceAccountToken !== false) problems.push(`ServiceAccount ${sa}: automountServiceAccountToken is not false`);
        if (p.podSpec.automountServiceAccountToken === true) problems.push(`${p.what}: automountServiceAccountToken true`);
      }
      assert.deepEqual(problems, []);
    });
  }
});

// Flags that would take a secret itself (--redis-password, --requirepass, --token), not a
// file holding one (--redis-password-file, --token-file).
const SECRET_FLAG = /(^|\s)(--[\w-]*(password|requirepass|token|secret)|-a)(=|\s|$)/;

describe('secrets', () => {
  for (const [name, args] of sets) {
    it(`no container or probe has a secret on its command line, where ps shows it (${setLabel(name)})`, async () => {
      const problems = [];
      for (const p of podTemplates(await render(args))) {
        for (const { c } of containersOf(p.podSpec)) {
          const where = `${p.what} container ${c.name}`;
          // The kubelet expands $(VAR) in command and args: a secretKeyRef variable there
          // is the secret itself in the process's argv ($$(VAR) is the escape, left alone).
          const secretVars = (c.env || []).filter((e) => e.valueFrom && e.valueFrom.secretKeyRef).map((e) => e.name);
          const words = [...(c.command || []), ...(c.args || [])].map((w) => ['command/args', String(w)]);
          for (const probe of ['startupProbe', 'readinessProbe', 'livenessProbe']) {
            for (const w of (c[probe] && c[probe].exec && c[probe].exec.command) || []) words.push([probe, String(w)]);
          }
          for (const [what, w] of words) {
            for (const v of secretVars) {
              if (w.replaceAll(`$$(${v})`, '').includes(`$(${v})`)) problems.push(`${where} ${what}: $(${v}) (a secretKeyRef) in ${JSON.stringify(w)}`);
            }
            if (SECRET_FLAG.test(w)) problems.push(`${where} ${what}: a flag that takes a secret in ${JSON.stringify(w)}`);
          }
        }
      }
      assert.deepEqual(problems, []);
    });
  }

  it('the generated Redis password appears nowhere but in its Secret', async () => {
    const objs = await render([]);
    const secret = get(objs, 'Secret', `${F}-redis`);
    const b64 = (secret.data || {})['redis-password'];
    const password = b64 !== undefined ? Buffer.from(b64, 'base64').toString() : (secret.stringData || {})['redis-password'];
    assert.ok(password, 'the Secret has no redis-password');
    for (const o of objs) {
      if (o === secret) continue;
      const text = JSON.stringify(o);
      assert.ok(!text.includes(password) && !(b64 && text.includes(b64)),
        `${o.kind}/${nameOf(o)} (${o.__source}) contains the Redis password`);
    }
  });
});
