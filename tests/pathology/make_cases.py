#!/usr/bin/python3
"""Write the FP16 pathology suite: one ONNX model per case, its calibration sample and cases.json.

Usage: make_cases.py OUTDIR [CASE...]

For each case OUTDIR gets CASE.onnx, CASE.data/input_K.pb (one realistic sample inside the declared
input ranges, in graph-input order: the `halfguard run --data` layout) and an entry in
OUTDIR/cases.json:

    {"name", "model", "data", "input_ranges": ["NAME=LO:HI", ...], "options": [FLAG, ...],
     "expected": [[node, kind] or [node, kind, fixed_by], ...], "negative_control": bool,
     "description", "origin",
     "witnesses": [{"value", "check", "limit", "why"}, ...]}

`options` are further flags for `check` and `convert` that the case is about (`--accumulate fp16` for a
runtime that keeps reductions' running sums in FP16).
`expected` lists the hazards `halfguard check` must report, with and without calibration, at those
nodes, and for those convert rewrites away by itself the pass it does that with (check lists them as
`fixed_by` that pass and does not count them); a negative control expects none (with calibration). A witness is a fact about the calibration
sample that makes the hazard real rather than a loose bound: a tensor the interpreter computes
(`halfguard run --mark-all`) and a check on it (absmax_gt, absmax_lt, max_gt, has_zero, has_inf,
min_pos_lt: some value in (0, limit), against limit).

Uses Debian's python3-onnx (1.12) and numpy only. Fixed seeds, so the output is byte-for-byte the same
on every run. Every model must pass onnx.checker.check_model(full_check=True); a case that does not is
a bug in this script and stops it.
"""
import json
import os
import sys
import zlib

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 17
IR_VERSION = 8
F32_MIN = float(np.finfo(np.float32).min)  # -3.4028235e38, the fill of HF-style attention masks
FP16_MAX = 65504.0


class Case:
    """One model under construction: nodes in topological order, named explicitly."""

    def __init__(self, name, description, origin, negative_control=False):
        self.name = name
        self.description = description
        self.origin = origin
        self.negative_control = negative_control
        self.rng = np.random.default_rng(zlib.crc32(name.encode()))
        self.nodes, self.inits, self.inputs, self.outputs = [], [], [], []
        self.ranges, self.samples = [], []
        self.expected, self.witnesses = [], []
        self.static_only = []
        self.options = []

    def input(self, name, shape, lo, hi, sample):
        """A float graph input; `shape` may name symbolic dims (strings), the sample fixes them."""
        sample = np.asarray(sample, dtype=np.float32)
        if len(shape) != sample.ndim or any(isinstance(d, int) and d != n for d, n in zip(shape, sample.shape)):
            sys.exit(f"make_cases.py: {self.name}: sample of '{name}' has shape {sample.shape}, not {shape}")
        if not (np.all(sample >= lo) and np.all(sample <= hi)):
            sys.exit(f"make_cases.py: {self.name}: sample of '{name}' leaves its range [{lo}, {hi}]")
        self.inputs.append(helper.make_tensor_value_info(name, TensorProto.FLOAT, list(shape)))
        self.ranges.append(f"{name}={lo:g}:{hi:g}")
        self.samples.append(numpy_helper.from_array(sample, name))
        return name

    def init(self, name, array, dtype=np.float32):
        self.inits.append(numpy_helper.from_array(np.asarray(array, dtype=dtype), name))
        return name

    def i64(self, name, values):
        return self.init(name, values, np.int64)

    def const(self, node_name, array, dtype=np.float32):
        """A Constant node (not an initializer): hazards in it are reported at the node itself."""
        out = node_name + "_out"
        t = numpy_helper.from_array(np.asarray(array, dtype=dtype), node_name + "_value")
        self.nodes.append(helper.make_node("Constant", [], [out], name=node_name, value=t))
        return out

    def node(self, op, name, inputs, **attrs):
        """Append a node named `name` with one output `name_out`, which is returned."""
        out = name + "_out"
        self.nodes.append(helper.make_node(op, list(inputs), [out], name=name, **attrs))
        return out

    def output(self, value, shape=None):
        """A graph output; `shape` only where shape inference cannot know it (computed shapes)."""
        self.outputs.append((value, shape))

    def expect(self, node, kind, fixed_by=None):
        """A hazard check must report at node; fixed_by names the pass that convert rewrites it away
        with (check then lists it as fixed and does not count it), None when convert keeps it FP32."""
        self.expected.append([node, kind] + ([fixed_by] if fixed_by else []))

    def expect_static_only(self, node, kind):
        """A hazard check must report at node from the ranges alone, and must not report once
        calibration bounds what the node sees (a proof that needs the calibrated range)."""
        self.static_only.append([node, kind])

    def witness(self, value, check, limit, why):
        self.witnesses.append({"value": value, "check": check, "limit": limit, "why": why})

    def model(self):
        outs = [helper.make_tensor_value_info(o, TensorProto.FLOAT, s) for o, s in self.outputs]
        g = helper.make_graph(self.nodes, self.name, self.inputs, outs, self.inits)
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", OPSET)], ir_version=IR_VERSION,
                              producer_name="halfguard-pathology")
        # Graph outputs need a shape to pass the checker: take the inferred ones, keep no value_info.
        inferred = onnx.shape_inference.infer_shapes(m)
        for o, io in zip(m.graph.output, inferred.graph.output):
            if not o.type.tensor_type.HasField("shape"):
                o.CopyFrom(io)
        try:
            onnx.checker.check_model(m, full_check=True)
        except Exception as e:  # noqa: BLE001 (any checker failure is fatal)
            sys.exit(f"make_cases.py: {self.name}: the checker rejects the model: {e}")
        node_names = [n.name for n in m.graph.node]
        if len(set(node_names)) != len(node_names) or "" in node_names:
            sys.exit(f"make_cases.py: {self.name}: node names must be unique and non-empty")
        values = {v for n in m.graph.node for v in n.output} | {i.name for i in m.graph.input}
        for node, *_ in self.expected:
            if node not in node_names:
                sys.exit(f"make_cases.py: {self.name}: expected hazard at unknown node '{node}'")
        for w in self.witnesses:
            if w["value"] not in values:
                sys.exit(f"make_cases.py: {self.name}: witness on unknown value '{w['value']}'")
        return m


# ----------------------------------------------------------------------------------------------------
# numpy helpers for realistic weights and samples

def conv2d(x, w, b=None, stride=1, pad=1):
    """NCHW convolution, the reference used to fit BatchNormalization statistics to real activations."""
    x = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    kh, kw = w.shape[2:]
    win = np.lib.stride_tricks.sliding_window_view(x, (kh, kw), axis=(2, 3))[:, :, ::stride, ::stride]
    y = np.einsum("nchwij,ocij->nohw", win, w, optimize=True)
    return y if b is None else y + b.reshape(1, -1, 1, 1)


def he_normal(rng, cout, cin, k=3):
    return (rng.standard_normal((cout, cin, k, k)) * np.sqrt(2.0 / (cin * k * k))).astype(np.float32)


def smooth_image(rng, shape, mean, spread):
    """A smooth, photo-like image: a few low-frequency waves plus fine noise, around `mean`."""
    n, c, h, w = shape
    yy, xx = np.meshgrid(np.linspace(0, 1, h), np.linspace(0, 1, w), indexing="ij")
    img = np.zeros(shape, np.float64)
    for ch in range(c):
        base = sum(rng.uniform(-1, 1) * np.sin(2 * np.pi * (rng.uniform(0.3, 2) * xx +
                                                             rng.uniform(0.3, 2) * yy + rng.uniform()))
                   for _ in range(3)) / 3
        img[:, ch] = base
    img = mean + spread * img + rng.normal(0, spread * 0.1, shape)
    return img


def decomposed_layernorm(c, x, hidden, eps, prefix="ln"):
    """x -> (x - mean) / sqrt(var + eps) * gamma + beta, as PyTorch exports LayerNorm before opset 17
    (and as many hand-written blocks still do)."""
    mean = c.node("ReduceMean", f"{prefix}_mean", [x], axes=[-1], keepdims=1)
    d = c.node("Sub", f"{prefix}_sub", [x, mean])
    p = c.node("Pow", f"{prefix}_pow", [d, c.init(f"{prefix}_two", 2.0)])
    var = c.node("ReduceMean", f"{prefix}_var", [p], axes=[-1], keepdims=1)
    ve = c.node("Add", f"{prefix}_add_eps", [var, c.init(f"{prefix}_eps", eps)])
    sd = c.node("Sqrt", f"{prefix}_sqrt", [ve])
    n = c.node("Div", f"{prefix}_div", [d, sd])
    gamma = c.init(f"{prefix}_gamma", c.rng.uniform(0.8, 1.2, hidden))
    beta = c.init(f"{prefix}_beta", c.rng.normal(0, 0.05, hidden))
    g = c.node("Mul", f"{prefix}_mul_gamma", [n, gamma])
    return c.node("Add", f"{prefix}_add_beta", [g, beta])


def integral_image_avg(c, x, k):
    """NAFNet's local average (basicsr/models/archs/local_arch.py AvgPool2d, fast_imp=False):
    s = x.cumsum(-1).cumsum(-2); s = pad(s, (1, 0, 1, 0)); s4 + s1 - s2 - s3 over k x k windows."""
    cw = c.node("CumSum", "cumsum_w", [x, c.i64("axis_w", 3)])
    ch = c.node("CumSum", "cumsum_h", [cw, c.i64("axis_h", 2)])
    s = c.node("Pad", "integral_pad", [ch, c.i64("integral_pads", [0, 0, 1, 1, 0, 0, 0, 0])], mode="constant")
    axes = c.i64("slice_axes", [2, 3])

    def sl(name, starts, ends):
        return c.node("Slice", name, [s, c.i64(name + "_starts", starts), c.i64(name + "_ends", ends), axes])
    s1 = sl("s1_slice", [0, 0], [-k, -k])
    s2 = sl("s2_slice", [0, k], [-k, 2**62])
    s3 = sl("s3_slice", [k, 0], [2**62, -k])
    s4 = sl("s4_slice", [k, k], [2**62, 2**62])
    a = c.node("Add", "s4_plus_s1", [s4, s1])
    b = c.node("Sub", "minus_s2", [a, s2])
    d = c.node("Sub", "minus_s3", [b, s3])
    return c.node("Div", "window_mean", [d, c.init("window_area", float(k * k))])


# ----------------------------------------------------------------------------------------------------
# One function per case. Each names the node where the hazard must be reported and why.

def overflow_mul_const():
    c = Case("overflow_mul_const",
             "Activations times a folded constant gain of 1000: the Mul's output passes 65504. rescale "
             "scales the gain by 2^-k and keeps the Mul and the Relu in FP16; the output itself passes "
             "65504, so the Mul by 2^k that undoes the scale before it is FP32.",
             "unit conversions and un-normalised gains folded into a constant (e.g. metres to mm)")
    x = c.rng.normal(0, 25, (1, 256)).clip(-60, 60)
    x[0, 7], x[0, 100] = 80.0, -72.0  # two outlier activations: 80 * 1000 = 80000 > 65504
    x = c.input("x", [1, 256], -1000, 1000, x)
    y = c.node("Mul", "gain_mul", [x, c.init("gain", 1000.0)])
    c.output(c.node("Relu", "act_relu", [y]))
    c.expect("gain_mul", "overflow", "rescale")  # act_relu's input already overflows: not repeated
    c.witness("gain_mul_out", "absmax_gt", FP16_MAX, "the sample's product really passes FP16's max")
    return c


def gelu_tanh_pow():
    c = Case("gelu_tanh_pow",
             "GELU, tanh approximation, with x^3 as Pow(x, 3): the cube passes 65504 once |x| > 40.3.",
             "GPT-2/BERT 'gelu_new' exported by PyTorch; LLM outlier features of 40-60 are common")
    x = c.rng.normal(0, 3, (1, 128)).clip(-20, 20)
    x[0, 3], x[0, 64] = 52.0, -46.0  # outlier channels: 52^3 = 140608
    x = c.input("x", [1, 128], -100, 100, x)
    p = c.node("Pow", "gelu_pow3", [x, c.init("three", 3.0)])
    t = c.node("Mul", "gelu_mul_coef", [p, c.init("coef", 0.044715)])
    t = c.node("Add", "gelu_add_x", [x, t])
    t = c.node("Mul", "gelu_mul_k", [t, c.init("sqrt_2_over_pi", np.sqrt(2 / np.pi))])
    t = c.node("Tanh", "gelu_tanh", [t])
    t = c.node("Add", "gelu_add_one", [t, c.init("one", 1.0)])
    t = c.node("Mul", "gelu_mul_x", [x, t])
    c.output(c.node("Mul", "gelu_mul_half", [t, c.init("half", 0.5)]))
    c.expect("gelu_pow3", "overflow", "prescale")  # 2^-6 of 0.044715 moves onto x as 2^-2
    c.witness("gelu_pow3_out", "absmax_gt", FP16_MAX, "52^3 on the sample")
    return c


def internal_overflow_reducemean():
    c = Case("internal_overflow_reducemean",
             "ReduceMean over 4096 values in [0, 100] on a runtime that accumulates reductions in FP16 "
             "(--accumulate fp16): the mean fits, the running sum (409600) does not.",
             "mean pooling over a long sequence or a large spatial map, accumulated in FP16")
    c.options = ["--accumulate", "fp16"]
    x = c.input("x", [1, 4096], 0, 100, c.rng.uniform(10, 90, (1, 4096)))
    m = c.node("ReduceMean", "row_mean", [x], axes=[1], keepdims=1)
    c.output(c.node("Sub", "center_sub", [x, m]))
    c.expect("row_mean", "internal-overflow", "prescale")  # x pre-scaled by 2^-k, the result by 2^k
    c.witness("row_mean_out", "absmax_gt", FP16_MAX / 4096, "mean > 16 over 4096 values: sum > 65504")
    return c


def internal_overflow_reducel2():
    c = Case("internal_overflow_reducel2",
             "ReduceL2 over 4096 values in [-100, 100] on a runtime that accumulates reductions in FP16 "
             "(--accumulate fp16): the norm fits (<= 6400), the sum of squares does not.",
             "feature normalisation (ArcFace/CLIP embeddings, weight norm) with ReduceL2")
    c.options = ["--accumulate", "fp16"]
    x = c.input("x", [1, 4096], -100, 100, c.rng.normal(0, 20, (1, 4096)).clip(-90, 90))
    c.output(c.node("ReduceL2", "l2_reduce", [x], axes=[1], keepdims=1))
    c.expect("l2_reduce", "internal-overflow", "prescale")  # x pre-scaled by 2^-k, the result by 2^k
    c.witness("l2_reduce_out", "absmax_gt", float(np.sqrt(FP16_MAX)), "norm > 256: sum of squares > 65504")
    return c


def control_reducemean_global_average():
    c = Case("control_reducemean_global_average",
             "Negative control: a global average written as ReduceMean over H and W (as the dynamo "
             "exporter writes EfficientNet's and RegNet's pooling) of 64x64 activations up to 40, then "
             "a Gemm head. The sum (up to 164k) passes 65504, the mean does not; TensorRT, ONNX Runtime "
             "CUDA and PyTorch accumulate FP16 reductions in FP32, so it is no hazard.",
             "torch.mean(x, dim=(2, 3)) exported by torch.onnx.export(dynamo=True)", negative_control=True)
    x = c.input("x", [1, 8, 64, 64], 0, 40, c.rng.uniform(5, 35, (1, 8, 64, 64)))
    m = c.node("ReduceMean", "gap_mean", [x], axes=[2, 3], keepdims=0)
    w = c.rng.normal(0, 0.1, (4, 8))
    c.output(c.node("Gemm", "head", [m, c.init("head_w", w), c.init("head_b", np.zeros(4))], transB=1))
    c.witness("gap_mean_out", "absmax_gt", FP16_MAX / 4096, "mean > 16 over 4096 values: sum > 65504")
    return c


def control_rmsnorm_eps_1e5():
    c = Case("control_rmsnorm_eps_1e5",
             "Negative control: a decomposed RMSNorm (LLaMA, T5) with epsilon 1e-5. 1e-5 is an FP16 "
             "subnormal, stored within 0.3% (GPUs keep subnormals); only values below 2^-24 (6e-8) "
             "become 0. The norm and its output fit.",
             "LlamaRMSNorm / T5LayerNorm exported as Pow, ReduceMean, Add(eps), Sqrt, Reciprocal, Mul",
             negative_control=True)
    x = c.input("x", [1, 8, 64], -4, 4, c.rng.normal(0, 1, (1, 8, 64)).clip(-3.9, 3.9))
    p = c.node("Pow", "rms_pow", [x, c.init("rms_two", 2.0)])
    v = c.node("ReduceMean", "rms_var", [p], axes=[-1], keepdims=1)
    ve = c.node("Add", "rms_add_eps", [v, c.init("rms_eps", 1e-5)])
    r = c.node("Reciprocal", "rms_rsqrt", [c.node("Sqrt", "rms_sqrt", [ve])])
    n = c.node("Mul", "rms_scale", [x, r])
    c.output(c.node("Mul", "rms_weight", [n, c.init("rms_gamma", c.rng.uniform(0.8, 1.2, 64))]))
    return c


def control_folded_conv_bias():
    c = Case("control_folded_conv_bias",
             "Negative control: Conv-ReLU layers whose biases, folded from BatchNorm with zero beta and "
             "zero running mean, are about 1e-10: they flush to 0 in FP16, but a term of 1e-10 next to "
             "activations of order 1 is below FP16's rounding of the sum.",
             "BatchNorm folding in MobileNetV3 / EfficientNet exports", negative_control=True)
    img = smooth_image(c.rng, (1, 3, 16, 16), 0.45, 0.25).clip(0, 1)
    t = c.input("image", [1, 3, 16, 16], 0, 1, img)
    cin = 3
    for i, cout in enumerate([8, 8], 1):
        w = he_normal(c.rng, cout, cin) * 0.5
        bias = c.rng.uniform(0.5e-10, 2e-10, cout) * c.rng.choice([-1, 1], cout)
        t = c.node("Conv", f"conv{i}", [t, c.init(f"conv{i}_w", w), c.init(f"conv{i}_b", bias)],
                   pads=[1, 1, 1, 1])
        t = c.node("Relu", f"relu{i}", [t])
        cin = cout
    c.output(t)
    return c


def internal_overflow_softplus():
    c = Case("internal_overflow_softplus",
             "Softplus on inputs up to 20: the result fits, its exp(x) passes 65504 above x = 11.09.",
             "Softplus heads (variance, rate parameters), Mish")
    x = c.input("x", [1, 256], -20, 20, c.rng.uniform(-15, 15, (1, 256)))
    c.output(c.node("Softplus", "softplus", [x]))
    c.expect("softplus", "internal-overflow", "stable_softplus")
    c.witness("x", "max_gt", float(np.log(FP16_MAX)), "exp(x) > 65504 on the sample")
    return c


def layernorm_eps_1e12():
    c = Case("layernorm_eps_1e12",
             "Decomposed LayerNorm with eps 1e-12: the epsilon flushes to 0 in FP16, so var + eps can "
             "be 0 and the Sqrt/Div see 0.",
             "HF BERT's layer_norm_eps = 1e-12, exported before opset 17 as ReduceMean/Pow/Sqrt/Div")
    x = c.input("x", [1, 16, 256], -6, 6, c.rng.normal(0, 1, (1, 16, 256)).clip(-5.5, 5.5))
    c.output(decomposed_layernorm(c, x, 256, 1e-12))
    c.expect("ln_add_eps", "underflow", "fuse_layernorm")
    return c


def underflow_tiny_weights():
    c = Case("underflow_tiny_weights",
             "A MatMul whose weights are all about 1e-9, stored in the wrong unit, and a gain of 5e4 "
             "after it that brings the product back to 1e-4 or so: below FP16's smallest subnormal "
             "(6e-8) the weights all flush to zero, and so does the output. prescale moves 2^19 of the "
             "gain into the weights, where they are normal FP16 values.",
             "heavily decayed or pruned layers; weights stored in the wrong unit")
    x = c.input("x", [1, 64], -1, 1, c.rng.uniform(-1, 1, (1, 64)))
    w = c.rng.uniform(0.2e-9, 2e-9, (64, 16)) * c.rng.choice([-1, 1], (64, 16))
    y = c.node("MatMul", "tiny_matmul", [x, c.init("tiny_w", w)])
    c.output(c.node("Mul", "unit_gain", [y, c.init("gain", 5e4)]))
    c.expect("tiny_matmul", "underflow", "prescale")
    return c


def control_tiny_weights_beside_bias():
    c = Case("control_tiny_weights_beside_bias",
             "Negative control: a MatMul whose weights are all about 1e-9 (they flush to zero in FP16), "
             "its product (at most 64 * 2e-9 = 1.3e-7) added to biases of 0.01 to 0.1. FP16's rounding "
             "of such a sum moves it by up to half an ulp of the bias (4.8e-6 at 0.01), more than the "
             "whole product: the flush changes nothing FP16 keeps, in FP32 the product is below the "
             "same rounding.",
             "heavily decayed or pruned layers beside their biases", negative_control=True)
    x = c.input("x", [1, 64], -1, 1, c.rng.uniform(-1, 1, (1, 64)))
    w = c.rng.uniform(0.2e-9, 2e-9, (64, 16)) * c.rng.choice([-1, 1], (64, 16))
    y = c.node("MatMul", "tiny_matmul", [x, c.init("tiny_w", w)])
    b = c.rng.uniform(0.01, 0.1, 16) * c.rng.choice([-1, 1], 16)
    c.output(c.node("Add", "bias_add", [y, c.init("bias", b)]))
    return c


def nonfinite_inf_clip():
    c = Case("nonfinite_inf_clip",
             "Clip(x, 0, +inf) with the bounds as Constant nodes: an infinite constant.",
             "torch.clamp(x, min=0, max=float('inf')) exported as Clip with Constant inputs")
    x = c.input("x", [1, 64], -10, 10, c.rng.normal(0, 3, (1, 64)).clip(-9, 9))
    lo = c.const("clip_min", 0.0)
    hi = c.const("clip_max_inf", np.inf)
    c.output(c.node("Clip", "clamp", [x, lo, hi]))
    c.expect("clip_max_inf", "non-finite-constant", "clamp_constants")  # an infinite max bounds nothing: dropped
    return c


def attention_f32min_mask():
    c = Case("attention_f32min_mask",
             "BERT-style extended attention mask: (1 - mask) * float32 min, added to the logits "
             "before Softmax. The fill value is beyond FP16's range.",
             "HF transformers get_extended_attention_mask: (1.0 - mask) * torch.finfo(float32).min")
    logits = c.input("logits", [1, 4, 16, 16], -20, 20, c.rng.normal(0, 3, (1, 4, 16, 16)).clip(-15, 15))
    m = np.ones((1, 1, 1, 16))
    m[..., 12:] = 0  # right padding: the last 4 tokens are masked
    mask = c.input("attention_mask", [1, 1, 1, 16], 0, 1, m)
    inv = c.node("Sub", "mask_invert", [c.init("mask_one", 1.0), mask])
    fill = c.const("mask_fill_value", F32_MIN)
    add = c.node("Mul", "mask_scale", [inv, fill])
    s = c.node("Add", "mask_add", [logits, add])
    c.output(c.node("Softmax", "attn_softmax", [s], axis=-1))
    c.expect("mask_fill_value", "non-finite-constant", "clamp_constants")
    return c


def causal_mask_initializer():
    c = Case("causal_mask_initializer",
             "A causal mask stored as an initializer, float32 min above the diagonal, added to the "
             "logits: reported at its first consumer.",
             "GPT-style decoders exported with the causal mask folded into a constant")
    logits = c.input("logits", [1, 4, 16, 16], -20, 20, c.rng.normal(0, 3, (1, 4, 16, 16)).clip(-15, 15))
    mask = np.triu(np.full((16, 16), F32_MIN, np.float32), k=1).reshape(1, 1, 16, 16)
    s = c.node("Add", "causal_mask_add", [logits, c.init("causal_mask", mask)])
    c.output(c.node("Softmax", "causal_softmax", [s], axis=-1))
    c.expect("causal_mask_add", "non-finite-constant", "clamp_constants")
    return c


def anchor_fill_max_sigmoid():
    c = Case("anchor_fill_max_sigmoid",
             "Invalid anchors filled with float32 max (+3.4e38), added to the box head's logits, the "
             "top queries gathered, then a Sigmoid: the fill is inf in FP16, but a Sigmoid of +65504 "
             "is 1 as a Sigmoid of 3.4e38 is, so convert clamps it to +65504.",
             "transformers RTDetrModel: anchors = torch.where(valid_mask, anchors, finfo.max), "
             "enc_outputs_coord_logits = bbox_head(memory) + anchors, gathered by TopK, .sigmoid()")
    x = c.input("memory", [1, 16, 4], -3, 3, c.rng.normal(0, 1, (1, 16, 4)).clip(-2.9, 2.9))
    head = c.node("MatMul", "bbox_head", [x, c.init("head_w", c.rng.normal(0, 0.3, (4, 4)))])
    valid = c.init("valid", np.arange(16).reshape(1, 16, 1).repeat(4, 2) < 12, np.bool_)
    logs = c.init("anchor_logits", c.rng.normal(0, 1, (1, 16, 4)))
    fill = c.const("anchor_fill", float(np.finfo(np.float32).max))
    anchors = c.node("Where", "anchor_where", [valid, logs, fill])
    coords = c.node("Add", "coord_add", [head, anchors])
    idx = c.i64("top_idx", np.array([3, 0, 7, 14]).reshape(1, 4, 1).repeat(4, 2))
    top = c.node("GatherElements", "top_gather", [coords, idx], axis=1)
    c.output(c.node("Sigmoid", "coord_sigmoid", [top]))
    c.expect("anchor_fill", "non-finite-constant", "clamp_constants")
    return c


def division_by_zero_relu():
    c = Case("division_by_zero_relu",
             "x / (Relu(y) + 1e-12): in FP16 the epsilon is 0, and Relu gives exact zeros, so the Div "
             "divides by 0.",
             "'safe' divisions guarded by a float32-sized epsilon (normalisers, ratios, gates)")
    x = c.input("x", [1, 64], -1, 1, c.rng.uniform(-1, 1, (1, 64)))
    y = c.input("y", [1, 64], -1, 1, c.rng.uniform(-1, 1, (1, 64)))
    r = c.node("Relu", "y_relu", [y])
    d = c.node("Add", "eps_add", [r, c.init("eps", 1e-12)])
    c.output(c.node("Div", "ratio_div", [x, d]))
    c.expect("ratio_div", "division-by-zero")
    c.expect("eps_add", "underflow")
    c.witness("y_relu_out", "has_zero", 0, "the sample's divisor is exactly eps, 0 in FP16")
    return c


def precision_softmax_large():
    c = Case("precision_softmax_large",
             "Softmax over logits near 10000: FP16's spacing there is 8, so differences below 8 "
             "vanish and the probabilities change completely.",
             "unscaled or temperature-less logits (energy-based scores, retrieval similarities)")
    x = 9500 + c.rng.normal(0, 150, (1, 8, 32))
    x = c.input("scores", [1, 8, 32], -12000, 12000, x.clip(9000, 10000))
    c.output(c.node("Softmax", "big_softmax", [x], axis=-1))
    c.expect("big_softmax", "precision-loss")
    c.witness("scores", "absmax_gt", 8192.0, "inputs where FP16's spacing is 8")
    return c


def precision_cumsum_long():
    c = Case("precision_cumsum_long",
             "Position ids as CumSum(mask) - 1 over 4096 tokens in FP16: the range (<= 4096) fits, but "
             "past 2048 a running sum of ones stops counting.",
             "HF position_ids = attention_mask.cumsum(-1) - 1 computed in the activation dtype")
    m = np.ones((1, 4096))
    m[:, 3500:] = 0
    mask = c.input("attention_mask", [1, 4096], 0, 1, m)
    cs = c.node("CumSum", "position_cumsum", [mask, c.i64("cumsum_axis", 1)])
    c.output(c.node("Sub", "position_sub_one", [cs, c.init("one", 1.0)]))
    c.expect("position_cumsum", "precision-loss")
    c.witness("position_cumsum_out", "absmax_gt", 2048.0, "the running sum passes 2048")
    return c


def alibi_long_context():
    c = Case("alibi_long_context",
             "ALiBi positions as BLOOM counts them, (CumSum(mask) - 1) * mask, times per-head slopes and "
             "added to the attention scores, over 4200 tokens: the CumSum stays FP32 (its sums pass "
             "2048), and so must everything that stores the positions, which FP16 rounds to even "
             "integers past 2048 (and to multiples of 4 past 4096): the Sub, the Mul by the mask and "
             "the reshaping, down to the product by the slopes. The biases reach 1050, so the Softmax "
             "stays FP32 too (logits past 2048 with the margin).",
             "transformers build_alibi_tensor (BLOOM; MPT and Falcon's ALiBi variants) over long prompts")
    heads, n = 4, 4200
    scores = c.input("scores", [1, heads, 4, "seq"], -3, 3, c.rng.uniform(-3, 3, (1, heads, 4, n)))
    keep = c.input("keep", [1, "seq"], 0, 1, np.ones((1, n)))
    mask = c.node("Cast", "mask_to_float", [c.node("Greater", "mask", [keep, c.init("half", 0.5)])],
                  to=TensorProto.FLOAT)  # a 0/1 mask, as a cast attention mask is
    cs = c.node("CumSum", "mask_cumsum", [mask, c.i64("cumsum_axis", 1)])
    pos = c.node("Mul", "pos_masked", [c.node("Sub", "pos_from_zero", [cs, c.init("one", 1.0)]), mask])
    pos4 = c.node("Unsqueeze", "pos_4d", [pos, c.i64("pos_axes", [1, 2])])
    slopes = 2.0 ** (-8.0 * np.arange(1, heads + 1) / heads)
    alibi = c.node("Mul", "alibi_bias", [pos4, c.init("slopes", slopes.reshape(1, heads, 1, 1))])
    c.output(c.node("Softmax", "attn_softmax", [c.node("Add", "scores_alibi", [scores, alibi])], axis=-1),
             [1, heads, 4, "seq"])
    c.expect("mask_cumsum", "precision-loss")
    c.witness("pos_masked_out", "absmax_gt", 2048.0, "positions past 2048, where FP16 keeps only even integers")
    return c


def index_math_buckets():
    c = Case("index_math_buckets",
             "T5's relative-position buckets: |i - j| of integer positions cast to float, divided, "
             "logged (log(0) = -inf in FP32 as in FP16), scaled and cast back to an index into a bias "
             "table. Float math on integers that decides an index stays FP32 while its positions are "
             "unbounded (a symbolic sequence); once calibration bounds them (24 tokens, margin 2), "
             "check follows each position 0..46 through the interval rules and proves that FP16 "
             "gives a bucket FP32 gives too, and the chain may run in FP16. The -inf FP32 computes "
             "too is no overflow.",
             "transformers T5Attention._relative_position_bucket, exported with a symbolic sequence")
    x = c.input("x", [1, "seq", 4], -1, 1, c.rng.uniform(-1, 1, (1, 24, 4)))
    shape = c.node("Shape", "x_shape", [x])
    seq = c.node("Gather", "seq_len", [shape, c.i64("seq_axis", 1)], axis=0)
    pos = c.node("Range", "positions", [c.i64("zero", 0), seq, c.i64("step", 1)])
    row = c.node("Unsqueeze", "pos_row", [pos, c.i64("row_axes", [0])])
    col = c.node("Unsqueeze", "pos_col", [pos, c.i64("col_axes", [1])])
    rel = c.node("Abs", "rel_abs", [c.node("Sub", "rel_sub", [row, col])])
    f = c.node("Cast", "rel_to_float", [rel], to=onnx.TensorProto.FLOAT)
    lg = c.node("Log", "bucket_log", [c.node("Div", "bucket_div", [f, c.init("max_exact", 4.0)])])
    sc = c.node("Mul", "bucket_mul", [c.node("Div", "bucket_norm", [lg, c.init("log_ratio", float(np.log(8.0)))]),
                                      c.init("span", 4.0)])
    idx = c.node("Cast", "bucket_to_int", [sc], to=onnx.TensorProto.INT64)
    idx = c.node("Clip", "bucket_clip", [idx, c.i64("lo", 0), c.i64("hi", 7)])
    bias = c.node("Gather", "bias_gather", [c.init("bias_table", c.rng.normal(0, 1, 8)), idx], axis=0)
    pooled = c.node("ReduceMean", "pool", [x], axes=[2], keepdims=1)
    c.output(c.node("MatMul", "apply_bias", [bias, pooled]), [1, "seq", 1])
    c.expect_static_only("bucket_mul", "must-stay-fp32")
    c.witness("bucket_log_out", "has_inf", 0, "log(0) on the diagonal: -inf in FP32 already")
    return c


def index_math_signed_log_buckets():
    c = Case("index_math_signed_log_buckets",
             "DeBERTa's log-bucket positions: the signed i - j goes through integer ops (Sign, Abs, "
             "comparisons, a Where) before its float Casts; log buckets past 8, the position itself "
             "below, the sign put back, cast to an index. The chain is elementwise in i - j (not in "
             "the Range, which two Unsqueezes pair with itself): once calibration bounds i - j (20 "
             "tokens, margin 2), check follows every value -38..38 through the integer and float "
             "rules, the Where that discards log(0) included, and the chain may run in FP16.",
             "transformers DeBERTa-v2 make_log_bucket_position, exported with a symbolic sequence")
    x = c.input("x", [1, "seq", 4], -1, 1, c.rng.uniform(-1, 1, (1, 20, 4)))
    seq = c.node("Gather", "seq_len", [c.node("Shape", "x_shape", [x]), c.i64("seq_axis", 1)], axis=0)
    pos = c.node("Range", "positions", [c.i64("zero", 0), seq, c.i64("step", 1)])
    rel = c.node("Sub", "rel_sub", [c.node("Unsqueeze", "pos_row", [pos, c.i64("row_axes", [0])]),
                                    c.node("Unsqueeze", "pos_col", [pos, c.i64("col_axes", [1])])])
    sign = c.node("Sign", "rel_sign", [rel])
    near = c.node("And", "rel_near", [c.node("Less", "rel_lt", [rel, c.i64("mid", 8)]),
                                      c.node("Greater", "rel_gt", [rel, c.i64("neg_mid", -8)])])
    absp = c.node("Where", "rel_abs_pos", [near, c.i64("mid_minus_1", 7), c.node("Abs", "rel_abs", [rel])])
    f = c.node("Cast", "abs_to_float", [absp], to=onnx.TensorProto.FLOAT)
    lg = c.node("Log", "bucket_log", [c.node("Div", "bucket_div", [f, c.init("mid_f", 8.0)])])
    sc = c.node("Mul", "bucket_mul", [c.node("Div", "bucket_norm", [lg, c.init("log_ratio", float(np.log(63 / 8)))]),
                                      c.init("span", 7.0)])
    b = c.node("Add", "bucket_add", [c.node("Ceil", "bucket_ceil", [sc]), c.init("mid_f2", 8.0)])
    signed = c.node("Mul", "bucket_signed", [b, c.node("Cast", "sign_to_float", [sign], to=onnx.TensorProto.FLOAT)])
    small = c.node("LessOrEqual", "rel_small", [absp, c.i64("mid2", 8)])
    pick = c.node("Where", "bucket_pick", [small, c.node("Cast", "rel_to_float", [rel], to=onnx.TensorProto.FLOAT),
                                           signed])
    idx = c.node("Add", "bucket_shift", [c.node("Cast", "bucket_to_int", [pick], to=onnx.TensorProto.INT64),
                                         c.i64("offset", 16)])
    idx = c.node("Clip", "bucket_clip", [idx, c.i64("lo", 0), c.i64("hi", 31)])
    bias = c.node("Gather", "bias_gather", [c.init("bias_table", c.rng.normal(0, 1, 32)), idx], axis=0)
    pooled = c.node("ReduceMean", "pool", [x], axes=[2], keepdims=1)
    c.output(c.node("MatMul", "apply_bias", [bias, pooled]), [1, "seq", 1])
    c.expect_static_only("bucket_mul", "must-stay-fp32")
    return c


def index_math_long_positions():
    c = Case("index_math_long_positions",
             "Coarse position buckets over a long sequence: |i - j| cast to float, divided by 3 and "
             "cast back to an index. Past 2048 FP16 holds only even integers, so positions 2049, "
             "2051, ... land in the wrong bucket; calibration on 2100 tokens sees them, and trying "
             "every position proves the chain inexact: it stays FP32 with calibration too.",
             "bucketed relative positions (T5-style) over sequences past 2048 tokens")
    x = c.input("x", [1, "seq"], -1, 1, c.rng.uniform(-1, 1, (1, 2100)))
    shape = c.node("Shape", "x_shape", [x])
    seq = c.node("Gather", "seq_len", [shape, c.i64("seq_axis", 1)], axis=0)
    pos = c.node("Range", "positions", [c.i64("zero", 0), seq, c.i64("step", 1)])
    rel = c.node("Sub", "rel_sub", [c.node("Unsqueeze", "pos_row", [pos, c.i64("row_axes", [0])]),
                                    c.node("Unsqueeze", "pos_col", [pos, c.i64("col_axes", [1])])])
    f = c.node("Cast", "rel_to_float", [c.node("Abs", "rel_abs", [rel])], to=onnx.TensorProto.FLOAT)
    idx = c.node("Cast", "bucket_to_int", [c.node("Div", "bucket_div", [f, c.init("width", 3.0)])],
                 to=onnx.TensorProto.INT64)
    bias = c.node("Gather", "bias_gather", [c.init("bias_table", c.rng.normal(0, 1, 700)), idx], axis=0)
    c.output(c.node("ReduceMean", "pool", [bias], axes=[1], keepdims=0), ["seq"])
    c.expect("bucket_div", "must-stay-fp32")
    c.witness("rel_to_float_out", "absmax_gt", 2048.0, "positions past 2048, where FP16 skips odd integers")
    return c


def log_sigmoid_probs():
    c = Case("log_sigmoid_probs",
             "Log(Sigmoid(z)): a log-likelihood written out. FP32 holds sigmoid(-25) = 1.4e-11 and its "
             "log, -25; FP16 makes it 0 (everything under 3e-08 is), and the Log gives -inf. The "
             "Sigmoid and the Log stay FP32.",
             "torch.log(torch.sigmoid(x)) in losses, gates and score heads instead of F.logsigmoid")
    z = c.rng.normal(0, 10, (1, 64)).clip(-25, 25)
    z[0, 3] = -25.0  # one confident negative: sigmoid 1.4e-11
    z = c.input("z", [1, 64], -30, 30, z)
    p = c.node("Sigmoid", "ll_sigmoid", [z])
    c.output(c.node("Log", "ll_log", [p]))
    c.expect("ll_log", "underflow")
    c.witness("ll_sigmoid_out", "min_pos_lt", 2.0 ** -25, "a probability FP16 makes 0")
    return c


def log_one_minus_sigmoid():
    c = Case("log_one_minus_sigmoid",
             "Log(1 - Sigmoid(z)), the negative half of a binary cross-entropy or a log-survival term: "
             "FP32 holds 1 - sigmoid(12) = 6.1e-6, FP16 rounds sigmoid(12) to 1 and the difference is 0, "
             "so the Log gives -inf. The Sigmoid, the Sub and the Log stay FP32.",
             "torch.log(1 - torch.sigmoid(x)) in detection and survival heads instead of F.logsigmoid(-x)")
    z = c.rng.normal(0, 4, (1, 64)).clip(-14, 14)
    z[0, :4] = [10.0, 12.0, 13.0, 14.0]  # confident positives: 1 - p between 4.5e-5 and 8.3e-7
    z = c.input("z", [1, 64], -16, 16, z)
    q = c.node("Sub", "complement", [c.init("one", 1.0), c.node("Sigmoid", "p_sigmoid", [z])])
    c.output(c.node("Log", "q_log", [q]))
    c.expect("q_log", "underflow")
    c.witness("complement_out", "min_pos_lt", 2.0 ** -14, "a complement FP16 holds with fewer than 11 bits, or not at all")
    return c


def log_softmax_eps():
    c = Case("log_softmax_eps",
             "Log(Softmax(z) + 1e-10), as entropy and log-probability code writes it: FP16 makes the "
             "guard 0 and every probability under 3e-08 too, so the Log gives -inf where FP32 gives "
             "about -23. The Softmax, the Add and the Log stay FP32.",
             "torch.log(probs + 1e-10) (entropy regularisers, Gumbel-softmax, hand-written log-softmax)")
    z = c.input("logits", [1, 4, 32], -30, 30, c.rng.normal(0, 8, (1, 4, 32)).clip(-28, 28))
    p = c.node("Softmax", "lp_softmax", [z], axis=-1)
    pe = c.node("Add", "lp_add_eps", [p, c.init("eps", 1e-10)])
    c.output(c.node("Log", "lp_log", [pe]))
    c.expect("lp_add_eps", "underflow")
    c.expect("lp_log", "underflow")
    c.witness("lp_softmax_out", "min_pos_lt", 2.0 ** -25, "probabilities FP16 makes 0")
    return c


def control_log_softmax_bounded():
    c = Case("control_log_softmax_bounded",
             "Negative control: Log(Softmax(z)) over 16 classes with logits in [-3, 3]: every "
             "probability is at least e^-6 / 16 = 1.5e-4, inside FP16's normal range, and its log "
             "keeps FP16's 11 bits.",
             "log-probabilities of a temperature-scaled classifier head", negative_control=True)
    z = c.input("logits", [1, 16], -3, 3, c.rng.uniform(-3, 3, (1, 16)))
    c.output(c.node("Log", "lp_log", [c.node("Softmax", "lp_softmax", [z], axis=-1)]))
    return c


def rotary_long_context():
    c = Case("rotary_long_context",
             "Rotary position embedding over a symbolic sequence, calibrated at 2100 tokens: angles "
             "positions x inverse frequencies reach 2099, where FP16's spacing is 2, so the phase is "
             "off by up to a radian and odd positions past 2048 land on even ones. The positions, their "
             "product by the frequencies and the Cos and Sin stay FP32, as HF computes them.",
             "transformers LlamaRotaryEmbedding (autocast off, 'bfloat16 loses precision on long contexts')")
    d = 16
    x = c.input("x", [1, "seq", d], -1, 1, c.rng.uniform(-1, 1, (1, 2100, d)))
    seq = c.node("Gather", "seq_len", [c.node("Shape", "x_shape", [x]), c.i64("seq_axis", 1)], axis=0)
    pos = c.node("Range", "positions", [c.i64("zero", 0), seq, c.i64("step", 1)])
    posf = c.node("Unsqueeze", "pos_col", [c.node("Cast", "pos_to_float", [pos], to=TensorProto.FLOAT),
                                           c.i64("col_axes", [1])])
    inv = 1.0 / (10000.0 ** (np.arange(0, d, 2) / d))
    ang = c.node("Mul", "rope_freqs", [posf, c.init("inv_freq", inv.reshape(1, -1))])
    emb = c.node("Concat", "rope_emb", [ang, ang], axis=-1)
    cos = c.node("Cos", "rope_cos", [emb])
    sin = c.node("Sin", "rope_sin", [emb])
    half = d // 2
    x1 = c.node("Slice", "x_lo", [x, c.i64("lo_s", [0]), c.i64("lo_e", [half]), c.i64("lo_a", [2])])
    x2 = c.node("Slice", "x_hi", [x, c.i64("hi_s", [half]), c.i64("hi_e", [d]), c.i64("hi_a", [2])])
    rot = c.node("Concat", "rotate_half", [c.node("Neg", "x_hi_neg", [x2]), x1], axis=-1)
    c.output(c.node("Add", "rope_out", [c.node("Mul", "x_cos", [x, cos]), c.node("Mul", "rot_sin", [rot, sin])]),
             [1, "seq", d])
    c.expect("rope_cos", "precision-loss")
    c.expect("rope_sin", "precision-loss")
    c.witness("rope_emb_out", "absmax_gt", 2048.0, "angles past 2048, where FP16's spacing is 2")
    return c


def timestep_embedding():
    c = Case("timestep_embedding",
             "Sinusoidal timestep embedding of a diffusion UNet: t in [0, 999] times frequencies from 1 "
             "down, then Sin and Cos. At t near 999 FP16's spacing is 0.5, so sin(t) is anything; the "
             "angle and the Sin and Cos stay FP32.",
             "diffusers get_timestep_embedding (computed in float32 there too)")
    t = c.input("timestep", [2], 0, 999, np.array([999.0, 517.0]))
    half = 16
    freqs = np.exp(-np.log(10000.0) * np.arange(half) / half).reshape(1, -1)
    ang = c.node("Mul", "t_freqs", [c.node("Unsqueeze", "t_col", [t, c.i64("t_axes", [1])]), c.init("freqs", freqs)])
    emb = c.node("Concat", "t_emb", [c.node("Sin", "t_sin", [ang]), c.node("Cos", "t_cos", [ang])], axis=-1)
    w = c.rng.normal(0, 1 / np.sqrt(2 * half), (2 * half, 64))
    c.output(c.node("Gemm", "t_linear", [emb, c.init("t_w", w), c.init("t_b", np.zeros(64))]))
    c.expect("t_sin", "precision-loss")
    c.expect("t_cos", "precision-loss")
    c.witness("t_freqs_out", "absmax_gt", 512.0, "angles where FP16's spacing is 0.5")
    return c


def control_fourier_features():
    c = Case("control_fourier_features",
             "Negative control: Fourier features of coordinates in [-1, 1] at pi, 2 pi and 4 pi: every "
             "angle is within 4 pi, where FP16's spacing is 2^-7 and the phase is off by at most 0.004 rad.",
             "NeRF-style positional encodings of normalised coordinates, few octaves", negative_control=True)
    x = c.input("coords", [1, 128, 2], -1, 1, c.rng.uniform(-1, 1, (1, 128, 2)))
    ang = c.node("Mul", "ff_freqs", [c.node("Unsqueeze", "ff_col", [x, c.i64("ff_axes", [3])]),
                                     c.init("bands", np.pi * np.array([1.0, 2.0, 4.0]))])
    c.output(c.node("Concat", "ff_emb", [c.node("Sin", "ff_sin", [ang]), c.node("Cos", "ff_cos", [ang])], axis=-1))
    return c


def offset_layernorm_narrow():
    c = Case("offset_layernorm_narrow",
             "LayerNormalization over features of 5 +- 0.05 (a sensor reading with its offset): FP16's "
             "spacing at 5 is 2^-8, so the input keeps about 50 steps of its spread and the normalised "
             "output is 2% off. The input stays FP32 up to the LayerNormalization, which reads it so.",
             "tabular and sensor models normalising raw features that share a large offset")
    x = c.input("features", [1, 16, 64], 4.9, 5.1, (5 + c.rng.normal(0, 0.03, (1, 16, 64))).clip(4.9, 5.1))
    ln = c.node("LayerNormalization", "feat_ln", [x, c.init("ln_g", np.ones(64)), c.init("ln_b", np.zeros(64))],
                axis=-1, epsilon=1e-5)
    c.output(c.node("MatMul", "feat_proj", [ln, c.init("proj_w", c.rng.normal(0, 0.125, (64, 32)))]))
    c.expect("feat_ln", "precision-loss")
    c.witness("features", "absmax_gt", 4.0, "values where FP16's spacing is 2^-8, 6 times below their spread")
    return c


def offset_layernorm_decomposed():
    c = Case("offset_layernorm_decomposed",
             "The same narrow features through a LayerNorm written out (as PyTorch exports it before "
             "opset 17): fuse_layernorm makes it a LayerNormalization, which does not cure the input's "
             "spread, so check reports it at the Sub that centres it and does not count it as fixed.",
             "LayerNorm before opset 17 over offset features")
    x = c.input("features", [1, 16, 64], 4.9, 5.1, (5 + c.rng.normal(0, 0.03, (1, 16, 64))).clip(4.9, 5.1))
    y = decomposed_layernorm(c, x, 64, 1e-5, "ln")
    c.output(c.node("MatMul", "feat_proj", [y, c.init("proj_w", c.rng.normal(0, 0.125, (64, 32)))]))
    c.expect("ln_sub", "precision-loss")
    c.witness("features", "absmax_gt", 4.0, "values where FP16's spacing is 2^-8, 6 times below their spread")
    return c


def offset_sub_constant():
    c = Case("offset_sub_constant",
             "A raw reading of 1000 +- 1 standardised as (x - 1000) / 0.5: FP16 holds values near 1000 to "
             "0.5, so the difference keeps 4 steps. The Sub reads the input in FP32; the rest runs FP16.",
             "hand-written input standardisation of offset readings (pressures, temperatures in kelvin)")
    x = c.input("reading", [1, 128], 999, 1001, 1000 + c.rng.uniform(-1, 1, (1, 128)))
    d = c.node("Sub", "centre", [x, c.init("offset", 1000.0)])
    z = c.node("Div", "standardise", [d, c.init("scale", 0.5)])
    c.output(c.node("MatMul", "head", [z, c.init("head_w", c.rng.normal(0, 0.1, (128, 16)))]))
    c.expect("centre", "precision-loss")
    c.witness("reading", "absmax_gt", 512.0, "values where FP16's spacing is 0.5")
    return c


def control_offset_wide():
    c = Case("control_offset_wide",
             "Negative control: (x - 200) / 50 for x in [100, 300]: the spread of 200 is 800 of FP16's "
             "steps of 0.25 at 300, and the centred values keep them.",
             "standardisation of readings whose spread is wide next to their offset", negative_control=True)
    x = c.input("reading", [1, 128], 100, 300, c.rng.uniform(100, 300, (1, 128)))
    z = c.node("Div", "standardise", [c.node("Sub", "centre", [x, c.init("offset", 200.0)]), c.init("scale", 50.0)])
    c.output(c.node("MatMul", "head", [z, c.init("head_w", c.rng.normal(0, 0.1, (128, 16)))]))
    return c


def control_position_cumsum_mask():
    c = Case("control_position_cumsum_mask",
             "Negative control: DETR's sine position embedding counts a mask with CumSum over 1000 "
             "positions. Its input is a Cast of a boolean, its sums are integers up to 1000, and FP16 "
             "adds integers up to 2048 exactly, however long the axis.",
             "transformers DetrSinePositionEmbedding: pixel_mask.cumsum(1, dtype=float32)",
             negative_control=True)
    x = c.input("x", [1, 1000], -1, 1, c.rng.uniform(-1, 1, (1, 1000)))
    m = c.node("Cast", "mask_to_float", [c.node("Greater", "mask", [x, c.init("thresh", -0.5)])],
               to=onnx.TensorProto.FLOAT)
    cs = c.node("CumSum", "mask_cumsum", [m, c.i64("axis", 1)])
    c.output(c.node("Mul", "normalize", [cs, c.init("inv_len", 1.0 / 1000)]))
    return c


def prefix_sum_cancel():
    c = Case("prefix_sum_cancel",
             "Sliding-window sums as the difference of two prefix sums over 4096 steps: each prefix "
             "sum reaches ~2000-4096 (FP16 spacing 2-4), the window sum is their small difference. "
             "Window j is x[j+1 .. j+256] (no zero leads the prefix sums): the AveragePool of x[1:] "
             "with kernel 256 (avgpool_integral, through a reshape: a rank-2 signal has no spatial axis).",
             "moving averages and box filters written with cumsum (signal processing, NAFNet)")
    x = c.input("x", [1, 4096], 0, 1, c.rng.uniform(0.3, 1, (1, 4096)))  # mean 0.65: sums to ~2660
    cs = c.node("CumSum", "prefix_cumsum", [x, c.i64("cumsum_axis", 1)])
    axes = c.i64("slice_axes", [1])
    hi = c.node("Slice", "window_hi", [cs, c.i64("hi_starts", [256]), c.i64("hi_ends", [4096]), axes])
    lo = c.node("Slice", "window_lo", [cs, c.i64("lo_starts", [0]), c.i64("lo_ends", [3840]), axes])
    d = c.node("Sub", "window_sub", [hi, lo])
    c.output(c.node("Div", "window_mean", [d, c.init("window", 256.0)]))
    c.expect("prefix_cumsum", "precision-loss", "avgpool_integral")
    c.expect("window_sub", "precision-loss", "avgpool_integral")
    c.witness("prefix_cumsum_out", "absmax_gt", 2048.0, "prefix sums where FP16's spacing is >= 2")
    return c


def shape_math_resize_sizes():
    c = Case("shape_math_resize_sizes",
             "Float shape arithmetic: Shape -> Cast(float) -> Mul 1.5 -> Cast(int64) -> Concat -> "
             "Resize sizes. In FP16 the product rounds (e.g. 2049 * 1.5), giving a wrong size.",
             "F.interpolate(x, scale_factor=1.5) traced with dynamic shapes; YOLO/FPN upsamplers")
    # Dynamic height and width, as exported with dynamic_axes: the shape math really runs at run time.
    x = c.input("x", [1, 3, "height", "width"], 0, 1, smooth_image(c.rng, (1, 3, 32, 32), 0.5, 0.3).clip(0, 1))
    shp = c.node("Shape", "x_shape", [x])
    hw = c.node("Slice", "hw_slice", [shp, c.i64("hw_starts", [2]), c.i64("hw_ends", [4])])
    nc = c.node("Slice", "nc_slice", [shp, c.i64("nc_starts", [0]), c.i64("nc_ends", [2])])
    hwf = c.node("Cast", "hw_to_float", [hw], to=TensorProto.FLOAT)
    hws = c.node("Mul", "hw_scale", [hwf, c.init("scale_factor", 1.5)])
    hwi = c.node("Cast", "hw_to_int", [hws], to=TensorProto.INT64)
    sizes = c.node("Concat", "sizes_concat", [nc, hwi], axis=0)
    c.output(c.node("Resize", "upsample", [x, "", "", sizes], mode="nearest"))
    c.expect("hw_scale", "must-stay-fp32")
    return c


def shape_math_reshape():
    c = Case("shape_math_reshape",
             "Float shape arithmetic feeding Reshape: Shape -> Gather -> Cast(float) -> Mul 0.5 -> "
             "Floor -> Cast(int64) -> Concat -> Reshape. It stays FP32 while the width is unbounded "
             "(symbolic). Once calibration has seen it (16), check tries every width to 2048, FP16's "
             "exact integers, not just to the margin (sizes at deployment may differ more than a "
             "margin allows): halving and Floor are exact there, and the shape math may run in FP16.",
             "scripted models computing int(w * 0.5) in float (pixel shuffle, patch splitting; "
             "MobileViT's ceil(h / patch) * patch, torch.onnx.export with dynamo=False)")
    x = c.input("x", [1, 8, "width"], -1, 1, c.rng.uniform(-1, 1, (1, 8, 16)))
    shp = c.node("Shape", "x_shape", [x])
    w = c.node("Gather", "w_gather", [shp, c.i64("w_index", 2)], axis=0)
    wf = c.node("Cast", "w_to_float", [w], to=TensorProto.FLOAT)
    wh = c.node("Mul", "w_half", [wf, c.init("half", 0.5)])
    wfl = c.node("Floor", "w_floor", [wh])
    wi = c.node("Cast", "w_to_int", [wfl], to=TensorProto.INT64)
    wu = c.node("Unsqueeze", "w_unsqueeze", [wi, c.i64("unsqueeze_axes", [0])])
    target = c.node("Concat", "target_concat", [c.i64("lead_dims", [1, -1]), wu], axis=0)
    c.output(c.node("Reshape", "x_reshape", [x, target]), [1, "rows", "half_width"])
    c.expect_static_only("w_half", "must-stay-fp32")
    return c


def shape_math_static_inexact():
    c = Case("shape_math_static_inexact",
             "Float shape arithmetic on a static length of 2049 frames: Cast(float) -> Mul 1.5 -> "
             "Cast(int64) -> Resize sizes. FP32 gives 3073; in FP16 2049 rounds to 2048 and the size "
             "becomes 3072. Static shapes do not make the chain harmless in FP16; convert computes it once, "
             "in FP32, into the constant sizes FP32 gives (fold_shapes), and nothing of it is left to run.",
             "audio/spectrogram upsamplers exported with fixed lengths (2049 = n_fft/2 + 1 bins)")
    x = c.input("spec", [1, 80, 2049], -10, 10, c.rng.normal(-4, 2, (1, 80, 2049)).clip(-10, 10))
    shp = c.node("Shape", "spec_shape", [x])
    n = c.node("Slice", "len_slice", [shp, c.i64("len_starts", [2]), c.i64("len_ends", [3])])
    lead = c.node("Slice", "lead_slice", [shp, c.i64("lead_starts", [0]), c.i64("lead_ends", [2])])
    nf = c.node("Cast", "len_to_float", [n], to=TensorProto.FLOAT)
    ns = c.node("Mul", "len_scale", [nf, c.init("scale_factor", 1.5)])
    ni = c.node("Cast", "len_to_int", [ns], to=TensorProto.INT64)
    sizes = c.node("Concat", "sizes_concat", [lead, ni], axis=0)
    c.output(c.node("Resize", "stretch", [x, "", "", sizes], mode="nearest"))
    c.expect("len_scale", "must-stay-fp32", "fold_shapes")
    c.witness("len_to_float_out", "absmax_gt", 2048.0, "a length FP16 cannot hold exactly (2049)")
    return c


def resize_scales_runtime():
    c = Case("resize_scales_runtime",
             "Resize scales computed at runtime in float: Cast(Shape(ref)) / Cast(Shape(x)). FP16 "
             "scales round (1/3 steps, odd sizes) and give the wrong output size.",
             "FPN/U-Net 'upsample to the skip connection's size' exported with dynamic shapes")
    x = c.input("x", [1, 8, "h", "w"], 0, 1, c.rng.uniform(0, 1, (1, 8, 16, 16)))
    ref = c.input("ref", [1, 8, "ref_h", "ref_w"], 0, 1, c.rng.uniform(0, 1, (1, 8, 32, 32)))
    rs = c.node("Cast", "ref_shape_f", [c.node("Shape", "ref_shape", [ref])], to=TensorProto.FLOAT)
    xs = c.node("Cast", "x_shape_f", [c.node("Shape", "x_shape", [x])], to=TensorProto.FLOAT)
    scales = c.node("Div", "scales_div", [rs, xs])
    up = c.node("Resize", "fpn_resize", [x, "", scales], mode="nearest")
    c.output(c.node("Add", "fpn_add", [up, ref]))
    c.expect("scales_div", "must-stay-fp32")
    return c


def integral_image_nafnet():
    c = Case("integral_image_nafnet",
             "NAFNet's integral-image local average on a [0, 255] image: CumSum over W then H reaches "
             "32 * 32 * 255 = 261120.",
             "NAFNet/HINet test-time local converter (basicsr local_arch.py AvgPool2d)")
    img = smooth_image(c.rng, (1, 3, 32, 32), 100, 60).clip(0, 255)
    x = c.input("image", [1, 3, 32, 32], 0, 255, img)
    c.output(integral_image_avg(c, x, 8))
    c.expect("cumsum_h", "overflow", "avgpool_integral")  # cumsum_w peaks at 32 * 255 = 8160; Pad and Slices only cascade
    c.witness("cumsum_h_out", "absmax_gt", FP16_MAX, "a 32x32 image of mean ~100 sums to ~100000")
    return c


def integral_image_features():
    c = Case("integral_image_features",
             "The same integral image on a post-ReLU feature map in [0, 4], 64x64: the range fits "
             "(<= 16384) but the prefix sums reach thousands (FP16 spacing 4-16) while the window "
             "sums are their small differences.",
             "NAFNet's TLC at test time: the channel attention's global pooling becomes this local "
             "average over feature maps")
    f = np.maximum(c.rng.normal(1.0, 1.0, (1, 4, 64, 64)), 0).clip(0, 4)
    x = c.input("features", [1, 4, 64, 64], 0, 4, f)
    c.output(integral_image_avg(c, x, 8))
    c.expect("cumsum_h", "precision-loss", "avgpool_integral")
    c.expect("minus_s2", "precision-loss", "avgpool_integral")
    c.expect("minus_s3", "precision-loss", "avgpool_integral")
    c.witness("cumsum_h_out", "absmax_gt", 2048.0, "prefix sums where FP16's spacing is >= 2")
    return c


def layernorm_outliers():
    c = Case("layernorm_outliers",
             "Decomposed LayerNorm on hidden states with outlier channels (+-3000): (x - mean)^2 "
             "passes 65504 at the Pow.",
             "LLM 'massive activations' (OPT, LLaMA, BERT outlier dimensions) through an exported "
             "ReduceMean/Pow/Sqrt LayerNorm")
    h = c.rng.normal(0, 1, (1, 16, 256))
    h[..., 17] = 2200 + c.rng.normal(0, 100, (1, 16))   # two outlier channels, every token
    h[..., 201] = -1800 + c.rng.normal(0, 100, (1, 16))
    x = c.input("hidden", [1, 16, 256], -3000, 3000, h.clip(-2900, 2900))
    c.output(decomposed_layernorm(c, x, 256, 1e-5))
    c.expect("ln_pow", "overflow", "fuse_layernorm")
    c.witness("ln_pow_out", "absmax_gt", FP16_MAX, "2200^2 on the sample")
    return c


def conv_chain_no_norm():
    c = Case("conv_chain_no_norm",
             "8 Conv+ReLU layers without normalisation, each filter summing to 4.75: activations grow "
             "~4.75x per layer and pass 65504 at the 8th conv (the 7th stays at 4.75^7 = 55000).",
             "normalisation-free nets (VDSR-style, early SR/denoisers, Fixup/SkipInit nets)")
    g = 4.75
    img = smooth_image(c.rng, (1, 3, 32, 32), 0.3, 0.2).clip(0, 1)
    t = c.input("image", [1, 3, 32, 32], 0, 1, img)
    cin = 3
    for i in range(1, 9):
        w = c.rng.uniform(0.6, 1.4, (8, cin, 3, 3))
        w = w / w.sum(axis=(1, 2, 3), keepdims=True) * g  # every output channel gains exactly g
        t = c.node("Conv", f"conv{i}", [t, c.init(f"conv{i}_w", w)], pads=[1, 1, 1, 1])
        t = c.node("Relu", f"relu{i}", [t])
        cin = 8
    c.output(t)
    c.expect("conv8", "overflow", "rescale")
    c.witness("conv8_out", "absmax_gt", FP16_MAX, "the sample grows past FP16's max at conv8")
    c.witness("conv7_out", "absmax_lt", FP16_MAX / 2, "and not before, even with the margin of 2")
    return c


def resnet_no_norm():
    c = Case("resnet_no_norm",
             "A stem Conv and 7 residual blocks without normalisation (t = Relu(t + Conv(Relu(Conv(t))))), "
             "each branch gaining 4x, then global pooling and a Gemm head: the trunk grows 5x per block and "
             "passes 65504 in the last block; the Adds read two branches that must carry the same scale.",
             "Fixup/SkipInit residual nets, normalisation-free super-resolution (EDSR without BN)")
    img = smooth_image(c.rng, (1, 3, 32, 32), 0.3, 0.2).clip(0, 1)
    t = c.input("image", [1, 3, 32, 32], 0, 1, img)

    def conv(name, x, cin, gain):
        w = c.rng.uniform(0.6, 1.4, (8, cin, 3, 3))
        w = w / w.sum(axis=(1, 2, 3), keepdims=True) * gain  # every output channel gains exactly gain
        return c.node("Conv", name, [x, c.init(f"{name}_w", w), c.init(f"{name}_b", c.rng.uniform(0, 0.05, 8))],
                      pads=[1, 1, 1, 1])
    t = c.node("Relu", "stem_relu", [conv("stem", t, 3, 3.0)])
    for i in range(1, 8):
        a = c.node("Relu", f"block{i}_relu_a", [conv(f"block{i}_conv_a", t, 8, 1.0)])
        t = c.node("Relu", f"block{i}_relu", [c.node("Add", f"block{i}_add", [t, conv(f"block{i}_conv_b", a, 8, 4.0)])])
    t = c.node("Flatten", "flatten", [c.node("GlobalAveragePool", "gap", [t])], axis=1)
    fc_w = c.rng.normal(0, 1e-3, (10, 8))
    c.output(c.node("Gemm", "fc", [t, c.init("fc_w", fc_w), c.init("fc_b", np.zeros(10))], transB=1))
    c.expect("block7_conv_b", "overflow", "rescale")
    c.witness("block7_conv_b_out", "absmax_gt", FP16_MAX / 2, "the last branch comes within the margin of 2")
    c.witness("block7_add_out", "absmax_gt", FP16_MAX, "the trunk passes FP16's max in the last block")
    c.witness("block6_add_out", "absmax_lt", FP16_MAX / 2, "and not before, even with the margin of 2")
    return c


def attention_logits_scaled_after():
    c = Case("attention_logits_scaled_after",
             "MatMul(Q, K^T) then Mul by 1/sqrt(128): the product overflows before the scale brings "
             "it back, and the logits it makes (7650 for the aligned token) are past what FP16 holds "
             "to the unit: moving the scale in front would cure the overflow, not the precision, so "
             "the product stays FP32 with the Softmax.",
             "attention exported as (q @ k.T) * scale instead of (q * scale) @ k.T; attention sinks "
             "with massive activations")
    s = c.rng.choice([-1.0, 1.0], 128)
    q = c.rng.normal(0, 1, (1, 4, 16, 128))
    k = c.rng.normal(0, 1, (1, 4, 16, 128))
    q[:, :, 0, :] += 26 * s  # the first token aligned in q and k: 128 * 26^2 = 86528
    k[:, :, 0, :] += 26 * s
    q = c.input("q", [1, 4, 16, 128], -64, 64, q)
    k = c.input("k", [1, 4, 16, 128], -64, 64, k)
    v = c.input("v", [1, 4, 16, 128], -64, 64, c.rng.normal(0, 1, (1, 4, 16, 128)))
    kt = c.node("Transpose", "k_transpose", [k], perm=[0, 1, 3, 2])
    qk = c.node("MatMul", "qk_matmul", [q, kt])
    sc = c.node("Mul", "qk_scale", [qk, c.init("inv_sqrt_d", 1 / np.sqrt(128))])
    p = c.node("Softmax", "attn_softmax", [sc], axis=-1)
    c.output(c.node("MatMul", "attn_v_matmul", [p, v]))
    c.expect("qk_matmul", "overflow")
    c.expect("attn_softmax", "precision-loss")
    c.witness("qk_matmul_out", "absmax_gt", FP16_MAX, "the aligned token's logit before the scale")
    return c


def attention_scale_cures():
    c = Case("attention_scale_cures",
             "MatMul(Q, K^T) over a 4096-wide head, then Mul by 1/sqrt(4096) = 1/64: the product may "
             "pass 65504 (static bound 65536) but the scaled logits stay under 1024, so moving the "
             "scale in front of the MatMul (prescale) leaves nothing for FP32.",
             "single-head attention over wide features exported as (q @ k.T) * scale (issue 6's "
             "acceptance case: 100% of MACs in FP16)")
    s = c.rng.choice([-1.0, 1.0], 4096)
    q = c.rng.normal(0, 0.1, (1, 16, 4096))
    k = c.rng.normal(0, 0.1, (1, 16, 4096))
    q[:, 0, :] += 3.5 * s  # the first token aligned in q and k: 4096 * 3.5^2 = 50176
    k[:, 0, :] += 3.5 * s
    q = c.input("q", [1, 16, 4096], -4, 4, q.clip(-4, 4))
    k = c.input("k", [1, 16, 4096], -4, 4, k.clip(-4, 4))
    v = c.input("v", [1, 16, 64], -4, 4, c.rng.normal(0, 1, (1, 16, 64)).clip(-4, 4))
    kt = c.node("Transpose", "k_transpose", [k], perm=[0, 2, 1])
    qk = c.node("MatMul", "qk_matmul", [q, kt])
    sc = c.node("Mul", "qk_scale", [qk, c.init("inv_sqrt_d", 1 / 64.0)])
    p = c.node("Softmax", "attn_softmax", [sc], axis=-1)
    c.output(c.node("MatMul", "attn_v_matmul", [p, v]))
    c.expect("qk_matmul", "overflow", "prescale")
    c.witness("qk_matmul_out", "absmax_gt", FP16_MAX / 2,
              "the aligned token's product passes 65504 with the default calibration margin of 2")
    return c


def l2norm_reducesum():
    c = Case("l2norm_reducesum",
             "L2 normalisation x / Sqrt(ReduceSum(x * x)) on a 512-d embedding: the sum of squares "
             "passes 65504.",
             "face/CLIP embedding heads and F.normalize written out by hand")
    x = c.input("x", [1, 512], -100, 100, c.rng.normal(0, 20, (1, 512)).clip(-90, 90))
    sq = c.node("Mul", "sq_mul", [x, x])
    ss = c.node("ReduceSum", "sumsq_reduce", [sq, c.i64("sum_axes", [1])], keepdims=1)
    n = c.node("Sqrt", "norm_sqrt", [ss])
    c.output(c.node("Div", "l2_div", [x, n]))
    c.expect("sumsq_reduce", "overflow", "prescale")  # sq_mul peaks at 10000: the sum is the first to overflow
    c.witness("sumsq_reduce_out", "absmax_gt", FP16_MAX, "512 * 20^2 on the sample")
    return c


def normalize_eps_1e12():
    c = Case("normalize_eps_1e12",
             "F.normalize(x, dim=-1) as exported: x / Expand(Clip(ReduceL2(x), 1e-12)) over 4 token "
             "embeddings of 512, the last a padding row of zeros. In FP16 the floor 1e-12 is 0, so the "
             "zero row divides 0 by 0 (NaN) where FP32 gives 0; clamp_constants raises the floor to "
             "2^-23, twice FP16's smallest value, which changes only norms below it.",
             "transformers Swinv2SelfAttention's cosine attention (F.normalize on queries and keys), "
             "CLIP and ArcFace embedding heads")
    sample = c.rng.normal(0, 1, (4, 512)).clip(-3.9, 3.9)
    sample[3] = 0.0
    x = c.input("x", [4, 512], -4, 4, sample)
    n = c.node("ReduceL2", "l2_norm", [x], axes=[1], keepdims=1)
    f = c.node("Clip", "norm_floor", [n, c.init("eps", 1e-12)])
    e = c.node("Expand", "norm_expand", [f, c.i64("x_shape", [4, 512])])
    c.output(c.node("Div", "normalize_div", [x, e]))
    c.expect("normalize_div", "division-by-zero", "clamp_constants")
    c.witness("l2_norm_out", "has_zero", 0, "the padding row's norm is 0")
    return c


def softplus_exp_log():
    c = Case("softplus_exp_log",
             "Softplus written as Log(Add(Exp(x), 1)): Exp's output passes 65504 above x = 11.09.",
             "hand-written softplus/Mish/log-sum-exp in exported models")
    x = c.input("x", [1, 256], -30, 30, c.rng.normal(0, 5, (1, 256)).clip(-25, 25))
    e = c.node("Exp", "sp_exp", [x])
    a = c.node("Add", "sp_add_one", [e, c.init("one", 1.0)])
    c.output(c.node("Log", "sp_log", [a]))
    c.expect("sp_exp", "overflow", "stable_softplus")
    c.witness("sp_exp_out", "absmax_gt", FP16_MAX, "exp of the sample's largest value")
    return c


def control_conv_bn_relu():
    c = Case("control_conv_bn_relu",
             "Negative control: 4 Conv-BatchNorm-ReLU blocks (He-initialised, BN statistics fitted to "
             "real activations) and a GAP + Gemm classifier, image in [0, 1].",
             "ResNet/VGG-style classifiers", negative_control=True)
    img = smooth_image(c.rng, (1, 3, 32, 32), 0.45, 0.25).clip(0, 1)
    # BN statistics come from a batch of images like the sample, so BN really normalises.
    batch = np.concatenate([smooth_image(c.rng, (1, 3, 32, 32), c.rng.uniform(0.3, 0.6), 0.25).clip(0, 1)
                            for _ in range(8)] + [img])
    t = c.input("image", [1, 3, 32, 32], 0, 1, img)
    act = batch
    cin = 3
    for i, (cout, stride) in enumerate([(16, 1), (32, 2), (32, 1), (64, 2)], 1):
        w = he_normal(c.rng, cout, cin)
        z = conv2d(act, w, stride=stride)
        mean, var = z.mean(axis=(0, 2, 3)), z.var(axis=(0, 2, 3))
        gamma, beta = c.rng.uniform(0.8, 1.2, cout), c.rng.normal(0, 0.1, cout)
        t = c.node("Conv", f"conv{i}", [t, c.init(f"conv{i}_w", w)], pads=[1, 1, 1, 1], strides=[stride, stride])
        t = c.node("BatchNormalization", f"bn{i}",
                   [t, c.init(f"bn{i}_scale", gamma), c.init(f"bn{i}_bias", beta),
                    c.init(f"bn{i}_mean", mean), c.init(f"bn{i}_var", var)], epsilon=1e-5)
        t = c.node("Relu", f"relu{i}", [t])
        act = np.maximum((z - mean.reshape(1, -1, 1, 1)) / np.sqrt(var.reshape(1, -1, 1, 1) + 1e-5)
                         * gamma.reshape(1, -1, 1, 1) + beta.reshape(1, -1, 1, 1), 0)
        cin = cout
    t = c.node("GlobalAveragePool", "gap", [t])
    t = c.node("Flatten", "flatten", [t], axis=1)
    fc_w = c.rng.normal(0, np.sqrt(1 / 64), (10, 64))
    c.output(c.node("Gemm", "fc", [t, c.init("fc_w", fc_w), c.init("fc_b", np.zeros(10))], transB=1))
    return c


def control_conv_clip_conv():
    c = Case("control_conv_clip_conv",
             "Negative control: Conv -> Clip(0, 6) (ReLU6) -> Conv, image in [0, 1].",
             "MobileNet v1/v2 blocks", negative_control=True)
    img = smooth_image(c.rng, (1, 3, 32, 32), 0.5, 0.25).clip(0, 1)
    t = c.input("image", [1, 3, 32, 32], 0, 1, img)
    t = c.node("Conv", "conv1", [t, c.init("conv1_w", he_normal(c.rng, 16, 3)),
                                 c.init("conv1_b", c.rng.normal(0, 0.1, 16))], pads=[1, 1, 1, 1])
    t = c.node("Clip", "relu6", [t, c.init("clip_min", 0.0), c.init("clip_max", 6.0)])
    c.output(c.node("Conv", "conv2", [t, c.init("conv2_w", he_normal(c.rng, 16, 16)),
                                      c.init("conv2_b", c.rng.normal(0, 0.1, 16))], pads=[1, 1, 1, 1]))
    return c


CASES = [
    overflow_mul_const, gelu_tanh_pow,
    internal_overflow_reducemean, internal_overflow_reducel2, internal_overflow_softplus,
    layernorm_eps_1e12, underflow_tiny_weights, control_tiny_weights_beside_bias,
    nonfinite_inf_clip, attention_f32min_mask, causal_mask_initializer, anchor_fill_max_sigmoid,
    division_by_zero_relu, log_sigmoid_probs, log_one_minus_sigmoid, log_softmax_eps, rotary_long_context, timestep_embedding,
    offset_layernorm_narrow, offset_layernorm_decomposed, offset_sub_constant,
    precision_softmax_large, precision_cumsum_long, alibi_long_context, prefix_sum_cancel, index_math_buckets, index_math_long_positions,
    index_math_signed_log_buckets,
    shape_math_resize_sizes, shape_math_reshape, shape_math_static_inexact, resize_scales_runtime,
    integral_image_nafnet, integral_image_features, layernorm_outliers, conv_chain_no_norm, resnet_no_norm,
    attention_logits_scaled_after, attention_scale_cures, l2norm_reducesum, normalize_eps_1e12, softplus_exp_log,
    control_conv_bn_relu, control_conv_clip_conv, control_reducemean_global_average,
    control_rmsnorm_eps_1e5, control_folded_conv_bias, control_position_cumsum_mask, control_log_softmax_bounded,
    control_fourier_features, control_offset_wide,
]

KINDS = {"overflow", "internal-overflow", "underflow", "non-finite-constant", "division-by-zero",
         "precision-loss", "must-stay-fp32"}


def main(argv):
    if len(argv) < 2:
        sys.exit("usage: make_cases.py OUTDIR [CASE...]")
    outdir, only = argv[1], set(argv[2:])
    os.makedirs(outdir, exist_ok=True)
    manifest = []
    for make in CASES:
        if only and make.__name__ not in only:
            continue
        c = make()
        assert c.name == make.__name__, c.name
        assert c.negative_control == (not c.expected and not c.static_only), c.name
        assert all(e[1] in KINDS for e in c.expected + c.static_only), c.name
        m = c.model()
        onnx.save(m, os.path.join(outdir, c.name + ".onnx"))
        data = os.path.join(outdir, c.name + ".data")
        os.makedirs(data, exist_ok=True)
        for old in os.listdir(data):  # a rerun into the same OUTDIR must not keep stale inputs
            if old.startswith("input_") and old.endswith(".pb"):
                os.remove(os.path.join(data, old))
        for i, t in enumerate(c.samples):
            with open(os.path.join(data, f"input_{i}.pb"), "wb") as f:
                f.write(t.SerializeToString())
        manifest.append({"name": c.name, "model": c.name + ".onnx", "data": c.name + ".data",
                         "input_ranges": c.ranges, "options": c.options, "expected": c.expected,
                         "static_only": c.static_only,
                         "negative_control": c.negative_control, "description": c.description,
                         "origin": c.origin, "witnesses": c.witnesses})
    if only and len(manifest) != len(only):
        sys.exit(f"make_cases.py: unknown case in {sorted(only)}")
    with open(os.path.join(outdir, "cases.json"), "w") as f:
        json.dump({"format": "halfguard-pathology", "version": 1, "cases": manifest}, f, indent=1)
        f.write("\n")
    print(f"{len(manifest)} cases written to {outdir}")


if __name__ == "__main__":
    main(sys.argv)
