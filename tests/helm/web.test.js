'use strict';
// The game viewer (web.*): chessrl-web in the chessrl-replay image, wired by flags alone to
// the headless Service F-selfplay-pods and to F-evaluator-metrics, with a probe port of its
// own; its Service, the optional Ingress; no Secret, no token, no config file; a
// NetworkPolicy that lets it reach only DNS and the metrics ports it polls, while the
// self-play and evaluator policies admit it; its PodMonitor and the helm test; schema
// refusals naming the key; and the flags the chart passes, as `chessrl-web --help` lists them
// (CHESSRL_WEB_BIN, or services/web/chessrl-web of the build that holds CHESSRL_BIN).
const { describe, it, before } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { execFile } = require('node:child_process');
const {
  render, prefetch, helm, F, KUBE_VERSIONS, KUBE_VERSION, MONITORING_API, get, find, nameOf, inventory, ofKind,
  podTemplates, containersOf, mainContainer, flagValues, workloadOf, containerPort, selects, selectsMap, chartFile,
} = require('./lib/chart');
const { chartDir } = require('./lib/tools');
const { network } = require('./lib/netpol');
const { validateObject } = require('./lib/k8s-validate');

const NS = 'chess-rl';
const set = (...kv) => kv.flatMap((s) => ['--set', s]);
const OFF = set('web.enabled=false');
const NO_EVALUATOR = set('evaluator.enabled=false');
const PORTS = set('web.ports.http=9000', 'web.ports.probes=9300', 'selfplay.ports.metrics=9111', 'evaluator.ports.metrics=9114');
const TLS = set('tls.enabled=true', 'tls.existingSecret=replay-tls');
// helm/ci/values-web.yaml: two pods, the Ingress, networkPolicy.web.from and named scrapers.
const CI = ['-f', chartFile('ci', 'values-web.yaml')];
const SCRAPERS = ['--set-json', 'networkPolicy.metrics.namespaceSelector={"matchLabels":{"kubernetes.io/metadata.name":"monitoring"}}'];
const WITH_API = { apiVersions: [MONITORING_API] };
const RELEASE_LABELS = { 'app.kubernetes.io/name': 'chess-rl', 'app.kubernetes.io/instance': 'chess-rl' };

before(() => prefetch([[]], [OFF], [NO_EVALUATOR], [PORTS], [TLS], [CI], [SCRAPERS], [[], WITH_API], [OFF, WITH_API],
  [[...OFF, ...set('web.ingress.enabled=true', 'web.ingress.hosts[0].host=chess.example.com')]]));

const deployment = (objs) => get(objs, 'Deployment', `${F}-web`);
const container = (objs) => mainContainer(deployment(objs), 'web');
const component = (o) => ((o.metadata && o.metadata.labels) || {})['app.kubernetes.io/component'];
const one = (values, what) => {
  assert.equal(values.length, 1, `${what}: ${values.length} values (${JSON.stringify(values)})`);
  return values[0];
};
// host:port of an address flag, and the Service of the release it names.
function serviceOf(objs, address) {
  const m = /^([a-z0-9-]+):(\d+)$/.exec(address);
  assert.ok(m, `${address} is not host:port`);
  const svc = find(objs, 'Service', m[1]);
  assert.ok(svc, `${address}: no Service ${m[1]} in the chart (${inventory(objs)})`);
  return { svc, port: Number(m[2]) };
}

describe('the viewer\'s Deployment', () => {
  it(`${F}-web runs /usr/local/bin/chessrl-web from the chessrl-replay image, one pod`, async () => {
    const objs = await render([]);
    const d = deployment(objs);
    assert.equal(d.spec.replicas, 1);
    const c = container(objs);
    assert.deepEqual(c.command, ['/usr/local/bin/chessrl-web'], 'the image\'s entrypoint is chessrl-replay: the command must name chessrl-web');
    assert.equal(c.image, 'chessrl-replay:0.1.0');
    assert.equal(c.imagePullPolicy, 'IfNotPresent');
  });

  it('passes only the wiring: where it listens and what it polls (the rest are the binary\'s defaults)', async () => {
    const c = container(await render([]));
    assert.deepEqual(c.args, [
      '--listen', '0.0.0.0:8080',
      '--probe-listen', '0.0.0.0:9205',
      '--selfplay', `${F}-selfplay-pods:9101`,
      '--evaluator', `${F}-evaluator-metrics:9104`,
    ]);
    for (const setting of ['poll-interval', 'max-boards', 'config']) {
      assert.deepEqual(flagValues(c, setting), [], `the chart sets --${setting}: leave it to the binary's default`);
    }
    assert.equal(c.env, undefined, 'no environment: nothing but flags');
  });

  it('each address it polls is a Service of the release, on the metrics port of the pods it polls', async () => {
    const objs = await render([]);
    const c = container(objs);
    for (const [flag, comp, metricsPort] of [['selfplay', 'selfplay', 9101], ['evaluator', 'evaluator', 9104]]) {
      const { svc, port } = serviceOf(objs, one(flagValues(c, flag), `--${flag}`));
      const p = svc.spec.ports.find((x) => x.port === port);
      assert.ok(p, `Service ${nameOf(svc)} has no port ${port}`);
      const w = workloadOf(objs, comp);
      assert.ok(selectsMap(svc.spec.selector, w.spec.template.metadata.labels), `Service ${nameOf(svc)} does not select ${nameOf(w)}`);
      const target = containerPort(w.spec.template.spec, p.targetPort);
      assert.ok(target && target.containerPort === metricsPort && target.name === 'metrics',
        `Service ${nameOf(svc)} port ${port} goes to ${JSON.stringify(target)}, not ${comp}'s metrics port`);
    }
    assert.equal(serviceOf(objs, flagValues(c, 'selfplay')[0]).svc.spec.clusterIP, 'None',
      '--selfplay must name a headless Service: every pod\'s address, not one ClusterIP');
  });

  it('the addresses and ports follow the values', async () => {
    const objs = await render(PORTS);
    const c = container(objs);
    assert.deepEqual(flagValues(c, 'listen'), ['0.0.0.0:9000']);
    assert.deepEqual(flagValues(c, 'probe-listen'), ['0.0.0.0:9300']);
    assert.deepEqual(flagValues(c, 'selfplay'), [`${F}-selfplay-pods:9111`]);
    assert.deepEqual(flagValues(c, 'evaluator'), [`${F}-evaluator-metrics:9114`]);
    const ports = Object.fromEntries(c.ports.map((p) => [p.name, p.containerPort]));
    assert.deepEqual(ports, { http: 9000, probes: 9300 });
    assert.deepEqual(get(objs, 'Service', `${F}-selfplay-pods`).spec.ports.map((p) => p.port), [9111]);
  });

  it('without the evaluator: no --evaluator', async () => {
    const c = container(await render(NO_EVALUATOR));
    assert.deepEqual(flagValues(c, 'evaluator'), []);
    assert.deepEqual(flagValues(c, 'selfplay'), [`${F}-selfplay-pods:9101`]);
  });

  it('extraArgs follow the chart\'s flags; extraEnv is the container\'s env', async () => {
    const c = container(await render(['--set-json', 'web.extraArgs=["--poll-interval=2"]',
      '--set-json', 'web.extraEnv=[{"name":"CHESSRL_MAX_BOARDS","value":"32"}]']));
    assert.equal(c.args[c.args.length - 1], '--poll-interval=2');
    assert.deepEqual(c.env, [{ name: 'CHESSRL_MAX_BOARDS', value: '32' }]);
  });

  it('the image falls back field by field to image.*, as every component\'s does', async () => {
    const global = set('image.registry=registry.example.com', 'image.tag=1.2.3', 'image.pullPolicy=Always');
    let c = container(await render(global));
    assert.equal(c.image, 'registry.example.com/chessrl-replay:1.2.3');
    assert.equal(c.imagePullPolicy, 'Always');
    c = container(await render([...global, ...set('web.image.repository=', 'image.repository=mirror/chessrl', 'web.image.tag=2.0')]));
    assert.equal(c.image, 'registry.example.com/mirror/chessrl:2.0');
    c = container(await render([...global, ...set('global.imageRegistry=mirror.internal', `web.image.digest=sha256:${'a'.repeat(64)}`)]));
    assert.equal(c.image, `mirror.internal/chessrl-replay@sha256:${'a'.repeat(64)}`);
  });

  it('readiness /healthz and liveness /livez on the probe port, which is not the page\'s', async () => {
    const c = container(await render([]));
    assert.deepEqual(c.readinessProbe.httpGet, { path: '/healthz', port: 'probes' });
    assert.deepEqual(c.livenessProbe.httpGet, { path: '/livez', port: 'probes' });
    assert.equal(containerPort({ containers: [c] }, 'probes').containerPort, 9205);
    assert.equal(containerPort({ containers: [c] }, 'http').containerPort, 8080);
  });

  it('is hardened exactly as the other components: same security contexts, its own ServiceAccount without a token', async () => {
    const objs = await render([]);
    const spec = deployment(objs).spec.template.spec;
    const replay = workloadOf(objs, 'replay').spec.template.spec;
    assert.deepEqual(spec.securityContext, replay.securityContext);
    assert.deepEqual(container(objs).securityContext, mainContainer(workloadOf(objs, 'replay'), 'replay').securityContext);
    assert.equal(spec.securityContext.runAsUser, 10001);
    assert.equal(spec.securityContext.runAsNonRoot, true);
    assert.deepEqual(spec.securityContext.seccompProfile, { type: 'RuntimeDefault' });
    const sc = container(objs).securityContext;
    assert.equal(sc.readOnlyRootFilesystem, true);
    assert.equal(sc.allowPrivilegeEscalation, false);
    assert.deepEqual(sc.capabilities, { drop: ['ALL'] });
    assert.equal(spec.automountServiceAccountToken, false);
    assert.equal(spec.enableServiceLinks, false);
    assert.equal(spec.serviceAccountName, `${F}-web`);
    assert.equal(get(objs, 'ServiceAccount', `${F}-web`).automountServiceAccountToken, false);
    const res = container(objs).resources;
    assert.deepEqual(res, { requests: { cpu: '20m', memory: '32Mi' }, limits: { cpu: '200m', memory: '64Mi' } });
  });

  it('holds no Secret, no token and no config file: one volume, an emptyDir at /tmp', async () => {
    const objs = await render([]);
    const spec = deployment(objs).spec.template.spec;
    assert.deepEqual(spec.volumes, [{ name: 'tmp', emptyDir: { sizeLimit: '16Mi' } }]);
    const c = container(objs);
    assert.deepEqual(c.volumeMounts, [{ name: 'tmp', mountPath: '/tmp' }]);
    assert.equal(c.envFrom, undefined);
    for (const flag of ['token-file', 'tls-ca', 'tls-server-name', 'auth-dir', 'config']) {
      assert.deepEqual(flagValues(c, flag), [], `--${flag}`);
    }
    assert.ok(!find(objs, 'ConfigMap', `${F}-web`), 'a ConfigMap F-web: the viewer has no config file');
    assert.equal((deployment(objs).spec.template.metadata.annotations || {})['checksum/config'], undefined);
  });

  it('takes no part in replay\'s tokens or TLS: its pod is the same with tls.enabled', async () => {
    const plain = deployment(await render([])).spec.template;
    const tls = deployment(await render(TLS)).spec.template;
    assert.deepEqual(tls, plain);
  });

  it('prometheus.io annotations point at the page port, where /metrics is', async () => {
    const ann = deployment(await render([])).spec.template.metadata.annotations;
    assert.deepEqual(ann, { 'prometheus.io/scrape': 'true', 'prometheus.io/port': '8080', 'prometheus.io/path': '/metrics' });
    const off = deployment(await render(set('monitoring.podAnnotations=false'))).spec.template.metadata;
    assert.equal(off.annotations, undefined);
  });
});

describe('the viewer\'s Services', () => {
  it(`${F}-web: ClusterIP, port 80 (http) to the container's http port, selecting the viewer's pods alone`, async () => {
    const objs = await render([]);
    const svc = get(objs, 'Service', `${F}-web`);
    assert.equal(svc.spec.type, 'ClusterIP');
    assert.deepEqual(svc.spec.ports, [{ name: 'http', port: 80, targetPort: 'http', protocol: 'TCP', appProtocol: 'http' }]);
    const selected = podTemplates(objs).filter((p) => selectsMap(svc.spec.selector, p.podMeta.labels));
    assert.deepEqual(selected.map((p) => p.what), [`Deployment ${F}-web`]);
  });

  it('its type, port and annotations follow web.service', async () => {
    const svc = get(await render([...CI, ...set('web.service.type=NodePort', 'web.service.port=8081')]), 'Service', `${F}-web`);
    assert.equal(svc.spec.type, 'NodePort');
    assert.equal(svc.spec.ports[0].port, 8081);
    assert.deepEqual(svc.metadata.annotations, { 'example.com/owner': 'ml-platform' });
  });

  it(`${F}-selfplay-pods: headless, ready pods only, self-play's metrics port, selecting the self-play pods`, async () => {
    const objs = await render([]);
    const svc = get(objs, 'Service', `${F}-selfplay-pods`);
    assert.equal(svc.spec.clusterIP, 'None');
    assert.equal(svc.spec.publishNotReadyAddresses, false);
    assert.deepEqual(svc.spec.ports, [{ name: 'metrics', port: 9101, targetPort: 'metrics', protocol: 'TCP', appProtocol: 'http' }]);
    assert.equal(component(svc), 'selfplay');
    const selected = podTemplates(objs).filter((p) => selectsMap(svc.spec.selector, p.podMeta.labels));
    assert.deepEqual(selected.map((p) => p.what), [`Deployment ${F}-selfplay`]);
  });
});

describe('the viewer\'s Ingress', () => {
  it('none by default', async () => {
    assert.deepEqual(ofKind(await render([]), 'Ingress').map(nameOf), []);
  });

  it('with web.ingress (helm/ci/values-web.yaml): class, annotations, TLS, one rule per host, paths default to / (Prefix)', async () => {
    const objs = await render(CI);
    const ing = get(objs, 'Ingress', `${F}-web`);
    assert.equal(ing.apiVersion, 'networking.k8s.io/v1');
    assert.equal(ing.spec.ingressClassName, 'nginx');
    assert.deepEqual(ing.metadata.annotations, { 'cert-manager.io/cluster-issuer': 'letsencrypt' });
    assert.deepEqual(ing.spec.tls, [{ secretName: 'chess-example-com-tls', hosts: ['chess.example.com'] }]);
    const backend = { service: { name: `${F}-web`, port: { name: 'http' } } };
    assert.deepEqual(ing.spec.rules, [
      { host: 'chess.example.com', http: { paths: [{ path: '/', pathType: 'Prefix', backend }] } },
      { host: 'lab.example.com', http: { paths: [{ path: '/chess', pathType: 'ImplementationSpecific', backend }] } },
    ]);
    assert.ok(get(objs, 'Service', `${F}-web`).spec.ports.some((p) => p.name === 'http'), 'the backend port is no port of the Service');
    assert.equal(component(ing), 'web');
  });

  for (const kubeVersion of KUBE_VERSIONS) {
    it(`is a valid networking.k8s.io/v1 Ingress (Kubernetes ${kubeVersion})`, async () => {
      const objs = await render(CI, { kubeVersion });
      assert.deepEqual(validateObject(get(objs, 'Ingress', `${F}-web`)), []);
    });
  }
});

describe('web.enabled=false', () => {
  const ofViewer = (objs) => objs.filter((o) => component(o) === 'web' || /-(web|selfplay-pods)$/.test(nameOf(o)));

  it('renders nothing of the viewer, not even with web.ingress.enabled', async () => {
    for (const args of [OFF, [...OFF, ...set('web.ingress.enabled=true', 'web.ingress.hosts[0].host=chess.example.com')]]) {
      const objs = await render(args);
      assert.deepEqual(ofViewer(objs).map((o) => `${o.kind}/${nameOf(o)}`), []);
      const probe = get(objs, 'Pod', `${F}-test`).spec.containers[0];
      assert.ok(!flagValues(probe, 'metrics').some((u) => u.includes(`${F}-web`)), 'helm test still probes the viewer');
    }
    const withApi = await render(OFF, WITH_API);
    assert.deepEqual(ofViewer(withApi).map((o) => `${o.kind}/${nameOf(o)}`), []);
  });

  it('and leaves the rest of the chart as it is', async () => {
    const others = (objs) => objs.filter((o) => !/-(web|selfplay-pods)$/.test(nameOf(o)) && o.kind !== 'Secret' && o.kind !== 'Pod');
    const on = others(await render([]));
    const off = others(await render(OFF));
    assert.deepEqual(off, on);
  });
});

describe('NetworkPolicy', () => {
  const modes = [['without networkPolicy.metrics selectors', []], ['with networkPolicy.metrics.namespaceSelector', SCRAPERS]];

  for (const [mode, args] of modes) {
    it(`the viewer reaches DNS and the self-play and evaluator metrics ports, nothing else (${mode})`, async () => {
      const n = network(await render(args), NS);
      const web = n.pod('web');
      const wrong = [];
      for (const dst of n.pods) {
        for (const { c } of containersOf(dst.podSpec)) {
          for (const p of c.ports || []) {
            const comp = dst.labels['app.kubernetes.io/component'];
            const want = (comp === 'selfplay' && p.containerPort === 9101) || (comp === 'evaluator' && p.containerPort === 9104);
            const v = n.allowed(web, dst, p.containerPort);
            if (v.ok !== want) wrong.push(`web -> ${dst.what}:${p.containerPort}: ${v.ok ? 'allowed' : 'refused'} (${v.why})`);
          }
        }
      }
      assert.deepEqual(wrong, []);
      for (const proto of ['UDP', 'TCP']) assert.ok(n.egressAnywhere(web, 53, proto).ok, `DNS over ${proto}`);
      assert.ok(!n.egressAnywhere(web, 443, 'TCP', 'default', { app: 'anything' }).ok, 'web -> anywhere:443');
      assert.ok(!n.egressAnywhere(web, 9101, 'TCP', 'elsewhere', n.pod('selfplay').labels).ok,
        'web -> a self-play pod of another namespace');
    });

    it(`self-play and the evaluator admit the viewer on their metrics ports (${mode})`, async () => {
      const n = network(await render(args), NS);
      const web = n.pod('web');
      for (const [comp, port] of [['selfplay', 9101], ['evaluator', 9104]]) {
        const v = n.ingressAllowed(web, n.pod(comp), port);
        assert.ok(v.ok, `${comp}:${port} refuses the viewer: ${v.why}`);
      }
      if (args.length) {
        // Admitted as one of this release's pods: a pod without the release's labels is not.
        for (const [k, v] of Object.entries(RELEASE_LABELS)) assert.equal(web.labels[k], v, `the viewer's pods lack ${k}`);
        const stranger = n.outsider({ app: 'web' }, NS);
        assert.ok(!n.ingressAllowed(stranger, n.pod('selfplay'), 9101).ok, 'the selectors admit any pod of the namespace');
      }
    });
  }

  it('the page is open to anyone by default; the probe port to no pod and no outsider', async () => {
    const n = network(await render([]), NS);
    const web = n.pod('web');
    const browser = n.outsider({ app: 'ingress-nginx' }, 'ingress-nginx');
    assert.ok(n.allowed(browser, web, 8080).ok, 'the page is closed');
    const open = [...n.pods.filter((p) => p !== web), browser].filter((src) => n.allowed(src, web, 9205).ok);
    assert.deepEqual(open.map((p) => p.what), [], 'the probe port is open');
  });

  it('networkPolicy.web.from narrows the page to its peers, the named scrapers and this release\'s pods', async () => {
    const n = network(await render(CI), NS);
    const web = n.pod('web');
    const verdict = (labels, ns) => n.ingressAllowed(n.outsider(labels, ns), web, 8080).ok;
    assert.ok(verdict({ app: 'controller' }, 'ingress-nginx'), 'the ingress controller\'s namespace (networkPolicy.web.from)');
    assert.ok(verdict({ app: 'prometheus' }, 'monitoring'), 'the scrapers of networkPolicy.metrics');
    assert.ok(n.ingressAllowed(n.pod('test'), web, 8080).ok, 'the helm test pod');
    assert.ok(!verdict({ app: 'curious' }, 'default'), 'a pod of another namespace');
    assert.ok(!verdict({ app: 'curious' }, NS), 'a pod of the namespace without the release\'s labels');
  });

  it('networkPolicy.extraIngress.web and extraEgress.web add rules', async () => {
    const n = network(await render(['--set-json', 'networkPolicy.extraEgress.web=[{"ports":[{"port":443,"protocol":"TCP"}]}]',
      '--set-json', 'networkPolicy.extraIngress.web=[{"ports":[{"port":9205,"protocol":"TCP"}]}]']), NS);
    assert.ok(n.egressAnywhere(n.pod('web'), 443, 'TCP').ok);
    assert.ok(n.ingressAllowed(n.outsider({}, 'x'), n.pod('web'), 9205).ok);
  });

  it('without the evaluator, no egress rule names it', async () => {
    const pol = get(await render(NO_EVALUATOR), 'NetworkPolicy', `${F}-web`);
    const named = pol.spec.egress.flatMap((r) => (r.to || []).map((p) => ((p.podSelector || {}).matchLabels || {})['app.kubernetes.io/component']));
    assert.deepEqual(named, ['selfplay']);
  });
});

describe('monitoring', () => {
  it(`with ${MONITORING_API}: PodMonitor ${F}-web scrapes /metrics on the page port`, async () => {
    const objs = await render([], WITH_API);
    const pm = get(objs, 'PodMonitor', `${F}-web`);
    const w = deployment(objs);
    assert.ok(selects(pm.spec.selector, w.spec.template.metadata.labels), 'it does not select the viewer\'s pods');
    const [ep] = pm.spec.podMetricsEndpoints;
    assert.equal(ep.port, 'http');
    assert.equal(ep.path, '/metrics');
    assert.equal(containerPort(w.spec.template.spec, ep.port).containerPort, 8080);
    assert.deepEqual(validateObject(pm), []);
  });
});

describe('helm test', () => {
  it(`scrapes the viewer's /metrics through its Service (${F}-web:80) while it has pods`, async () => {
    const probe = (objs) => get(objs, 'Pod', `${F}-test`).spec.containers[0];
    const viewer = (objs) => flagValues(probe(objs), 'metrics').filter((u) => u.includes(`${F}-web`));
    assert.deepEqual(viewer(await render([])), [`http://${F}-web:80/metrics`]);
    assert.deepEqual(viewer(await render(set('web.service.port=8081'))), [`http://${F}-web:8081/metrics`]);
    assert.deepEqual(viewer(await render(set('web.replicas=0'))), []);
    assert.equal(deployment(await render(set('web.replicas=0'))).spec.replicas, 0);
  });
});

describe('values.schema.json refuses nonsense of web.*, naming the key', () => {
  const SCHEMA_ERROR = /values don't meet the specifications of the schema/;
  const HOST = 'web.ingress.hosts[0].host=chess.example.com';
  const cases = [
    { args: set('web.ports.http=0'), names: /web\.ports\.http: Must be greater than or equal to 1/ },
    { args: set('web.ports.probes=65536'), names: /web\.ports\.probes: Must be less than or equal to 65535/ },
    { args: set('web.replicas=-1'), names: /web\.replicas: Must be greater than or equal to 0/ },
    { args: set('web.replicas=one'), names: /web\.replicas/ },
    { args: set('web.pollInterval=2'), names: /web: Additional property pollInterval is not allowed/ },
    { args: set('web.service.type=ExternalName'), names: /web\.service\.type/ },
    { args: set('web.service.port=80000'), names: /web\.service\.port/ },
    { args: set('web.ingress.hosts[0].host=Chess_Lab'), names: /web\.ingress\.hosts\.0\.host: Does not match pattern/ },
    { args: set('web.ingress.hosts[0].hots=chess.example.com'), names: /web\.ingress\.hosts\.0: (host is required|Additional property hots)/ },
    { args: set(HOST, 'web.ingress.hosts[0].paths[0].path=/', 'web.ingress.hosts[0].paths[0].pathType=Regex'),
      names: /web\.ingress\.hosts\.0\.paths\.0\.pathType/ },
    { args: set(HOST, 'web.ingress.hosts[0].paths[0].path=chess'), names: /web\.ingress\.hosts\.0\.paths\.0\.path: Does not match pattern/ },
    { args: set('web.ingress.tls[0].secret=chess-tls'), names: /web\.ingress\.tls\.0: Additional property secret is not allowed/ },
    { args: set('networkPolicy.web.form=x'), names: /networkPolicy\.web: Additional property form is not allowed/ },
  ];
  for (const c of cases) {
    it(`refuses ${c.args.filter((a) => a !== '--set').join(' ')}`, async () => {
      const r = await helm(['template', 'chess-rl', chartDir, '--kube-version', KUBE_VERSION, ...c.args]);
      assert.notEqual(r.code, 0, `helm accepted ${c.args.join(' ')}`);
      assert.match(r.stderr, SCHEMA_ERROR, `refused, but not by the schema:\n${r.stderr}`);
      assert.match(r.stderr, c.names, `the message does not name the key:\n${r.stderr}`);
    });
  }
});

// ---------------------------------------------------------------- chessrl-web --help
function webBin() {
  const bin = process.env.CHESSRL_WEB_BIN || (process.env.CHESSRL_BIN &&
    path.resolve(path.dirname(process.env.CHESSRL_BIN), '..', '..', 'services', 'web', 'chessrl-web'));
  assert.ok(bin, 'neither CHESSRL_WEB_BIN nor CHESSRL_BIN is set: CMake sets them (build chessrl-web)');
  assert.ok(fs.existsSync(bin), `${bin} does not exist: build it (cmake --build build/dev --target chessrl-web)`);
  return bin;
}

describe('chessrl-web --help', () => {
  it('lists every flag the chart passes, with the ports and addresses changed and without the evaluator too', async () => {
    const bin = webBin();
    const help = await new Promise((resolve) => {
      execFile(bin, ['--help'], { env: { PATH: process.env.PATH }, timeout: 30000 }, (err, stdout, stderr) => {
        resolve({ code: err ? (typeof err.code === 'number' ? err.code : -1) : 0, stdout, stderr });
      });
    });
    assert.equal(help.code, 0, `chessrl-web --help failed:\n${help.stderr}`);
    // CLI11 lists each option at the start of a line: "  --name TYPE ..." or "  -h,--help".
    const flags = new Set();
    for (const line of help.stdout.split('\n')) {
      const m = /^\s*(?:-[A-Za-z],)?--([a-z0-9][a-z0-9-]*)/.exec(line);
      if (m) flags.add(m[1]);
    }
    assert.ok(flags.has('listen'), `no options found in --help:\n${help.stdout}`);
    for (const args of [[], PORTS, NO_EVALUATOR]) {
      const c = container(await render(args));
      const passed = c.args.filter((a) => String(a).startsWith('--')).map((a) => String(a).slice(2).split('=')[0]);
      const unknown = passed.filter((f) => !flags.has(f));
      assert.deepEqual(unknown, [], `flags chessrl-web does not have: ${unknown.join(', ')}`);
    }
  });
});
