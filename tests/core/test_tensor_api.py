"""Tensor front end without running anything: result shapes and dtypes, promotion, laziness and error messages.

Numbers against numpy are checked by tests/conformance; here nothing may reach the engine.
"""
import subprocess, sys, os, math, types
import numpy as np
import pytest
from tinygrad import Tensor, dtypes
from tinygrad.tensor import AxisError
from tinygrad.uop import Ops

@pytest.fixture(autouse=True)
def no_engine(monkeypatch):
  """Every test here must stay lazy: calling the engine fails the test."""
  def boom(*args, **kwargs): raise AssertionError("the engine was called while only building a graph")
  try:
    import tinygrad.engine.realize as realize_mod
    monkeypatch.setattr(realize_mod, "realize_uops", boom)
  except ImportError:
    monkeypatch.setitem(sys.modules, "tinygrad.engine.realize", types.SimpleNamespace(realize_uops=boom))

def t(*shape, dtype=dtypes.float32): return Tensor.empty(*shape, dtype=dtype)

# ---- creation ----
@pytest.mark.parametrize("data,shape,dtype", [
  (1, (), dtypes.int32), (2.5, (), dtypes.float32), (True, (), dtypes.bool), ([1, 2, 3], (3,), dtypes.int32), ([1, 2.0], (2,), dtypes.float32),
  ([[True, False]], (1, 2), dtypes.bool), ([[1, 2], [3, 4], [5, 6]], (3, 2), dtypes.int32), ([], (0,), dtypes.float32), ((1, 2), (2,), dtypes.int32),
  ([True, 2], (2,), dtypes.int32)])
def test_from_python(data, shape, dtype):
  x = Tensor(data)
  assert x.shape == shape and x.dtype == dtype

@pytest.mark.parametrize("npdt,dt", [(np.float32, dtypes.float32), (np.float64, dtypes.float64), (np.int8, dtypes.int8), (np.uint16, dtypes.uint16),
                                     (np.int64, dtypes.int64), (np.bool_, dtypes.bool), (np.float16, dtypes.float16)])
def test_from_numpy_keeps_dtype(npdt, dt):
  x = Tensor(np.zeros((2, 3), dtype=npdt))
  assert x.shape == (2, 3) and x.dtype == dt

def test_from_a_typed_memoryview_reads_its_items():
  # a memoryview with a format (t.data(), a numpy array's) holds items, as numpy and torch read it: not its raw bytes
  # (int32 [1, -2] was uint8 [1, 0, 0, 0, 254, 255, 255, 255]); a plain byte view is still bytes
  x = Tensor(memoryview(np.array([[1, -2, 3], [4, 5, 6]], np.int32)[:, ::2]))
  assert x.shape == (2, 2) and x.dtype == dtypes.int32 and x.tolist() == [[1, 3], [4, 6]]
  h = Tensor(memoryview(np.array([1.5, -2.0], np.float16)))
  assert h.dtype == dtypes.float16 and h.tolist() == [1.5, -2.0]
  assert Tensor(memoryview(np.array([1, 2], np.int32)), dtype=dtypes.float32).tolist() == [1.0, 2.0]
  b = Tensor(memoryview(b"ab"))
  assert b.dtype == dtypes.uint8 and b.tolist() == [97, 98]

def test_bytes_with_a_dtype_are_its_items():
  # public tinygrad reads bytes given a dtype as that dtype's items (raw weights from a file); they were cast one by one
  raw = np.array([0.25, -3.5], np.float32).tobytes()
  x = Tensor(raw, dtype=dtypes.float32)
  assert x.shape == (2,) and x.dtype == dtypes.float32 and x.tolist() == [0.25, -3.5]
  assert Tensor(np.array([-2, 7], np.int16).tobytes(), dtype="int16").tolist() == [-2, 7]
  assert Tensor(b"\xff\x01", dtype=dtypes.int8).tolist() == [-1, 1]
  with pytest.raises(ValueError, match="whole number"): Tensor(b"abc", dtype=dtypes.int16)

def test_explicit_dtype_and_device():
  assert Tensor([1, 2], dtype=dtypes.float16).dtype == dtypes.float16
  assert Tensor(np.zeros(3, np.float32), dtype="int8").dtype == dtypes.int8
  assert Tensor([1.0], dtype=dtypes.bfloat16).dtype == dtypes.bfloat16
  x = Tensor([1, 2])
  assert x.device == Tensor.zeros(1).device and x.to(x.device) is x

def test_creation_helpers():
  assert Tensor.zeros(2, 3).shape == (2, 3) and Tensor.zeros((2, 3)).dtype == dtypes.float32
  assert Tensor.ones(4, dtype=dtypes.int8).dtype == dtypes.int8
  assert Tensor.full((2, 2), 3).dtype == dtypes.int32 and Tensor.full((2, 2), 3.0).dtype == dtypes.float32 and Tensor.full(5, True).shape == (5,)
  assert Tensor.empty(3, 4).shape == (3, 4)
  assert Tensor.arange(10).shape == (10,) and Tensor.arange(10).dtype == dtypes.int32
  assert Tensor.arange(1, 10, 3).shape == (3,) and Tensor.arange(0, 1, 0.25).dtype == dtypes.float32 and Tensor.arange(0, 1, 0.25).shape == (4,)
  assert Tensor.arange(5, 0, -2).shape == (3,) and Tensor.arange(3, 3).shape == (0,)
  assert Tensor.linspace(0, 1, 7).shape == (7,) and Tensor.eye(3).shape == (3, 3) and Tensor.eye(2, 5).shape == (2, 5)
  x = t(2, 3, dtype=dtypes.int16)
  for f in (Tensor.zeros_like, Tensor.ones_like, Tensor.empty_like): assert f(x).shape == (2, 3) and f(x).dtype == dtypes.int16
  assert x.full_like(7).dtype == dtypes.int16 and x.full_like(1.5, dtype=dtypes.float32).dtype == dtypes.float32

def test_creation_dtype_is_the_positional_argument_after_the_sizes():
  # public tinygrad's order: full(shape, fill_value, dtype, device), arange(start, stop, step, dtype), linspace/eye/full_like/
  # empty_like with dtype next (randn_like: test_random.py); positional, full's dtype landed on device (a DeviceNameError)
  # and the others raised TypeError
  assert Tensor.full((2,), 3, dtypes.int8).dtype == dtypes.int8 and Tensor.full((2,), 3, dtypes.int8, "CPU").device == "CPU"
  assert Tensor.arange(0, 3, 1, dtypes.float16).dtype == dtypes.float16 and Tensor.arange(3, None, 1, dtypes.int8).shape == (3,)
  assert Tensor.linspace(0, 3, 4, dtypes.int32).dtype == dtypes.int32 and Tensor.eye(2, 3, dtypes.int8).dtype == dtypes.int8
  x = Tensor([1, 2])
  assert x.full_like(3, dtypes.float32).dtype == dtypes.float32 and x.empty_like(dtypes.float16).dtype == dtypes.float16
  assert x.full_like(3, None).dtype == x.dtype and x.empty_like(None, "CPU").device == "CPU"

# random tensors run two tiny kernels when built (the device counter's snapshot and bump): see test_random.py

def test_properties():
  x = t(2, 3, 4)
  assert x.ndim == 3 and x.numel() == 24 and x.element_size() == 4 and x.nbytes() == 96 and len(x) == 2
  assert x.T.shape == (3, 2, 4) and t(5).T.shape == (5,)
  assert t(2, 3, dtype=dtypes.float16).nbytes() == 12
  assert "shape=(2, 3, 4)" in repr(x) and "float" in repr(x)
  with pytest.raises(TypeError): bool(x)
  with pytest.raises(TypeError): len(Tensor(1))

def test_casts():
  x = Tensor([1, 2])
  assert x.float().dtype == dtypes.float32 and x.half().dtype == dtypes.float16 and x.bool().dtype == dtypes.bool
  assert x.float().int().dtype == dtypes.int32 and x.cast("int8").dtype == dtypes.int8 and x.double().dtype == dtypes.float64
  assert x.bitcast(dtypes.float32).dtype == dtypes.float32 and x.bitcast(dtypes.uint32).uop.op is Ops.BITCAST
  assert x.bitcast(dtypes.int8).shape == (8,) and x.bitcast(dtypes.int8).dtype == dtypes.int8
  # ValueError, and the RuntimeError of torch's view(dtype) and public tinygrad
  for exc in (ValueError, RuntimeError):
    with pytest.raises(exc, match="multiple of 2"): Tensor([1, 2, 3], dtype=dtypes.int32).bitcast(dtypes.int64)
    with pytest.raises(exc, match="multiple of 2"): Tensor.empty(3, dtype=dtypes.int8).bitcast(dtypes.float16)
    with pytest.raises(exc, match="0-d"): Tensor(1).bitcast(dtypes.int8)
  with pytest.raises(ValueError, match="unknown dtype"): x.cast("float17")

# ---- promotion ----
@pytest.mark.parametrize("a,b", [(dtypes.bool, dtypes.int8), (dtypes.int8, dtypes.int16), (dtypes.int8, dtypes.uint8), (dtypes.uint8, dtypes.uint16),
  (dtypes.uint8, dtypes.int32), (dtypes.float16, dtypes.float32), (dtypes.int8, dtypes.float16), (dtypes.uint8, dtypes.float16),
  (dtypes.int16, dtypes.float32), (dtypes.float32, dtypes.float64), (dtypes.bool, dtypes.float16), (dtypes.int32, dtypes.int64)])
def test_promotion_matches_numpy(a, b):
  from tinygrad.dtype import to_numpy, from_numpy
  expect = from_numpy(np.result_type(to_numpy(a), to_numpy(b)))
  for op in (lambda x, y: x + y, lambda x, y: x * y, lambda x, y: x.maximum(y), lambda x, y: x.where(x, y) if False else x - y):
    if dtypes.is_bool(a) and dtypes.is_bool(b): continue
    assert op(t(2, dtype=a), t(2, dtype=b)).dtype == expect
    assert op(t(2, dtype=b), t(2, dtype=a)).dtype == expect

def test_python_scalars_are_weak():
  assert (t(2, dtype=dtypes.int32) * 2.5).dtype == dtypes.float32
  assert (t(2, dtype=dtypes.float16) * 2.0).dtype == dtypes.float16
  assert (t(2, dtype=dtypes.float16) + 1).dtype == dtypes.float16
  assert (t(2, dtype=dtypes.int8) + 1).dtype == dtypes.int8
  assert (t(2, dtype=dtypes.uint8) * 3).dtype == dtypes.uint8
  assert (t(2, dtype=dtypes.int32) + True).dtype == dtypes.int32
  assert (t(2, dtype=dtypes.bool) + 1).dtype == dtypes.int32
  assert (t(2, dtype=dtypes.bool) & True).dtype == dtypes.bool
  assert (2 - t(2, dtype=dtypes.int16)).dtype == dtypes.int16 and (1.5 / t(2, dtype=dtypes.float64)).dtype == dtypes.float64

def test_division_and_results_dtypes():
  i = t(3, dtype=dtypes.int32)
  assert (i / 2).dtype == dtypes.float32 and (i / i).dtype == dtypes.float32 and (i // 2).dtype == dtypes.int32 and (i % 3).dtype == dtypes.int32
  assert (t(3, dtype=dtypes.float16) / 2).dtype == dtypes.float16 and (t(3) // 2).dtype == dtypes.float32
  assert (i < 1).dtype == dtypes.bool and (i == i).dtype == dtypes.bool and (i != 2.5).dtype == dtypes.bool and (t(3) >= i).dtype == dtypes.bool
  assert (i ** 2).dtype == dtypes.int32 and (t(3) ** 0.5).dtype == dtypes.float32 and (i ** 0.5).dtype == dtypes.float32 and (2 ** i).dtype == dtypes.int32
  for f in ("exp", "log", "sqrt", "sin", "cos", "sigmoid", "tanh", "gelu", "exp2", "reciprocal", "erf"): assert getattr(i, f)().dtype == dtypes.float32, f
  for f in ("abs", "neg", "sign", "relu", "floor", "round", "square"): assert getattr(i, f)().dtype == dtypes.int32, f
  assert t(3, dtype=dtypes.float16).exp().dtype == dtypes.float16 and (~i).dtype == dtypes.int32 and (i << 2).dtype == dtypes.int32
  assert t(3).isnan().dtype == dtypes.bool and i.isinf().dtype == dtypes.bool

# ---- shapes ----
def test_broadcasting_shapes():
  assert (t(2, 1, 3) + t(4, 1)).shape == (2, 4, 3)
  assert (t(3) * t(2, 3)).shape == (2, 3) and (t(0, 3) + t(3)).shape == (0, 3) and (t(2, 3) + 1).shape == (2, 3)
  assert (t(5, 1) > t(1, 4)).shape == (5, 4)
  assert (t(2, 3) > 0).where(t(3), 0.0).shape == (2, 3) and Tensor.where(t(2, 1) > 0, 1, 0).dtype == dtypes.int32
  assert (t(2, 1) > 0).where(t(1, 3), t(4, 1, 1)).shape == (4, 2, 3)

@pytest.mark.parametrize("op,shape", [
  (lambda x: x.sum(), ()), (lambda x: x.sum(0), (3, 4)), (lambda x: x.sum(-1, keepdim=True), (2, 3, 1)), (lambda x: x.sum((0, 2)), (3,)),
  (lambda x: x.max(1), (2, 4)), (lambda x: x.min((1, 2), keepdim=True), (2, 1, 1)), (lambda x: x.mean(), ()), (lambda x: x.var(1), (2, 4)),
  (lambda x: x.std(-1, keepdim=True), (2, 3, 1)), (lambda x: x.argmax(), ()), (lambda x: x.argmax(1), (2, 4)), (lambda x: x.argmin(-1, keepdim=True), (2, 3, 1)),
  (lambda x: x.any(0), (3, 4)), (lambda x: x.all(), ()), (lambda x: x.prod(2), (2, 3)), (lambda x: x.logsumexp(1), (2, 4)),
  (lambda x: x.softmax(), (2, 3, 4)), (lambda x: x.log_softmax(0), (2, 3, 4)), (lambda x: x.cumsum(1), (2, 3, 4)), (lambda x: x.cummax(-1)[0], (2, 3, 4)),
  (lambda x: x.reshape(6, 4), (6, 4)), (lambda x: x.reshape(-1), (24,)), (lambda x: x.reshape(2, -1, 2), (2, 6, 2)), (lambda x: x.view(4, 6), (4, 6)),
  (lambda x: x.reshape(None, 12), (2, 12)), (lambda x: x.permute(2, 0, 1), (4, 2, 3)), (lambda x: x.transpose(0, 2), (4, 3, 2)),
  (lambda x: x.flatten(), (24,)), (lambda x: x.flatten(1), (2, 12)), (lambda x: x.unflatten(2, (2, 2)), (2, 3, 2, 2)),
  (lambda x: x.unsqueeze(0), (1, 2, 3, 4)), (lambda x: x.unsqueeze(-1), (2, 3, 4, 1)), (lambda x: x.reshape(2, 1, 12).squeeze(), (2, 12)),
  (lambda x: x.squeeze(0), (2, 3, 4)), (lambda x: x.expand(5, 2, 3, 4), (5, 2, 3, 4)), (lambda x: x[:, :1].expand(-1, 7, -1), (2, 7, 4)),
  (lambda x: x.pad(((1, 1), None, (0, 3))), (4, 3, 7)), (lambda x: x.pad((1, 2)), (2, 3, 7)), (lambda x: x.pad((1, 1, 2, 2)), (2, 7, 6)),
  (lambda x: x.pad(((0, 0), (-1, 0), (0, -2))), (2, 2, 2)), (lambda x: x.pad((1, 1), mode="reflect"), (2, 3, 6)),
  (lambda x: x.shrink(((0, 1), None, (1, 3))), (1, 3, 2)), (lambda x: x.flip(0, 2), (2, 3, 4)), (lambda x: x.repeat(2, 1, 3), (4, 3, 12)),
  (lambda x: x.repeat(2, 1, 1, 1), (2, 2, 3, 4)), (lambda x: x.cat(x, dim=1), (2, 6, 4)), (lambda x: Tensor.cat(x, x, x, dim=-1), (2, 3, 12)),
  (lambda x: x.stack(x), (2, 2, 3, 4)), (lambda x: Tensor.stack(x, x, dim=-1), (2, 3, 4, 2)), (lambda x: x.split(2, -1)[1], (2, 3, 2)),
  (lambda x: x.split([1, 2], 1)[1], (2, 2, 4)), (lambda x: x.chunk(2, 1)[1], (2, 1, 4)), (lambda x: x @ t(4, 5), (2, 3, 5)),
  (lambda x: x @ t(4), (2, 3)), (lambda x: t(3) @ x, (2, 4)), (lambda x: t(7, 1, 4, 3) @ x, (7, 2, 4, 4)), (lambda x: x.dot(t(2, 4, 1)), (2, 3, 1)),
  (lambda x: x.linear(t(4, 6), t(6)), (2, 3, 6)), (lambda x: x.sequential([Tensor.relu, lambda y: y.sum(0)]), (3, 4)),
  (lambda x: x.cast(dtypes.int32).one_hot(5), (2, 3, 4, 5)), (lambda x: x.gather(1, Tensor.zeros(2, 2, 4, dtype=dtypes.int32)), (2, 2, 4)),
  (lambda x: x.triu(1), (2, 3, 4)), (lambda x: x.layernorm(), (2, 3, 4)), (lambda x: x.lerp(1.0, 0.5), (2, 3, 4)), (lambda x: x.clip(0, 1), (2, 3, 4)),
  (lambda x: x.detach(), (2, 3, 4)), (lambda x: x.contiguous(), (2, 3, 4)), (lambda x: x.clone(), (2, 3, 4))])
def test_op_shapes(op, shape):
  assert op(t(2, 3, 4)).shape == shape

def test_reduction_dtypes():
  # ints and bools sum, cumsum and prod in int64, as torch (tests/core/test_numerics.py checks values against torch)
  assert t(3, dtype=dtypes.int8).sum().dtype == dtypes.int64 and t(3, dtype=dtypes.uint8).sum().dtype == dtypes.int64
  assert t(3, dtype=dtypes.bool).sum().dtype == dtypes.int64 and t(3, dtype=dtypes.int64).sum().dtype == dtypes.int64
  assert t(3, dtype=dtypes.float16).sum().dtype == dtypes.float16 and t(3, dtype=dtypes.float16).sum(dtype=dtypes.float32).dtype == dtypes.float32
  assert t(3, dtype=dtypes.int8).max().dtype == dtypes.int8 and t(3, dtype=dtypes.int8).prod().dtype == dtypes.int64
  assert t(3, dtype=dtypes.int32).mean().dtype == dtypes.float32 and t(3, dtype=dtypes.float16).mean().dtype == dtypes.float16
  assert t(3).argmax().dtype == dtypes.int32 and t(3).any().dtype == dtypes.bool and t(3, dtype=dtypes.int8).cumsum().dtype == dtypes.int64
  assert (t(2, 3, dtype=dtypes.int8) @ t(3, dtype=dtypes.int8)).dtype == dtypes.int8 and (t(2, 3, dtype=dtypes.float16) @ t(3, 2)).dtype == dtypes.float32

def test_empty_reductions_keep_their_input():
  # a reduce over an empty axis stays a reduce of its input (the engine folds it to the identity: tests/core/test_api_math.py),
  # so gradients reach the input, as in torch and public tinygrad
  for x in (t(0, 3), t(3, 0)):
    for op in (Ops.ADD, Ops.MUL, Ops.MAX):
      # (Tensor.max over an empty axis raises, as torch: the internal _max keeps the reduce)
      r = {Ops.ADD: x.sum, Ops.MUL: x.prod, Ops.MAX: x._max}[op](0 if x.shape[0] == 0 else 1)
      assert r.shape == (3,) and x.uop in r.uop.toposort() and any(u.op is Ops.REDUCE_AXIS and u.arg[0] is op for u in r.uop.toposort())

@pytest.mark.parametrize("idx,shape", [
  (0, (3, 4)), (-1, (3, 4)), ((1, 2), (4,)), ((1, 2, 3), ()), (slice(None), (2, 3, 4)), ((slice(None), slice(1, None)), (2, 2, 4)),
  ((Ellipsis, 0), (2, 3)), ((0, Ellipsis), (3, 4)), ((None, 0), (1, 3, 4)), ((slice(None), None, 1, None), (2, 1, 1, 4)),
  ((slice(None, None, -1),), (2, 3, 4)), ((slice(None), slice(None, None, 2)), (2, 2, 4)), ((Ellipsis, slice(3, 0, -2)), (2, 3, 2)),
  ((slice(5, 10),), (0, 3, 4)), (([0, 1, 1],), (3, 3, 4)), ((slice(None), [2, 0]), (2, 2, 4)), (([0, 1], [1, 2]), (2, 4)),
  (([0, 1], slice(None), [1, 2]), (2, 3)), ((0, slice(None), [1, 2]), (3, 2)), ((slice(None), 0, [1, 2]), (2, 2)),
  ((slice(None), [[0, 1], [1, 2]]), (2, 2, 2, 4)), ((Ellipsis, [3]), (2, 3, 1)), (((1, 0), slice(None), 1), (2, 3))])
def test_getitem_shapes(idx, shape):
  # torch's placement of the index dims (what public tinygrad follows): an int does not separate tensor indices, so
  # x[0, :, [1, 2]] is (3, 2) where numpy gives (2, 3); a tuple inside the index is a list index (values against torch:
  # test_api_index.py's test_getitem_matches_torch)
  x = t(2, 3, 4)
  assert x[idx].shape == shape

def test_getitem_tensor_index():
  x = t(5, 6)
  assert x[Tensor([1, 2, 3])].shape == (3, 6) and x[:, Tensor([[0], [1]])].shape == (5, 2, 1) and x[Tensor(2)].shape == (6,)

def test_conv_and_pool_shapes():
  x = t(2, 3, 9, 9)
  assert x.conv2d(t(8, 3, 3, 3)).shape == (2, 8, 7, 7)
  assert x.conv2d(t(8, 3, 3, 3), t(8), padding=1).shape == (2, 8, 9, 9)
  assert x.conv2d(t(8, 3, 3, 3), stride=2, padding=(1, 0)).shape == (2, 8, 5, 4)
  assert x.conv2d(t(8, 3, 3, 3), padding=(1, 1, 0, 0)).shape == (2, 8, 7, 9)
  assert x.conv2d(t(8, 3, 3, 3), dilation=2).shape == (2, 8, 5, 5)
  assert t(2, 6, 9, 9).conv2d(t(6, 2, 3, 3), groups=3).shape == (2, 6, 7, 7)
  assert t(2, 3, 9).conv2d(t(4, 3, 3)).shape == (2, 4, 7)  # 1-d conv through the same path
  assert x.max_pool2d().shape == (2, 3, 4, 4) and x.max_pool2d(3, 1).shape == (2, 3, 7, 7) and x.max_pool2d(2, ceil_mode=True).shape == (2, 3, 5, 5)
  assert x.max_pool2d(3, 2, padding=1).shape == (2, 3, 5, 5) and x.avg_pool2d(3).shape == (2, 3, 3, 3) and x.avg_pool2d((2, 3), stride=1).shape == (2, 3, 8, 7)
  assert x.avg_pool2d(2, dilation=2).shape == (2, 3, 4, 4)

# ---- laziness ----
def test_building_graphs_is_lazy():
  x, w = Tensor([[1.0, 2.0], [3.0, 4.0]]), Tensor.empty(3, 1, 2, 2)
  y = ((x @ x.T).relu().softmax() + x.sum(0)).exp().log_softmax(0)
  y = y[Tensor([1, 0])][:, ::-1].pad((1, 1), value=2.0).cumsum(1).argmax(1)
  z = x.reshape(1, 1, 2, 2).conv2d(w, padding=1).max_pool2d().mean()
  u = Tensor.arange(4).one_hot(4).float() @ Tensor.eye(4) + Tensor.linspace(0, 1, 4)
  for r in (y, z, u):
    assert isinstance(r.uop.shape, tuple) and r.dtype is not None and repr(r)
  assert not z._is_realized() and x._is_realized()
  assert x.realize() is x  # already realized: realize() does not call the engine

def test_assign_on_lazy_tensor_takes_the_value():
  a = Tensor.zeros(3)
  b = Tensor.ones(3)
  a.assign(b)
  assert a.uop is b.uop
  c = Tensor([1.0, 2.0, 3.0])
  c.assign(c * 2)
  assert c.uop.op is Ops.ASSIGN and c.shape == (3,)
  c.assign(5.0)  # a scalar broadcasts; the target buffer stays the same
  assert c.uop.op is Ops.ASSIGN and c.uop.src[0].op in (Ops.RESHAPE, Ops.BUFFER)

def test_import_is_cheap():
  env = dict(os.environ, PYTHONPATH=os.path.join(os.path.dirname(__file__), "..", "..", "core"))
  out = subprocess.run([sys.executable, "-c", "import sys, tinygrad; from tinygrad import Tensor; print('numpy' in sys.modules)"],
                       capture_output=True, text=True, env=env, check=True)
  assert out.stdout.strip() == "False"

# ---- errors ----
def test_broadcast_error():
  with pytest.raises(ValueError, match=r"cannot broadcast shapes \(2, 3\) and \(4,\)"): t(2, 3) + t(4)
  with pytest.raises(ValueError, match="cannot broadcast"): t(2, 3).expand(4, 3)
  with pytest.raises(ValueError, match="cannot broadcast"): (t(2) > 0).where(t(3), 1.0)

def test_reshape_errors():
  with pytest.raises(ValueError, match=r"reshape from \(2, 3\) to \(4, 2\): sizes 6 != 8"): t(2, 3).reshape(4, 2)
  with pytest.raises(ValueError, match="only one dimension can be -1"): t(2, 3).reshape(-1, -1)
  with pytest.raises(ValueError, match="cannot infer -1"): t(2, 3).reshape(4, -1)
  with pytest.raises(ValueError, match="negative"): t(2, 3).reshape(-2, 3)

def test_axis_errors():
  for f in (lambda x: x.sum(2), lambda x: x.max(-3), lambda x: x.argmax(5), lambda x: x.transpose(0, 2), lambda x: x.unsqueeze(4),
            lambda x: x.flip(2), lambda x: x.cumsum(3), lambda x: x.softmax(2)):
    with pytest.raises(AxisError, match=r"axis -?\d+ is out of range for a tensor of shape \(2, 3\)"): f(t(2, 3))
  with pytest.raises(IndexError): t(2, 3).sum(7)
  with pytest.raises(ValueError): t(2, 3).sum(7)
  with pytest.raises(ValueError, match="repeated axis"): t(2, 3).sum((0, 0))
  with pytest.raises(ValueError, match="not a permutation"): t(2, 3).permute(0, 0)

def test_getitem_errors():
  x = t(2, 3)
  with pytest.raises(IndexError, match="index 2 is out of bounds for axis 0 with size 2"): x[2]
  with pytest.raises(IndexError, match="index -4 is out of bounds for axis 1 with size 3"): x[:, -4]
  with pytest.raises(IndexError, match="too many indices"): x[0, 0, 0]
  with pytest.raises(IndexError, match="single ellipsis"): x[..., ...]
  with pytest.raises(IndexError, match="unsupported index"): x["a"]
  with pytest.raises(IndexError, match="must be ints"): x[Tensor([0.5])]

def test_other_errors():
  with pytest.raises(ValueError, match=r"matmul: shapes \(2, 3\) and \(4, 5\) do not match: contracted dims 3 != 4"): t(2, 3) @ t(4, 5)
  with pytest.raises(ValueError, match="at least 1 dimension"): Tensor(1.0) @ t(2)
  with pytest.raises(ValueError, match="differ outside dim 0"): t(2, 3).cat(t(2, 4))
  with pytest.raises(ValueError, match="stack: shapes"): t(2, 3).stack(t(3, 2))
  with pytest.raises(ValueError, match="sum to 4"): t(5).split([2, 2])
  # a 0-d tensor has no dim to split or chunk (torch raises too): the error names it, not an IndexError from shape[0]
  for f in (lambda: Tensor(3.0).split(1), lambda: Tensor(3.0).chunk(1, -1)):
    with pytest.raises(RuntimeError, match="0-d tensor"): f()
  with pytest.raises(ValueError, match="out of bounds"): t(2, 3).shrink(((0, 3), None))
  with pytest.raises(ValueError, match="ragged"): Tensor([[1, 2], [3]])
  with pytest.raises(TypeError, match="cannot make a Tensor"): Tensor(object())
  with pytest.raises(TypeError, match="bitwise and needs int or bool"): t(2) & t(2)
  with pytest.raises(ValueError, match="item"): t(2).item()
  with pytest.raises(ValueError, match="conv2d: input channels"): t(1, 3, 5, 5).conv2d(t(2, 4, 3, 3))
  with pytest.raises(ValueError, match="kernel"): t(1, 1, 2, 2).max_pool2d(3)
  with pytest.raises(ValueError, match="unknown mode"): t(2, 3).pad((1, 1), mode="mirror")
  with pytest.raises(ValueError, match="assign: value shape"): t(2, 3).assign(t(3, 2))
  with pytest.raises(ValueError, match="assign dtype mismatch: value dtypes.int != target dtypes.float"): t(2, 3).assign(t(2, 3, dtype=dtypes.int32))

def test_setitem_builds_a_masked_assign():
  x = Tensor.zeros(4, 5)
  x[1:3, ::2] = 1.0
  assert x.shape == (4, 5) and x.uop.op is Ops.WHERE
  y = Tensor([[1, 2, 3], [4, 5, 6]])
  y[:, -1] = Tensor([7, 8])
  assert y.uop.op is Ops.ASSIGN and y.dtype == dtypes.int32
  with pytest.raises(ValueError, match="does not fit the indexed shape"): y[0] = Tensor([1, 2])
  y[[0, 1]] = 0   # list indices are an assign too (tests/core/test_api_index.py checks them against numpy)
  assert y.uop.op is Ops.ASSIGN

def test_comparing_with_none_is_identity_as_torch():
  # t == None made a tensor of None (an empty one): t == None raised a BroadcastError about shapes (2,) and (0,), and a 0-d
  # tensor's was a silent empty tensor; `t in [None, t]` raised. torch falls back to identity: False for ==, True for !=
  t, s = Tensor([1.0, 2.0]), Tensor(3.0)
  assert (t == None) is False and (t != None) is True and (s == None) is False and (None == s) is False  # noqa: E711
  assert t in [None, t] and s not in [None]

def test_float_sizes_offsets_and_diagonals_are_refused():
  # int() truncated them silently (torch raises TypeError): shrink(((0, 1.5), None)) kept 1 row, pad(((1.5, 0), None))
  # padded 1, tril(0.5) gave tril(-1)'s values, linspace(0, 1, 2.5) 3 values; numpy ints stay accepted, and so do a whole
  # float diagonal and step count (public tinygrad 0.14 takes tril(1.0) and linspace(0, 1, 3.0))
  x = Tensor.ones(3, 4)
  for f in (lambda: x.shrink(((0, 1.5), None)), lambda: x.pad(((1.5, 0), None)), lambda: x.pad((1.0, 0), mode="reflect"),
            lambda: x.pad((1.5, 0)), lambda: x.tril(0.5), lambda: x.triu(-1.5), lambda: Tensor.linspace(0, 1, 2.5)):
    with pytest.raises(TypeError, match="int"): f()
  assert x.pad(((np.int64(1), 0), None)).shape == (4, 4) and x.shrink(((np.int32(0), np.int64(2)), None)).shape == (2, 4)
  assert x.pad((1, 0, np.int64(2), 1)).shape == (6, 5) and x.tril(np.int64(1)).shape == (3, 4)
  assert x.triu(1.0).uop is x.triu(1).uop and Tensor.linspace(0, 1, 3.0).uop is Tensor.linspace(0, 1, 3).uop
