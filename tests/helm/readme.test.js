'use strict';
// helm/README.md's Parameters tables are generated from the `## @section` / `## @param`
// comments of helm/values.yaml by @bitnami/readme-generator-for-helm (pinned in
// package.json; `npm run readme` regenerates them). The generator runs here on a copy of
// README.md: it fails on a key without @param (or an @param without a key), and the copy
// must equal the committed file. It is never given --schema: values.schema.json is written
// by hand.
const { describe, it } = require('node:test');
const assert = require('node:assert/strict');
const { execFile } = require('node:child_process');
const crypto = require('node:crypto');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { chartFile } = require('./lib/chart');
const { testsDir, MissingToolError } = require('./lib/tools');

const FIX = 'run `npm run readme` in tests/helm (it rewrites helm/README.md from helm/values.yaml)';

function generatorBin() {
  let pkg;
  try {
    pkg = require.resolve('@bitnami/readme-generator-for-helm/package.json', { paths: [testsDir] });
  } catch {
    throw new MissingToolError('npm package @bitnami/readme-generator-for-helm not found in ' +
      `${path.join(testsDir, 'node_modules')}: run scripts/install-chart-tools.sh (or \`make deps\`) in the repository root`);
  }
  return path.join(path.dirname(pkg), JSON.parse(fs.readFileSync(pkg, 'utf8')).bin['readme-generator']);
}

// Runs the generator on a copy of README.md; resolves {code, output, text}.
function generate() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'chessrl-readme-'));
  const copy = path.join(dir, 'README.md');
  fs.copyFileSync(chartFile('README.md'), copy);
  return new Promise((resolve) => {
    execFile(process.execPath, [generatorBin(), '--values', chartFile('values.yaml'), '--readme', copy],
      { cwd: dir }, (err, stdout, stderr) => {
        const text = fs.readFileSync(copy, 'utf8');
        fs.rmSync(dir, { recursive: true, force: true });
        resolve({ code: err ? 1 : 0, output: `${stdout}${stderr}`, text });
      });
  });
}

// The first lines where two texts differ, for the failure message.
function firstDifferences(want, have, max = 5) {
  const a = want.split('\n');
  const b = have.split('\n');
  const out = [];
  for (let i = 0; i < Math.max(a.length, b.length) && out.length < max; i++) {
    if (a[i] !== b[i]) out.push(`line ${i + 1}:\n  README.md: ${a[i] ?? '(end)'}\n  generated: ${b[i] ?? '(end)'}`);
  }
  return out.join('\n');
}

const sha = (file) => crypto.createHash('sha256').update(fs.readFileSync(file)).digest('hex');

describe('helm/README.md parameters', () => {
  it('package.json pins the generator and has `npm run readme`', () => {
    const pkg = JSON.parse(fs.readFileSync(path.join(testsDir, 'package.json'), 'utf8'));
    assert.match(pkg.devDependencies['@bitnami/readme-generator-for-helm'] || '', /^\d+\.\d+\.\d+$/, 'not an exact version');
    assert.match(pkg.scripts.readme || '', /readme-generator .*--readme/, 'no `readme` script');
    assert.doesNotMatch(pkg.scripts.readme, /--schema|-s /, 'the readme script must not write values.schema.json');
  });

  it('README.md has one Parameters section for the tables', () => {
    const headings = fs.readFileSync(chartFile('README.md'), 'utf8').match(/^##+ Parameters.*$/gm) || [];
    assert.deepEqual(headings, ['## Parameters'], 'the generator needs exactly one `## Parameters` heading');
  });

  it('every key of values.yaml has an @param, and README.md is up to date', async () => {
    const schema = sha(chartFile('values.schema.json'));
    const r = await generate();
    assert.equal(r.code, 0, `the generator failed (a key without \`## @param\`, or an @param without a key?):\n` +
      `${r.output.split('\n').filter((l) => /^ERROR: /.test(l)).join('\n') || r.output}\nFix values.yaml, then ${FIX}`);
    const committed = fs.readFileSync(chartFile('README.md'), 'utf8');
    assert.ok(r.text === committed,
      `helm/README.md is stale (its Parameters tables differ from helm/values.yaml's @param comments): ${FIX}\n` +
      firstDifferences(committed, r.text));
    assert.equal(sha(chartFile('values.schema.json')), schema, 'values.schema.json changed');
  });
});
