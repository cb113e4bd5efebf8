// Creates an ONNX Runtime session (npm's onnxruntime-node, CPU) for each model of a list and says
// whether it loaded, for test_converted_valid.py. Usage: node ort_load.js LIST.json OUT.json
// LIST: [path, ...]; OUT: {path: null | "error message"}.
'use strict';
const fs = require('fs');
const ort = require('onnxruntime-node');

async function main() {
  const models = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
  const out = {};
  for (const m of models) {
    try {
      const s = await ort.InferenceSession.create(m, {
        intraOpNumThreads: 1, interOpNumThreads: 1, graphOptimizationLevel: 'disabled',
      });
      if (s.release) await s.release();
      out[m] = null;
    } catch (e) {
      out[m] = String(e.message || e);
    }
  }
  fs.writeFileSync(process.argv[3], JSON.stringify(out));
}

main().catch((e) => { console.error(String(e)); process.exit(1); });
