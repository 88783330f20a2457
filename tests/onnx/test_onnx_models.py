"""Models exported by torch.onnx.export run through OnnxRunner and match onnxruntime (rtol 1e-3) on CPU and PYTHON, plus
the runner's own contract: the model forms it accepts, one error for unsupported operators, TinyJit, and the CLI."""
import io, warnings
from math import prod
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
torch = pytest.importorskip("torch", reason="the exported-model tests need torch as the exporter: pip install torch")
onnx = pytest.importorskip("onnx", reason="OnnxRunner needs onnx: pip install tinygrad-core[onnx]")
ort = pytest.importorskip("onnxruntime", reason="the reference is onnxruntime: pip install onnxruntime")
from tinygrad import Tensor, TinyJit, dtypes
from tinygrad.nn.onnx import OnnxRunner, main

def export(m: torch.nn.Module, *args: torch.Tensor, opset: int = 17) -> bytes:
  f = io.BytesIO()
  with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    # dynamo=False: the TorchScript exporter (torch 2.13's default, the dynamo one, needs onnxscript); without the fused
    # fast path (no exporter for aten::_transformer_encoder_layer_fwd) and with is_causal a plain bool (traced, it is a Tensor)
    fast = torch.backends.mha.get_fastpath_enabled()
    torch.backends.mha.set_fastpath_enabled(False)
    try:
      with torch.no_grad(): torch.onnx.export(m.eval(), args, f, dynamo=False, opset_version=opset, input_names=[f"x{i}" for i in range(len(args))])
    finally: torch.backends.mha.set_fastpath_enabled(fast)
  return f.getvalue()

def ort_run(model: bytes, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
  return ort.InferenceSession(model, providers=["CPUExecutionProvider"]).run(None, feeds)

class DepthwiseSeparable(torch.nn.Module):
  def __init__(self, c: int = 4, o: int = 6):
    super().__init__()
    self.dw, self.pw, self.bn = torch.nn.Conv2d(c, c, 3, padding=1, groups=c), torch.nn.Conv2d(c, o, 1), torch.nn.BatchNorm2d(o)
  def forward(self, x): return torch.nn.functional.relu6(self.bn(self.pw(self.dw(x))))

class EncoderLayer(torch.nn.Module):
  def __init__(self):
    super().__init__()
    self.layer = torch.nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True)
  def forward(self, x): return self.layer(x, src_mask=None, is_causal=False)

class UpBlock(torch.nn.Module):
  def __init__(self):
    super().__init__()
    self.up, self.ct = torch.nn.Upsample(scale_factor=2, mode="bilinear"), torch.nn.ConvTranspose2d(3, 2, 3, stride=2, padding=1, output_padding=1)
  def forward(self, x): return self.ct(x) + torch.nn.functional.interpolate(self.up(x)[:, :2], scale_factor=1, mode="nearest")

def _with_stats(m: torch.nn.Module) -> torch.nn.Module:
  # non-trivial running statistics, so batchnorm's folding is exercised
  for mod in m.modules():
    if isinstance(mod, torch.nn.BatchNorm2d):
      mod.running_mean.uniform_(-1, 1)
      mod.running_var.uniform_(0.5, 2)
  return m

MODELS = {
  "cnn_batchnorm": (lambda: _with_stats(torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3, padding=1), torch.nn.BatchNorm2d(4), torch.nn.ReLU(),
                                                            torch.nn.MaxPool2d(2), torch.nn.Conv2d(4, 4, 3), torch.nn.BatchNorm2d(4), torch.nn.ReLU(),
                                                            torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(4, 3))), (1, 3, 8, 8)),
  "depthwise_separable": (lambda: _with_stats(DepthwiseSeparable()), (2, 4, 6, 6)),
  "transformer_encoder_layer": (EncoderLayer, (2, 5, 8)),
  "upsample_convtranspose": (UpBlock, (1, 3, 4, 4)),
}

@pytest.mark.parametrize("device", ["CPU", "PYTHON"])
@pytest.mark.parametrize("name", list(MODELS))
def test_exported_model_matches_onnxruntime(name: str, device: str):
  torch.manual_seed(0)
  make, shape = MODELS[name]
  m = make()
  x = torch.randn(*shape)
  model = export(m, x)
  ref = ort_run(model, {"x0": x.numpy()})
  out = list(OnnxRunner(model, device=device)({"x0": x.numpy()}).values())
  assert len(out) == len(ref)
  for o, r in zip(out, ref): np.testing.assert_allclose(o.numpy(), r, rtol=1e-3, atol=1e-5)

def _tiny_model(op: str = "Relu") -> "onnx.ModelProto":
  h = onnx.helper
  g = h.make_graph([h.make_node("Add", ["x", "w"], ["y"], name="add0"), h.make_node(op, ["y"], ["z"], name="act0")], "tiny",
                   [h.make_tensor_value_info("x", onnx.TensorProto.FLOAT, ["batch", 3])], [h.make_tensor_value_info("z", onnx.TensorProto.FLOAT, ["batch", 3])],
                   [onnx.numpy_helper.from_array(np.array([1.0, -2.0, 3.0], dtype=np.float32), "w")])
  return h.make_model(g, opset_imports=[h.make_opsetid("", 17)])

@pytest.mark.parametrize("form", ["proto", "bytes", "path", "tensor"])
def test_runner_accepts_every_model_form(form: str, tmp_path):
  m = _tiny_model()
  src = {"proto": lambda: m, "bytes": m.SerializeToString, "tensor": lambda: Tensor(np.frombuffer(m.SerializeToString(), dtype=np.uint8))}
  if form == "path":
    p = tmp_path / "tiny.onnx"
    p.write_bytes(m.SerializeToString())
    model = str(p)
  else: model = src[form]()
  x = np.array([[-1.0, 1.0, -4.0], [0.5, 3.0, -3.5]], dtype=np.float32)
  np.testing.assert_equal(OnnxRunner(model)({"x": x})["z"].numpy(), np.maximum(x + [1.0, -2.0, 3.0], 0))

@pytest.mark.parametrize("form", ["proto", "bytes", "tensor"])
def test_external_data_needs_the_models_path(form: str, tmp_path, monkeypatch):
  # a model given without its path read an external data location relative to the working directory (any file there);
  # public tinygrad asks for the path. By path, onnx.load reads it (and refuses ../ or an absolute location).
  arr = np.array([1.0, -2.0, 3.0], dtype=np.float32)
  (tmp_path / "w.bin").write_bytes(arr.tobytes())
  m = _tiny_model()
  w = m.graph.initializer[0]
  w.ClearField("raw_data")
  w.ClearField("float_data")
  w.data_location = onnx.TensorProto.EXTERNAL
  for k, v in (("location", "w.bin"), ("length", "12")): w.external_data.add(key=k, value=v)
  (tmp_path / "m.onnx").write_bytes(m.SerializeToString())
  monkeypatch.chdir(tmp_path)
  model = {"proto": m, "bytes": m.SerializeToString(), "tensor": Tensor(np.frombuffer(m.SerializeToString(), dtype=np.uint8))}[form]
  with pytest.raises(ValueError, match="'w' keeps its data in the external file 'w.bin'.*pass the model's path"): OnnxRunner(model)
  x = np.array([[-1.0, 1.0, -4.0]], dtype=np.float32)
  np.testing.assert_equal(OnnxRunner(str(tmp_path / "m.onnx"))({"x": x})["z"].numpy(), np.maximum(x + arr, 0))
  w.external_data[0].value = "../w.bin"
  (tmp_path / "sub").mkdir()
  (tmp_path / "sub" / "m.onnx").write_bytes(m.SerializeToString())
  with pytest.raises(Exception, match="outside"): OnnxRunner(str(tmp_path / "sub" / "m.onnx"))

@pytest.mark.parametrize("dims,data,err", [([-2], dict(float_data=[1.0, 2.0]), "negative dim"), ([4], dict(raw_data=b"\0" * 8), "cannot reshape"),
  ([4], dict(raw_data=b"\0" * 10), "multiple of element size"), ([2], dict(float_data=[1.0, 2.0, 3.0]), "cannot reshape"),
  ([2], dict(data_type=99, float_data=[1.0, 2.0]), "KeyError")])
def test_corrupt_initializer_names_the_tensor(dims, data, err):
  # dims [-2] over two values loaded (numpy's reshape took -2 as "infer"); the others were numpy errors or a KeyError naming no tensor
  h = onnx.helper
  t = onnx.TensorProto(name="w", dims=dims, **{"data_type": onnx.TensorProto.FLOAT, **data})
  g = h.make_graph([h.make_node("Identity", ["w"], ["y"])], "g", [], [h.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [2])], [t])
  with pytest.raises(ValueError, match=f"ONNX tensor 'w' .*is corrupt: .*{err}"): OnnxRunner(h.make_model(g, opset_imports=[h.make_opsetid("", 17)]))

def test_corrupt_model_file_names_the_file(tmp_path):
  # protobuf's DecodeError ("Error parsing message with type 'onnx.ModelProto'") named neither the file nor that it is one
  (tmp_path / "bad.onnx").write_bytes(_tiny_model().SerializeToString()[:-7])
  with pytest.raises(ValueError, match="bad.onnx: not an ONNX model"): OnnxRunner(str(tmp_path / "bad.onnx"))
  with pytest.raises(ValueError, match="<ONNX model bytes>: not an ONNX model"): OnnxRunner(b"\x08\x07\xff\xff\xff")

def test_graph_inputs_give_each_inputs_declared_type():
  # public tinygrad's OnnxRunner.graph_inputs / graph_outputs: examples/benchmark_onnx.py and yolov8-onnx.py build example
  # inputs from them (extra/onnx_helpers.get_example_inputs); OnnxRunner had neither
  from tinygrad import dtypes
  from tinygrad.nn.onnx import OnnxValue
  h = onnx.helper
  opt = h.make_optional_type_proto(h.make_tensor_type_proto(onnx.TensorProto.INT64, [2]))
  g = h.make_graph([h.make_node("Relu", ["x"], ["y"]), h.make_node("Identity", ["s"], ["t"])], "g",
                   [h.make_tensor_value_info("x", onnx.TensorProto.FLOAT16, ["batch", 3, None]),
                    h.make_tensor_sequence_value_info("s", onnx.TensorProto.FLOAT, [4]), h.make_value_info("o", opt)],
                   [h.make_tensor_value_info("y", onnx.TensorProto.FLOAT16, ["batch", 3, None]),
                    h.make_tensor_sequence_value_info("t", onnx.TensorProto.FLOAT, [4])])
  r = OnnxRunner(h.make_model(g, opset_imports=[h.make_opsetid("", 17)]))
  assert r.graph_inputs == {"x": OnnxValue(("batch", 3, None), dtypes.float16, False, False), "s": OnnxValue((4,), dtypes.float32, False, True),
                            "o": OnnxValue((2,), dtypes.int64, True, False)}
  assert r.graph_outputs == ("y", "t")

def test_unsupported_op_is_one_error_before_compute():
  with pytest.raises(NotImplementedError, match=r"opset 17.*NoSuchOp \(node act0\)"): OnnxRunner(_tiny_model("NoSuchOp"))

def test_input_shape_mismatch_names_the_input():
  with pytest.raises(ValueError, match=r"input 'x' has shape \(2, 4\)"): OnnxRunner(_tiny_model())({"x": np.zeros((2, 4), np.float32)})

def test_runner_under_tinyjit_replays_new_inputs():
  r = OnnxRunner(_tiny_model())
  f = TinyJit(lambda x: r({"x": x})["z"].realize())
  for i in range(4):
    x = np.random.default_rng(i).standard_normal((2, 3)).astype(np.float32)
    np.testing.assert_allclose(f(Tensor(x)).numpy(), np.maximum(x + [1.0, -2.0, 3.0], 0), rtol=1e-6)

def test_cli_runs_benchmarks_and_compares(tmp_path, capsys):
  p = tmp_path / "tiny.onnx"
  p.write_bytes(_tiny_model().SerializeToString())
  assert main([str(p), "--dim", "batch=2", "--benchmark", "3", "--compare-onnxruntime"]) == 0
  out = capsys.readouterr().out
  assert "z: shape (2, 3)" in out and "ms per run" in out and "matches onnxruntime" in out
  assert "tinygrad/onnxruntime" in out   # --benchmark times onnxruntime too when it is installed, and prints the ratio
  assert "replays' outputs match the plain run's" in out and "load average" in out   # the figure comes with its check

def test_cli_asks_for_symbolic_dims(tmp_path):
  p = tmp_path / "tiny.onnx"
  p.write_bytes(_tiny_model().SerializeToString())
  with pytest.raises(ValueError, match="--dim batch=VALUE"): main([str(p)])

def _graph_model(nodes, outputs=("y",)):
  from onnx import helper, TensorProto
  g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                        [helper.make_tensor_value_info(o, TensorProto.FLOAT, [2]) for o in outputs])
  return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])

@pytest.mark.parametrize("case", ["missing", "cycle", "self_loop", "unsorted", "dangling_output"])
def test_broken_graph_edges_are_one_value_error_naming_the_node(case):
  from onnx import helper
  nodes, want = {
    "missing": ([helper.make_node("Add", ["x", "nope"], ["y"], name="adder")], "node 0 Add \\(adder\\): input 'nope' is not .* any node's output"),
    "cycle": ([helper.make_node("Relu", ["b"], ["a"], name="r1"), helper.make_node("Relu", ["a"], ["b"], name="r2"),
               helper.make_node("Add", ["x", "a"], ["y"])], "node 0 Relu \\(r1\\): input 'b' is the output of ONNX node 1 Relu \\(r2\\).*cycle"),
    "self_loop": ([helper.make_node("Add", ["x", "y"], ["y"], name="acc")], "node 0 Add \\(acc\\): input 'y' is its own output"),
    "unsorted": ([helper.make_node("Neg", ["t"], ["y"]), helper.make_node("Relu", ["x"], ["t"])], "input 't' is the output of ONNX node 1 Relu.*topological"),
    "dangling_output": ([helper.make_node("Relu", ["x"], ["y"])], "outputs \\['z'\\] are produced by no node"),
  }[case]
  model = _graph_model(nodes, ("y", "z") if case == "dangling_output" else ("y",))
  with pytest.raises(ValueError, match=want): OnnxRunner(model)(({"x": np.ones(2, np.float32)}))

# every fp8 type, saturate 0 and 1: overflow, inf, NaN, -0, subnormals and rounding ties against onnx's reference, bit for bit
# (the core's own cast follows torch: e4m3fn saturates, which Cast's saturate=0 must not)
_FP8_TYPES = ("FLOAT8E4M3FN", "FLOAT8E4M3FNUZ", "FLOAT8E5M2", "FLOAT8E5M2FNUZ")
@pytest.mark.parametrize("device", ["CPU", "PYTHON"])
@pytest.mark.parametrize("to", _FP8_TYPES)
def test_cast_to_fp8_matches_onnx_reference_bits(to: str, device: str):
  from onnx import helper, TensorProto
  from onnx.reference import ReferenceEvaluator
  t = getattr(TensorProto, to)
  g = helper.make_graph([helper.make_node("Cast", ["x"], ["y"], to=t, saturate=1), helper.make_node("Cast", ["x"], ["z"], to=t, saturate=0),
                         helper.make_node("Cast", ["y"], ["w"], to=TensorProto.FLOAT)], "g",
                        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [None])],
                        [helper.make_tensor_value_info(n, t, [None]) for n in "yz"] + [helper.make_tensor_value_info("w", TensorProto.FLOAT, [None])])
  model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 21)])
  edges = [0.0, -0.0, np.inf, -np.inf, np.nan, 1e-9, 240, 247.9, 248, 250, 448, 463.9, 464, 464.1, 465, 480, 500, 57344, 61439, 61440, 1e6, 3e38]
  x = np.concatenate([np.array(edges, np.float32), -np.array(edges, np.float32), np.random.default_rng(0).standard_normal(500).astype(np.float32) *
                      np.float32(2.0) ** np.random.default_rng(1).integers(-20, 17, 500)]).astype(np.float32)
  ref = ReferenceEvaluator(model).run(None, {"x": x})
  out = OnnxRunner(model, device=device)({"x": x})
  for name, r in zip("yzw", ref):
    got = out[name].bitcast(dtypes.uint8).numpy() if name != "w" else out[name].numpy()
    rf = r.astype(np.float32)
    np.testing.assert_array_equal(np.isnan(got.view(r.dtype).astype(np.float32) if name != "w" else got), np.isnan(rf), err_msg=name)
    ok = ~np.isnan(rf)
    np.testing.assert_array_equal(got[ok], r.view(np.uint8)[ok] if name != "w" else rf[ok], err_msg=name)

# the options the backend node tests leave at their defaults: GRU's linear_before_reset (torch's GRU), layout=1 (batch first), LSTM's
# input_forget and clip, bidirectional with initial states; against onnxruntime, except layout=1 (onnxruntime refuses it): onnx's reference
@pytest.mark.parametrize("op,attrs,ref", [("GRU", {"linear_before_reset": 1, "direction": "bidirectional"}, "ort"), ("GRU", {"layout": 1, "direction": "reverse"}, "onnx"),
                                          ("LSTM", {"layout": 1, "direction": "bidirectional"}, "onnx"), ("LSTM", {"input_forget": 1}, "ort"),
                                          ("LSTM", {"clip": 0.5, "direction": "bidirectional"}, "ort"), ("RNN", {"layout": 1}, "onnx"),
                                          ("RNN", {"direction": "bidirectional", "activations": ["Relu", "Tanh"]}, "ort")])
def test_recurrent_options_match_reference(op: str, attrs: dict, ref: str):
  from onnx import helper, TensorProto
  from onnx.reference import ReferenceEvaluator
  T, N, I, H, D = 5, 3, 4, 6, 2 if attrs.get("direction") == "bidirectional" else 1
  G = {"RNN": 1, "GRU": 3, "LSTM": 4}[op]
  rng = np.random.default_rng(0)
  x = rng.standard_normal((N, T, I) if attrs.get("layout") else (T, N, I)).astype(np.float32)
  w, r, b = [rng.standard_normal(s).astype(np.float32) * 0.5 for s in ((D, G * H, I), (D, G * H, H), (D, 2 * G * H))]
  h0 = rng.standard_normal((N, D, H) if attrs.get("layout") else (D, N, H)).astype(np.float32)
  outs = ["Y", "Y_h"] + (["Y_c"] if op == "LSTM" else [])
  node = helper.make_node(op, ["x", "w", "r", "b", "", "h0"], outs, hidden_size=H, **attrs)
  g = helper.make_graph([node], "g", [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in ("x", "w", "r", "b", "h0")],
                        [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in outs])
  model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 22)])
  feeds = {"x": x, "w": w, "r": r, "b": b, "h0": h0}
  got = OnnxRunner(model)(feeds)
  want = ReferenceEvaluator(model).run(None, feeds) if ref == "onnx" else ort_run(model.SerializeToString(), feeds)
  for o, v in zip(outs, want): np.testing.assert_allclose(got[o].numpy(), v, rtol=1e-5, atol=1e-5, err_msg=o)

# sequence_lens shorter than the sequence (raised NotImplementedError): each batch entry runs its own first steps, Y is 0 past
# them and Y_h / Y_c hold the state after its last step (0 for a length of 0); the reverse direction starts at its own last step
@pytest.mark.parametrize("op", ["RNN", "GRU", "LSTM"])
@pytest.mark.parametrize("direction", ["forward", "reverse", "bidirectional"])
def test_recurrent_sequence_lens_match_onnxruntime(op: str, direction: str):
  from onnx import helper, TensorProto
  T, N, I, H, D = 5, 4, 3, 4, 2 if direction == "bidirectional" else 1
  G = {"RNN": 1, "GRU": 3, "LSTM": 4}[op]
  rng = np.random.default_rng(2)
  x = rng.standard_normal((T, N, I)).astype(np.float32)
  w, r, b = [rng.standard_normal(s).astype(np.float32) * 0.5 for s in ((D, G * H, I), (D, G * H, H), (D, 2 * G * H))]
  h0 = rng.standard_normal((D, N, H)).astype(np.float32)
  lens = np.array([5, 2, 0, 1], np.int32)
  outs = ["Y", "Y_h"] + (["Y_c"] if op == "LSTM" else [])
  node = helper.make_node(op, ["x", "w", "r", "b", "lens", "h0"], outs, hidden_size=H, direction=direction)
  ins = [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in ("x", "w", "r", "b")]
  ins += [helper.make_tensor_value_info("lens", TensorProto.INT32, None), helper.make_tensor_value_info("h0", TensorProto.FLOAT, None)]
  g = helper.make_graph([node], "g", ins, [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in outs])
  model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 14)])
  feeds = {"x": x, "w": w, "r": r, "b": b, "lens": lens, "h0": h0}
  got = OnnxRunner(model)(feeds)
  for o, v in zip(outs, ort_run(model.SerializeToString(), feeds)): np.testing.assert_allclose(got[o].numpy(), v, rtol=1e-5, atol=1e-5, err_msg=o)

# activation_alpha/beta, the ONNX RNN spec's activation list written in numpy: each activation that takes an alpha (beta) takes the
# next one, in the order of the activations over both directions; past the list's end, the op's default
_SPEC_ACTS = {"Tanh": ((), np.tanh), "Relu": ((), lambda x: np.maximum(x, 0)), "Affine": ((1.0, 0.0), lambda x, a, b: a * x + b),
              "LeakyRelu": ((0.01,), lambda x, a: np.where(x >= 0, x, a * x)), "ThresholdedRelu": ((1.0,), lambda x, a: np.where(x >= a, x, 0)),
              "ScaledTanh": ((None, None), lambda x, a, b: a * np.tanh(b * x)), "HardSigmoid": ((0.2, 0.5), lambda x, a, b: np.clip(a * x + b, 0, 1)),
              "Elu": ((1.0,), lambda x, a: np.where(x >= 0, x, a * (np.exp(x) - 1))), "Softsign": ((), lambda x: x / (1 + np.abs(x))),
              "Softplus": ((), lambda x: np.log1p(np.exp(x)))}
def _spec_rnn(x, w, r, b, acts, alpha, beta):
  fs, ia, ib = [], 0, 0
  for n in acts:
    dflt, fn = _SPEC_ACTS[n]
    ps = [(alpha[ia] if ia < len(alpha) else dflt[0])] if len(dflt) >= 1 else []
    if len(dflt) == 2: ps.append(beta[ib] if ib < len(beta) else dflt[1])
    ia, ib = ia + (len(dflt) >= 1), ib + (len(dflt) == 2)
    fs.append(lambda v, fn=fn, ps=ps: fn(v, *ps))
  ys = []
  for d in range(w.shape[0]):
    h, out = np.zeros((x.shape[1], w.shape[1]), np.float32), []
    for t in (range(len(x)) if d == 0 else reversed(range(len(x)))):
      h = fs[d](x[t] @ w[d].T + h @ r[d].T + b[d, :w.shape[1]] + b[d, w.shape[1]:])
      out.append(h)
    ys.append(np.stack(out if d == 0 else out[::-1]))
  return np.stack(ys, 1)
def _rnn_model(op: str, H: int, outs: list[str], **attrs):
  from onnx import helper, TensorProto
  node = helper.make_node(op, ["x", "w", "r", "b"], outs, hidden_size=H, **attrs)
  g = helper.make_graph([node], "g", [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in ("x", "w", "r", "b")],
                        [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in outs])
  return helper.make_model(g, opset_imports=[helper.make_opsetid("", 22)])

@pytest.mark.parametrize("acts,alpha,beta", [(["Affine", "LeakyRelu"], [1.5, 0.3], [0.25]), (["Affine", "Affine"], [], []), (["LeakyRelu", "Elu"], [], []),
                                             (["ThresholdedRelu", "ScaledTanh"], [0.4, 1.7], [0.6]), (["HardSigmoid", "Elu"], [0.3, 0.5], [0.4]),
                                             (["Tanh", "LeakyRelu"], [0.3], []), (["Elu", "HardSigmoid"], [0.5], [0.1]), (["Softsign", "Softplus"], [], [])])
@pytest.mark.parametrize("device", ["CPU", "PYTHON"])
def test_rnn_activation_alpha_beta_matches_spec(acts: list[str], alpha: list[float], beta: list[float], device: str):
  T, N, I, H = 4, 2, 3, 5
  rng = np.random.default_rng(1)
  x = (rng.standard_normal((T, N, I)) * 2).astype(np.float32)
  w, r, b = [rng.standard_normal(s).astype(np.float32) * 0.7 for s in ((2, H, I), (2, H, H), (2, 2 * H))]
  kw = {k: v for k, v in (("activation_alpha", alpha), ("activation_beta", beta)) if v}
  model = _rnn_model("RNN", H, ["Y", "Y_h"], direction="bidirectional", activations=acts, **kw)
  got = OnnxRunner(model, device=device)({"x": x, "w": w, "r": r, "b": b})
  want = _spec_rnn(x, w, r, b, acts, alpha, beta)
  np.testing.assert_allclose(got["Y"].numpy(), want, rtol=1e-5, atol=1e-5)
  np.testing.assert_allclose(got["Y_h"].numpy(), np.stack([want[-1, 0], want[0, 1]]), rtol=1e-5, atol=1e-5)

# GRU and LSTM with alpha/beta-taking activations against onnxruntime (explicit values: its Affine default is 0, the spec's 1); ScaledTanh
# has no default alpha/beta in the spec: without them it is an error naming the attribute
@pytest.mark.parametrize("op,acts,alpha,beta", [("GRU", ["HardSigmoid", "ScaledTanh", "LeakyRelu", "Elu"], [0.3, 1.5, 0.2, 0.7], [0.45, 0.8]),
                                                ("LSTM", ["HardSigmoid", "Affine", "ScaledTanh"], [0.25, 0.5, 1.2], [0.5, 0.1, 0.9])])
def test_recurrent_activation_alpha_beta_match_onnxruntime(op: str, acts: list[str], alpha: list[float], beta: list[float]):
  T, N, I, H, G = 5, 3, 4, 6, {"GRU": 3, "LSTM": 4}[op]
  D = 2 if len(acts) > G - 1 and op == "GRU" else 1
  rng = np.random.default_rng(2)
  x = rng.standard_normal((T, N, I)).astype(np.float32)
  w, r, b = [rng.standard_normal(s).astype(np.float32) * 0.5 for s in ((D, G * H, I), (D, G * H, H), (D, 2 * G * H))]
  outs = ["Y", "Y_h"] + (["Y_c"] if op == "LSTM" else [])
  model = _rnn_model(op, H, outs, direction="bidirectional" if D == 2 else "forward", activations=acts, activation_alpha=alpha, activation_beta=beta)
  feeds = {"x": x, "w": w, "r": r, "b": b}
  got = OnnxRunner(model)(feeds)
  for o, v in zip(outs, ort_run(model.SerializeToString(), feeds)): np.testing.assert_allclose(got[o].numpy(), v, rtol=1e-5, atol=1e-5, err_msg=o)
  with pytest.raises(ValueError, match="ScaledTanh needs activation_beta"):
    OnnxRunner(_rnn_model(op, H, outs, direction="bidirectional" if D == 2 else "forward", activations=acts, activation_alpha=alpha))(feeds)

# Det against numpy: sizes 1..5 in a batch, a zero pivot that needs a row swap, a singular matrix, a permutation (sign)
@pytest.mark.parametrize("device", ["CPU", "PYTHON"])
def test_det_matches_numpy(device: str):
  from onnx import helper, TensorProto
  rng = np.random.default_rng(0)
  for n in range(1, 6):
    x = rng.standard_normal((4, n, n)).astype(np.float32)
    if n > 1:
      x[1, 0, 0] = 0.0                              # the first pivot must come from another row
      x[2, -1] = x[2, 0] * 2                        # singular
      x[3] = np.eye(n, dtype=np.float32)[::-1]      # a row reversal: det +-1
    g = helper.make_graph([helper.make_node("Det", ["x"], ["y"])], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, n, n])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])])
    got = OnnxRunner(helper.make_model(g, opset_imports=[helper.make_opsetid("", 22)]), device=device)({"x": x})["y"].numpy()
    np.testing.assert_allclose(got, np.linalg.det(x), rtol=1e-4, atol=1e-5, err_msg=f"n={n}")

# AffineGrid against torch's affine_grid (2-d and 3-d, both align_corners, a spatial dim of size 1)
@pytest.mark.parametrize("size", [(2, 1, 3, 5), (2, 3, 1, 4), (2, 1, 2, 3, 4), (2, 1, 3, 1, 2)])
@pytest.mark.parametrize("align", [0, 1])
def test_affine_grid_matches_torch(size: tuple, align: int):
  from onnx import helper, TensorProto
  k = len(size) - 2
  theta = np.random.default_rng(0).standard_normal((2, k, k + 1)).astype(np.float32)
  g = helper.make_graph([helper.make_node("AffineGrid", ["t", "s"], ["y"], align_corners=align)], "g",
                        [helper.make_tensor_value_info("t", TensorProto.FLOAT, theta.shape), helper.make_tensor_value_info("s", TensorProto.INT64, [len(size)])],
                        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
  got = OnnxRunner(helper.make_model(g, opset_imports=[helper.make_opsetid("", 20)]))({"t": theta, "s": np.array(size, np.int64)})["y"].numpy()
  want = torch.nn.functional.affine_grid(torch.tensor(theta), list(size), align_corners=bool(align)).numpy()
  np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)

# Col2Im against torch's fold (2-d): strides, dilations, pads (symmetric: fold has no other), overlapping blocks
@pytest.mark.parametrize("img,blk,st,dil,pad", [((5, 6), (2, 3), (1, 1), (1, 1), (0, 0)), ((7, 6), (3, 2), (2, 1), (1, 2), (1, 0)),
                                                ((4, 9), (2, 2), (2, 3), (2, 1), (1, 2))])
def test_col2im_matches_torch_fold(img, blk, st, dil, pad):
  from onnx import helper, TensorProto
  L = prod((img[d] + 2 * pad[d] - dil[d] * (blk[d] - 1) - 1) // st[d] + 1 for d in range(2))
  x = np.random.default_rng(0).standard_normal((2, 3 * blk[0] * blk[1], L)).astype(np.float32)
  node = helper.make_node("Col2Im", ["x", "i", "b"], ["y"], strides=list(st), dilations=list(dil), pads=[pad[0], pad[1], pad[0], pad[1]])
  g = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, x.shape), helper.make_tensor_value_info("i", TensorProto.INT64, [2]),
                                      helper.make_tensor_value_info("b", TensorProto.INT64, [2])], [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
  got = OnnxRunner(helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)]))({"x": x, "i": np.array(img), "b": np.array(blk)})["y"].numpy()
  want = torch.nn.functional.fold(torch.tensor(x), img, blk, dilation=dil, padding=pad, stride=st).numpy()
  np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)

# TensorScatter against onnx's reference: linear and circular (wrapping past the end), other axes, an int cache, NaN in the update
@pytest.mark.parametrize("mode,axis,dtype", [("linear", -2, np.float32), ("circular", -2, np.float32), ("circular", 1, np.int32), ("linear", 2, np.float32)])
def test_tensor_scatter_matches_onnx_reference(mode: str, axis: int, dtype):
  from onnx import helper, TensorProto
  from onnx.reference import ReferenceEvaluator
  rng = np.random.default_rng(0)
  past = (rng.standard_normal((3, 4, 6, 5)) * 10).astype(dtype)
  s = 3
  upd_shape = [3, 4, 6, 5]
  upd_shape[axis % 4] = s
  upd = (rng.standard_normal(upd_shape) * 10).astype(dtype)
  if dtype == np.float32: upd[0, 0, 0, 0] = np.nan
  lim = past.shape[axis % 4] - (0 if mode == "circular" else s - 1)
  w = rng.integers(0, lim, 3).astype(np.int64)
  tt = TensorProto.FLOAT if dtype == np.float32 else TensorProto.INT32
  g = helper.make_graph([helper.make_node("TensorScatter", ["p", "u", "w"], ["y"], mode=mode, axis=axis)], "g",
                        [helper.make_tensor_value_info("p", tt, past.shape), helper.make_tensor_value_info("u", tt, upd.shape),
                         helper.make_tensor_value_info("w", TensorProto.INT64, [3])], [helper.make_tensor_value_info("y", tt, None)])
  model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 24)])
  feeds = {"p": past, "u": upd, "w": w}
  np.testing.assert_equal(OnnxRunner(model)(feeds)["y"].numpy(), ReferenceEvaluator(model).run(None, feeds)[0])

# CausalConvWithState streams: two chunks with the carried state give the one-shot output (and state), which is torch's causal depthwise conv
@pytest.mark.parametrize("k,act", [(4, "silu"), (1, "none"), (3, "none")])
def test_causal_conv_with_state_streams(k: int, act: str):
  from onnx import helper, TensorProto
  rng = np.random.default_rng(0)
  x, w, b = rng.standard_normal((2, 3, 7)).astype(np.float32), rng.standard_normal((3, 1, k)).astype(np.float32), rng.standard_normal(3).astype(np.float32)
  g = helper.make_graph([helper.make_node("CausalConvWithState", ["x", "w", "b", "s"], ["y", "s2"], activation=act)], "g",
                        [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in "xwbs"],
                        [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in ("y", "s2")])
  run = OnnxRunner(helper.make_model(g, opset_imports=[helper.make_opsetid("", 27)]))
  s0 = np.zeros((2, 3, k - 1), np.float32)
  full = run({"x": x, "w": w, "b": b, "s": s0})
  a = run({"x": x[..., :4], "w": w, "b": b, "s": s0})
  c = run({"x": x[..., 4:], "w": w, "b": b, "s": a["s2"].numpy()})
  np.testing.assert_allclose(np.concatenate([a["y"].numpy(), c["y"].numpy()], -1), full["y"].numpy(), rtol=1e-5, atol=1e-6)
  np.testing.assert_equal(c["s2"].numpy(), full["s2"].numpy())
  want = torch.nn.functional.conv1d(torch.nn.functional.pad(torch.tensor(x), (k - 1, 0)), torch.tensor(w), torch.tensor(b), groups=3)
  np.testing.assert_allclose(full["y"].numpy(), (torch.nn.functional.silu(want) if act == "silu" else want).numpy(), rtol=1e-5, atol=1e-6)

# GridSample (linear, nearest, cubic) against onnx's reference: grids well outside [-1, 1] (reflection bounces more than once), every padding;
# cubic's border padding moves only coordinates outside [-0.5, n-0.5] (a clip of every one to [0, n-1] gave other taps near the edge)
@pytest.mark.parametrize("mode", ["linear", "nearest", "cubic"])
@pytest.mark.parametrize("padding", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("align", [0, 1])
def test_grid_sample_matches_onnx_reference(mode: str, padding: str, align: int):
  from onnx import helper, TensorProto
  from onnx.reference import ReferenceEvaluator
  rng = np.random.default_rng(0)
  x, grid = rng.standard_normal((2, 2, 4, 5)).astype(np.float32), (rng.standard_normal((2, 3, 6, 2)) * 2.5).astype(np.float32)
  def model(mode: str, opset: int):
    g = helper.make_graph([helper.make_node("GridSample", ["x", "g"], ["y"], mode=mode, padding_mode=padding, align_corners=align)], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, x.shape), helper.make_tensor_value_info("g", TensorProto.FLOAT, grid.shape)],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
  feeds = {"x": x, "g": grid}
  ref = ReferenceEvaluator(model(mode, 22)).run(None, feeds)[0]
  np.testing.assert_allclose(OnnxRunner(model(mode, 22))(feeds)["y"].numpy(), ref, rtol=1e-5, atol=1e-5)
  # opset 16 (4-d only) names the modes bilinear, nearest, bicubic
  old = OnnxRunner(model({"linear": "bilinear", "cubic": "bicubic"}.get(mode, mode), 16))(feeds)["y"].numpy()
  np.testing.assert_allclose(old, ref, rtol=1e-5, atol=1e-5)

# DFT against numpy's fft/ifft/rfft/irfft: drawn shapes, axes, real or complex input, dft_length cropping or zero-padding the signal
# (odd and even lengths: irfft's Nyquist bin), both forms of the axis (opset 19's attribute, opset 20's input)
def _dft_model(opset: int, **attrs):
  from onnx import helper, TensorProto
  ins = ["x", "n"] + (["axis"] if opset >= 20 else [])
  g = helper.make_graph([helper.make_node("DFT", ins, ["y"], **attrs)], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, None),
                        helper.make_tensor_value_info("n", TensorProto.INT64, None)] + [helper.make_tensor_value_info("axis", TensorProto.INT64, None)] * (opset >= 20),
                        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
  return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])

@settings(max_examples=30, deadline=None)
@given(shape=st.lists(st.integers(1, 6), min_size=1, max_size=3), cplx=st.booleans(), inverse=st.booleans(), onesided=st.booleans(),
       dn=st.integers(-3, 3), opset=st.sampled_from([19, 20]), data=st.data())
def test_dft_matches_numpy(shape: list[int], cplx: bool, inverse: bool, onesided: bool, dn: int, opset: int, data):
  ax = data.draw(st.integers(0, len(shape) - 1))
  if onesided and not inverse and cplx: cplx = False   # (a one-sided forward transform is of a real signal)
  n = max(1, shape[ax] + dn)
  rng = np.random.default_rng(len(shape) * 7 + n)
  x = rng.standard_normal((*shape, 2 if cplx else 1)).astype(np.float32)
  sig = x[..., 0] + 1j * x[..., 1] if cplx else x[..., 0]
  if inverse and onesided: want = np.fft.irfft(sig, n, axis=ax)[..., None]
  else:
    y = np.fft.ifft(sig, n, axis=ax) if inverse else np.fft.fft(sig, n, axis=ax)
    if onesided: y = np.take(y, range(n // 2 + 1), axis=ax)
    want = np.stack([y.real, y.imag], -1)
  attrs = {"inverse": int(inverse), "onesided": int(onesided)} | ({} if opset >= 20 else {"axis": ax + 1 if ax % 2 else ax - len(shape) - 1})
  feeds = {"x": x[None], "n": np.array(n, np.int64)} | ({"axis": np.array(ax + 1 if ax % 2 else ax - len(shape) - 1, np.int64)} if opset >= 20 else {})
  got = OnnxRunner(_dft_model(opset, **attrs))(feeds)["y"].numpy()
  np.testing.assert_allclose(got, want[None].astype(np.float32), rtol=1e-4, atol=1e-5)

# STFT against numpy: a complex signal, frames by frame_length with a window, the last partial frame dropped; MelWeightMatrix against
# onnx's reference at edges that leave some filters one bin wide; on PYTHON too
@pytest.mark.parametrize("device", ["CPU", "PYTHON"])
def test_stft_and_mel_weight_matrix(device: str):
  from onnx import helper, TensorProto
  from onnx.reference import ReferenceEvaluator
  rng = np.random.default_rng(3)
  x, win = rng.standard_normal((2, 23, 2)).astype(np.float32), rng.uniform(0.5, 1, 6).astype(np.float32)
  vi = lambda n, t: helper.make_tensor_value_info(n, t, None)
  g = helper.make_graph([helper.make_node("STFT", ["x", "step", "w", "fl"], ["y"], onesided=0)], "g",
                        [vi("x", TensorProto.FLOAT), vi("step", TensorProto.INT64), vi("w", TensorProto.FLOAT), vi("fl", TensorProto.INT64)], [vi("y", TensorProto.FLOAT)])
  got = OnnxRunner(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), device=device)(
    {"x": x, "step": np.array(4, np.int64), "w": win, "fl": np.array(6, np.int64)})["y"].numpy()
  sig = x[..., 0] + 1j * x[..., 1]
  want = np.stack([np.fft.fft(sig[:, s:s + 6] * win, axis=-1) for s in range(0, 23 - 6 + 1, 4)], 1)
  np.testing.assert_allclose(got, np.stack([want.real, want.imag], -1), rtol=1e-4, atol=1e-5)
  names = ["num_mel_bins", "dft_length", "sample_rate", "lower_edge_hertz", "upper_edge_hertz"]
  g = helper.make_graph([helper.make_node("MelWeightMatrix", names, ["y"])], "g", [vi(n, TensorProto.INT64 if i < 3 else TensorProto.FLOAT)
                        for i, n in enumerate(names)], [vi("y", TensorProto.FLOAT)])
  m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
  feeds = dict(zip(names, [np.array(20, np.int64), np.array(64, np.int64), np.array(16000, np.int64), np.array(0, np.float32), np.array(8000, np.float32)]))
  got = OnnxRunner(m, device=device)(feeds)["y"].numpy()
  np.testing.assert_array_equal(got, ReferenceEvaluator(m).run(None, feeds)[0])

# NonMaxSuppression against onnx's reference: crowded random boxes (corners in either order, or centers), tied scores (the lower index
# first), with and without a score threshold and max_output_boxes_per_class; an absent max selects nothing
@pytest.mark.parametrize("center", [0, 1])
@pytest.mark.parametrize("extra", [("max", "iou", "score"), ("max", "iou"), ()])
def test_non_max_suppression_matches_onnx_reference(center: int, extra: tuple):
  from onnx import helper, TensorProto
  from onnx.reference import ReferenceEvaluator
  rng = np.random.default_rng(4)
  boxes = rng.uniform(0, 4, (2, 40, 4)).astype(np.float32)
  if center: boxes[..., 2:] = np.abs(boxes[..., 2:]) + 0.2
  scores = rng.integers(0, 8, (2, 3, 40)).astype(np.float32) / 8   # many ties
  vals = {"max": np.array([7], np.int64), "iou": np.array([0.3], np.float32), "score": np.array([0.3], np.float32)}
  names = ["boxes", "scores"] + [n if n in extra else "" for n in ("max", "iou", "score")]
  while names[-1] == "": names.pop()
  vi = lambda n, t: helper.make_tensor_value_info(n, t, None)
  g = helper.make_graph([helper.make_node("NonMaxSuppression", names, ["y"], center_point_box=center)], "g",
                        [vi(n, TensorProto.INT64 if n == "max" else TensorProto.FLOAT) for n in names if n], [vi("y", TensorProto.INT64)])
  m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 11)])
  feeds = {"boxes": boxes, "scores": scores} | {k: vals[k] for k in extra}
  got = OnnxRunner(m)(feeds)["y"].numpy()
  assert got.dtype == np.int64
  if not extra: assert got.shape == (0, 3)   # (the reference itself fails on an absent max_output_boxes_per_class)
  else:
    assert len(got) > 10
    np.testing.assert_array_equal(got, ReferenceEvaluator(m).run(None, feeds)[0])

# RoiAlign against onnx's reference: rois partly off the map, one malformed (x2 < x1), a tiny one, spatial_scale, two images; the
# adaptive grid (sampling_ratio 0: a different sample count per roi) and a fixed one; both modes and coordinate transforms
@pytest.mark.parametrize("mode", ["avg", "max"])
@pytest.mark.parametrize("ctm", ["half_pixel", "output_half_pixel"])
@pytest.mark.parametrize("ratio", [0, 2])
def test_roi_align_matches_onnx_reference(mode: str, ctm: str, ratio: int):
  from onnx import helper, TensorProto
  from onnx.reference import ReferenceEvaluator
  rng = np.random.default_rng(5)
  x = rng.standard_normal((2, 3, 9, 11)).astype(np.float32)
  rois = np.array([[0, 0, 18, 14], [3.3, 5.1, 20.7, 17.9], [-6, -4, 5, 7], [15, 12, 30, 25], [12, 9, 4, 3], [8, 8, 8.6, 8.4]], np.float32)
  bidx = np.array([0, 1, 1, 0, 1, 0], np.int64)
  vi = lambda n, t: helper.make_tensor_value_info(n, t, None)
  node = helper.make_node("RoiAlign", ["x", "rois", "b"], ["y"], mode=mode, coordinate_transformation_mode=ctm, output_height=3, output_width=4,
                          sampling_ratio=ratio, spatial_scale=0.5)
  m = helper.make_model(helper.make_graph([node], "g", [vi("x", TensorProto.FLOAT), vi("rois", TensorProto.FLOAT), vi("b", TensorProto.INT64)],
                                          [vi("y", TensorProto.FLOAT)]), opset_imports=[helper.make_opsetid("", 16)])
  feeds = {"x": x, "rois": rois, "b": bidx}
  np.testing.assert_allclose(OnnxRunner(m)(feeds)["y"].numpy(), ReferenceEvaluator(m).run(None, feeds)[0], rtol=1e-5, atol=1e-6)

@pytest.mark.parametrize("op", ["LayerNormalization", "MeanVarianceNormalization", "BatchNormalization"])
def test_normalizations_of_a_large_offset_match_float64(op: str):
  # the deviations from the float32 mean carry its rounding (a row of 1000 copies of 1000.1: 18 ulps), which the
  # normalisation scaled up to O(1) (LayerNormalization 0.33 where the answer is 0); a spread of 0.01 about 1000 too
  h = onnx.helper
  x = np.full((2, 3, 1000), 1000.1, np.float32)
  x[1] = 1000 + np.random.default_rng(0).standard_normal((3, 1000)).astype(np.float32) * 0.01
  ones, zeros = np.ones(3, np.float32), np.zeros(3, np.float32)
  if op == "LayerNormalization":
    node, inits, axes = h.make_node(op, ["x", "s", "b"], ["y"], axis=-1), [np.ones(1000, np.float32), np.zeros(1000, np.float32)], (2,)
  elif op == "MeanVarianceNormalization": node, inits, axes = h.make_node(op, ["x"], ["y"], axes=[0, 2]), [], (0, 2)
  else: node, inits, axes = h.make_node(op, ["x", "s", "b", "m", "v"], ["y"], training_mode=1), [ones, zeros, zeros, ones], (0, 2)
  names = ["s", "b", "m", "v"][:len(inits)]
  g = h.make_graph([node], "norm", [h.make_tensor_value_info("x", onnx.TensorProto.FLOAT, x.shape)], [h.make_tensor_value_info("y", onnx.TensorProto.FLOAT, x.shape)],
                   [onnx.numpy_helper.from_array(a, n) for a, n in zip(inits, names)])
  got = OnnxRunner(h.make_model(g, opset_imports=[h.make_opsetid("", 15)]))({"x": Tensor(x)})["y"].numpy()
  x64 = x.astype(np.float64)
  eps = 1e-9 if op == "MeanVarianceNormalization" else 1e-5
  mean, var = x64.mean(axes, keepdims=True), x64.var(axes, keepdims=True)
  want = (x64 - mean) / (np.sqrt(var) + 1e-9) if op == "MeanVarianceNormalization" else (x64 - mean) / np.sqrt(var + eps)
  np.testing.assert_allclose(got, want, atol=2e-4)
