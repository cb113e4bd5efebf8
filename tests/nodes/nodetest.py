"""What the build-time node-test generators (make_col2im.py, make_dft.py) share: one ONNX
backend-style test folder (model.onnx, test_data_set_0/input_K.pb and output_0.pb) for a one-node
model whose constant inputs are initializers, or graph inputs fed with the same values."""
import os


def generate(argv, write_all):
    """A generator's main: argv is [prog, OUT, STAMP]; write_all(OUT) writes the cases. Without
    python3-onnx nothing is written and STAMP says so (the node tests then have no such cases)."""
    out, stamp = argv[1], argv[2]
    try:
        import onnx  # noqa: F401
    except ImportError:
        open(stamp, "w").write("skipped: no python3-onnx\n")
        return
    write_all(out)
    open(stamp, "w").write("ok\n")


def write_case(out, name, node, x, y, params, as_inputs, elem, opset, ir_version):
    """OUT/NAME for node reading `input` (x, of ONNX element type elem) and the int64 tensors
    `params` (initializers, or graph inputs when as_inputs), writing `output` (y, of the same type)."""
    import onnx
    from onnx import helper, numpy_helper
    inputs = [helper.make_tensor_value_info("input", elem, list(x.shape))]
    if as_inputs:
        inputs += [helper.make_tensor_value_info(p.name, onnx.TensorProto.INT64, list(p.dims)) for p in params]
    graph = helper.make_graph([node], name, inputs, [helper.make_tensor_value_info("output", elem, list(y.shape))],
                              [] if as_inputs else params)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = ir_version  # onnx 1.12 knows neither schema: no checker
    data = os.path.join(out, name, "test_data_set_0")
    os.makedirs(data, exist_ok=True)
    onnx.save(model, os.path.join(out, name, "model.onnx"))
    feeds = [numpy_helper.from_array(x, "input")] + (list(params) if as_inputs else [])
    for k, t in enumerate(feeds):
        with open(os.path.join(data, f"input_{k}.pb"), "wb") as f:
            f.write(t.SerializeToString())
    with open(os.path.join(data, "output_0.pb"), "wb") as f:
        f.write(numpy_helper.from_array(y, "output").SerializeToString())
