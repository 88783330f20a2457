"""Names public tinygrad's programs import from its modules (tinygrad.tensor, helpers, dtype, uop.ops, renderer), each
checked for what it does there, not only that it exists."""
import ctypes, math, os, pathlib, tempfile, typing
import numpy as np
import pytest
from tinygrad import Tensor, Device, Context, dtypes, diskcache as dc
from tinygrad import helpers
from tinygrad.uop import Ops

def test_tensor_module_reexports():
  import tinygrad.tensor as tt
  from tinygrad.tensor import cast, _to_np_dtype, Variable, getenv, fetch  # noqa: F401 (bert.py, mask_rcnn.py)
  assert cast is typing.cast and tt._to_np_dtype(dtypes.int16) is np.int16 and tt._from_np_dtype(np.dtype("uint8")) == dtypes.uint8
  assert tt.is_numpy_ndarray(np.zeros(2)) and not tt.is_numpy_ndarray([0.0]) and not tt.is_numpy_ndarray(Tensor([1]))

def test_dtype_conversions_match_numpy_and_torch():
  torch = pytest.importorskip("torch")
  from tinygrad.dtype import truncate, _to_np_dtype, _from_np_dtype, _to_torch_dtype, _from_torch_dtype
  for v in (300, -1, 2**31, -2**40 + 5):
    for dt in (dtypes.uint8, dtypes.int8, dtypes.int32, dtypes.uint32, dtypes.int16):
      assert truncate[dt](v) == np.array(v % 2**64, dtype=np.uint64).astype(_to_np_dtype(dt)).item(), (v, dt)
  assert truncate[dtypes.float16](1.0001) == float(np.float16(1.0001)) and truncate[dtypes.float32](0.1) == float(np.float32(0.1))
  assert truncate[dtypes.bool](3) is True
  assert _to_np_dtype(dtypes.bfloat16) is np.float32 and _to_np_dtype(dtypes.void) is None
  for dt in dtypes.all:
    assert _from_torch_dtype(_to_torch_dtype(dt)) == (dtypes.uint8 if dt in dtypes.fp8s else dt)   # fp8: its storage, uint8 (as public tinygrad)
    if dt != dtypes.bfloat16 and dt not in dtypes.fp8s: assert _from_np_dtype(_to_np_dtype(dt)) == dt   # (numpy has neither: float32)
  with pytest.raises(TypeError, match="complex64.*supported"): _from_torch_dtype(torch.complex64)

def test_helpers_memory_views():
  buf = (ctypes.c_uint8 * 8)(*range(8))
  mv = helpers.to_mv(ctypes.addressof(buf), 8)
  mv[3] = 200   # no copy: writes the memory
  assert buf[3] == 200 and helpers.mv_address(mv) == ctypes.addressof(buf)
  flat = helpers.flat_mv(memoryview(np.arange(6, dtype=np.int32).reshape(2, 3)))
  assert flat.format == "B" and flat.nbytes == 24 and flat.shape == (24,)

def test_helpers_small_functions():
  for x in range(-7, 8):
    for y in (-3, -2, 2, 3): assert helpers.cdiv(x, y) == int(np.trunc(x / y)), (x, y)
  assert helpers.get_single_element([5]) == 5
  with pytest.raises(ValueError, match="one element, got 2"): helpers.get_single_element([1, 2])
  assert helpers.temp("x.bin") == (pathlib.Path(tempfile.gettempdir()) / "x.bin").as_posix()
  assert helpers.temp("x", append_user=True).startswith(helpers.temp("x") + ".")
  # the small helpers programs import from public tinygrad's helpers
  assert [helpers.next_power2(x) for x in (0, 1, 2, 3, 5, 64, 65)] == [1, 1, 2, 4, 8, 64, 128]
  assert helpers.round_down(17, 8) == 16 and helpers.to_tuple(3) == (3,) and helpers.to_tuple((1, 2)) == (1, 2)
  assert helpers.pluralize("kernel", 1) == "1 kernel" and helpers.pluralize("kernel", 0) == "0 kernels"
  assert helpers.strides_for_shape((2, 1, 3, 4)) == (12, 0, 4, 1) and helpers.strides_for_shape(()) == ()
  assert np.zeros((2, 3, 4), np.int8).strides == helpers.strides_for_shape((2, 3, 4))
  assert [helpers.time_to_str(t).strip() for t in (12.5, 0.5, 0.0125, 0.002)] == ["12.50s", "500.00ms", "12.50ms", "2000.00us"]

def test_diskcache_decorator_and_clear(tmp_path, monkeypatch):
  monkeypatch.setenv("CACHEDB", str(tmp_path / "cache.db"))
  dc.reset()
  calls = []
  @helpers.diskcache
  def slow(a, b=1):
    calls.append(a)
    return {"sum": a + b, "pair": (a, b)}
  try:
    assert slow(2, b=3) == {"sum": 5, "pair": (2, 3)}
    assert slow(2, b=3) == {"sum": 5, "pair": (2, 3)} and calls == [2]     # from the disk (typed JSON: a tuple stays a tuple)
    with pytest.raises(TypeError, match="plain data"): slow(object())
    helpers.diskcache_clear()
    assert slow(2, b=3)["sum"] == 5 and calls == [2, 2]
  finally: dc.reset()

def test_profile_marker_is_an_instant_event():
  from tinygrad.viz.profile import Profiler
  helpers.profile_marker("outside")   # not profiling: nothing to record, no error
  with Profiler() as p: helpers.profile_marker("epoch 1", color="red")
  ev = [e for e in p.to_json()["traceEvents"] if e.get("cat") == "marker"]
  assert [(e["name"], e["ph"], e["args"]["color"]) for e in ev] == [("epoch 1", "i", "red")]

def test_dev_has_public_tinygrads_attributes():
  from tinygrad.helpers import DEV
  with Context(DEV="nv:1:ptx"):
    assert (DEV.device, DEV.index, DEV.renderer, DEV.interface, DEV.arch) == ("NV", 1, "PTX", "", "") and DEV.value == "nv:1:ptx"
  with Context(DEV="CPU:LLVM"): assert (DEV.device, DEV.index, DEV.renderer) == ("CPU", 0, "LLVM")
  with Context(DEV=""): assert (DEV.device, DEV.renderer) == ("", "")

def test_dev_still_selects_the_default_device():
  import subprocess, sys
  env = {**os.environ, "DEV": "PYTHON"}
  out = subprocess.run([sys.executable, "-c", "from tinygrad import Device; from tinygrad.helpers import DEV; print(Device.DEFAULT, DEV.device)"],
                       env=env, capture_output=True, text=True, timeout=120)
  assert out.stdout.split() == ["PYTHON", "PYTHON"], out.stderr

def test_supported_dtypes_is_a_method_returning_the_real_set():
  from tinygrad.renderer import Renderer
  ren = Device["PYTHON"].renderer
  assert ren.supported_dtypes() == set(dtypes.all) and dtypes.half in ren.supported_dtypes   # both spellings
  # (the fp8 dtypes are in every set: the core stores them as bytes and casts them with uint32/float32 ops, native_fp8)
  class Small(Renderer): supported_dtypes = frozenset([dtypes.int32, dtypes.float32])
  assert Small.supported_dtypes == {dtypes.int32, dtypes.float32, *dtypes.fp8s} and Small().supported_dtypes() == {dtypes.int32, dtypes.float32, *dtypes.fp8s}
  per_device = Small(supported_dtypes=frozenset([dtypes.float32]))   # an ability set per instance
  assert per_device.supported_dtypes() == {dtypes.float32, *dtypes.fp8s} and Small().supported_dtypes() == {dtypes.int32, dtypes.float32, *dtypes.fp8s}
  # the core refuses a dtype outside the set with one clear error
  from tinygrad.engine.realize import _check_dtypes
  class Dev: renderer, device = per_device, "SMALL"
  with pytest.raises(TypeError, match="dtypes.int is not supported on SMALL; supported: float"): _check_dtypes(Dev(), (Tensor([1]) + 1).schedule()[-1].ast)

def test_kernel_info_names_the_kernel_and_fixes_its_actions():
  from tinygrad.uop.ops import KernelInfo
  from tinygrad.codegen import get_program
  ast = (Tensor.ones(64, 64).contiguous().realize() + 1).sum(1).schedule()[-1].ast
  ren = Device["PYTHON"].renderer
  plain, named = get_program(ast, ren, [], compile=False), get_program(ast.replace(arg=KernelInfo(name="my sum", opts_to_apply=())), ren, compile=False)
  assert named.name == "my20sum" == KernelInfo(name="my sum").function_name
  assert [u.op for u in named.uops] == [u.op for u in plain.uops]          # opts_to_apply=(): no action, as opts=[]
  heur = get_program(ast.replace(arg=KernelInfo(name="h")), ren, compile=False)   # None: the heuristics decide
  assert [u.op for u in heur.uops] == [u.op for u in get_program(ast, ren, compile=False).uops]

def test_replace_takes_the_other_tensors_data_without_writing_the_old_buffer():
  a = Tensor([1.0, 2.0, 3.0]).realize()
  view = a[1:]
  b = Tensor([7, 8, 9], dtype=dtypes.int16)
  assert a.replace(b) is a and a.dtype == dtypes.int16 and a.tolist() == [7, 8, 9]
  assert view.tolist() == [2.0, 3.0]     # nothing was written into the old buffer
  with pytest.raises(ValueError, match=r"replace: shape \(2,\) != this tensor's \(3,\)"): a.replace(Tensor([1, 2]))

def test_const_like_keeps_shape_device_and_dtype():
  x = Tensor.ones(2, 3, dtype=dtypes.int8)
  c = x.const_like(5)
  assert c.shape == (2, 3) and c.dtype == dtypes.int8 and c.device == x.device and c.tolist() == [[5] * 3] * 2
  assert x.const_like(1.5, dtype=dtypes.float16).dtype == dtypes.float16

def test_mem_used_per_device_counts_each_device():
  from tinygrad import GlobalCounters
  import gc
  gc.collect()   # earlier tests' garbage freed now, not by the collect below (which would count it against `before`)
  before = dict(GlobalCounters.mem_used_per_device)
  a, b = Tensor.empty(1000, device="PYTHON:0").realize(), Tensor.empty(500, device="PYTHON:1").realize()
  grew = {d: GlobalCounters.mem_used_per_device[d] - before.get(d, 0) for d in ("PYTHON", "PYTHON:1")}
  assert grew == {"PYTHON": 4000, "PYTHON:1": 2000}, grew
  del a, b
  gc.collect()
  assert GlobalCounters.mem_used_per_device["PYTHON:1"] == before.get("PYTHON:1", 0)

def test_rearrange_matches_numpy():
  from tinygrad.mixin.movement import RearrangeError
  x = np.arange(2 * 12 * 3 * 4).reshape(2, 12, 3, 4)
  t = Tensor(x)
  np.testing.assert_array_equal(t.rearrange("b c h w -> b h w c").numpy(), x.transpose(0, 2, 3, 1))
  np.testing.assert_array_equal(t.rearrange("b c h w -> (b h) (w c)").numpy(), x.transpose(0, 2, 3, 1).reshape(6, 48))
  # depth-to-space, then back
  d2s = x.reshape(2, 3, 2, 2, 3, 4).transpose(0, 1, 4, 2, 5, 3).reshape(2, 3, 6, 8)
  np.testing.assert_array_equal(t.rearrange("b (c h1 w1) h w -> b c (h h1) (w w1)", h1=2, w1=2).numpy(), d2s)
  np.testing.assert_array_equal(Tensor(d2s).rearrange("b c (h h1) (w w1) -> b (c h1 w1) h w", h1=2, w1=2).numpy(), x)
  np.testing.assert_array_equal(t.rearrange("b ... w -> w ... b").numpy(), x.transpose(3, 1, 2, 0))
  np.testing.assert_array_equal(t.rearrange("... -> (...)").numpy(), x.reshape(-1))
  assert t.rearrange("b c h w -> b 1 c h w ()").shape == (2, 1, 12, 3, 4, 1)
  for bad in ("a b -> a", "a b c d -> a b c d -> a", "a _b c d -> a _b c d", "(a b c d -> a b c d", "a ... ... -> a"):
    with pytest.raises(RearrangeError): t.rearrange(bad)
  with pytest.raises(RuntimeError, match="names 3 dimensions, the tensor has 4"): t.rearrange("a b c -> c b a")
  with pytest.raises(RuntimeError, match="sizes of all but one"): t.rearrange("b (c g k) h w -> b c g k h w", g=2)
  with pytest.raises(ValueError, match="5 does not divide 12"): t.rearrange("b (c g) h w -> b c g h w", g=5)
  with pytest.raises(AssertionError, match="make 3, the dimension is 2"): t.rearrange("b c h w -> c b h w", b=3)

def test_newton_schulz_matches_numpy():
  rng = np.random.default_rng(0)
  for shape in ((4, 6), (6, 4), (2, 3, 5)):
    x = rng.standard_normal(shape).astype(np.float32)
    def ref(g, steps=3, p=(3.4445, -4.775, 2.0315)):
      if g.shape[-2] > g.shape[-1]: return np.swapaxes(ref(np.swapaxes(g, -2, -1), steps, p), -2, -1)
      g = g / (np.sqrt((g * g).sum(axis=(-2, -1), keepdims=True)) + 1e-7)
      for _ in range(steps):
        a = g @ np.swapaxes(g, -2, -1)
        g = p[0] * g + p[1] * (a @ g) + p[2] * (a @ a @ g)
      return g
    np.testing.assert_allclose(Tensor(x).newton_schulz(3, (3.4445, -4.775, 2.0315)).numpy(), ref(x), rtol=1e-4, atol=1e-5)
    # the norm of entries ~1e25 overflowed float32 (inf): every result was 0; of entries ~1e-25 it underflowed to 0 (the
    # reference's float64 keeps both): the same values as the reference, scaled by 1e-25/1e-7 there
    for s in (1e25, 1e-25):
      np.testing.assert_allclose(Tensor(x * s).newton_schulz(3, (3.4445, -4.775, 2.0315)).numpy() / min(s / 1e-7, 1), ref(x.astype(np.float64) * s) / min(s / 1e-7, 1),
                                 rtol=1e-4, atol=1e-5)

def test_from_url_path_data_and_max_shape(tmp_path):
  from tinygrad import Variable
  p = tmp_path / "blob.bin"
  p.write_bytes(bytes([1, 2, 250]))
  assert Tensor(p).tolist() == [1, 2, 250] and Tensor(p).dtype == dtypes.uint8
  assert Tensor.from_url(str(p)).tolist() == [1, 2, 250]   # a local path needs no download
  v = Variable("n", 1, 8).bind(3)
  t = Tensor.ones(8, 4)[:v]
  assert t.max_shape == (8, 4) and t.max_numel() == 32 and Tensor.ones(2, 3).max_shape == (2, 3)

def test_uop_axis_bounds_and_realized_on_multi_device_tensors():
  devs = ("PYTHON:0", "PYTHON:1", "PYTHON:2")
  x = Tensor.arange(7 * 2).reshape(7, 2).contiguous().shard(devs, axis=0).realize()
  assert x.uop.axis == 0 and x.uop.bounds == ((0, 3), (3, 6), (6, 7)) and x.uop.shard_shape == (3, 2)
  for (b, e), s in zip(x.uop.bounds, x.uop.src): np.testing.assert_array_equal(Tensor(s).numpy(), np.arange(14).reshape(7, 2)[b:e])
  assert (x.T).uop.axis == 1 and x.sum(1).uop.axis == 0   # the axis follows the ops
  r = Tensor([1, 2]).shard(devs).realize()
  assert r.uop.axis is None and Tensor([1]).uop.axis is None and r.uop.shard_shape == (2,)
  with pytest.raises(ValueError, match="not a sharded multi-device tensor"): r.uop.bounds
  assert isinstance(r.uop.realized, tuple) and len(r.uop.realized) == 3
  a = Tensor([1.0, 2.0]).realize()
  buf = a.uop.base.realized
  assert buf is not None and buf.size == 2 and (a + 1).uop.realized is None
  a += 1
  a.realize()
  assert a.uop.base.realized is buf   # an assign writes the same buffer

def test_uop_buffer_of_a_reshaped_realized_tensor():
  # a realized (10, 10) tensor is a reshape of its (100,) buffer here: t.uop.buffer raised "expected a BUFFER UOp, got
  # Ops.RESHAPE" where public tinygrad gives the buffer (its tests compare two tensors' buffers with it)
  a, b = Tensor.zeros(10, 10).contiguous(), Tensor.zeros(10, 10).contiguous()
  Tensor.realize(a, b)
  assert a.uop.op is Ops.RESHAPE and a.uop.buffer is a.uop.base.buffer and a.uop.buffer.size == 100 and a.uop.buffer is not b.uop.buffer
  with pytest.raises(ValueError, match="expected a BUFFER"): a[2:].uop.buffer   # a shrink is not the buffer (no sub-buffers here)

def test_uop_is_realized():
  # public tinygrad's `t.uop.is_realized` (its tests and programs ask it after realize()): its base has device memory
  t = Tensor([1.0, 2.0, 3.0]) * 2
  assert not t.uop.is_realized and not (t + 1).uop.is_realized
  t.realize()
  assert t.uop.is_realized and t[1:].uop.is_realized and t.reshape(3, 1).uop.is_realized
  s = Tensor.ones(4).contiguous().shard(("PYTHON:0", "PYTHON:1"), axis=0)
  assert not s.uop.is_realized and s.realize().uop.is_realized and s.uop.src[0].is_realized

def test_all2all_allreduce_cast_and_scache_context_variables():
  x = np.random.default_rng(0).standard_normal((4, 40)).astype(np.float32)
  ds = tuple(f"PYTHON:{i}" for i in range(4))
  def copies(t): return [u for u in t.uop.toposort() if u.op.name == "COPY"]
  for a2a, ring in ((0, 0), (2, 0), (0, 2)):
    with Context(ALL2ALL=a2a, RING=ring):
      s = Tensor(x).shard(ds, axis=0).sum(0)
      n = len(copies(s))   # counted in the lazy graph: a realize may hand its parts over as buffers
      np.testing.assert_allclose(s.numpy(), x.sum(0), rtol=1e-5, atol=1e-5)
    assert n == {(0, 0): 4 * 3, (2, 0): 2 * 4 * 3, (0, 2): 2 * 4 * 3}[(a2a, ring)] + 4, (a2a, ring, n)   # + the 4 copies shard made
  # how many copies a value passes through at most: the ring chains them device to device, all-to-all copies each piece
  # once to its reducer and each result once to every device (after shard's own copy)
  def depth(t):
    d: dict = {}
    for u in t.uop.toposort(): d[u] = max((d[s] for s in u.src), default=0) + (u.op.name == "COPY")
    return d[t.uop]
  for a2a, ring, want in ((0, 0, 2), (2, 0, 3), (0, 2, 7)):
    with Context(ALL2ALL=a2a, RING=ring): assert depth(Tensor(x).shard(ds, axis=0).sum(0)) == want, (a2a, ring)
  half = Tensor(x).cast(dtypes.half).shard(ds[:2], axis=0)
  for cast, want in ((1, {dtypes.half}), (0, {dtypes.half, dtypes.float})):
    with Context(ALLREDUCE_CAST=cast):
      s = half.sum(0)
      assert {c.dtype for c in copies(s)} == want
      np.testing.assert_allclose(s.numpy(), x.astype(np.float16).astype(np.float32).sum(0), rtol=2e-2, atol=2e-2)
  from tinygrad.engine import schedule as sched
  calls = []
  orig = sched._create_schedule
  def counting(*a, **k):
    calls.append(1)
    return orig(*a, **k)
  sched._create_schedule = counting
  try:
    for _ in range(2): (Tensor([1.0, 2.0]).realize() * 3).realize()
    cached = len(calls)
    with Context(SCACHE=0):
      for _ in range(2): (Tensor([1.0, 2.0]).realize() * 3).realize()
    assert cached <= 1 and len(calls) - cached == 2
  finally: sched._create_schedule = orig
  with pytest.raises(KeyError, match="unknown context variable"): Context(NO_SUCH_FLAG=1).__enter__()

def test_default_float_and_int_flags():
  import subprocess, sys
  assert dtypes.default_float == dtypes.float32 and dtypes.default_int == dtypes.int32
  with Context(DEFAULT_FLOAT=dtypes.half):
    assert dtypes.default_float == dtypes.half and Tensor([1.5]).dtype == dtypes.half and (Tensor([3]) / 2).dtype == dtypes.half
    np.testing.assert_allclose(Tensor([1.0, 2.0]).exp().numpy(), np.exp(np.float16([1.0, 2.0])), rtol=1e-3)
  with Context(DEFAULT_INT="int64"): assert Tensor([1, 2]).dtype == dtypes.int64
  assert Tensor([1.5]).dtype == dtypes.float32
  out = subprocess.run([sys.executable, "-c", "from tinygrad import Tensor; print(Tensor([1.5]).dtype)"], env={**os.environ, "DEFAULT_FLOAT": "HALF"},
                       capture_output=True, text=True, timeout=120)
  assert out.stdout.strip() == "dtypes.half", out.stderr
  with Context(DEFAULT_FLOAT="int8"), pytest.raises(ValueError, match="DEFAULT_FLOAT='int8' is not a float dtype; valid: float16"): dtypes.default_float

def test_public_tinygrads_error_classes_for_indexing_and_assign():
  a = Tensor([[[5.0]]])
  with pytest.raises(TypeError, match="slice indices must be ints"): a[0.0:, 0.0]   # the slice first, as Python
  with pytest.raises(IndexError, match="unsupported index 0.0"): a[0, 0.0]
  def delete(): del a[0]
  with pytest.raises(TypeError, match="item deletion"): delete()
  t = Tensor.zeros(4).contiguous().realize()
  with pytest.raises(RuntimeError, match="assign dtype mismatch"): t.assign(Tensor([1, 2, 3, 4]))
  with pytest.raises(ValueError, match="assign dtype mismatch"): t.assign(Tensor([1, 2, 3, 4]))

def test_invalids_is_a_scratch_tensor_to_write_before_reading():
  z = Tensor.invalids(10, dtype="int").realize()
  z[2:5] = 2
  z[6:7] = 3
  z.realize()
  assert z.shape == (10,) and z.dtype == dtypes.int32 and z[2:5].tolist() == [2, 2, 2] and z[6:7].tolist() == [3]

def test_dtype_value_helpers_return_values():
  # public tinygrad's float_to_bf16 / float_to_fp16 give the value as that dtype stores it (a float), not its bits
  from tinygrad.dtype import float_to_bf16, float_to_fp16, truncate
  torch = pytest.importorskip("torch")
  for v in (1.0 + 2**-9, 3.1, -60000.0, 1e-40, 3.4e38, 1e39, -math.inf):
    assert float_to_bf16(v) == torch.tensor(v, dtype=torch.float32).to(torch.bfloat16).item() == truncate[dtypes.bfloat16](v), v
    assert float_to_fp16(v) == float(np.float32(v).astype(np.float16)) == truncate[dtypes.float16](v), v
  assert math.isnan(float_to_bf16(math.nan)) and math.isnan(float_to_fp16(math.nan))

def test_storage_scalars_round_trip():
  from tinygrad.dtype import to_storage_scalar, from_storage_scalar, fp8_to_float
  for dt in dtypes.fp8s: assert all(from_storage_scalar(b, dt) == fp8_to_float(b, dt) or math.isnan(fp8_to_float(b, dt)) for b in range(256))
  assert to_storage_scalar(1.0, dtypes.bfloat16) == 0x3f80 and from_storage_scalar(0x4040, dtypes.bfloat16) == 3.0
  assert to_storage_scalar(3.1, dtypes.fp8e4m3) == 0x44 and to_storage_scalar(300, dtypes.uint8) == 44 and from_storage_scalar(7, dtypes.int32) == 7

def test_strong_dtype():
  from tinygrad.dtype import strong_dtype
  assert strong_dtype(dtypes.weakint) == dtypes.default_int and strong_dtype(dtypes.uint8) == dtypes.uint8
  with Context(DEFAULT_INT="int64"): assert strong_dtype(dtypes.weakint) == dtypes.int64

def _values(dt):
  # every value of a dtype of at most 16 bits; the extremes and their neighbours of wider ones
  if dt == dtypes.bool: return [False, True]
  if dt.itemsize <= 2 and dt in dtypes.floats:
    return [from_bits for b in range(1 << (8*dt.itemsize)) if math.isfinite(from_bits := _from_bits(b, dt))]
  if dt.itemsize <= 2: return list(range(int(dt.min), int(dt.max)+1))
  if dt in dtypes.ints: return [v for v in (int(dt.min), int(dt.min)+1, -1, 0, 1, int(dt.max)-1, int(dt.max)) if dt.min <= v <= dt.max]
  return [float(np.finfo(np.dtype(dt.fmt)).max), float(np.finfo(np.dtype(dt.fmt)).smallest_subnormal), 1.0 + float(np.finfo(np.dtype(dt.fmt)).eps)]
def _from_bits(b, dt):
  from tinygrad.dtype import from_storage_scalar
  return float(np.array(b, np.uint16).view(np.float16)) if dt == dtypes.float16 else from_storage_scalar(b, dt)

def test_can_lossless_cast_is_never_wrong():
  # True must mean every value of dt0 survives the cast to dt1 (the simplifier may drop a cast on it); the pairs public
  # tinygrad's tests name are checked as they are
  from tinygrad.dtype import can_lossless_cast, truncate
  for d0 in dtypes.all:
    vals = _values(d0)
    for d1 in dtypes.all:
      if can_lossless_cast(d0, d1): assert all(truncate[d1](v) == v for v in vals), (d0, d1)
  assert not can_lossless_cast(dtypes.int8, dtypes.uint64) and not can_lossless_cast(dtypes.int32, dtypes.float32)
  assert can_lossless_cast(dtypes.uint32, dtypes.int64) and can_lossless_cast(dtypes.int8, dtypes.half) and can_lossless_cast(dtypes.uint8, dtypes.weakint)
  assert can_lossless_cast(dtypes.int32, dtypes.float64) and can_lossless_cast(dtypes.fp8e5m2, dtypes.float16)
  assert not can_lossless_cast(dtypes.int8, dtypes.bfloat16) and not can_lossless_cast(dtypes.float16, dtypes.bfloat16)

def test_emulated_dtypes_flag():
  assert helpers.EMULATED_DTYPES.tolist(dtypes) == []
  with Context(EMULATED_DTYPES="fp8e4m3,half"): assert helpers.EMULATED_DTYPES.tolist(dtypes) == [dtypes.fp8e4m3, dtypes.half]
  with Context(EMULATED_DTYPES="fp8e4m3"):   # the values are the same: fp8 is always the core's software form unless native
    assert Tensor([1.5, 3.1, -30000.0], dtype=dtypes.fp8e4m3, device="PYTHON").tolist() == [1.5, 3.0, -448.0]
  with Context(EMULATED_DTYPES="float99"), pytest.raises(ValueError, match="unknown name.*float99"): helpers.EMULATED_DTYPES.tolist(dtypes)

def test_dtypes_dict_as_public_tinygrad():
  # every dtype a tensor holds, by each of its names (aliases too), and no void: programs draw dtypes from its values
  from tinygrad.dtype import DTYPES_DICT, INVERSE_DTYPES_DICT
  assert "void" not in DTYPES_DICT and dtypes.void not in DTYPES_DICT.values() and set(DTYPES_DICT.values()) == set(dtypes.all)
  assert DTYPES_DICT["half"] is dtypes.float16 and DTYPES_DICT["long"] is dtypes.int64 and dtypes.fields() is DTYPES_DICT
  assert INVERSE_DTYPES_DICT[dtypes.float16.name] == "float16" and INVERSE_DTYPES_DICT["void"] == "void"
  assert [d.bitsize for d in (dtypes.bool, dtypes.float16, dtypes.float64, dtypes.float32.vec(4))] == [8, 16, 64, 128]
  for bad in (None, [None], {}, set()):
    with pytest.raises(RuntimeError, match="cannot infer"): dtypes.from_py(bad)

def test_emulated_dtypes_lowers_a_native_fp8():
  # a renderer with native fp8 gets its loads and casts of it; EMULATED_DTYPES lists it: the core's byte/float32 lowering
  import copy
  from tinygrad.codegen import full_rewrite
  from tinygrad.engine.schedule import create_schedule
  from tinygrad.uop import Ops
  ren = copy.copy(Device["PYTHON"].renderer)
  ren.native_fp8 = frozenset({dtypes.fp8e4m3})
  x = Tensor.empty(16, dtype=dtypes.fp8e4m3, device="PYTHON")
  ast = next(ei.ast for ei in create_schedule([(x.cast(dtypes.float32) * 2).uop])[0] if ei.ast.op is Ops.SINK)
  def has_fp8() -> bool: return any(u.dtype.base.scalar() == dtypes.fp8e4m3 for u in full_rewrite(ast, ren))
  assert has_fp8()
  with Context(EMULATED_DTYPES="fp8e4m3"): assert not has_fp8()
  with Context(EMULATED_DTYPES="half"): assert has_fp8()
