'use strict';
// evaluator.ladder: the Stockfish ladder (chessrl-evaluator --ladder). Off by default (no
// --ladder), passed as one --ladder when set; values.schema.json refuses a bad ladder
// (values-schema.test.js); here one that is not a list of PROGRAM:SKILL:DEPTH rungs is
// refused naming evaluator.ladder.
const { describe, it, before } = require('node:test');
const assert = require('node:assert/strict');
const { helm, render, prefetch, workloadOf, mainContainer, flagValues, KUBE_VERSION } = require('./lib/chart');
const { chartDir } = require('./lib/tools');

// --set splits at commas; a comma inside a value is escaped.
const LADDER = ['--set', 'evaluator.ladder=stockfish:0:1\\,/usr/games/stockfish:1:2'];

before(() => prefetch([[]], [LADDER]));

describe('evaluator.ladder', () => {
  it('is off by default: no --ladder', async () => {
    const c = mainContainer(workloadOf(await render([]), 'evaluator'), 'evaluator');
    assert.deepEqual(flagValues(c, 'ladder'), []);
  });

  it('set, it is one --ladder with the whole list', async () => {
    const c = mainContainer(workloadOf(await render(LADDER), 'evaluator'), 'evaluator');
    assert.deepEqual(flagValues(c, 'ladder'), ['stockfish:0:1,/usr/games/stockfish:1:2']);
  });

  for (const bad of ['stockfish:0', 'stockfish:21:1', 'stockfish:0:0', 'stockfish:0:1\\,', 'uci:stockfish;depth=1']) {
    it(`refuses ${bad}, naming the key`, async () => {
      const r = await helm(['template', 'chess-rl', chartDir, '--kube-version', KUBE_VERSION,
        '--set', `evaluator.ladder=${bad}`]);
      assert.notEqual(r.code, 0, `helm accepted evaluator.ladder=${bad}`);
      assert.match(r.stderr, /values don't meet the specifications of the schema/, r.stderr);
      assert.match(r.stderr, /evaluator[./]ladder/, `the message does not name the key:\n${r.stderr}`);
    });
  }
});
