'use strict';
// A NetworkPolicy evaluator (networking.k8s.io/v1 semantics) over rendered objects, to ask
// whether one pod may open a connection to another pod's port:
//   const net = network(objs, 'chess-rl');
//   net.allowed(net.pod('replay'), net.pod('redis'), 6379)   // -> {ok, why}
// A pod is a pod template of the chart (labels, namespace, container ports), or an outside
// pod made with net.outsider(labels, namespace). Egress of the source and ingress of the
// destination must both allow it; a pod no policy of that direction selects is open.
// ipBlock peers do not match pods (their IPs are unknown here) unless the block is 0.0.0.0/0.
const { podTemplates, selects } = require('./chart');

const nsLabels = (ns) => ({ 'kubernetes.io/metadata.name': ns });

function network(objs, namespace) {
  const policies = objs.filter((o) => o.kind === 'NetworkPolicy')
    .map((p) => ({ p, ns: (p.metadata && p.metadata.namespace) || namespace }));
  const pods = podTemplates(objs).map((t) => ({
    what: t.what,
    owner: t.owner,
    labels: t.podMeta.labels || {},
    ns: namespace,
    podSpec: t.podSpec,
  }));

  const component = (pod) => pod.labels['app.kubernetes.io/component'];
  function pod(comp) {
    const found = pods.filter((p) => component(p) === comp);
    if (found.length !== 1) {
      throw new Error(`${found.length} pod templates of component ${comp}: ${pods.map((p) => p.what).join(', ')}`);
    }
    return found[0];
  }
  const outsider = (labels, ns) => ({ what: `a pod ${JSON.stringify(labels)} in namespace ${ns}`, labels, ns, podSpec: {} });

  const selectingEntries = (target, type) => policies.filter(({ p, ns }) =>
    ns === target.ns && selects(p.spec.podSelector, target.labels) &&
    (p.spec.policyTypes || (type === 'Ingress' ? ['Ingress'] : (p.spec.egress ? ['Egress'] : []))).includes(type));

  function peerMatches(peer, other, policyNs) {
    if (peer.ipBlock) return peer.ipBlock.cidr === '0.0.0.0/0' && !(peer.ipBlock.except || []).length;
    const nsOk = peer.namespaceSelector ? selects(peer.namespaceSelector, nsLabels(other.ns)) : other.ns === policyNs;
    const podOk = peer.podSelector ? selects(peer.podSelector, other.labels) : true;
    return nsOk && podOk;
  }
  // Does a rule's port list admit this destination port (number or the destination's port name)?
  function portMatches(ports, dst, port, protocol) {
    if (!ports || !ports.length) return true;
    const named = (name) => (dst.podSpec.containers || []).some((c) =>
      (c.ports || []).some((cp) => cp.name === name && cp.containerPort === port));
    return ports.some((p) => (p.protocol || 'TCP') === protocol && (
      p.port === undefined || p.port === port || (typeof p.port === 'string' && named(p.port)) ||
      (typeof p.port === 'number' && p.endPort !== undefined && port >= p.port && port <= p.endPort)));
  }
  function direction(type, self, other, dst, port, protocol) {
    const pols = selectingEntries(self, type);
    if (!pols.length) return { ok: true, why: `no ${type} policy selects ${self.what}` };
    for (const { p, ns } of pols) {
      const rules = (type === 'Ingress' ? p.spec.ingress : p.spec.egress) || [];
      for (const rule of rules) {
        const peers = type === 'Ingress' ? rule.from : rule.to;
        const peerOk = !peers || !peers.length || peers.some((peer) => peerMatches(peer, other, ns));
        if (peerOk && portMatches(rule.ports, dst, port, protocol)) {
          return { ok: true, why: `${type} allowed by NetworkPolicy ${p.metadata.name}` };
        }
      }
    }
    return { ok: false, why: `no ${type} rule of ${pols.map(({ p }) => p.metadata.name).join(', ')} admits ` +
                             `${type === 'Ingress' ? 'from' : 'to'} ${other.what} port ${port}/${protocol}` };
  }
  // May src connect to dst:port? {ok, why}
  function allowed(src, dst, port, protocol = 'TCP') {
    const eg = direction('Egress', src, dst, dst, port, protocol);
    if (!eg.ok) return eg;
    const ing = direction('Ingress', dst, src, dst, port, protocol);
    return ing.ok ? { ok: true, why: `${eg.why}; ${ing.why}` } : ing;
  }
  // Ingress alone (what dst's policies admit), whatever src's egress says.
  const ingressAllowed = (src, dst, port, protocol = 'TCP') => direction('Ingress', dst, src, dst, port, protocol);
  // May src send to an arbitrary outside address on port (e.g. DNS in kube-system)?
  function egressAnywhere(src, port, protocol, dstNs = 'kube-system', dstLabels = { 'k8s-app': 'kube-dns' }) {
    const dst = outsider(dstLabels, dstNs);
    return direction('Egress', src, dst, dst, port, protocol);
  }

  const selecting = (target, type) => selectingEntries(target, type).map(({ p }) => p);

  return { policies: policies.map(({ p }) => p), pods, pod, outsider, allowed, ingressAllowed, egressAnywhere, selecting };
}

module.exports = { network };
