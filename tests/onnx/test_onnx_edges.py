"""Single-node ONNX models at the edges of their attributes and types (where the onnx node tests don't reach) run through
OnnxRunner and match onnxruntime: same dtype, same shape, same values."""
import numpy as np
import pytest
onnx = pytest.importorskip("onnx", reason="OnnxRunner needs onnx: pip install tinygrad-core[onnx]")
ort = pytest.importorskip("onnxruntime", reason="the reference is onnxruntime: pip install onnxruntime")
from onnx import helper, numpy_helper, TensorProto
from tinygrad import dtypes
from tinygrad.nn.onnx import OnnxRunner, main, onnx_ops

_TP = {np.dtype(k): v for k, v in {np.float32: TensorProto.FLOAT, np.float16: TensorProto.FLOAT16, np.float64: TensorProto.DOUBLE,
       np.int8: TensorProto.INT8, np.uint8: TensorProto.UINT8, np.int32: TensorProto.INT32, np.int64: TensorProto.INT64, np.bool_: TensorProto.BOOL}.items()}

def node_model(op: str, inputs: dict[str, np.ndarray], out_types: list[int], attrs: dict | None = None, init: dict[str, np.ndarray] | None = None,
               opset: int = 18) -> bytes:
  # one node: graph inputs `inputs` then initializers `init`, in that order, as the node's inputs
  init = init or {}
  outs = [f"y{i}" for i in range(len(out_types))]
  g = helper.make_graph([helper.make_node(op, [*inputs, *init], outs, **(attrs or {}))], "g",
                        [helper.make_tensor_value_info(k, _TP[v.dtype], v.shape) for k, v in inputs.items()],
                        [helper.make_tensor_value_info(o, t, None) for o, t in zip(outs, out_types)],
                        initializer=[numpy_helper.from_array(v, k) for k, v in init.items()])
  m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
  m.ir_version = 8
  return m.SerializeToString()

def check(model: bytes, inputs: dict[str, np.ndarray], rtol: float = 1e-5) -> None:
  ref = ort.InferenceSession(model, providers=["CPUExecutionProvider"]).run(None, inputs)
  got = OnnxRunner(model)(inputs)
  for r, (name, g) in zip(ref, got.items()):
    out = g.numpy()
    assert out.dtype == r.dtype and out.shape == r.shape, f"{name}: {out.dtype}{out.shape} != {r.dtype}{r.shape}"
    np.testing.assert_allclose(out, r, rtol=rtol, atol=rtol)

@pytest.mark.parametrize("op", ["ReduceL1", "ReduceL2", "ReduceSumSquare", "ReduceLogSum", "ReduceLogSumExp", "ReduceSum", "ReduceMax"])
def test_reduce_noop_with_empty_axes_applies_elementwise_part(op):
  # no axes and noop_with_empty_axes=1 reduce over nothing: ReduceL1 is |x|, ReduceSumSquare x*x (the input came back unchanged)
  x = np.random.default_rng(0).standard_normal((3, 4)).astype(np.float32)
  if op == "ReduceLogSum": x = np.abs(x)
  check(node_model(op, {"x": x}, [TensorProto.FLOAT], {"noop_with_empty_axes": 1}), {"x": x})

@pytest.mark.parametrize("dt", [np.int32, np.int64])
@pytest.mark.parametrize("op", ["ReduceMean", "ReduceL2", "ReduceLogSum"])
def test_reduce_int_keeps_dtype(op, dt):
  # the output is the input's type: an int ReduceMean was float32 (its mean truncates toward zero, as onnxruntime's)
  x = np.random.default_rng(1).integers(-50, 50, (4, 7)).astype(dt)
  if op == "ReduceLogSum": x = np.abs(x) + 1
  check(node_model(op, {"x": x}, [_TP[np.dtype(dt)]], {"keepdims": 0}, {"a": np.array([1], np.int64)}), {"x": x})

@pytest.mark.parametrize("axis", [None, 0, -1])
def test_compress_condition_longer_than_axis(axis):
  # condition entries past the axis's end select nothing: axis=0 of a (2, 3) tensor with [T, F, T] gave a (2, 3), its second row zeros
  x = np.arange(6, dtype=np.float32).reshape(2, 3) + 1
  cond = np.array([True, False, True, True, False, False, True, True], dtype=bool)[:3 if axis is not None else 8]
  check(node_model("Compress", {"x": x}, [TensorProto.FLOAT], {} if axis is None else {"axis": axis}, {"c": cond}), {"x": x})

@pytest.mark.parametrize("wrong", [lambda x: x.cast(dtypes.float64), lambda x: x.reshape(1, *x.shape)])
def test_cli_compare_checks_dtype_and_shape(tmp_path, monkeypatch, capsys, wrong):
  # --compare-onnxruntime said "matches" for an output of the wrong dtype, or of a shape that broadcasts to onnxruntime's
  p = tmp_path / "m.onnx"
  p.write_bytes(node_model("Identity", {"x": np.zeros((2, 3), np.float32)}, [TensorProto.FLOAT]))
  assert main([str(p), "--compare-onnxruntime"]) == 0
  monkeypatch.setitem(onnx_ops, "Identity", lambda ctx, x: wrong(x))
  assert main([str(p), "--compare-onnxruntime"]) == 1
  assert "DIFFERS" in capsys.readouterr().out

def test_cli_negative_dim(tmp_path):
  p = tmp_path / "m.onnx"
  p.write_bytes(node_model("Identity", {"x": np.zeros((2, 3), np.float32)}, [TensorProto.FLOAT]))
  with pytest.raises(SystemExit): main([str(p), "--dim", "N=-2"])

@pytest.mark.parametrize("scales", [(1, 1, 0.5, 0.7), (1, 1, 2, 0.7), (1, 1, 1.7, 2.5)])
def test_resize_opset10_nearest_downsample_rounds_up(scales):
  # opset 10 has no nearest_mode: onnxruntime takes ceil(x / scale) on a downsampled axis (0.7 of 6: columns 0, 2, 3, 5), floor on an
  # upsampled one; every axis was floored (columns 0, 1, 2, 4)
  x = np.random.default_rng(2).standard_normal((1, 2, 4, 6)).astype(np.float32)
  check(node_model("Resize", {"x": x}, [TensorProto.FLOAT], {"mode": "nearest"}, {"s": np.array(scales, np.float32)}, opset=10), {"x": x})

def test_attribute_forms_of_early_opsets():
  # TopK's k (before opset 10) and Reshape's shape (before opset 5) as attributes: an AttributeError ('int' has no numpy) before
  x = np.random.default_rng(3).standard_normal((3, 4, 5)).astype(np.float32)
  check(node_model("TopK", {"x": x}, [TensorProto.FLOAT, TensorProto.INT64], {"k": 2, "axis": 1}, opset=1), {"x": x})
  check(node_model("Reshape", {"x": x}, [TensorProto.FLOAT], {"shape": [5, -1]}, opset=1), {"x": x})

def test_reduce_mean_int64_exact():
  # an int64 mean is the exact sum divided with truncation: through float32, means near 2**40 lost their low digits (-78798331904, not -78798333323)
  x = np.random.default_rng(4).integers(-128, 127, (4, 3000)).astype(np.int64) * 2**40 + 12345
  check(node_model("ReduceMean", {"x": x}, [TensorProto.INT64], {"keepdims": 0}, {"a": np.array([1], np.int64)}), {"x": x})
  check(node_model("ReduceMean", {"x": x}, [TensorProto.INT64], {"keepdims": 1, "axes": [-1]}, opset=13), {"x": x})

@pytest.mark.parametrize("reverse", [0, 1])
@pytest.mark.parametrize("shape", [(1, 5), (2, 0)])
def test_cumsum_exclusive_no_cancellation(reverse, shape):
  # exclusive was the inclusive sum minus x, which cancels in float32: [1, 1e8, ...] gave [0, 0, ...], not [0, 1, ...]
  x = np.array([[1.0, 1e8, 3.0, -1e8, 5.0]], np.float32)[:, :shape[1]].repeat(shape[0], 0)
  check(node_model("CumSum", {"x": x}, [TensorProto.FLOAT], {"exclusive": 1, "reverse": reverse}, {"a": np.array(1, np.int64)}), {"x": x}, rtol=1e-6)

@pytest.mark.parametrize("pads", [[0, 5, 0, 7], [3, 4, 2, 1], [0, 7, 0, -2], [1, 1, 0, 1]])
def test_pad_wrap_wider_than_axis(pads):
  # wrap pads wider than the axis repeat it periodically (onnxruntime's); they raised "circular padding must be at most the size"
  x = np.arange(6, dtype=np.float32).reshape(2, 3)
  check(node_model("Pad", {"x": x}, [TensorProto.FLOAT], {"mode": "wrap"}, {"p": np.array(pads, np.int64)}), {"x": x})

@pytest.mark.parametrize("n,k", [(4, 3), (6, 4), (2, 3), (7, 4), (8, 3)])
def test_split_num_outputs_with_empty_chunks(n, k):
  # num_outputs splits into chunks of ceil(n/k), trailing ones empty: 4 in 3 is [2, 2, 0]; it raised "sizes [1, 1, 1] sum to 3"
  x = np.arange(2 * n, dtype=np.float32).reshape(2, n)
  check(node_model("Split", {"x": x}, [TensorProto.FLOAT] * k, {"axis": -1, "num_outputs": k}), {"x": x})
