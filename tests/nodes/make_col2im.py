#!/usr/bin/python3
"""Write Col2Im node tests in the ONNX backend layout, for the suites that walk node tests
(conformance, ranges-sound, traits-true): Debian's onnx 1.12 test data predates Col2Im (opset 18)
and the shared corpus holds none.

Usage: make_col2im.py OUTDIR STAMP

OUTDIR/test_col2im*/ gets model.onnx and test_data_set_0/{input_K.pb, output_0.pb}. The cases are
those of ONNX's backend node tests (test_col2im, _strides, _pads, _dilations, _5d: same shapes,
attributes and input values) and one that mixes strides, dilations and asymmetric pads over two
images and two channels; image_shape and block_shape are initializers, as exporters write them,
and graph inputs in test_col2im_shape_inputs, as the backend tests have them.

The expected outputs are not halfguard's: Col2Im is the adjoint (transpose) of Im2Col, so each is
A^T x with A the Im2Col matrix, built by a plain im2col (zero-pad, then slice each block out) of
every basis image. onnxruntime 1.30's Col2Im gives the same values on every case. Writes STAMP last;
without python3-onnx it writes only STAMP (the suites skip an absent folder).
"""
import itertools
import os
import sys

import numpy as np

import nodetest


def im2col(img, block, strides, dil, pads):
    n = len(block)
    padded = np.pad(img, [(pads[i], pads[n + i]) for i in range(n)])
    nb = [(padded.shape[i] - dil[i] * (block[i] - 1) - 1) // strides[i] + 1 for i in range(n)]
    cols = np.zeros((int(np.prod(block)), int(np.prod(nb))))
    for l, b in enumerate(itertools.product(*[range(x) for x in nb])):
        for k, kk in enumerate(itertools.product(*[range(x) for x in block])):
            cols[k, l] = padded[tuple(b[i] * strides[i] + kk[i] * dil[i] for i in range(n))]
    return cols


def col2im(x, image, block, strides, dil, pads):
    n_img, ck, _ = x.shape
    k = int(np.prod(block))
    npix = int(np.prod(image))
    a = np.stack([im2col(np.eye(npix)[j].reshape(image), block, strides, dil, pads).ravel()
                  for j in range(npix)], 1)
    out = np.zeros((n_img, ck // k, npix))
    for i in range(n_img):
        for c in range(ck // k):
            out[i, c] = a.T @ x[i, c * k:(c + 1) * k].ravel()
    return out.reshape([n_img, ck // k] + list(image))


def cases():
    seq = lambda n, shape: np.arange(1, n + 1, dtype=np.float32).reshape(shape)
    mixed = seq(96, (2, 8, 6)) * np.resize(np.float32([1, -0.5, 0.25]), 96).reshape(2, 8, 6)
    return [
        # name, input, image_shape, block_shape, attributes, shapes as graph inputs
        ("test_col2im", seq(25, (5, 5)).T.reshape(1, 5, 5), [5, 5], [1, 5], {}, False),
        ("test_col2im_shape_inputs", seq(25, (5, 5)).T.reshape(1, 5, 5), [5, 5], [1, 5], {}, True),
        ("test_col2im_strides", np.float32([[0, 0, 0, 0], [1, 1, 1, 1], [1, 1, 1, 1], [1, 1, 1, 1],
                                            [0, 0, 0, 0], [0, 0, 0, 0], [0, 0, 0, 0], [1, 1, 1, 1],
                                            [0, 0, 0, 0]]).reshape(1, 9, 4),
         [5, 5], [3, 3], {"strides": [2, 2]}, False),
        ("test_col2im_pads", seq(75, (1, 5, 15)), [5, 5], [1, 5], {"pads": [0, 1, 0, 1]}, False),
        ("test_col2im_dilations", seq(20, (1, 4, 5)), [6, 6], [2, 2], {"dilations": [1, 5]}, False),
        ("test_col2im_5d", seq(120, (1, 10, 12)), [3, 4, 5], [1, 1, 5], {}, False),
        ("test_col2im_mixed", mixed, [3, 5], [2, 2],
         {"strides": [1, 2], "dilations": [2, 1], "pads": [0, 1, 1, 0]}, False),
    ]


def write_all(out):
    from onnx import TensorProto, helper, numpy_helper
    for name, x, image, block, attrs, as_inputs in cases():
        n = len(image)
        y = col2im(x.astype(np.float64), image, block, attrs.get("strides", [1] * n),
                   attrs.get("dilations", [1] * n), attrs.get("pads", [0] * (2 * n))).astype(np.float32)
        img = numpy_helper.from_array(np.int64(image), "image_shape")
        blk = numpy_helper.from_array(np.int64(block), "block_shape")
        node = helper.make_node("Col2Im", ["input", "image_shape", "block_shape"], ["output"], **attrs)
        nodetest.write_case(out, name, node, x, y, [img, blk], as_inputs, TensorProto.FLOAT, 18, 8)


if __name__ == "__main__":
    nodetest.generate(sys.argv, write_all)
