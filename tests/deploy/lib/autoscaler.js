'use strict';
// KEDA and the HorizontalPodAutoscaler controller, as the deployment test runs them for
// the chart's ScaledObject. KEDA runs the ScaledObject's Prometheus query every
// pollingInterval and serves the value to an HPA it creates; the HPA controller turns
// the value into replicas. Here one loop does both, every pollingInterval:
//
//   value     the query's one element (empty: 0 with ignoreNullValues, else an error;
//             several elements: an error, as KEDA's prometheus scaler answers)
//   proposal  Kubernetes' replica calculator: metricType Value, usage ratio
//             r = value / threshold; |r - 1| <= 0.1 (the controller's default tolerance)
//             keeps the current replicas, else ceil(r × ready pods). AverageValue:
//             r = value / (threshold × current), else ceil(value / threshold).
//   desired   the controller's behavior: the proposal stabilized over the scale-up and
//             scale-down windows (the lowest proposal of the up window bounds a scale up,
//             the highest of the down window a scale down), then the scaling policies'
//             rate limits over their periods (selectPolicy Max, Min or Disabled), then
//             minReplicaCount and maxReplicaCount. With no behavior given, Kubernetes'
//             defaults: up 0 s window, +4 pods or +100% per 15 s; down 300 s window,
//             -100% per 15 s.
//
// What is not emulated: KEDA's activation (scaling to and from zero, cooldownPeriod and
// activationThreshold; the chart's floor is at least one pod), its fallback on scaler
// errors, the metrics cache, and the HPA's own 15 s sync period (the decision is made
// when KEDA polls); missing-pod and not-yet-ready-pod corrections of the replica
// calculator (the harness has no per-pod metrics).
const TOLERANCE = 0.1;

const DEFAULT_BEHAVIOR = {
  scaleUp: { stabilizationWindowSeconds: 0, selectPolicy: 'Max',
    policies: [{ type: 'Pods', value: 4, periodSeconds: 15 }, { type: 'Percent', value: 100, periodSeconds: 15 }] },
  scaleDown: { stabilizationWindowSeconds: 300, selectPolicy: 'Max',
    policies: [{ type: 'Percent', value: 100, periodSeconds: 15 }] },
};

// Kubernetes' replica calculator for one external metric.
function proposal({ value, threshold, metricType = 'AverageValue', current, ready = current, tolerance = TOLERANCE }) {
  if (!(threshold > 0)) throw new Error(`threshold ${threshold} is not positive`);
  if (!Number.isFinite(value)) throw new Error(`metric value ${value} is not a finite number`);
  if (metricType === 'Value') {
    const ratio = value / threshold;
    if (Math.abs(ratio - 1) <= tolerance) return { ratio, replicas: current };
    return { ratio, replicas: Math.ceil(ratio * ready) };
  }
  if (metricType === 'AverageValue') {
    const ratio = value / (threshold * Math.max(current, 1));
    if (current > 0 && Math.abs(ratio - 1) <= tolerance) return { ratio, replicas: current };
    return { ratio, replicas: Math.ceil(value / threshold) };
  }
  throw new Error(`metricType ${metricType}: KEDA's prometheus trigger takes Value or AverageValue`);
}

// A ScaledObject's scaling settings, with KEDA's and Kubernetes' defaults.
function settingsOf(so) {
  const spec = so.spec || {};
  const triggers = spec.triggers || [];
  if (triggers.length !== 1 || triggers[0].type !== 'prometheus') {
    throw new Error(`ScaledObject ${so.metadata.name}: the harness runs one prometheus trigger`);
  }
  const t = triggers[0];
  const behavior = ((spec.advanced || {}).horizontalPodAutoscalerConfig || {}).behavior || {};
  const side = (name) => {
    const b = behavior[name] || {};
    const d = DEFAULT_BEHAVIOR[name];
    return {
      stabilizationWindowSeconds: b.stabilizationWindowSeconds ?? d.stabilizationWindowSeconds,
      selectPolicy: b.selectPolicy ?? d.selectPolicy,
      policies: b.policies ?? d.policies,
    };
  };
  return {
    target: spec.scaleTargetRef,
    min: spec.minReplicaCount ?? 0,
    max: spec.maxReplicaCount ?? 100,
    pollingInterval: spec.pollingInterval ?? 30,
    query: t.metadata.query,
    threshold: Number(t.metadata.threshold),
    metricType: t.metricType || 'AverageValue',
    ignoreNullValues: String(t.metadata.ignoreNullValues ?? 'true') === 'true',
    scaleUp: side('scaleUp'),
    scaleDown: side('scaleDown'),
  };
}

class Autoscaler {
  constructor(settings) {
    this.s = settings;
    this.recommendations = []; // {at, replicas}: proposals before stabilization
    this.events = []; // {at, change}: scale events, for the policies' periods
  }

  // The value KEDA would hand the HPA from the query's result ([{metric, value}]).
  metricValue(result) {
    if (result.length === 0) {
      if (this.s.ignoreNullValues) return 0;
      throw new Error('the query returned nothing (ignoreNullValues false)');
    }
    if (result.length > 1) throw new Error(`the query returned ${result.length} elements; KEDA takes one`);
    return result[0].value;
  }

  // Replicas the policies allow from `current` at `at` (seconds), one direction.
  limit(side, current, at, up) {
    if (side.selectPolicy === 'Disabled') return current;
    const limits = side.policies.map((p) => {
      const changed = this.events.filter((e) => e.at > at - p.periodSeconds).reduce((a, e) => a + e.change, 0);
      const start = current - changed; // replicas at the start of the period
      if (up) return p.type === 'Pods' ? start + p.value : Math.ceil(start * (1 + p.value / 100));
      return p.type === 'Pods' ? start - p.value : Math.floor(start * (1 - p.value / 100));
    });
    const most = up ? Math.max(...limits) : Math.min(...limits);
    const least = up ? Math.min(...limits) : Math.max(...limits);
    return side.selectPolicy === 'Min' ? least : most;
  }

  // One decision at time `at` (seconds): {value, ratio, proposal, desired}.
  decide({ value, current, ready = current, at }) {
    const p = proposal({ value, threshold: this.s.threshold, metricType: this.s.metricType, current, ready });
    this.recommendations.push({ at, replicas: p.replicas });
    const keep = Math.max(this.s.scaleUp.stabilizationWindowSeconds, this.s.scaleDown.stabilizationWindowSeconds);
    this.recommendations = this.recommendations.filter((r) => r.at > at - keep - 1);
    let up = p.replicas;
    let down = p.replicas;
    for (const r of this.recommendations) {
      if (r.at > at - this.s.scaleUp.stabilizationWindowSeconds) up = Math.min(up, r.replicas);
      if (r.at > at - this.s.scaleDown.stabilizationWindowSeconds) down = Math.max(down, r.replicas);
    }
    let desired = current;
    if (desired < up) desired = up;
    if (desired > down) desired = down;
    if (desired > current) {
      desired = Math.min(desired, Math.max(current, this.limit(this.s.scaleUp, current, at, true)), this.s.max);
    } else if (desired < current) {
      desired = Math.max(desired, Math.min(current, this.limit(this.s.scaleDown, current, at, false)), this.s.min);
    }
    desired = Math.min(Math.max(desired, this.s.min), this.s.max);
    if (desired !== current) this.events.push({ at, change: desired - current });
    return { value, ratio: p.ratio, proposal: p.replicas, desired };
  }
}

module.exports = { Autoscaler, proposal, settingsOf, DEFAULT_BEHAVIOR, TOLERANCE };
