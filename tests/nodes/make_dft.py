#!/usr/bin/python3
"""Write DFT node tests in the ONNX backend layout, for the suites that walk node tests (conformance,
ranges-sound, traits-true): Debian's onnx 1.12 data holds the three opset 17 backend tests (test_dft,
_axis, _inverse: an arange, no dft_length, no onesided) and the shared corpus none, so the opset 20
form, dft_length and onesided would go untested.

Usage: make_dft.py OUTDIR STAMP

OUTDIR/test_dft_*/ gets model.onnx and test_data_set_0/{input_K.pb, output_0.pb}. The cases: real and
complex inputs with mixed signs at opsets 17 and 20, the axis as an attribute (default 1) and as an
input (default -2, negative, positive, and a graph input rather than an initializer, with
dft_length), onesided (odd and even lengths), inverse, dft_length that zero-pads and one that
truncates, one in double and one in float16.

The expected outputs are not halfguard's: numpy.fft.fft / ifft in float64 (n= pads or truncates as
dft_length does), the first n // 2 + 1 frequencies where onesided, rounded once to the input's type.
onnxruntime 1.30's DFT agrees on every case (within 1e-6 of the largest output in float, 2e-5 in
float16). Writes STAMP last; without python3-onnx it writes only STAMP (the suites skip an absent
folder).
"""
import os
import sys

import numpy as np

import nodetest


def mixed(shape, seed):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(shape) * 2).astype(np.float32)


def cases():
    # name, opset, x, attributes, dft_length (None: omitted), axis input (None: omitted),
    # axis and dft_length as graph inputs
    return [
        ("test_dft_inverse_axis2_opset17", 17, mixed((2, 3, 5, 2), 14), {"axis": 2, "inverse": 1}, None,
         None, False),
        ("test_dft_default_axis_opset17", 17, mixed((3, 5, 2), 1), {}, None, None, False),
        ("test_dft_real_opset20", 20, mixed((2, 3, 8, 1), 2), {}, None, None, False),
        ("test_dft_complex_axis0_opset20", 20, mixed((6, 3, 2), 3), {}, None, 0, False),
        ("test_dft_onesided_opset20", 20, mixed((2, 7, 4, 1), 4), {"onesided": 1}, None, -3, False),
        ("test_dft_onesided_even_opset20", 20, mixed((2, 8, 1), 5), {"onesided": 1}, None, None, False),
        ("test_dft_inverse_opset20", 20, mixed((2, 3, 9, 2), 6), {"inverse": 1}, None, 2, False),
        ("test_dft_pad_opset20", 20, mixed((2, 5, 3, 1), 7), {}, 8, 1, False),
        ("test_dft_truncate_opset20", 20, mixed((2, 9, 3, 2), 8), {}, 4, 1, False),
        ("test_dft_inverse_pad_opset20", 20, mixed((4, 6, 2), 9), {"inverse": 1}, 10, None, False),
        ("test_dft_onesided_truncate_opset17", 17, mixed((3, 11, 1), 10), {"onesided": 1, "axis": 1}, 6,
         None, False),
        ("test_dft_inputs_opset20", 20, mixed((2, 6, 5, 2), 11), {}, 7, 1, True),
        ("test_dft_double_opset20", 20, mixed((3, 12, 2), 12).astype(np.float64), {}, None, None, False),
        ("test_dft_float16_opset20", 20, (mixed((2, 16, 1), 13) / 4).astype(np.float16), {}, None, None,
         False),
    ]


def expected(x, opset, attrs, dft_length, axis):
    if axis is None:
        axis = attrs.get("axis", 1) if opset < 20 else -2
    axis %= x.ndim
    sig = x[..., 0].astype(np.float64)
    if x.shape[-1] == 2:
        sig = sig + 1j * x[..., 1].astype(np.float64)
    n = dft_length or x.shape[axis]
    f = np.fft.ifft if attrs.get("inverse", 0) else np.fft.fft
    y = f(sig, n=n, axis=axis)
    if attrs.get("onesided", 0):
        y = np.take(y, np.arange(n // 2 + 1), axis=axis)
    return np.stack([y.real, y.imag], -1).astype(x.dtype)


def write_all(out):
    import onnx
    from onnx import helper, numpy_helper
    elem = {np.float32: onnx.TensorProto.FLOAT, np.float64: onnx.TensorProto.DOUBLE,
            np.float16: onnx.TensorProto.FLOAT16}
    for name, opset, x, attrs, dft_length, axis, as_inputs in cases():
        y = expected(x, opset, attrs, dft_length, axis)
        t = elem[x.dtype.type]
        params = []
        names = ["input", "", ""]
        if dft_length is not None:
            params.append(numpy_helper.from_array(np.int64(dft_length), "dft_length"))
            names[1] = "dft_length"
        if axis is not None:
            params.append(numpy_helper.from_array(np.int64(axis), "axis"))
            names[2] = "axis"
        while names[-1] == "":
            names.pop()
        node = helper.make_node("DFT", names, ["output"], **attrs)
        nodetest.write_case(out, name, node, x, y, params, as_inputs, t, opset, 8 if opset < 20 else 9)


if __name__ == "__main__":
    nodetest.generate(sys.argv, write_all)
