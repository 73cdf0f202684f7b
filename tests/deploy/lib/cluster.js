'use strict';
// A one-node "cluster" made of podman containers: what the API server, the Deployment
// and StatefulSet controllers, cluster DNS and the kubelet would do with the objects of
// `helm template`, as far as a chart's behaviour depends on it (tests/deploy/README.md).
//
//   const c = new Cluster({ name: 'chessrl-deploy', dataDir, log });
//   await c.create();
//   await c.apply(manifests);          // start every Deployment replica, StatefulSet ordinal
//   await c.scale('Deployment', 'chess-rl-selfplay', 3);
//   await c.kill('chess-rl-redis-0');  // SIGKILL; the pod's restart policy brings it back
//   await c.uninstall();               // every pod stopped with its grace period; PVCs stay
//
// One container per pod ("<cluster>-<pod>"), hostname = the pod's name, on one podman
// network whose DNS answers every Service name matching the pod and, for a StatefulSet
// pod, "<pod>.<serviceName>". Volumes are host directories under dataDir, so they
// outlive a restarted container (emptyDir) or the pod itself (PersistentVolumeClaim).
const crypto = require('node:crypto');
const fs = require('node:fs');
const path = require('node:path');
const { podman, must } = require('./podman');
const probes = require('./probes');

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const now = () => Date.now();

// Kubernetes' exponential restart back-off: immediate, then 10 s doubling to 300 s; reset
// after 10 minutes of running.
const BACKOFF_FIRST_MS = 10000;
const BACKOFF_MAX_MS = 300000;
const BACKOFF_RESET_MS = 600000;

function quantityBytes(q) {
  const m = /^([0-9.]+)(Ki|Mi|Gi|Ti|k|M|G|T)?$/.exec(String(q));
  if (!m) throw new Error(`cannot read the memory quantity ${JSON.stringify(q)}`);
  const mult = { Ki: 1024, Mi: 1024 ** 2, Gi: 1024 ** 3, Ti: 1024 ** 4, k: 1e3, M: 1e6, G: 1e9, T: 1e12 };
  return Math.round(Number(m[1]) * (m[2] ? mult[m[2]] : 1));
}
function quantityCpus(q) {
  const s = String(q);
  return s.endsWith('m') ? Number(s.slice(0, -1)) / 1000 : Number(s);
}

// $(VAR) references in command, args and env values, as the kubelet expands them:
// $$(VAR) is a literal $(VAR); an unknown name stays as written.
function expand(text, vars) {
  return String(text).replace(/\$\$\(|\$\(([A-Za-z_][A-Za-z0-9_]*)\)/g, (whole, name) => {
    if (whole === '$$(') return '$(';
    return Object.prototype.hasOwnProperty.call(vars, name) ? vars[name] : whole;
  });
}

// An IPv4 subnet "a.b.c.d/n" as {cidr, base (the network number), size (addresses)}.
function parseSubnet(cidr) {
  const m = /^(\d+)\.(\d+)\.(\d+)\.(\d+)\/(\d+)$/.exec(cidr);
  if (!m || Number(m[5]) > 30) throw new Error(`not an IPv4 subnet with room for pods: ${cidr}`);
  const base = m.slice(1, 5).reduce((a, o) => a * 256 + Number(o), 0);
  const size = 2 ** (32 - Number(m[5]));
  return { cidr, base: base - (base % size), size };
}

// The MAC address of a pod's interface, fixed by its IP (locally administered, unicast).
// A restarted container keeps it too, as a pod's interface does on a node: other pods
// hold the pod's IP -> MAC entry in their neighbour (ARP) caches, and a new MAC behind
// the same IP can be unreachable for them until that entry is found stale.
const macFor = (ip) => ['02', '63', ...ip.split('.').map((o) => Number(o).toString(16).padStart(2, '0'))].join(':');

// Kubernetes' pod-template-hash and the random suffix of a Deployment's pod names.
const SAFE = 'bcdfghjklmnpqrstvwxz2456789';
function safeString(bytes, n) {
  let s = '';
  for (let i = 0; i < n; i++) s += SAFE[bytes[i] % SAFE.length];
  return s;
}
const templateHash = (template) =>
  safeString(crypto.createHash('sha256').update(JSON.stringify(template)).digest(), 10);
const randomSuffix = () => safeString(crypto.randomBytes(5), 5);

const selectorMatches = (selector, labels) =>
  !!selector && Object.keys(selector).length > 0 &&
  Object.entries(selector).every(([k, v]) => labels[k] === v);

// The pod's securityContext as podman flags; what the kubelet would refuse, refused.
function securityArgs(pod, sec) {
  const where = `pod ${pod.name}`;
  const args = [];
  if (sec.nonRoot && (sec.user === undefined || Number(sec.user) === 0)) {
    throw new Error(`${where}: runAsNonRoot without a non-zero runAsUser (the kubelet would refuse it)`);
  }
  if (sec.user !== undefined) args.push('--user', sec.group !== undefined ? `${sec.user}:${sec.group}` : `${sec.user}`);
  if (sec.fsGroup !== undefined) args.push('--group-add', String(sec.fsGroup));
  if (sec.readOnly) args.push('--read-only', '--read-only-tmpfs=false');
  for (const cap of sec.drop) args.push('--cap-drop', cap);
  for (const cap of sec.add) args.push('--cap-add', cap);
  if (sec.noNewPrivs) args.push('--security-opt', 'no-new-privileges');
  if (sec.privileged) throw new Error(`${where}: privileged containers are not run here`);
  return args;
}

// resources.limits as podman's --memory and --cpus.
function resourceArgs(c) {
  const limits = (c.resources || {}).limits || {};
  const args = [];
  if (limits.memory) args.push('--memory', String(quantityBytes(limits.memory)));
  if (limits.cpu) args.push('--cpus', String(quantityCpus(limits.cpu)));
  return args;
}

// Ports: nothing to publish (the host reaches the network's addresses); a name used
// twice is refused.
function checkPortNames(pod) {
  const ports = new Set();
  for (const p of pod.container.ports || []) {
    if (p.name && ports.has(p.name)) throw new Error(`pod ${pod.name}: port name ${p.name} twice`);
    ports.add(p.name);
  }
}

// command/args with $(VAR) expanded from the container's env: the image and its arguments.
function commandArgs(c, env) {
  const command = (c.command || []).map((s) => expand(s, env));
  const cargs = (c.args || []).map((s) => expand(s, env));
  return [...(command.length ? ['--entrypoint', JSON.stringify(command)] : []), c.image, ...cargs];
}

class Cluster {
  constructor({ name, dataDir, namespace = 'default', log = () => {} }) {
    this.name = name;
    this.namespace = namespace;
    this.dataDir = path.resolve(dataDir);
    this.log = log;
    this.objects = []; // the applied manifests
    this.pods = new Map(); // name -> pod
    this.started = now();
    this.stopped = false;
    this.watcher = null;
    this.stops = []; // {pod, seconds, grace, exitCode}: every pod deletion
    this.subnet = null; // parseSubnet() of the network's IPv4 subnet
    this.ipNext = 2; // the next host number to try (host-local IPAM's round robin)
    this.ipsHeld = new Set(); // addresses of the pods that exist
  }

  // --- set-up and tear-down -------------------------------------------------------------

  async create() {
    fs.mkdirSync(path.join(this.dataDir, 'pods'), { recursive: true });
    fs.mkdirSync(path.join(this.dataDir, 'pvc'), { recursive: true });
    fs.mkdirSync(path.join(this.dataDir, 'deleted-pods'), { recursive: true });
    fs.mkdirSync(path.join(this.dataDir, 'logs'), { recursive: true });
    const exists = await podman(['network', 'exists', this.name]);
    if (exists.code !== 0) await must(['network', 'create', this.name]);
    this.subnet = await this.readSubnet();
    this.watcher = this.watch();
  }

  // --- pod addresses ---------------------------------------------------------------------
  // A pod keeps one IP from creation to deletion, through container restarts, as the
  // pod sandbox does on a node (podman alone would hand a restarted container a new
  // address). Addresses are handed out round robin, as the host-local IPAM plugin does,
  // so a deleted pod's address is not at once someone else's.

  async readSubnet() {
    const nets = JSON.parse(await must(['network', 'inspect', this.name]));
    const cidr = ((nets[0] || {}).subnets || []).map((x) => x.subnet).find((x) => /^[0-9.]+\/\d+$/.test(x));
    if (!cidr) throw new Error(`network ${this.name} has no IPv4 subnet: ${JSON.stringify(nets[0] && nets[0].subnets)}`);
    return parseSubnet(cidr);
  }

  allocateIP() {
    const { base, size } = this.subnet;
    const dotted = (n) => [24, 16, 8, 0].map((s) => Math.floor(n / 2 ** s) % 256).join('.');
    // Host numbers 2 .. size-2: not the network, the gateway (.1) or broadcast.
    for (let tried = 0; tried < size - 3; tried++) {
      const host = this.ipNext;
      this.ipNext = host + 1 >= size - 1 ? 2 : host + 1;
      const ip = dotted(base + host);
      if (!this.ipsHeld.has(ip)) {
        this.ipsHeld.add(ip);
        return ip;
      }
    }
    throw new Error(`network ${this.name} (${this.subnet.cidr}) has no free address left`);
  }

  releaseIP(ip) {
    if (ip) this.ipsHeld.delete(ip);
  }

  // Removes every container of this cluster and its network (not the data).
  async destroy() {
    this.stopped = true;
    if (this.watcher) await this.watcher;
    const ids = (await podman(['ps', '-aq', '--filter', `label=chessrl-deploy=${this.name}`])).stdout.split(/\s+/).filter(Boolean);
    if (ids.length) await podman(['rm', '-f', '-t', '0', ...ids]);
    await podman(['network', 'rm', '-f', this.name]);
  }

  // A previous run's containers, network and data under this name: gone.
  static async clean(name, dataDir) {
    const ids = (await podman(['ps', '-aq', '--filter', `label=chessrl-deploy=${name}`])).stdout.split(/\s+/).filter(Boolean);
    if (ids.length) await podman(['rm', '-f', '-t', '0', ...ids]);
    await podman(['network', 'rm', '-f', name]);
    fs.rmSync(dataDir, { recursive: true, force: true });
    fs.rmSync(path.join('/dev/shm', name), { recursive: true, force: true });
  }

  // --- the API server: objects -------------------------------------------------------

  find(kind, name) {
    return this.objects.find((o) => o.kind === kind && o.metadata.name === name);
  }
  mustFind(kind, name, why) {
    const o = this.find(kind, name);
    if (!o) throw new Error(`${why}: no ${kind} ${name} in the applied manifests`);
    return o;
  }

  // kubectl apply of a whole release: objects replaced, workloads reconciled. Hook
  // objects (helm.sh/hook) are kept aside for runHooks().
  async apply(manifests) {
    const isHook = (o) => !!(o.metadata.annotations || {})['helm.sh/hook'];
    this.hooks = manifests.filter(isHook);
    this.objects = manifests.filter((o) => !isHook(o));
    for (const o of this.objects) {
      if (o.kind === 'PersistentVolumeClaim') this.ensurePvc(o.metadata.name);
    }
    await this.reconcileAll();
  }

  // helm upgrade: `helm template` cannot look anything up, so the chart's `lookup` of its
  // generated Secrets (the auth tokens, Redis's password: kept across upgrades, since
  // the running pods read them only at start) is done here: a Secret that exists keeps
  // its live data. Then the manifests are applied as on install.
  async upgrade(manifests) {
    for (const o of manifests) {
      if (o.kind !== 'Secret' || (o.metadata.annotations || {})['helm.sh/hook']) continue;
      const live = this.find('Secret', o.metadata.name);
      if (live) {
        o.data = live.data;
        o.stringData = live.stringData;
      }
    }
    await this.apply(manifests);
  }

  // kubectl scale: the live object's replicas changed, nothing else.
  async scale(kind, name, replicas) {
    const o = this.mustFind(kind, name, 'scale');
    o.spec.replicas = replicas;
    await this.reconcile(o);
  }

  async reconcileAll() {
    // StatefulSets and Deployments are reconciled side by side, as their controllers do.
    const workloads = this.objects.filter((o) => o.kind === 'Deployment' || o.kind === 'StatefulSet');
    for (const o of this.objects) {
      if (['DaemonSet', 'Job', 'CronJob', 'ReplicaSet', 'Pod'].includes(o.kind)) {
        throw new Error(`the harness does not run ${o.kind} objects (${o.metadata.name})`);
      }
    }
    await Promise.all(workloads.map((o) => this.reconcile(o)));
  }

  ownedPods(o) {
    return [...this.pods.values()].filter((p) => p.owner.kind === o.kind && p.owner.name === o.metadata.name);
  }

  async reconcile(o) {
    const want = o.spec.replicas ?? 1;
    if (o.kind === 'Deployment') {
      const hash = templateHash(o.spec.template);
      const pods = this.ownedPods(o);
      // A changed template: the old pods go first (the harness does no surge).
      await Promise.all(pods.filter((p) => p.templateHash !== hash).map((p) => this.deletePod(p.name)));
      const current = this.ownedPods(o).sort((a, b) => a.created - b.created);
      // Scale down: the newest pods go first.
      await Promise.all(current.slice(want).reverse().map((p) => this.deletePod(p.name)));
      const starts = [];
      for (let i = current.length; i < want; i++) {
        const name = `${o.metadata.name}-${hash}-${randomSuffix()}`;
        starts.push(this.createPod(name, o, { templateHash: hash }));
      }
      await Promise.all(starts);
    } else {
      const hash = templateHash(o.spec.template);
      const parallel = o.spec.podManagementPolicy === 'Parallel';
      const pods = this.ownedPods(o);
      for (const p of pods.filter((x) => x.ordinal >= want).sort((a, b) => b.ordinal - a.ordinal)) {
        await this.deletePod(p.name);
      }
      for (const p of pods.filter((x) => x.ordinal < want && x.templateHash !== hash).sort((a, b) => b.ordinal - a.ordinal)) {
        await this.deletePod(p.name);
      }
      const starts = [];
      for (let i = 0; i < want; i++) {
        const name = `${o.metadata.name}-${i}`;
        if (this.pods.has(name)) continue;
        if (!parallel && i > 0) {
          // OrderedReady: ordinal i only once ordinal i-1 is Ready.
          const prev = `${o.metadata.name}-${i - 1}`;
          await this.waitFor(() => this.pods.get(prev)?.ready, 600000, `${prev} Ready (OrderedReady)`);
        }
        const start = this.createPod(name, o, { templateHash: hash, ordinal: i });
        starts.push(start);
        if (!parallel) await start;
      }
      await Promise.all(starts);
    }
  }

  // --- pods ----------------------------------------------------------------------------

  ensurePvc(claim) {
    const dir = path.join(this.dataDir, 'pvc', claim);
    if (!fs.existsSync(dir)) {
      fs.mkdirSync(dir, { recursive: true });
      fs.chmodSync(dir, 0o777); // what a local-path provisioner makes; fsGroup adjusts it below
    }
    return dir;
  }

  async createPod(name, owner, { templateHash: hash, ordinal = null }) {
    const template = owner.spec.template;
    const spec = template.spec;
    const where = `${owner.kind} ${owner.metadata.name}`;
    if ((spec.initContainers || []).length) throw new Error(`${where}: the harness runs no initContainers`);
    if (spec.containers.length !== 1) throw new Error(`${where}: the harness runs one container per pod`);
    const pod = {
      name,
      owner: { kind: owner.kind, name: owner.metadata.name },
      ordinal,
      templateHash: hash,
      labels: { ...(template.metadata.labels || {}) },
      spec,
      container: spec.containers[0],
      ctr: `${this.name}-${name}`,
      dir: path.join(this.dataDir, 'pods', name),
      created: now(),
      startedAt: null, // this container start
      firstReadyAt: null,
      ready: false,
      running: false,
      restarts: 0,
      generation: 0, // bumped at every container start: stale probe loops stop
      exits: [], // {at, code, reason}
      deleting: false,
      backoffMs: 0,
    };
    if (owner.kind === 'StatefulSet') pod.labels['statefulset.kubernetes.io/pod-name'] = name;
    fs.mkdirSync(pod.dir, { recursive: true });
    this.pods.set(name, pod);
    const args = this.runArgs(pod, owner);
    await must(['create', ...args]);
    await this.startContainer(pod, 'created');
    return pod;
  }

  podSecurity(pod) {
    const ps = pod.spec.securityContext || {};
    const cs = pod.container.securityContext || {};
    const pick = (k) => (cs[k] !== undefined ? cs[k] : ps[k]);
    return {
      user: pick('runAsUser'), group: pick('runAsGroup'), nonRoot: pick('runAsNonRoot'),
      fsGroup: ps.fsGroup, readOnly: cs.readOnlyRootFilesystem === true,
      drop: (cs.capabilities || {}).drop || [], add: (cs.capabilities || {}).add || [],
      noNewPrivs: cs.allowPrivilegeEscalation === false, privileged: cs.privileged === true,
    };
  }

  // `podman create`'s arguments for the pod: its network identity, then each part of
  // the container spec as the kubelet would apply it.
  runArgs(pod, owner) {
    const c = pod.container;
    const sec = this.podSecurity(pod);
    pod.podIP ??= this.allocateIP();
    const args = ['--name', pod.ctr, '--hostname', pod.name, '--network', this.name,
      '--ip', pod.podIP, '--mac-address', macFor(pod.podIP),
      '--label', `chessrl-deploy=${this.name}`, '--label', `chessrl-deploy-pod=${pod.name}`,
      '--pull', 'never', '--init=false', '--log-driver', 'k8s-file'];
    for (const alias of this.aliases(pod, owner)) args.push('--network-alias', alias);
    args.push(...securityArgs(pod, sec), ...resourceArgs(c));
    const env = this.resolveEnv(pod);
    for (const [k, v] of Object.entries(env)) args.push('--env', `${k}=${v}`);
    args.push(...this.volumeArgs(pod, owner, sec));
    checkPortNames(pod);
    args.push(...commandArgs(c, env));
    pod.env = env;
    return args;
  }

  // --volume for each volumeMount, its host directory made as the kubelet would.
  volumeArgs(pod, owner, sec) {
    const args = [];
    for (const m of pod.container.volumeMounts || []) {
      const host = this.volumeDir(pod, owner, m.name, sec);
      const src = m.subPath ? path.join(host, m.subPath) : host;
      args.push('--volume', `${src}:${m.mountPath}${m.readOnly ? ':ro' : ''}`);
    }
    return args;
  }

  // Every name the pod answers to: each Service selecting it (short, .ns, .ns.svc,
  // .ns.svc.cluster.local) and, in a StatefulSet, <pod>.<serviceName>. A Service whose
  // port differs from its target (the harness does no port mapping) is refused.
  aliases(pod, owner) {
    const names = new Set();
    const add = (n) => {
      names.add(n); names.add(`${n}.${this.namespace}`);
      names.add(`${n}.${this.namespace}.svc`); names.add(`${n}.${this.namespace}.svc.cluster.local`);
    };
    for (const svc of this.objects.filter((o) => o.kind === 'Service')) {
      if (!selectorMatches(svc.spec.selector, pod.labels)) continue;
      for (const p of svc.spec.ports || []) {
        const target = p.targetPort ?? p.port;
        const cport = typeof target === 'number' ? target
          : ((pod.container.ports || []).find((x) => x.name === target) || {}).containerPort;
        if (cport === undefined) throw new Error(`Service ${svc.metadata.name}: targetPort ${target} is no port of pod ${pod.name}`);
        if (cport !== p.port) throw new Error(`Service ${svc.metadata.name}: port ${p.port} maps to ${cport}; the harness cannot remap ports`);
      }
      add(svc.metadata.name);
      if (owner.kind === 'StatefulSet' && owner.spec.serviceName === svc.metadata.name) {
        if (svc.spec.clusterIP !== 'None') throw new Error(`StatefulSet ${owner.metadata.name}: its serviceName ${svc.metadata.name} is not headless`);
        add(`${pod.name}.${svc.metadata.name}`);
      }
    }
    if (owner.kind === 'StatefulSet' && !this.find('Service', owner.spec.serviceName)) {
      throw new Error(`StatefulSet ${owner.metadata.name}: its serviceName ${owner.spec.serviceName} is no Service of the release`);
    }
    return [...names];
  }

  resolveEnv(pod) {
    const c = pod.container;
    const env = {};
    const where = `pod ${pod.name}`;
    const secretData = (name, why) => {
      const s = this.mustFind('Secret', name, `${where}: ${why}`);
      const out = {};
      for (const [k, v] of Object.entries(s.data || {})) out[k] = Buffer.from(v, 'base64').toString('utf8');
      Object.assign(out, s.stringData || {});
      return out;
    };
    const configData = (name, why) => this.mustFind('ConfigMap', name, `${where}: ${why}`).data || {};
    for (const from of c.envFrom || []) {
      const prefix = from.prefix || '';
      if (from.configMapRef) Object.entries(configData(from.configMapRef.name, 'envFrom')).forEach(([k, v]) => { env[prefix + k] = v; });
      if (from.secretRef) Object.entries(secretData(from.secretRef.name, 'envFrom')).forEach(([k, v]) => { env[prefix + k] = v; });
    }
    for (const e of c.env || []) {
      if (e.value !== undefined) { env[e.name] = expand(e.value, env); continue; }
      const vf = e.valueFrom || {};
      if (vf.secretKeyRef) {
        const data = secretData(vf.secretKeyRef.name, `env ${e.name}`);
        if (!(vf.secretKeyRef.key in data)) throw new Error(`${where}: env ${e.name}: Secret ${vf.secretKeyRef.name} has no key ${vf.secretKeyRef.key}`);
        env[e.name] = data[vf.secretKeyRef.key];
      } else if (vf.configMapKeyRef) {
        const data = configData(vf.configMapKeyRef.name, `env ${e.name}`);
        if (!(vf.configMapKeyRef.key in data)) throw new Error(`${where}: env ${e.name}: ConfigMap ${vf.configMapKeyRef.name} has no key ${vf.configMapKeyRef.key}`);
        env[e.name] = data[vf.configMapKeyRef.key];
      } else if (vf.fieldRef) {
        const field = vf.fieldRef.fieldPath;
        const label = /^metadata\.labels\['(.+)'\]$/.exec(field);
        if (field === 'metadata.name') env[e.name] = pod.name;
        else if (field === 'metadata.namespace') env[e.name] = this.namespace;
        else if (field === 'spec.nodeName') env[e.name] = 'node-0';
        else if (field === 'spec.serviceAccountName') env[e.name] = pod.spec.serviceAccountName || 'default';
        else if (label) env[e.name] = pod.labels[label[1]] || '';
        else throw new Error(`${where}: env ${e.name}: the harness does not provide fieldRef ${field}`);
      } else {
        throw new Error(`${where}: env ${e.name}: unsupported valueFrom ${JSON.stringify(vf)}`);
      }
    }
    return env;
  }

  // The host directory behind a pod's volume, made and filled as the kubelet would.
  volumeDir(pod, owner, volumeName, sec) {
    const where = `pod ${pod.name}`;
    const v = (pod.spec.volumes || []).find((x) => x.name === volumeName);
    const template = (owner.spec.volumeClaimTemplates || []).find((t) => t.metadata.name === volumeName);
    const groupOwn = (dir) => {
      if (sec.fsGroup === undefined) return;
      fs.chownSync(dir, 0, Number(sec.fsGroup));
      fs.chmodSync(dir, 0o2775);
    };
    if (!v && template) {
      // A StatefulSet's claim: <template>-<pod>, kept when the pod goes.
      const dir = this.ensurePvc(`${volumeName}-${pod.name}`);
      groupOwn(dir);
      return dir;
    }
    if (!v) throw new Error(`${where}: volumeMount ${volumeName} names no volume`);
    // ConfigMap and Secret files with the volume's mode. With the pod's fsGroup the kubelet
    // makes them group-owned by it and group-readable (SetVolumeOwnership of a read-only
    // volume: mode | 0440), which is how a non-root user reads a 0400 or 0440 Secret file.
    const writeFiles = (dir, data, items, mode) => {
      fs.mkdirSync(dir, { recursive: true });
      const keys = items ? items.map((i) => [i.key, i.path]) : Object.keys(data).map((k) => [k, k]);
      for (const [key, file] of keys) {
        if (!(key in data)) throw new Error(`${where}: volume ${volumeName}: no key ${key}`);
        const target = path.join(dir, file);
        fs.mkdirSync(path.dirname(target), { recursive: true });
        fs.writeFileSync(target, data[key], { mode });
        if (sec.fsGroup !== undefined) {
          fs.chownSync(target, 0, Number(sec.fsGroup));
          fs.chmodSync(target, mode | 0o440);
        } else {
          fs.chmodSync(target, mode);
        }
      }
      return dir;
    };
    if (v.configMap) {
      const cm = this.mustFind('ConfigMap', v.configMap.name, `${where}: volume ${volumeName}`);
      return writeFiles(path.join(pod.dir, 'configmap', volumeName), cm.data || {}, v.configMap.items, v.configMap.defaultMode ?? 0o644);
    }
    if (v.secret) {
      const s = this.mustFind('Secret', v.secret.secretName, `${where}: volume ${volumeName}`);
      const data = {};
      for (const [k, val] of Object.entries(s.data || {})) data[k] = Buffer.from(val, 'base64');
      return writeFiles(path.join(pod.dir, 'secret', volumeName), data, v.secret.items, v.secret.defaultMode ?? 0o644);
    }
    if (v.emptyDir) {
      // Lives as long as the pod (not the container). medium: Memory is a tmpfs.
      const dir = v.emptyDir.medium === 'Memory'
        ? path.join('/dev/shm', this.name, pod.name, volumeName)
        : path.join(pod.dir, 'empty', volumeName);
      if (!fs.existsSync(dir)) {
        fs.mkdirSync(dir, { recursive: true });
        fs.chmodSync(dir, 0o777);
      }
      groupOwn(dir);
      return dir;
    }
    if (v.persistentVolumeClaim) {
      const claim = v.persistentVolumeClaim.claimName;
      this.mustFind('PersistentVolumeClaim', claim, `${where}: volume ${volumeName} (the pod would stay Pending)`);
      const dir = this.ensurePvc(claim);
      groupOwn(dir);
      return dir;
    }
    throw new Error(`${where}: volume ${volumeName}: the harness supports configMap, secret, emptyDir and persistentVolumeClaim`);
  }

  async startContainer(pod, why) {
    const r = await podman(['start', pod.ctr]);
    if (r.code !== 0) {
      // Like a container that exits at once: back off and try again.
      this.event(pod, `could not start (${why}): ${r.stderr.trim()}`);
      pod.running = false;
      pod.ready = false;
      this.restartLater(pod, null, 'start failed');
      return;
    }
    pod.generation++;
    pod.startedAt = now();
    pod.running = true;
    pod.ready = false;
    this.event(pod, why === 'created' ? 'started' : `restarted (${why}; restart ${pod.restarts})`);
    this.runProbes(pod, pod.generation);
  }

  // restartPolicy Always: start the pod's container again after the back-off.
  restartLater(pod, code, reason) {
    pod.exits.push({ at: now(), code, reason });
    const ranMs = now() - (pod.startedAt || now());
    if (ranMs > BACKOFF_RESET_MS) pod.backoffMs = 0;
    const delay = pod.backoffMs;
    pod.backoffMs = delay === 0 ? BACKOFF_FIRST_MS : Math.min(delay * 2, BACKOFF_MAX_MS);
    this.event(pod, `${reason === 'start failed' ? 'start failed' : `exited with code ${code}`}; restart in ${delay / 1000} s`);
    pod.restarting = true;
    (async () => {
      await sleep(delay);
      if (this.stopped || pod.deleting) { pod.restarting = false; return; }
      pod.restarts++;
      await this.startContainer(pod, reason === 'start failed' ? 'retry' : `exit ${code}`);
      pod.restarting = false;
    })();
  }

  event(pod, what) {
    const t = ((now() - this.started) / 1000).toFixed(1).padStart(6);
    this.log(`[${t}s] ${pod.name}: ${what}`);
    (pod.events ||= []).push({ at: now(), what });
  }

  // --- the kubelet: probes, restarts -----------------------------------------------------

  podIP(pod) {
    return pod.ip;
  }

  async refreshIP(pod) {
    const r = await podman(['inspect', '--format', `{{(index .NetworkSettings.Networks "${this.name}").IPAddress}}`, pod.ctr]);
    pod.ip = r.code === 0 ? r.stdout.trim() : null;
    return pod.ip;
  }

  runProbes(pod, generation) {
    const c = pod.container;
    const live = () => !this.stopped && pod.running && !pod.deleting && pod.generation === generation;
    const loop = async (kind, probe) => {
      if (!probe) {
        if (kind === 'readiness') { pod.ready = true; pod.firstReadyAt ??= now(); }
        return;
      }
      await sleep((probe.initialDelaySeconds || 0) * 1000);
      let failures = 0;
      let successes = 0;
      while (live()) {
        if (!pod.ip) await this.refreshIP(pod);
        const ok = await probes.run(this, pod, probe);
        if (!live()) return;
        if (ok.ok) { successes++; failures = 0; } else { failures++; successes = 0; }
        if (kind === 'readiness') {
          if (!pod.ready && successes >= (probe.successThreshold || 1)) {
            pod.ready = true;
            pod.firstReadyAt ??= now();
            this.event(pod, `Ready (${((now() - pod.startedAt) / 1000).toFixed(1)} s after its start)`);
          } else if (pod.ready && failures >= (probe.failureThreshold || 3)) {
            pod.ready = false;
            this.event(pod, `not Ready: ${ok.detail}`);
          }
        } else if (failures >= (probe.failureThreshold || 3)) {
          this.event(pod, `liveness failed ${failures} times (${ok.detail}): killing it`);
          pod.livenessKill = true;
          await podman(['stop', '-t', String(pod.spec.terminationGracePeriodSeconds ?? 30), pod.ctr], { timeoutMs: 400000 });
          return; // the watcher sees the exit and restarts it
        }
        await sleep((probe.periodSeconds || 10) * 1000);
      }
    };
    loop('readiness', c.readinessProbe);
    loop('liveness', c.livenessProbe);
  }

  // Watches container states once a second: an exited container of a live pod is
  // restarted (restartPolicy Always) after the back-off.
  async watch() {
    while (!this.stopped) {
      await sleep(1000);
      const r = await podman(['ps', '-a', '--filter', `label=chessrl-deploy=${this.name}`, '--format', 'json']);
      if (r.code !== 0) continue;
      let list;
      try { list = JSON.parse(r.stdout || '[]'); } catch { continue; }
      for (const ctr of list) {
        const name = (ctr.Labels || {})['chessrl-deploy-pod'];
        const pod = this.pods.get(name);
        if (!pod || pod.deleting || pod.restarting || !pod.running) continue;
        // Only a container that has finished counts (not one still stopping).
        if (!['exited', 'stopped'].includes(String(ctr.State).toLowerCase())) continue;
        pod.running = false;
        pod.ready = false;
        pod.ip = null;
        const reason = pod.livenessKill ? 'liveness' : 'exited';
        pod.livenessKill = false;
        this.restartLater(pod, ctr.ExitCode, reason);
      }
    }
  }

  // kill -9 of the pod's process (its container's init process).
  async kill(podName, signal = 'KILL') {
    const pod = this.mustPod(podName);
    await must(['kill', '--signal', signal, pod.ctr]);
    return now();
  }

  // The host PID of the pod's main process (for a kill with no podman in between).
  async pid(podName) {
    const pod = this.mustPod(podName);
    const pid = Number((await must(['inspect', '--format', '{{.State.Pid}}', pod.ctr])).trim());
    if (!(pid > 0)) throw new Error(`${podName} has no running process`);
    return pid;
  }

  mustPod(name) {
    const pod = this.pods.get(name);
    if (!pod) throw new Error(`no pod ${name}; pods: ${[...this.pods.keys()].join(', ')}`);
    return pod;
  }

  // Deletes a pod as the API server and kubelet do: SIGTERM, SIGKILL after
  // terminationGracePeriodSeconds. Its emptyDirs go (kept aside under deleted-pods/ for
  // the test to read), its claims stay. Resolves the stop record.
  async deletePod(name) {
    const pod = this.mustPod(name);
    pod.deleting = true;
    pod.ready = false;
    const grace = pod.spec.terminationGracePeriodSeconds ?? 30;
    const t0 = now();
    this.event(pod, `deleting: SIGTERM, ${grace} s grace`);
    await podman(['stop', '-t', String(grace), pod.ctr], { timeoutMs: (grace + 60) * 1000 });
    const seconds = (now() - t0) / 1000;
    const state = await podman(['inspect', '--format', '{{.State.ExitCode}}', pod.ctr]);
    const exitCode = state.code === 0 ? Number(state.stdout.trim()) : null;
    await this.saveLogs(pod);
    await podman(['rm', '-f', '-t', '0', pod.ctr]);
    this.releaseIP(pod.podIP);
    const record = { pod: name, seconds, grace, exitCode };
    this.stops.push(record);
    this.event(pod, `stopped in ${seconds.toFixed(1)} s (exit ${exitCode})`);
    this.pods.delete(name);
    const gone = path.join(this.dataDir, 'deleted-pods', `${name}-${t0}`);
    fs.renameSync(pod.dir, gone);
    fs.rmSync(path.join('/dev/shm', this.name, name), { recursive: true, force: true });
    return record;
  }

  async saveLogs(pod) {
    const r = await podman(['logs', pod.ctr]);
    fs.appendFileSync(path.join(this.dataDir, 'logs', `${pod.name}.log`), r.stdout + r.stderr);
  }

  async logs(podName) {
    const pod = this.mustPod(podName);
    const r = await podman(['logs', pod.ctr]);
    return r.stdout + r.stderr;
  }

  // helm uninstall: every object of the release goes; pods stop in parallel, each with its
  // grace period. Claims stay unless nothing keeps them: a standalone PVC without
  // helm.sh/resource-policy: keep is deleted, a StatefulSet's claims follow its
  // persistentVolumeClaimRetentionPolicy.whenDeleted.
  async uninstall() {
    const records = await Promise.all([...this.pods.keys()].map((n) => this.deletePod(n)));
    const removed = [];
    for (const o of this.objects) {
      if (o.kind === 'PersistentVolumeClaim' && ((o.metadata.annotations || {})['helm.sh/resource-policy'] !== 'keep')) {
        removed.push(o.metadata.name);
      }
      if (o.kind === 'StatefulSet' && (o.spec.persistentVolumeClaimRetentionPolicy || {}).whenDeleted === 'Delete') {
        for (const t of o.spec.volumeClaimTemplates || []) {
          for (let i = 0; i < (o.spec.replicas ?? 1); i++) removed.push(`${t.metadata.name}-${o.metadata.name}-${i}`);
        }
      }
    }
    for (const claim of removed) fs.rmSync(path.join(this.dataDir, 'pvc', claim), { recursive: true, force: true });
    this.objects = [];
    this.hooks = [];
    return { records, removedClaims: removed };
  }

  // helm test: each test hook Pod run to completion (restartPolicy Never) within its
  // activeDeadlineSeconds. Resolves [{name, ok, code, seconds, logs}].
  async runTestHooks() {
    const results = [];
    for (const hook of (this.hooks || []).filter((o) => o.kind === 'Pod' &&
      String(o.metadata.annotations['helm.sh/hook']).split(',').includes('test'))) {
      const owner = { kind: 'Pod', metadata: hook.metadata, spec: { template: { metadata: hook.metadata, spec: hook.spec } } };
      const pod = {
        name: hook.metadata.name, owner: { kind: 'Pod', name: hook.metadata.name }, labels: hook.metadata.labels || {},
        spec: hook.spec, container: hook.spec.containers[0], ctr: `${this.name}-${hook.metadata.name}`,
        dir: path.join(this.dataDir, 'pods', hook.metadata.name), created: now(),
      };
      fs.mkdirSync(pod.dir, { recursive: true });
      await podman(['rm', '-f', '-t', '0', pod.ctr]);
      const args = this.runArgs(pod, owner);
      const deadline = hook.spec.activeDeadlineSeconds ?? 300;
      const t0 = now();
      await must(['create', ...args]);
      await must(['start', pod.ctr]);
      const wait = await podman(['wait', pod.ctr], { timeoutMs: deadline * 1000 });
      if (wait.timedOut) await podman(['kill', pod.ctr]);
      const code = wait.timedOut ? null : Number(wait.stdout.trim());
      const logs = (await podman(['logs', pod.ctr])).stdout;
      fs.writeFileSync(path.join(this.dataDir, 'logs', `${pod.name}.log`), logs);
      await podman(['rm', '-f', '-t', '0', pod.ctr]);
      this.releaseIP(pod.podIP);
      results.push({ name: pod.name, ok: code === 0, code, seconds: (now() - t0) / 1000, logs });
    }
    return results;
  }

  async exec(podName, command, { input, timeoutMs = 30000 } = {}) {
    const pod = this.mustPod(podName);
    return podman(['exec', ...(input !== undefined ? ['-i'] : []), pod.ctr, ...command], { input, timeoutMs });
  }

  podsOf(kind, name) {
    return [...this.pods.values()].filter((p) => p.owner.kind === kind && p.owner.name === name)
      .sort((a, b) => (a.ordinal ?? a.created) - (b.ordinal ?? b.created));
  }

  allReady() {
    return [...this.pods.values()].every((p) => p.ready);
  }

  async waitFor(predicate, timeoutMs, what, intervalMs = 500) {
    const t0 = now();
    for (;;) {
      const v = await predicate();
      if (v) return v;
      if (now() - t0 > timeoutMs) throw new Error(`timed out after ${(timeoutMs / 1000).toFixed(0)} s waiting for ${what}`);
      await sleep(intervalMs);
    }
  }
}

module.exports = { Cluster, expand, templateHash, quantityBytes, quantityCpus, parseSubnet, macFor, sleep };
