// Runs a model with ONNX Runtime (npm's onnxruntime-node, CPU) for halfguard's cross-checks
// (tests/ortlib.py) and benchmarks (bench/interp.py, bench/exports/bench.py).
// Usage: node ort_run.js SPEC.json
// SPEC: {"model": path, "threads": N (1), "repeat": R (1), "outputs": [names] | null, "out_dir": path,
//        "level": "all" | "basic" | ... (graph optimization, "all"), "session_only": bool,
//        "inputs": [{"name", "dtype": "float32"|"float16"|"float64"|"int64"|"int32"|"bool", "shape",
//                    "file": raw .bin (float16 as its 16-bit patterns, bool as one byte each)}]}
// Prints "SESSION_OK" once the session exists (a session that cannot be created means the model is
// not valid for ONNX Runtime); writes OUT_DIR/<k>.bin (raw little-endian) and OUT_DIR/result.json
// with each output's name, type and dims, and the wall time of each run in milliseconds (session
// creation excluded).
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
  const fetches = spec.outputs || session.outputNames;
  const times = [];
  let result;
  for (let r = 0; r < (spec.repeat || 1); r++) {
    const t0 = process.hrtime.bigint();
    result = await session.run(feeds, fetches);
    times.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
  const meta = { outputs: [], times_ms: times };
  fetches.forEach((name, k) => {
    const t = result[name];
    const data = Buffer.from(t.data.buffer, t.data.byteOffset, t.data.byteLength);
    fs.writeFileSync(path.join(spec.out_dir, `${k}.bin`), data);
    meta.outputs.push({ name, type: t.type, dims: t.dims });
  });
  fs.writeFileSync(path.join(spec.out_dir, 'result.json'), JSON.stringify(meta));
}

main().catch((e) => { console.error(String(e && e.stack ? e.message : e)); process.exit(1); });
