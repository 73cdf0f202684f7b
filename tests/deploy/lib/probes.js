'use strict';
// The kubelet's probes: httpGet and tcpSocket from the host to the pod's address on the
// test network, exec inside the container, grpc (grpc.health.v1.Health/Check) with
// grpc-js. Each resolves {ok, detail} and never rejects.
const http = require('node:http');
const net = require('node:net');
const { podman } = require('./podman');
const tools = require('../../helm/lib/tools');

const grpc = tools.requireTool('@grpc/grpc-js');

function portNumber(pod, port) {
  if (typeof port === 'number') return port;
  if (/^[0-9]+$/.test(String(port))) return Number(port);
  const p = (pod.container.ports || []).find((x) => x.name === port);
  if (!p) throw new Error(`pod ${pod.name}: probe port ${port} is no named port of its container`);
  return p.containerPort;
}

function httpGet(host, port, urlPath, timeoutMs) {
  return new Promise((resolve) => {
    const req = http.get({ host, port, path: urlPath, timeout: timeoutMs }, (res) => {
      res.resume();
      const ok = res.statusCode >= 200 && res.statusCode < 400;
      resolve({ ok, detail: `GET ${urlPath}: HTTP ${res.statusCode}` });
    });
    req.on('timeout', () => { req.destroy(); resolve({ ok: false, detail: `GET ${urlPath}: timed out` }); });
    req.on('error', (e) => resolve({ ok: false, detail: `GET ${urlPath}: ${e.code || e.message}` }));
  });
}

function tcp(host, port, timeoutMs) {
  return new Promise((resolve) => {
    const s = net.connect({ host, port, timeout: timeoutMs }, () => { s.destroy(); resolve({ ok: true, detail: 'connected' }); });
    s.on('timeout', () => { s.destroy(); resolve({ ok: false, detail: 'timed out' }); });
    s.on('error', (e) => resolve({ ok: false, detail: e.code || e.message }));
  });
}

// grpc.health.v1.HealthCheckRequest {string service = 1} and the reply's
// {ServingStatus status = 1}, encoded by hand: two fields, no .proto to load.
function encodeRequest(service) {
  const s = Buffer.from(service || '', 'utf8');
  return s.length ? Buffer.concat([Buffer.from([0x0a, s.length]), s]) : Buffer.alloc(0);
}
function decodeStatus(buf) {
  for (let i = 0; i + 1 < buf.length; i += 2) if (buf[i] === 0x08) return buf[i + 1];
  return 0; // UNKNOWN (proto3 omits a zero field)
}
const STATUS = ['UNKNOWN', 'SERVING', 'NOT_SERVING', 'SERVICE_UNKNOWN'];

function grpcHealth(host, port, service, timeoutMs) {
  return new Promise((resolve) => {
    const client = new grpc.Client(`${host}:${port}`, grpc.credentials.createInsecure());
    client.makeUnaryRequest('/grpc.health.v1.Health/Check', encodeRequest, (b) => b, service || '',
      { deadline: new Date(Date.now() + timeoutMs) }, (err, reply) => {
        client.close();
        if (err) return resolve({ ok: false, detail: `grpc health: ${err.details || err.message}` });
        const status = decodeStatus(reply);
        resolve({ ok: status === 1, detail: `grpc health: ${STATUS[status] || status}` });
      });
  });
}

// One unary call with raw request bytes (an empty Buffer is any message with every field
// unset) and optional `authorization` metadata: resolves {code, details}, 0 = OK; never
// rejects. The deployment test's auth checks use it.
function grpcUnary(host, port, method, { token, request = Buffer.alloc(0), timeoutMs = 5000 } = {}) {
  return new Promise((resolve) => {
    const client = new grpc.Client(`${host}:${port}`, grpc.credentials.createInsecure());
    const md = new grpc.Metadata();
    if (token !== undefined) md.set('authorization', `Bearer ${token}`);
    client.makeUnaryRequest(method, (b) => b, (b) => b, request, md,
      { deadline: new Date(Date.now() + timeoutMs) }, (err) => {
        client.close();
        resolve(err ? { code: err.code, details: err.details || err.message } : { code: 0, details: 'OK' });
      });
  });
}

async function run(cluster, pod, probe) {
  const timeoutMs = (probe.timeoutSeconds || 1) * 1000;
  try {
    if (probe.exec) {
      const r = await podman(['exec', pod.ctr, ...probe.exec.command], { timeoutMs });
      return { ok: r.code === 0, detail: `exec ${probe.exec.command.join(' ')}: exit ${r.code}` };
    }
    const ip = cluster.podIP(pod);
    if (!ip) return { ok: false, detail: 'no address yet' };
    if (probe.httpGet) return await httpGet(ip, portNumber(pod, probe.httpGet.port), probe.httpGet.path || '/', timeoutMs);
    if (probe.tcpSocket) return await tcp(ip, portNumber(pod, probe.tcpSocket.port), timeoutMs);
    if (probe.grpc) return await grpcHealth(ip, probe.grpc.port, probe.grpc.service, timeoutMs);
    return { ok: false, detail: `unsupported probe ${JSON.stringify(probe)}` };
  } catch (e) {
    return { ok: false, detail: e.message };
  }
}

module.exports = { run, httpGet, grpcHealth, grpcUnary };
