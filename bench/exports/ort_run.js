// Runs a model with ONNX Runtime (npm's onnxruntime-node, CPU) for bench/exports/bench.py: like
// tests/ort_run.js, plus FLOAT16 and bool tensors, and it says how far it got (a session that cannot
// be created means the model is not valid for ONNX Runtime).
// Usage: node ort_run.js SPEC.json
// SPEC: {"model": path, "threads": N, "out_dir": path, "session_only": bool, "level": "all"|"basic",
//        "inputs": [{"name", "dtype": "float32"|"float16"|"int64"|"int32"|"bool", "shape", "file"}]}
// Prints "SESSION_OK" once the session exists; writes OUT_DIR/<k>.bin (raw little-endian; float16 as
// its 16-bit patterns) and OUT_DIR/result.json with each output's name, type and dims.
'use strict';
const fs = require('fs');
const path = require('path');
const ort = require('onnxruntime-node');

const ctors = {
  float32: Float32Array, float16: Uint16Array, int64: BigInt64Array, int32: Int32Array,
  bool: Uint8Array, float64: Float64Array,
};

async function main() {
  const spec = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
  const session = await ort.InferenceSession.create(spec.model, {
    intraOpNumThreads: spec.threads || 1, interOpNumThreads: 1, executionMode: 'sequential',
    graphOptimizationLevel: spec.level || 'all',
  });
  console.log('SESSION_OK');
  if (spec.session_only) return;
  const feeds = {};
  for (const inp of spec.inputs) {
    const buf = fs.readFileSync(inp.file);
    const C = ctors[inp.dtype];
    const data = new C(buf.buffer.slice(buf.byteOffset, buf.byteOffset + buf.byteLength));
    feeds[inp.name] = new ort.Tensor(inp.dtype, data, inp.shape);
  }
  const result = await session.run(feeds);
  const meta = { outputs: [] };
  session.outputNames.forEach((name, k) => {
    const t = result[name];
    const d = t.data;
    const data = Buffer.from(d.buffer, d.byteOffset, d.byteLength);
    fs.writeFileSync(path.join(spec.out_dir, `${k}.bin`), data);
    meta.outputs.push({ name, type: t.type, dims: t.dims });
  });
  fs.writeFileSync(path.join(spec.out_dir, 'result.json'), JSON.stringify(meta));
}

main().catch((e) => { console.error(String(e && e.stack ? e.message : e)); process.exit(1); });
