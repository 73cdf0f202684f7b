'use strict';
// Offline validation of rendered Kubernetes objects against the OpenAPI schemas that the
// pinned npm packages ship: kubernetes-models (core Kubernetes APIs, up to 1.33),
// @kubernetes-models/prometheus-operator (PodMonitor, ServiceMonitor, PrometheusRule, ...)
// and @kubernetes-models/keda (ScaledObject, TriggerAuthentication, ...). The KEDA package
// is an ES module; require() loads it on Node 20.19 and later.
//
// validateObject(obj) returns a list of problems (strings); [] means valid:
//  1. the model class is chosen by apiVersion + kind; an apiVersion/kind that neither package
//     knows is a problem, never a silent pass;
//  2. the class's validate() (types, enums, formats, required fields) runs on the object;
//  3. unknown fields: the schemas do not reject keys they do not name, so the same validate()
//     run also tells which keys the schema names. The packages ship their schemas compiled
//     to ajv standalone validators (node_modules/kubernetes-models/_schemas/*.js, no JSON), and
//     a compiled validator reads `data.<name>` for every property its schema declares, follows
//     $ref by calling the referenced schema's validator on the child, walks array items by
//     index, and iterates the keys (`for (k in data)`) of additionalProperties maps
//     (labels, annotations, ConfigMap data, resource lists). The object is wrapped in a Proxy
//     that records, per object, the keys read and whether its keys were iterated. Afterwards:
//       - an object whose keys were iterated is a map: every key is allowed (values checked);
//       - an object of which the validator read no key at all has no declared properties:
//         free-form (RawExtension, x-kubernetes-preserve-unknown-fields), left alone;
//       - otherwise every key of the object that the validator did not read is unknown, and
//         reported with its path, e.g. `spec.template.spec.containers[0].imagePullPolicyy`.
//     int-or-string and quantity fields are scalars (anyOf of types) and need nothing else.
//     The walker's own tests are in validator.test.js.
//  4. custom resources that no npm package has a model of (Volcano's PodGroup) are checked
//     against a JSON schema of ours in lib/ (LOCAL_SCHEMAS), written from the CRD's fields,
//     with ajv; every object of it refuses keys it does not name (additionalProperties:
//     false). Their metadata goes through kubernetes-models' ObjectMeta as above.
const fs = require('node:fs');
const path = require('node:path');
const { requireTool } = require('./tools');

requireTool('kubernetes-models/package.json');
requireTool('@kubernetes-models/prometheus-operator/package.json');
const Ajv = requireTool('ajv');
const { ObjectMeta } = requireTool('@kubernetes-models/apimachinery/apis/meta/v1/ObjectMeta');

// apiVersion + kind -> a JSON schema file in this folder, for the custom resources no npm
// package ships a model of.
const LOCAL_SCHEMAS = {
  'scheduling.volcano.sh/v1beta1 PodGroup': 'volcano-podgroup.schema.json',
};
let ajv;
const localCache = new Map();
// The compiled validator of a local schema for apiVersion + kind, or null.
function localSchemaFor(apiVersion, kind) {
  const file = LOCAL_SCHEMAS[`${apiVersion} ${kind}`];
  if (!file) return null;
  if (!localCache.has(file)) {
    if (!ajv) ajv = new Ajv({ allErrors: true, strict: true });
    localCache.set(file, ajv.compile(JSON.parse(fs.readFileSync(path.join(__dirname, file), 'utf8'))));
  }
  return localCache.get(file);
}
requireTool('@kubernetes-models/keda/package.json');

// apiVersion group -> directory holding <version>/<Kind>.js model classes.
const packageRoots = [
  path.dirname(requireTool.resolve('kubernetes-models/package.json')),
  path.dirname(requireTool.resolve('@kubernetes-models/prometheus-operator/package.json')),
  path.dirname(requireTool.resolve('@kubernetes-models/keda/package.json')),
];

function modelFile(apiVersion, kind) {
  if (typeof apiVersion !== 'string' || typeof kind !== 'string') return null;
  if (!/^[A-Za-z0-9.-]+(\/[A-Za-z0-9]+)?$/.test(apiVersion) || !/^[A-Za-z0-9]+$/.test(kind)) return null;
  // core group: "v1" -> <root>/v1/<Kind>.js; others: "apps/v1" -> <root>/apps/v1/<Kind>.js
  for (const root of packageRoots) {
    const file = path.join(root, ...apiVersion.split('/'), `${kind}.js`);
    if (fs.existsSync(file)) return file;
  }
  return null;
}

const modelCache = new Map();
// The model class for apiVersion + kind, or null when no package has a schema for it.
function modelFor(apiVersion, kind) {
  const key = `${apiVersion} ${kind}`;
  if (modelCache.has(key)) return modelCache.get(key);
  let model = null;
  const file = modelFile(apiVersion, kind);
  if (file) {
    let mod;
    try {
      mod = require(file);
    } catch (err) {
      if (err.code !== 'ERR_REQUIRE_ESM') throw err;
      throw new Error(`${file} is an ES module, which require() loads on Node 20.19 and later; ` +
                      `this is Node ${process.versions.node}`);
    }
    // The file of a top-level kind exports a class with static apiVersion and kind;
    // files of nested types (DeploymentSpec, ...) export classes without them.
    model = Object.values(mod).find(
      (c) => typeof c === 'function' && c.apiVersion === apiVersion && c.kind === kind) || null;
  }
  modelCache.set(key, model);
  return model;
}

function isPlainObject(v) {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

// Runs fn(proxy) with every object/array reachable from data wrapped in a recording Proxy.
// Returns Map<object, {gets: Set<string>, iterated: boolean}> for the objects the fn reached.
function recordAccess(data, fn) {
  const records = new Map();
  const proxies = new WeakMap();
  const wrap = (value) => {
    if (value === null || typeof value !== 'object') return value;
    if (proxies.has(value)) return proxies.get(value);
    const rec = { gets: new Set(), iterated: false };
    records.set(value, rec);
    const proxy = new Proxy(value, {
      get(target, key, receiver) {
        const v = Reflect.get(target, key, receiver);
        if (typeof key !== 'string') return v;
        rec.gets.add(key);
        return Object.prototype.hasOwnProperty.call(target, key) ? wrap(v) : v;
      },
      ownKeys(target) {
        rec.iterated = true;
        return Reflect.ownKeys(target);
      },
    });
    proxies.set(value, proxy);
    return proxy;
  };
  fn(wrap(data));
  return records;
}

// Keys of obj (recursively) that the schema does not name, as paths; free-form paths aside.
function unknownFields(obj, records) {
  const unknown = [];
  const freeForm = [];
  const walk = (value, where) => {
    if (Array.isArray(value)) {
      value.forEach((item, i) => walk(item, `${where}[${i}]`));
      return;
    }
    if (!isPlainObject(value)) return;
    const rec = records.get(value);
    if (!rec) return; // not reached: below a free-form object, or after a schema error
    const keys = Object.keys(value);
    if (rec.iterated) { // additionalProperties map: any key, values were checked
      for (const k of keys) walk(value[k], join(where, k));
      return;
    }
    if (rec.gets.size === 0) { // no declared properties: free-form
      if (keys.length) freeForm.push(where || '.');
      return;
    }
    for (const k of keys) {
      if (rec.gets.has(k)) walk(value[k], join(where, k));
      else unknown.push(join(where, k));
    }
  };
  walk(obj, '');
  return { unknown, freeForm };
}

function join(where, key) {
  const k = /^[A-Za-z_$][\w$-]*$/.test(key) ? key : JSON.stringify(key);
  if (!where) return k;
  return /^[A-Za-z_$]/.test(k) ? `${where}.${k}` : `${where}[${k}]`;
}

function describe(obj) {
  const kind = isPlainObject(obj) ? obj.kind : undefined;
  const name = isPlainObject(obj) && isPlainObject(obj.metadata) ? obj.metadata.name : undefined;
  const source = isPlainObject(obj) && obj.__source ? ` (${obj.__source})` : '';
  return `${kind || '<no kind>'} ${name || '<no name>'}${source}`;
}

// A custom resource against its local schema (ajv) and its metadata against ObjectMeta.
function validateLocal(obj, validate, what, details) {
  const problems = [];
  if (!validate(obj)) {
    for (const e of validate.errors) {
      const where = e.instancePath.split('/').slice(1).map((k) => k.replace(/~1/g, '/').replace(/~0/g, '~'))
        .reduce((w, k) => (/^[0-9]+$/.test(k) ? `${w}[${k}]` : join(w, k)), '');
      if (e.keyword === 'additionalProperties') {
        problems.push(`${what}: unknown field ${join(where, e.params.additionalProperty)}`);
      } else {
        problems.push(`${what}: schema: ${where || '.'} ${e.message}`);
      }
    }
  }
  details.freeForm = [];
  if (isPlainObject(obj.metadata)) {
    const records = recordAccess(obj.metadata, (proxy) => {
      try {
        ObjectMeta.prototype.validate.call(proxy);
      } catch (err) {
        problems.push(`${what}: schema: metadata ${err.message}`);
      }
    });
    const { unknown, freeForm } = unknownFields(obj.metadata, records);
    for (const p of unknown) problems.push(`${what}: unknown field ${join('metadata', p)}`);
    details.freeForm = freeForm.map((p) => join('metadata', p));
  }
  return problems;
}

// Problems with one object, as strings naming the object and the path; [] when valid.
// details.freeForm (optional out-param) collects the free-form paths that were not checked.
function validateObject(obj, details = {}) {
  const what = describe(obj);
  if (!isPlainObject(obj)) return [`${what}: not an object`];
  const local = localSchemaFor(obj.apiVersion, obj.kind);
  if (local) return validateLocal(obj, local, what, details);
  const model = modelFor(obj.apiVersion, obj.kind);
  if (!model) {
    return [`${what}: no schema for apiVersion ${JSON.stringify(obj.apiVersion)} kind ` +
            `${JSON.stringify(obj.kind)} in kubernetes-models, @kubernetes-models/prometheus-operator ` +
            'or @kubernetes-models/keda, and no local schema (unknown or misspelt apiVersion/kind)'];
  }
  const problems = [];
  const records = recordAccess(obj, (proxy) => {
    try {
      model.prototype.validate.call(proxy);
    } catch (err) {
      problems.push(`${what}: schema: ${err.message}`);
    }
  });
  const { unknown, freeForm } = unknownFields(obj, records);
  for (const p of unknown) problems.push(`${what}: unknown field ${p}`);
  details.freeForm = freeForm;
  return problems;
}

module.exports = { validateObject, modelFor, LOCAL_SCHEMAS };
