'use strict';
// The validator of k8s-schema.test.js catches what it must: unknown fields anywhere (named
// by their path), schema errors, and objects whose apiVersion/kind it has no schema for.
const { describe, it } = require('node:test');
const assert = require('node:assert/strict');
const { validateObject } = require('./lib/k8s-validate');

function deployment() {
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: 'x', labels: { 'app.kubernetes.io/name': 'x' }, annotations: { 'checksum/config': 'abc' } },
    spec: {
      replicas: 2,
      selector: { matchLabels: { 'app.kubernetes.io/name': 'x' } },
      strategy: { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: '25%', maxSurge: 1 } },
      template: {
        metadata: { labels: { 'app.kubernetes.io/name': 'x' } },
        spec: {
          securityContext: { runAsNonRoot: true, seccompProfile: { type: 'RuntimeDefault' } },
          containers: [{
            name: 'c',
            image: 'chessrl:0.1.0',
            imagePullPolicy: 'IfNotPresent',
            ports: [{ name: 'metrics', containerPort: 9101 }],
            env: [{ name: 'A', valueFrom: { secretKeyRef: { name: 's', key: 'k' } } }],
            resources: { requests: { cpu: '100m', memory: '64Mi' }, limits: { cpu: 1, memory: '1Gi' } },
            readinessProbe: { httpGet: { path: '/healthz', port: 'metrics' } },
            livenessProbe: { grpc: { port: 50051 } },
            securityContext: { capabilities: { drop: ['ALL'] } },
          }],
          volumes: [{ name: 'tmp', emptyDir: {} }, { name: 'cfg', configMap: { name: 'cm' } }],
        },
      },
    },
  };
}

describe('the offline Kubernetes validator', () => {
  it('accepts a valid Deployment (maps, int-or-string, quantities, empty objects)', () => {
    assert.deepEqual(validateObject(deployment()), []);
  });

  it('reports a misspelt field deep inside, naming its path', () => {
    const d = deployment();
    d.spec.template.spec.containers[0].imagePullPolicyy = 'Always';
    assert.deepEqual(validateObject(d),
      ['Deployment x: unknown field spec.template.spec.containers[0].imagePullPolicyy']);
  });

  it('reports unknown fields at the top, in metadata, in $ref\'d types and in array items', () => {
    const d = deployment();
    d.extra = 1;
    d.metadata.label = {};
    d.spec.selector.matchLabel = {};
    d.spec.template.spec.volumes[1].configMap.nam = 'cm';
    d.spec.template.spec.containers[0].ports[0].containerport = 1;
    assert.deepEqual(validateObject(d).sort(), [
      'Deployment x: unknown field extra',
      'Deployment x: unknown field metadata.label',
      'Deployment x: unknown field spec.selector.matchLabel',
      'Deployment x: unknown field spec.template.spec.containers[0].ports[0].containerport',
      'Deployment x: unknown field spec.template.spec.volumes[1].configMap.nam',
    ]);
  });

  it('does not flag any key of a map (labels, annotations, ConfigMap data, resources)', () => {
    const cm = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c', labels: { anything: 'x' } },
                 data: { 'config.yaml': 'a: 1', 'weird key': 'v' } };
    assert.deepEqual(validateObject(cm), []);
  });

  it('leaves free-form objects (no declared properties) alone, and says where they are', () => {
    const cm = { apiVersion: 'v1', kind: 'ConfigMap', data: {},
                 metadata: { name: 'c', managedFields: [{ manager: 'helm', fieldsV1: { 'f:data': { '.': {} } } }] } };
    const details = {};
    assert.deepEqual(validateObject(cm, details), []);
    assert.deepEqual(details.freeForm, ['metadata.managedFields[0].fieldsV1']);
  });

  it('reports schema errors (types, enums, required fields)', () => {
    const d = deployment();
    d.spec.replicas = 'two';
    delete d.spec.template.spec.containers[0].name;
    const problems = validateObject(d);
    assert.equal(problems.length, 1, problems.join('\n'));
    assert.match(problems[0], /^Deployment x: schema: /);
    assert.match(problems[0], /spec\/replicas must be integer/);
    assert.match(problems[0], /containers\/0 must have required property '?name'?/);
  });

  it('reports an object of an unknown kind or apiVersion as an error, not a pass', () => {
    for (const [apiVersion, kind] of [['apps/v1', 'Deploymnet'], ['apps/v2', 'Deployment'],
      ['example.com/v1', 'Widget'], ['v1', 'DeploymentSpec'], [undefined, 'Pod'], ['v1', undefined]]) {
      const problems = validateObject({ apiVersion, kind, metadata: { name: 'x' } });
      assert.equal(problems.length, 1, `${apiVersion} ${kind}`);
      assert.match(problems[0], /no schema for apiVersion/);
    }
  });

  it('validates Volcano PodGroups against the local schema (lib/volcano-podgroup.schema.json), unknown fields included', () => {
    const pg = () => ({
      apiVersion: 'scheduling.volcano.sh/v1beta1', kind: 'PodGroup',
      metadata: { name: 'g', namespace: 'n', labels: { a: 'b' } },
      spec: { minMember: 4, queue: 'training', priorityClassName: 'high',
              minResources: { cpu: '500m', memory: '1Gi', 'nvidia.com/gpu': 4 } },
    });
    assert.deepEqual(validateObject(pg()), []);
    const bad = pg();
    bad.spec.minMembers = 4;
    bad.spec.queue = 7;
    bad.spec.minResources.cpu = 'lots';
    bad.metadata.label = {};
    bad.status = { phase: 'Running' };
    const problems = validateObject(bad);
    for (const want of ['PodGroup g: unknown field spec.minMembers', 'PodGroup g: unknown field status',
      'PodGroup g: unknown field metadata.label']) assert.ok(problems.includes(want), `${want} not in:\n${problems.join('\n')}`);
    assert.ok(problems.some((p) => /^PodGroup g: schema: spec\.queue must be string/.test(p)), problems.join('\n'));
    assert.ok(problems.some((p) => /^PodGroup g: schema: spec\.minResources\.cpu /.test(p)), problems.join('\n'));
    const tooBig = pg();
    tooBig.spec.minMember = 2 ** 31;
    assert.match(validateObject(tooBig).join('\n'), /spec\.minMember must be <= 2147483647/);
    assert.match(validateObject({ ...pg(), apiVersion: 'scheduling.volcano.sh/v1' }).join('\n'), /no schema for apiVersion/);
  });

  it('validates Prometheus Operator objects, unknown fields included', () => {
    const pm = {
      apiVersion: 'monitoring.coreos.com/v1', kind: 'PodMonitor', metadata: { name: 'p' },
      spec: { selector: { matchLabels: { a: 'b' } }, podMetricsEndpoints: [{ port: 'metrics', path: '/metrics' }] },
    };
    assert.deepEqual(validateObject(pm), []);
    pm.spec.podMetricsEndpoints[0].intervall = '15s';
    assert.deepEqual(validateObject(pm), ['PodMonitor p: unknown field spec.podMetricsEndpoints[0].intervall']);
    const rule = { apiVersion: 'monitoring.coreos.com/v1', kind: 'PrometheusRule', metadata: { name: 'r' },
                   spec: { groups: [{ name: 'g', rules: [{ alert: 'A', expr: 'up == 0', for: '5m',
                                                           labels: { severity: 'warning' } }] }] } };
    assert.deepEqual(validateObject(rule), []);
    const sm = { apiVersion: 'monitoring.coreos.com/v1', kind: 'ServiceMonitor', metadata: { name: 's' },
                 spec: { selector: {}, endpoints: [{ port: 'metrics', interval: '30s' }] } };
    assert.deepEqual(validateObject(sm), []);
  });
});
