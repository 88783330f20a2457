"""assign into views (the base and every view see the write), in-place operators as assigns, and both inside TinyJit."""
import operator
import numpy as np, pytest
from hypothesis import given, settings, strategies as st, HealthCheck
from tinygrad import Tensor, TinyJit, dtypes

try: import torch, torch.nn.functional as F   # (only the table of results taken before a write needs it)
except ImportError: torch = F = None

HS = settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

# each view: (tinygrad view of t, the same numpy view of a); numpy views write through, like tinygrad's must
VIEWS = {
  "shrink": (lambda t: t[1:3, 0:2], lambda a: a[1:3, 0:2]),
  "row": (lambda t: t[2], lambda a: a[2]),
  "step": (lambda t: t[::2, 1::2], lambda a: a[::2, 1::2]),
  "negative_step": (lambda t: t[::-1, ::-2], lambda a: a[::-1, ::-2]),
  "flip": (lambda t: t.flip(1), lambda a: a[:, ::-1]),
  "permute": (lambda t: t.T, lambda a: a.T),
  "reshape": (lambda t: t.reshape(2, 2, 4)[1], lambda a: a.reshape(2, 2, 4)[1]),
  "view_of_view": (lambda t: t[1:4].T[1:3, ::-1], lambda a: a[1:4].T[1:3, ::-1]),
  "squeeze_unsqueeze": (lambda t: t[1:2].squeeze(0).unsqueeze(1), lambda a: a[1:2].squeeze(0)[:, None]),
  "shrink_method": (lambda t: t.shrink(((0, 4), (1, 3))), lambda a: a[0:4, 1:3]),
  "detach": (lambda t: t.detach()[1:3].detach(), lambda a: a[1:3]),   # torch's detach() shares the storage too
  # a strided slice of a detach() (a pad cut away again below a DETACH): raised "the target view reaches into padding"
  "detach_step": (lambda t: t.detach()[:, ::3], lambda a: a[:, ::3]),
  # torch's diagonal and unfold are views (numpy's diagonal is read-only: the same elements by strides here); ours were
  # values of their own (their padding cut away again made a pad's copy), so an assign into them left t as it was
  "diagonal": (lambda t: t.diagonal(), lambda a: a.reshape(-1)[::5]),
  "diagonal_offset": (lambda t: t[1:].diagonal(-1), lambda a: a.reshape(-1)[8::5]),
  "unfold": (lambda t: t.unfold(1, 1, 3), lambda a: a[:, ::3, None]),
}

def _base(realized: bool) -> tuple[Tensor, np.ndarray]:
  a = np.arange(16, dtype=np.float32).reshape(4, 4)
  t = Tensor(a.copy())
  return (t.realize() if realized else t + 0), a

@pytest.mark.parametrize("realized", [True, False], ids=["realized", "lazy"])
@pytest.mark.parametrize("kind", list(VIEWS))
def test_assign_into_view_writes_the_base(kind, realized):
  tv, nv = VIEWS[kind]
  t, a = _base(realized)
  other = t[0:4].flip(0)   # another view of the same base: sees the write too
  v = tv(t)
  val = np.random.default_rng(0).standard_normal(nv(a).shape).astype(np.float32)
  v.assign(Tensor(val))
  nv(a)[...] = val
  np.testing.assert_array_equal(t.numpy(), a)
  np.testing.assert_array_equal(v.numpy(), val)
  np.testing.assert_array_equal(other.numpy(), a[::-1])
  # a second write through a fresh view after reading: still the same buffer
  tv(t).assign(Tensor(val * 2))
  nv(a)[...] = val * 2
  np.testing.assert_array_equal(t.numpy(), a)

@pytest.mark.parametrize("realized", [True, False], ids=["realized", "lazy"])
def test_assign_into_bitcast_view_writes_the_bits(realized):
  # numpy's a.view(dtype) (torch's t.view(dtype)): writing through it sets the base's bits, and it follows later writes
  t, a = _base(realized)
  bits = (np.arange(8, dtype=np.float32).view(np.uint32).reshape(2, 4) ^ np.uint32(0x80000000)).view(np.int32)   # -x's bits
  v = t[1:3].bitcast(dtypes.int32)
  v.assign(Tensor(bits))
  a[1:3].view(np.int32)[...] = bits
  np.testing.assert_array_equal(t.numpy(), a)
  t.flip(0).bitcast(dtypes.uint32).bitcast(dtypes.int32)[0].assign(Tensor(np.float32([9, 8, 7, 6]).view(np.int32)))
  a[3] = [9, 8, 7, 6]
  np.testing.assert_array_equal(t.numpy(), a)
  t.assign(Tensor(a * 2))
  np.testing.assert_array_equal(v.numpy(), (a * 2)[1:3].view(np.int32))

@given(st.data())
@HS
def test_assign_into_random_slices_matches_numpy(data):
  shape = tuple(data.draw(st.lists(st.integers(1, 5), min_size=1, max_size=3)))
  idx = tuple(slice(data.draw(st.integers(-s, s)), data.draw(st.integers(-s, s)), data.draw(st.sampled_from([1, 2, -1, -2, 3])))
              for s in shape)
  a = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
  t = Tensor(a.copy()).realize()
  view = a[idx]
  if view.size == 0: return
  val = np.full(view.shape, -1.5, dtype=np.float32) - np.arange(view.size, dtype=np.float32).reshape(view.shape)
  t[idx].assign(Tensor(val))
  a[idx] = val
  np.testing.assert_array_equal(t.numpy(), a)

def test_assign_returns_the_view_with_new_values_before_any_read():
  t = Tensor.zeros(3, 4).contiguous().realize()
  v = t[:, 1:3].assign(Tensor.ones(3, 2))
  assert v.tolist() == [[1.0, 1.0]] * 3
  assert t.sum().item() == 6.0

def test_assign_into_an_unrealized_constant_base():
  t = Tensor.zeros(2, 3)     # a broadcast constant, not a buffer: the base itself becomes base-with-region-replaced
  u = Tensor.zeros(2, 3)     # the same (hash-consed) graph: must not see t's write
  t[1, 1:].assign(Tensor([4.0, 5.0]))
  np.testing.assert_array_equal(t.numpy(), [[0, 0, 0], [0, 4, 5]])
  np.testing.assert_array_equal(u.numpy(), np.zeros((2, 3)))

def test_assign_into_a_realized_view_still_writes_the_base():
  t = Tensor.zeros(4).contiguous().realize()
  v = t.reshape(2, 2).realize()   # realized as t's own buffer under another shape
  v[1].assign(Tensor([3.0, 4.0]))
  assert t.tolist() == [0.0, 0.0, 3.0, 4.0]

def test_assign_into_broadcast_view_is_an_error():
  t = Tensor.ones(3).contiguous().realize()
  with pytest.raises(ValueError, match="broadcast"): t.expand(2, 3).assign(Tensor.zeros(2, 3))
  with pytest.raises(ValueError, match="broadcast"): t.reshape(1, 3).expand(2, 3)[0].assign(Tensor.zeros(3))
  assert t.tolist() == [1.0, 1.0, 1.0]

def test_a_pad_is_a_copy_that_writes_do_not_cross():
  # torch's F.pad returns a new tensor: writing into it (or into the part of it over t) leaves t alone, and t's writes
  # do not reach it, also where a slice cuts the padding away again (the same UOps as a view of t's buffer)
  t = Tensor.ones(3).contiguous().realize()
  p = t.pad(((1, 1),))
  p.assign(Tensor.arange(5.0))
  t.pad(((1, 1),))[1:4].assign(Tensor([5.0, 6.0, 7.0]))
  assert t.tolist() == [1.0, 1.0, 1.0] and p.tolist() == [0.0, 1.0, 2.0, 3.0, 4.0]
  t = Tensor.arange(4.0).contiguous().realize()
  q = t.pad((1, 1))[1:-1]
  q2 = t.pad((1, 1))[1:-1]
  q2.realize()   # (realized: a copy, not a view of t's buffer)
  t += 1
  assert q.tolist() == [0.0, 1.0, 2.0, 3.0] and q2.tolist() == [0.0, 1.0, 2.0, 3.0] and t.tolist() == [1.0, 2.0, 3.0, 4.0]

def test_assign_into_view_inside_jit_writes_each_replay():
  cache = Tensor.zeros(6, 3).contiguous().realize()
  @TinyJit
  def put(x):
    cache[2:4].assign(x)
    return cache.sum(0)
  ref = np.zeros((6, 3), np.float32)
  for i in range(5):
    x = np.full((2, 3), i + 1.0, np.float32) * np.arange(3, dtype=np.float32)
    out = put(Tensor(x).realize()).numpy()
    ref[2:4] = x
    np.testing.assert_array_equal(out, ref.sum(0))
    np.testing.assert_array_equal(cache.numpy(), ref)
  assert put.cnt == 5

def test_assign_into_view_inside_jit_without_returning_it():
  cache = Tensor.zeros(4, 2).contiguous().realize()
  @TinyJit
  def put(x): cache[1:2].assign(x.reshape(1, 2))
  for i in range(4):
    put(Tensor([i + 1.0, -(i + 1.0)]).realize())
    assert cache.tolist() == [[0, 0], [i + 1.0, -(i + 1.0)], [0, 0], [0, 0]]

# ---- in-place operators ----
FLOAT_OPS = ["__iadd__", "__isub__", "__imul__", "__itruediv__", "__ipow__", "__ifloordiv__"]
INT_OPS = ["__iadd__", "__isub__", "__imul__", "__ifloordiv__", "__iand__", "__ior__", "__ixor__", "__ilshift__", "__irshift__"]
NP = {"__iadd__": operator.add, "__isub__": operator.sub, "__imul__": operator.mul, "__itruediv__": operator.truediv,
      "__ipow__": operator.pow, "__ifloordiv__": operator.floordiv, "__iand__": operator.and_, "__ior__": operator.or_,
      "__ixor__": operator.xor, "__ilshift__": operator.lshift, "__irshift__": operator.rshift}

@pytest.mark.parametrize("op", FLOAT_OPS)
def test_inplace_float_operator_writes_the_buffer(op):
  a, b = np.array([1.5, 2.0, 3.25, 4.0], np.float32), np.array([2.0, 0.5, 1.5, 3.0], np.float32)
  t = Tensor(a).realize()
  alias = t.reshape(2, 2)     # shares t's buffer: sees the in-place write, as in torch
  r = getattr(t, op)(Tensor(b))
  assert r is t
  np.testing.assert_allclose(t.numpy(), NP[op](a, b), rtol=1e-6)
  np.testing.assert_allclose(alias.numpy(), NP[op](a, b).reshape(2, 2), rtol=1e-6)

@pytest.mark.parametrize("op", INT_OPS)
def test_inplace_int_operator_writes_the_buffer(op):
  a, b = np.array([5, 12, 7, 9], np.int32), np.array([1, 3, 2, 2], np.int32)
  t = Tensor(a).realize()
  alias = t[1:3]
  getattr(t, op)(Tensor(b))
  np.testing.assert_array_equal(t.numpy(), NP[op](a, b))
  np.testing.assert_array_equal(alias.numpy(), NP[op](a, b)[1:3])

def test_inplace_matmul():
  a, b = np.arange(9, dtype=np.float32).reshape(3, 3), np.eye(3, dtype=np.float32)[::-1].copy()
  t = Tensor(a).realize()
  alias = t.T
  t @= Tensor(b)
  np.testing.assert_allclose(t.numpy(), a @ b)
  np.testing.assert_allclose(alias.numpy(), (a @ b).T)

def test_inplace_operator_on_a_slice_writes_the_base():
  a = np.arange(8, dtype=np.float32)
  t = Tensor(a.copy()).realize()
  alias = t[1:7]
  t[2:6] += 10
  t[::3] *= 2
  a[2:6] += 10
  a[::3] *= 2
  np.testing.assert_array_equal(alias.numpy(), a[1:7])   # read first: the writes must not wait for t to be read
  np.testing.assert_array_equal(t.numpy(), a)

def test_inplace_dtype_follows_torch():
  i = Tensor([1, 2, 3], dtype=dtypes.int32).realize()
  with pytest.raises(TypeError, match="can't be cast"): i /= 2
  with pytest.raises(TypeError, match="can't be cast"): i += 1.5
  with pytest.raises(TypeError, match="can't be cast"): i *= Tensor([0.5, 1.0, 2.0])
  assert i.tolist() == [1, 2, 3]
  f = Tensor([1.0, 2.0], dtype=dtypes.float16).realize()
  f += Tensor([0.5, 0.25], dtype=dtypes.float32)   # float32 result cast back to half, as torch does
  assert f.dtype == dtypes.float16 and f.tolist() == [1.5, 2.25]
  b = Tensor([True, False]).realize()
  b |= Tensor([False, True])
  assert b.tolist() == [True, True]
  with pytest.raises(TypeError, match="can't be cast"): b += Tensor([1, 2])
  with pytest.raises(ValueError, match="cannot change the shape"):
    s = Tensor.ones(3).contiguous()
    s += Tensor.ones(2, 3)

def test_jitted_counter_accumulates():
  class State: pass
  s = State()
  s.c = Tensor([0], dtype=dtypes.int32).realize()
  s.f = Tensor([1.0]).realize()
  @TinyJit
  def step(x):
    s.c += 2
    s.f *= 1.5
    return x + 1
  for _ in range(6): step(Tensor([1.0]).realize())
  assert s.c.item() == 12
  np.testing.assert_allclose(s.f.item(), 1.5 ** 6, rtol=1e-6)

def test_assign_a_constant_from_another_device():
  # a constant has no buffer: assign takes it onto the target's device, as binary ops do (a buffer still raises)
  from tinygrad.uop.ops import UOp
  s = Tensor.empty(4, device="CPU:1")
  s.assign(Tensor(UOp.const(2.0).cast(dtypes.float)))
  np.testing.assert_array_equal(s.numpy(), np.full(4, 2, np.float32))
  s.assign(Tensor.full((4,), 3.0, device="CPU"))
  np.testing.assert_array_equal(s.numpy(), np.full(4, 3, np.float32))
  with pytest.raises(ValueError, match="use .to"): s.assign(Tensor(np.ones(4, np.float32), device="CPU"))

def test_old_and_new_values_in_one_graph():
  # one graph reads a's old value and the new one, and no live tensor holds the old part: the realize computes that part
  # before the write (torch's 2 + 3 - 1; public tinygrad raises "cycle"; this raised "cannot order the schedule")
  a = Tensor.ones(4).contiguous().realize()
  times_a = a * 3
  a.assign(Tensor.full((4,), 2.).contiguous())
  r = a + (times_a - 1)
  del times_a
  np.testing.assert_array_equal(r.numpy(), np.full(4, 4, np.float32))
  np.testing.assert_array_equal(a.numpy(), np.full(4, 2, np.float32))

def test_live_reader_of_the_old_value_orders_the_diamond():
  # the same graph while times_a lives: the realize computes times_a before the write (torch's 2 + 3 - 1; public tinygrad
  # raises "cycle"), and times_a keeps its value
  a = Tensor.ones(4).contiguous().realize()
  times_a = a * 3
  a.assign(Tensor.full((4,), 2.).contiguous())
  np.testing.assert_array_equal((a + (times_a - 1)).numpy(), np.full(4, 4, np.float32))
  np.testing.assert_array_equal(times_a.numpy(), np.full(4, 3, np.float32))

@pytest.mark.parametrize("devs", [None, ("CPU:0", "CPU:1")])
@pytest.mark.parametrize("target", ["whole", "view"])
@pytest.mark.parametrize("read_first", ["target", "value"])
def test_a_value_that_reads_a_pending_update_of_its_target_keeps_its_value(devs, target, read_first):
  # w += 1; y = w * 2; w.assign(y): y reads the pending update and is the value written. Once both ran, y read the update as
  # w's buffer, which held y by then: y was 2 * y (8, 12, 16, 20 where torch gives 4, 6, 8, 10), read after w; and a
  # later write into w must not show in y
  w = Tensor([1., 2., 3., 4.])
  w = (w.shard(devs, axis=0) if devs else w).realize()
  w += 1
  t = w if target == "whole" else w[1:3]
  y = t * 2
  t.assign(y)
  a = np.array([2., 3., 4., 5.], np.float32)
  ta = a if target == "whole" else a[1:3]
  ya = ta * 2
  ta[...] = ya
  first, second = (w, y) if read_first == "target" else (y, w)
  got = first.numpy(), second.numpy()
  np.testing.assert_array_equal(got[0] if read_first == "target" else got[1], a)
  np.testing.assert_array_equal(y.numpy(), ya)
  w += 100
  np.testing.assert_array_equal(y.numpy(), ya)
  np.testing.assert_array_equal(w.numpy(), a + 100)

def test_a_view_of_the_target_assigned_into_it_twice_stays_its_view():
  # v = x.flip(0) is the value of both updates and reads the first: it must stay x's view (made a copy, the next assign
  # into v raised "lost track of the tensor it views")
  a = np.array([1., 2., 3.], np.float32)
  x = Tensor(a.copy()).realize()
  v, av = x.flip(0), a[::-1]
  for _ in range(2):
    x.assign(v)
    a[...] = av.copy()
  v.assign(v[1:].cat(v[:1]))
  av[...] = np.roll(av, -1)
  np.testing.assert_array_equal(x.numpy(), a)
  np.testing.assert_array_equal(v.numpy(), av)

@pytest.mark.parametrize("devs", [None, ("CPU:0", "CPU:1")])
def test_a_view_assigned_its_base_while_the_base_has_a_pending_update(devs):
  # v.assign(x) into v = x.flip(0): the value is the target itself, which must stay the tensor its views write into (made a
  # copy of the new value, x gave [10, 1, 12, 3] where numpy has [13, 2, 11, 0])
  a = np.array([1., 2., 3., 4.], np.float32)
  x = Tensor(a.copy())
  x = (x.shard(devs, axis=0) if devs else x).realize()
  v, av = x.flip(0), a[::-1]
  v -= 1
  av -= 1
  v.assign(x)
  av[...] = a.copy()
  x.realize()
  v[3:0:-2] += 10
  av[3:0:-2] += 10
  np.testing.assert_array_equal(x.numpy(), a)
  np.testing.assert_array_equal(v.numpy(), av)

def test_an_update_that_reads_old_and_updated_values_then_is_written_back():
  # what the fuzz found: n = -v; v.assign(v.flip(0)); n -= v; v.assign(n), read x first: n gave x's old values ([-3, -2]
  # where numpy has [5, 5]): n read the first update as x's buffer, which the second had overwritten with n
  a = np.array([-3., -2.], np.float32)
  x = Tensor(a.copy()).realize()
  v, av = x[::-1], a[::-1]
  n, an = -v, -av
  v.assign(v.flip(0))
  av[...] = av[::-1].copy()
  n -= v
  an -= av
  v.assign(n)
  av[...] = an
  np.testing.assert_array_equal(x.numpy(), a)
  np.testing.assert_array_equal(n.numpy(), an)

@pytest.mark.parametrize("sl", [slice(0, None, -1), slice(2, 0, -1), slice(None, None, -2)])
@pytest.mark.parametrize("value", ["flip", "roll"])
def test_a_negative_step_view_follows_an_update_that_reads_its_base_elsewhere(sl, value):
  # x[2:0:-1] is a flip of x under a shrink; x.assign(x.flip(0)) computes the flip into a buffer of its own first, and the
  # realize handed that buffer (the old values, flipped) to the view, which then showed [3, 2] where numpy has [2, 3]
  a = np.arange(8, dtype=np.float32).reshape(4, 2) + 1
  x = Tensor(a.copy()).realize()
  v = x[sl]
  x.assign(x.flip(0) if value == "flip" else x[1:].cat(x[:1]))
  a[...] = a[::-1].copy() if value == "flip" else np.roll(a, -1, 0)
  np.testing.assert_array_equal(x.numpy(), a)
  np.testing.assert_array_equal(v.numpy(), a[sl])
  v += 1   # (still a view: it writes into x)
  a[sl] += 1
  np.testing.assert_array_equal(x.numpy(), a)

# ops that torch defines as making a new tensor, at arguments where they change nothing (a reduce over axes of size 1,
# roll by a multiple of the size, cat of one tensor, repeat by ones, sort of one element): each came out as self or a
# view of self, so writing into the result wrote into the input, and a realized result was the input's buffer
NEW_TENSOR_OPS = {
  "sum_size1": (lambda t: t.sum(0), lambda a: a.sum(0)),
  "max_size1_keepdim": (lambda t: t.max(0, keepdim=True), lambda a: a.max(0, keepdims=True)),
  "prod_size1": (lambda t: t.prod(0), lambda a: a.prod(0)),
  "cumsum_size1": (lambda t: t.cumsum(0), lambda a: a.cumsum(0)),
  "roll_by_size": (lambda t: t.roll(3, 1), lambda a: a),
  "cat_one": (lambda t: Tensor.cat(t), lambda a: a),
  "stack_one": (lambda t: Tensor.stack(t), lambda a: a[None]),
  "repeat_ones": (lambda t: t.repeat(1, 1), lambda a: a),
  "repeat_interleave_one": (lambda t: t.repeat_interleave(1, 0), lambda a: a),
  "sort_one": (lambda t: t.sort(0)[0], lambda a: a),
  "topk_one": (lambda t: t.topk(1, 0)[0], lambda a: a),
  "einsum_identity": (lambda t: Tensor.einsum("ij->ij", t), lambda a: a),
  "interpolate_same_size": (lambda t: t.reshape(1, 1, 3).interpolate((3,)), lambda a: a.reshape(1, 1, 3)),
  "floor_of_ints": (lambda t: t.cast(dtypes.int32).floor(), lambda a: a.astype(np.int32)),
  "pad_by_zeros": (lambda t: t.pad(((0, 0), (0, 0))), lambda a: a),
  "pad_that_cuts": (lambda t: t.pad((-1, 0)), lambda a: a[:, 1:]),   # torch's F.pad with a negative amount copies too
  # (the other pad modes by zeros or a cut, and a power of 1: each was the input or a view of it, where torch copies)
  "pad_reflect_by_zeros": (lambda t: t.pad((0, 0), mode="reflect"), lambda a: a),
  "pad_replicate_by_zeros": (lambda t: t.pad((0, 0, 0, 0), mode="replicate"), lambda a: a),
  "pad_circular_that_cuts": (lambda t: t.pad((-1, 0), mode="circular"), lambda a: a[:, 1:]),
  "pad_reflect_that_cuts": (lambda t: t.pad((0, -2), mode="reflect"), lambda a: a[:, :1]),
  "pow_one": (lambda t: t ** 1, lambda a: a),
  "int_pow_one": (lambda t: (t.cast(dtypes.int32) ** 1), lambda a: a.astype(np.int32)),
}

@pytest.mark.parametrize("realized", [True, False, "pending_assign"], ids=["realized", "lazy", "pending_assign"])
@pytest.mark.parametrize("op", list(NEW_TENSOR_OPS))
def test_a_new_tensor_is_not_an_alias_of_its_input(op, realized):
  f, ref = NEW_TENSOR_OPS[op]
  a = np.array([[-3., 2., 5.]], np.float32)
  y = Tensor(a.copy()).realize() if realized is True else Tensor(a.copy()) + 0
  if realized == "pending_assign": y = Tensor.zeros(1, 3).contiguous().realize().assign(Tensor(a.copy()))   # (realized: its target's buffer)
  r = f(y)
  r += 1   # writes r only
  np.testing.assert_array_equal(y.numpy(), a)
  np.testing.assert_array_equal(r.numpy(), ref(a) + 1)
  r.realize()
  y.assign(Tensor.full(a.shape, 7.0)).realize()   # writes y only (r is realized: it keeps its value)
  np.testing.assert_array_equal(r.numpy(), ref(a) + 1)

@pytest.mark.parametrize("src_realized", [True, False], ids=["realized_source", "data_source"])
def test_assign_of_a_buffer_into_a_lazy_tensor_copies_it(src_realized):
  # the lazy target took the source's graph, its buffer: both tensors held one buffer, so b += 1 wrote into c (torch's
  # b.copy_(c) copies)
  c = Tensor([1.0, 2.0]).realize() if src_realized else Tensor([1.0, 2.0])
  b = Tensor([5.0, 6.0]) + 0
  b.assign(c)
  b += 1
  b.realize()
  np.testing.assert_array_equal(c.numpy(), [1, 2])
  np.testing.assert_array_equal(b.numpy(), [2, 3])
  # and an assign into the other writes only it (here through a lazy tensor that took the value of one that took a buffer)
  a = Tensor([-3.0]) + 0
  d = Tensor([1.0]) + 0
  a.assign(d.assign(Tensor([4.0])))
  d.realize()
  a.assign(Tensor([0.0])).realize()
  np.testing.assert_array_equal(d.numpy(), [4])

@pytest.mark.parametrize("make", [lambda y: y.sum(0), lambda y: (y * 2).reshape(2)], ids=["sum", "reshaped_product"])
def test_a_view_of_a_realized_result_follows_it(make):
  # s is a reshape view of the op's internal result; v, made from s, was registered on that internal result: when s was
  # realized into a buffer of its own, v still read the lazy graph, so a later write into y reached v and not s
  y = Tensor([[-3.0], [-2.0]]).realize()
  s = make(y)
  v = s.flip(0)
  w = v[0:1]   # a view of that view
  want = s.numpy()[::-1].copy()
  s.realize()
  y.assign(Tensor.zeros(2, 1).contiguous()).realize()
  np.testing.assert_array_equal(v.numpy(), want)
  np.testing.assert_array_equal(w.numpy(), want[0:1])
  v += 1   # and writes through v reach s
  np.testing.assert_array_equal(s.numpy(), want[::-1] + 1)

@pytest.mark.parametrize("value", [lambda: Tensor.ones(0), lambda: Tensor(np.zeros((0,), np.float32)).realize()], ids=["ones", "realized"])
def test_setitem_of_nothing_into_one_element_writes_nothing(value):
  # the assign's region kernel (it writes only the view's elements) stored the empty value into a target of one element
  t = Tensor([-3.0]).realize()
  t[0:0] = value()
  t[1:1] = value()
  np.testing.assert_array_equal(t.numpy(), [-3])

@pytest.mark.parametrize("make", [lambda: Tensor([1., 2., 3.]) * 2, lambda: Tensor([[1.], [2.], [3.]]).sum(1)], ids=["product", "sum"])
def test_reading_a_view_of_a_lazy_tensor_keeps_it_a_view(make):
  # numpy() realized the view itself, into a buffer of its own: it no longer saw its base's writes nor wrote into it
  b = make()
  v = b[::-1]
  first = v.numpy()
  np.testing.assert_array_equal(first, b.numpy()[::-1])
  b.assign(Tensor([7., 8., 9.]))
  np.testing.assert_array_equal(v.numpy(), [9, 8, 7])
  v += 1
  np.testing.assert_array_equal(b.numpy(), [8, 9, 10])

def test_realizing_a_view_and_a_view_made_from_it_together():
  # the first one's realize rebased the second onto its new buffer while the loop still looked the second up by its old
  # graph (KeyError)
  e = Tensor(np.zeros((0,), np.float32)).realize()
  p = e.pad(((1, 0),))
  q = p.pad(((1, 2),))
  Tensor.realize(p, q)
  np.testing.assert_array_equal(q.numpy(), np.zeros(4, np.float32))
  y = Tensor([[1.0, 2.0], [3.0, 4.0]]).realize()
  r = (y * 2).reshape(4)
  s = r[1:]
  Tensor.realize(r, s)
  np.testing.assert_array_equal(s.numpy(), [4, 6, 8])

def test_realizing_a_lazy_tensor_and_its_view_together():
  # the base's new buffer rebased its view before the view's own result was looked up by its old graph (KeyError)
  b = Tensor([1.0]) + 0
  p = b.pad(((0, 1),))
  Tensor.realize(b, p)
  np.testing.assert_array_equal(p.numpy(), [1, 0])
  b = Tensor([1.0, 2.0]) * 3
  v = b[::-1]
  Tensor.realize(b, v)
  np.testing.assert_array_equal(v.numpy(), [6, 3])

def test_an_indexed_view_of_a_realized_result_follows_it():
  # s[0] is made through an intermediate view (shrink, then reshape) that nothing holds: it was the only parent s[0] knew
  y = Tensor([[-3.0, -2.0], [-1.0, 0.0]]).realize()
  s = y.sum(0)
  v = s[0]
  s.realize()
  y.assign(Tensor.zeros(2, 2).contiguous()).realize()
  assert v.item() == -4

@pytest.mark.parametrize("devs", [None, ("CPU:0", "CPU:1")], ids=["one_device", "sharded"])
def test_assign_of_a_pending_assign_into_a_lazy_tensor_copies_it(devs):
  # the lazy target took the source's ASSIGN node: once realized, both were its target's buffer
  c = Tensor([1.0]).realize() if devs is None else Tensor([1.0]).shard(devs).realize()
  c += 1
  b = c * 5
  b.assign(c)
  b.realize()
  c.assign(c * 0).realize()
  np.testing.assert_array_equal(b.numpy(), [2])

# ---- bitcast to another item size: the last axis rescaled (public tinygrad's and torch's view(dtype) shapes and bits) ----
import torch
_BC = [dtypes.uint8, dtypes.int8, dtypes.int16, dtypes.uint16, dtypes.float16, dtypes.bfloat16, dtypes.int32, dtypes.uint32, dtypes.float32,
       dtypes.int64, dtypes.uint64, dtypes.float64]
_TORCH = {dtypes.uint8: torch.uint8, dtypes.int8: torch.int8, dtypes.int16: torch.int16, dtypes.uint16: torch.uint16, dtypes.float16: torch.float16,
          dtypes.bfloat16: torch.bfloat16, dtypes.int32: torch.int32, dtypes.uint32: torch.uint32, dtypes.float32: torch.float32,
          dtypes.int64: torch.int64, dtypes.uint64: torch.uint64, dtypes.float64: torch.float64}

@pytest.mark.parametrize("src,dst", [(a, b) for a in _BC for b in _BC if a.itemsize != b.itemsize])
def test_bitcast_to_other_item_size_matches_torch(src, dst):
  raw = np.random.default_rng(src.itemsize * 16 + dst.itemsize).integers(0, 256, size=(3, 2, 24), dtype=np.uint8)   # any bits
  # (but no bfloat16 NaN: a bfloat16 value is stored through float32 here, which makes its NaNs the quiet NaN 0x7fc0 of their sign)
  if dtypes.bfloat16 in (src, dst): raw[..., 1::2] &= 0xBF
  ref = torch.from_numpy(raw.copy()).view(_TORCH[src]).view(_TORCH[dst])
  for x in (Tensor(raw).bitcast(src).realize(), (Tensor(raw) + 0).bitcast(src)):   # realized, lazy
    got = x.bitcast(dst)
    assert got.dtype == dst and got.shape == tuple(ref.shape)
    ubits = next(u for u in dtypes.uints if u.itemsize == dst.itemsize)
    assert got.bitcast(ubits).numpy().tobytes() == ref.contiguous().view(torch.uint8).numpy().tobytes()

def test_bitcast_of_a_strided_view_and_round_trip():
  a = Tensor(np.arange(48, dtype=np.uint8).reshape(6, 8)).realize()
  v = a[::2, 4:]   # a strided view: its own bytes, in its logical order
  np.testing.assert_array_equal(v.bitcast(dtypes.int32).numpy().ravel(), np.ascontiguousarray(a.numpy()[::2, 4:]).view(np.int32).ravel())
  np.testing.assert_array_equal(a.bitcast(dtypes.float64).bitcast(dtypes.uint8).numpy(), a.numpy())

def test_write_into_resized_bitcast_raises():
  a = Tensor(np.arange(8, dtype=np.uint8)).realize()
  b = a.bitcast(dtypes.int32)
  for write in (lambda: b.__setitem__(0, 5), lambda: b.assign(b + 1), lambda: b[1:].assign(Tensor([1], dtype=dtypes.int32)), lambda: b.__iadd__(1)):
    with pytest.raises(RuntimeError, match="copy of the bits"): write()
  np.testing.assert_array_equal(a.numpy(), np.arange(8, dtype=np.uint8))
  a.assign((b + 1).bitcast(dtypes.uint8))   # the way to write bits back
  np.testing.assert_array_equal(a.numpy(), (np.arange(8, dtype=np.uint8).view(np.int32) + 1).view(np.uint8))

# ops taken before an in-place write into their input: torch's views show the write, its copies do not. Each entry is
# (tinygrad op, torch op); torch gives the expected values
BEFORE_A_WRITE = {
  "pad_cut_back": (lambda t: t.pad((1, 1))[:, 1:-1], lambda t: F.pad(t, (1, 1))[:, 1:-1]),
  "pad2d_cut_back": (lambda t: t.pad(((1, 1), (2, 0)))[1:-1, 2:], lambda t: F.pad(t, (2, 0, 1, 1))[1:-1, 2:]),
  "pad_to_cut_back": (lambda t: t.pad_to(4, 6)[:3, :4], lambda t: F.pad(t, (0, 2, 0, 1))[:3, :4]),
  "pad_shows_padding": (lambda t: t.pad((1, 1)), lambda t: F.pad(t, (1, 1))),
  "pad_value_cut_back": (lambda t: t.pad((1, 1), value=2.0)[:, 1:-1], lambda t: F.pad(t, (1, 1), value=2.0)[:, 1:-1]),
  "pad_reflect_cut_back": (lambda t: t.pad((1, 1), mode="reflect")[:, 1:-1], lambda t: F.pad(t, (1, 1), mode="reflect")[:, 1:-1]),
  "shrink": (lambda t: t[1:3], lambda t: t[1:3]),
  "step": (lambda t: t[:, ::2], lambda t: t[:, ::2]),
  "expand": (lambda t: t[None].expand(2, 3, 4), lambda t: t[None].expand(2, 3, 4)),
  "permute": (lambda t: t.permute(1, 0), lambda t: t.permute(1, 0)),
  "T": (lambda t: t.T, lambda t: t.T),
  "reshape": (lambda t: t.reshape(4, 3), lambda t: t.reshape(4, 3)),
  "flatten": (lambda t: t.flatten(), lambda t: t.flatten()),
  "int_index": (lambda t: t[1], lambda t: t[1]),
  "chunk": (lambda t: t.chunk(2, 1)[1], lambda t: t.chunk(2, 1)[1]),
  "detach": (lambda t: t.detach(), lambda t: t.detach()),
  "contiguous_of_permute": (lambda t: t.T.contiguous(), lambda t: t.T.contiguous()),
  "cast_same": (lambda t: t.cast(dtypes.float32), lambda t: t.to(torch.float32)),
  "cast_other": (lambda t: t.cast(dtypes.float16), lambda t: t.to(torch.float16)),
  "to_same_device": (lambda t: t.to(t.device), lambda t: t.to("cpu")),
  "clone": (lambda t: t.clone(), lambda t: t.clone()),
  "add_zero": (lambda t: t + 0, lambda t: t + 0),
  "fancy_index": (lambda t: t[[0, 2]], lambda t: t[[0, 2]]),
  "cat_of_one": (lambda t: Tensor.cat(t), lambda t: torch.cat([t])),
  "sum_of_size_one": (lambda t: t[None].sum(0), lambda t: t[None].sum(0)),
  "diagonal": (lambda t: t.diagonal(1), lambda t: t.diagonal(1)),
  "unfold": (lambda t: t.unfold(1, 2, 2), lambda t: t.unfold(1, 2, 2)),
  "unfold_overlapping": (lambda t: t.unfold(1, 3, 1), lambda t: t.unfold(1, 3, 1)),
}
# (where ours differs from torch, by choice: flip() is a view, as numpy's and a negative-step slice (torch's flip copies);
# contiguous() is always a buffer of its own (torch returns an already contiguous tensor itself))
WRITES = {
  "iadd": (lambda t: t.__iadd__(1), lambda r: r.add_(1)),
  "assign": (lambda t: t.assign(t * 2 + 1), lambda r: r.copy_(r * 2 + 1)),
  "setitem": (lambda t: t.__setitem__((slice(0, 2), slice(1, 3)), 9.0), lambda r: r.__setitem__((slice(0, 2), slice(1, 3)), 9.0)),
  "slice_iadd": (lambda t: t[1:].__iadd__(5), lambda r: r[1:].add_(5)),
}

@pytest.mark.parametrize("view_realized", [False, True], ids=["lazy_view", "realized_view"])
@pytest.mark.parametrize("write", list(WRITES))
@pytest.mark.parametrize("op", list(BEFORE_A_WRITE))
def test_a_result_taken_before_a_write_matches_torch(op, write, view_realized):
  if torch is None: pytest.skip("torch is the reference here: pip install torch")
  # the base is realized (a view of a lazy base that is realized on its own is computed into a copy: realize's docstring)
  a = np.arange(12, dtype=np.float32).reshape(3, 4)
  t, r = Tensor(a.copy()).realize(), torch.tensor(a.copy())
  (f, fr), (w, wr) = BEFORE_A_WRITE[op], WRITES[write]
  v, vr = f(t), fr(r)
  if view_realized: v.realize()
  w(t)
  wr(r)
  np.testing.assert_array_equal(v.numpy().astype(np.float32), vr.numpy().astype(np.float32))
  np.testing.assert_array_equal(t.numpy(), r.numpy())

PART_WRITES = {   # (write, elements it changes) into a 64x32 float32 tensor
  "row": (lambda t, v: t.__setitem__(2, v[0]), 32),
  "rows": (lambda t, v: t.__setitem__(slice(5, 9), v[:4]), 4 * 32),
  "column": (lambda t, v: t.__setitem__((slice(None), 7), v[:, 0]), 64),
  "box": (lambda t, v: t.__setitem__((slice(10, 14), slice(3, 9)), v[:4, :6]), 4 * 6),
  "assign_slice": (lambda t, v: t[60:].assign(v[:4] * 2), 4 * 32),
  "iadd_slice": (lambda t, v: t[1:3].__iadd__(v[:2]), 2 * 32),
  "const": (lambda t, v: t.__setitem__((3, slice(0, 16)), 7.0), 16),
}

@pytest.mark.parametrize("write", list(PART_WRITES))
def test_write_into_part_loops_over_that_part(write):
  # a setitem or a slice assign is built as a whole-buffer store of where(in part, value, old element): the kernel loops
  # over the part only (codegen's narrow_masked_store), as public tinygrad's writes into the view; it looped over every
  # element of the buffer, reading and rewriting the ones it kept (a row of a KV cache cost the whole cache)
  from tinygrad.codegen import get_program
  from tinygrad.device import Device
  from tinygrad.uop import Ops
  from tinygrad.helpers import prod
  f, n = PART_WRITES[write]
  a, b = np.arange(64 * 32, dtype=np.float32).reshape(64, 32), -np.arange(64 * 32, dtype=np.float32).reshape(64, 32)
  t, v, ref = Tensor(a.copy()).realize(), Tensor(b).realize(), a.copy()
  f(t, v)
  sched = [si for si in t.schedule() if si.ast.op is Ops.SINK]
  assert len(sched) == 1
  # the elements the kernel stores (each store times the trips of the loops around it, times the threads launched on a
  # GPU-style device): the part's, once each
  prg = get_program(sched[0].ast, Device[t.device].renderer, compile=False)
  stored, mult, loops = 0, prod(prg.global_size) * prod(prg.local_size or ()), []
  for u in prg.uops:
    if u.op is Ops.RANGE:
      loops.append(mult)
      mult *= u.src[0].arg
    elif u.op is Ops.END: mult = loops.pop()
    elif u.op is Ops.STORE and u.src[0].src[0].op is Ops.DEFINE_GLOBAL: stored += mult * u.src[1].dtype.count
  assert stored == n, (stored, n)
  if write == "assign_slice": ref[60:] = b[:4] * 2
  elif write == "iadd_slice": ref[1:3] += b[:2]
  else: f(ref, b)
  np.testing.assert_array_equal(t.numpy(), ref)

def test_write_into_part_counts_the_bytes_it_moves():
  # GlobalCounters.global_mem (and DEBUG=2's GB/s) counts a buffer's bytes, or those its loads and stores move where that is
  # less: a row written into a 64x32 tensor moves the row's bytes twice (read, written), as public tinygrad counts it; it
  # counted both whole buffers
  from tinygrad import GlobalCounters
  t, v = Tensor.zeros(64, 32).contiguous().realize(), Tensor.ones(32).contiguous().realize()
  GlobalCounters.reset()
  t[2] = v
  t.realize()
  assert (GlobalCounters.kernel_count, GlobalCounters.global_mem) == (1, 2 * 32 * 4)
  GlobalCounters.reset()
  t[3, :16] = 7.0
  t.realize()
  assert GlobalCounters.global_mem == 16 * 4
  GlobalCounters.reset()
  (t * 2).realize()   # whole buffers: each counted once, however often the kernel reads it
  assert GlobalCounters.global_mem == 2 * 64 * 32 * 4
  assert t[2].tolist() == [1.0] * 32 and t[3].tolist() == [7.0] * 16 + [0.0] * 16

@pytest.mark.parametrize("view", ["detach", "detach_slice", "bitcast"])
def test_a_realized_detach_or_bitcast_view_with_a_pending_write_stays_a_view(view):
  # d += 1; d.realize() computed d = DETACH(ASSIGN) into a copy of its own (only movement ops were walked to the assign):
  # the next d += 1 left the base one increment behind ([-2, -1, 0, 1] for torch's [-1, 0, 1, 2])
  t = Tensor([-3., -2, -1, 0]).realize()
  d = {"detach": lambda: t.detach(), "detach_slice": lambda: t[1:].detach(),
       "bitcast": lambda: t.bitcast(dtypes.int32).bitcast(dtypes.float32)}[view]()
  d += 1
  d.realize()
  d += 1
  want = np.array([-1., 0, 1, 2]) if view != "detach_slice" else np.array([-3., 0, 1, 2])
  np.testing.assert_array_equal(t.numpy(), want)
  np.testing.assert_array_equal(d.numpy(), want[1:] if view == "detach_slice" else want)

@pytest.mark.parametrize("view", ["detach", "detach_slice", "bitcast"])
def test_reading_a_detach_or_bitcast_view_with_a_pending_write_leaves_it_a_view(view):
  # numpy() realizes a view through a stand-in of the same graph; the view, a second tensor of that graph, was given a
  # copy of its value: later writes into either no longer reached the other (d read [2, 3] after t += 1 made t [3, 4])
  t = Tensor([1., 2]).realize()
  d = {"detach": lambda: t.detach(), "detach_slice": lambda: t.detach()[1:],
       "bitcast": lambda: t.bitcast(dtypes.int32).bitcast(dtypes.float32)}[view]()
  t += 1
  d.numpy()
  t += 1
  d += 1
  want = np.array([4., 5]) if view != "detach_slice" else np.array([3., 5])
  np.testing.assert_array_equal(t.numpy(), want)
  np.testing.assert_array_equal(d.numpy(), want[1:] if view == "detach_slice" else want)

def test_a_view_of_a_view_realized_with_its_lazy_base_follows_the_view():
  # e3 = e2.flip(0) realized with its lazy base e2 is a copy of its own, and e4 = e3.flip(0) follows e3 (as when e3 alone
  # is realized); e2's buffer had rebased e4 onto itself first, so e4 missed e3's writes and saw e2's ([2, 4] for [12, 14])
  w = Tensor([1., 2]).realize()
  e2 = w + w
  e3 = e2.flip(0)
  e4 = e3.flip(0)
  Tensor.realize(e2, e3)
  e3 += 10
  e2 -= 100
  np.testing.assert_array_equal(e4.numpy(), [12, 14])
  np.testing.assert_array_equal(e3.numpy(), [14, 12])
