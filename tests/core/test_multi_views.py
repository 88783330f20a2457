"""Views of a sharded tensor behave as numpy's views of one array: a slice across the shards' boundary (which gathers the
shards), a slice inside one shard, a view of a view, a flip or reshape; writes into the base show in every view, writes
into a view (assign, in-place ops, `t[i] += 1`) show in the base and in the other views. Random programs of such steps
(also writes that read their own target, writes through tensor indices, in-place ops on the whole tensor) run against
numpy on CPU:0,CPU:1, on three CPUs and on PYTHON:0,PYTHON:1, with even and uneven shards."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st, example
from tinygrad import Tensor
from tinygrad.helpers import ceildiv

PAIRS = {"CPU": ("CPU:0", "CPU:1"), "CPU3": ("CPU:0", "CPU:1", "CPU:2"), "PYTHON": ("PYTHON:0", "PYTHON:1")}

def test_a_view_across_shards_sees_later_writes_to_its_base():
  t = Tensor(np.arange(12, dtype=np.float32).reshape(6, 2)).shard(PAIRS["CPU"], axis=0).realize()
  a = np.arange(12, dtype=np.float32).reshape(6, 2)
  across, inside = t[2:5], t[0:3]
  t[1:4] = 0
  a[1:4] = 0
  np.testing.assert_array_equal(across.numpy(), a[2:5])   # (was the values from before the write)
  t[:] = 1
  a[:] = 1
  np.testing.assert_array_equal(inside.numpy(), a[0:3])

def test_in_place_ops_on_a_view_across_shards_write_the_base():
  t = Tensor(np.arange(12, dtype=np.float32).reshape(6, 2)).shard(PAIRS["CPU"], axis=0).realize()
  a = np.arange(12, dtype=np.float32).reshape(6, 2)
  t[2:5] += 1   # (raised NotImplementedError: the view's assign moved elements between shards)
  a[2:5] += 1
  v = t[1:4, 1]
  v *= 3
  a[1:4, 1] *= 3
  np.testing.assert_array_equal(t.numpy(), a)
  np.testing.assert_array_equal(v.numpy(), a[1:4, 1])

def _slices(n: int):
  return st.tuples(st.integers(0, n), st.integers(0, n), st.sampled_from([1, 1, 2])).map(lambda t: slice(min(t[0], t[1]), max(t[0], t[1]), t[2]))

@st.composite
def programs(draw):
  rows, cols = draw(st.sampled_from([(6, 3), (5, 4), (7, 2), (4, 4)]))
  axis = draw(st.sampled_from([0, 1, None]))
  steps = []
  for _ in range(draw(st.integers(1, 6))):
    kind = draw(st.sampled_from(["view", "write_base", "write_view", "iadd_view", "setitem_iadd", "read", "write_self", "write_index",
                                 "iop_whole"]))
    steps.append((kind, draw(_slices(rows)), draw(_slices(cols)), draw(st.booleans()), draw(st.integers(-3, 3)), draw(st.integers(0, 7))))
  return rows, cols, axis, steps

def run_program(devs, prog):
  rows, cols, axis, steps = prog
  if axis is not None and ceildiv(n := (rows, cols)[axis], len(devs)) * (len(devs) - 1) >= n: return   # (a shard would be empty)
  a = np.arange(rows * cols, dtype=np.float32).reshape(rows, cols)
  t = Tensor(a.copy()).shard(devs, axis=axis).realize()
  views: list[tuple[Tensor, np.ndarray]] = []
  for kind, r, c, flip, val, pick in steps:
    if kind == "view":
      tv, nv = t[r, c], a[r, c]
      if flip and tv.ndim and tv.shape[0] > 0: tv, nv = tv.flip(0), nv[::-1]
      if views and pick % 2 and views[pick % len(views)][1].ndim == 2:   # a view of a view
        pv, pn = views[pick % len(views)]
        tv, nv = pv[0:max(pn.shape[0] - 1, 0)], pn[0:max(pn.shape[0] - 1, 0)]
      views.append((tv, nv))
    elif kind == "write_base":
      t[r, c] = float(val)
      a[r, c] = val
    elif kind == "setitem_iadd":
      t[r, c] += float(val)
      a[r, c] += val
    elif views and kind in ("write_view", "iadd_view"):
      tv, nv = views[pick % len(views)]
      if nv.size == 0: continue
      if kind == "write_view": tv.assign(Tensor(np.full(tv.shape, val, np.float32)).shard(devs)) if pick % 3 else tv.assign(tv * 2 + val)
      else: tv += float(val)
      if kind == "write_view": nv[...] = val if pick % 3 else nv * 2 + val
      else: nv += val
    elif kind == "read": t.realize()
    elif kind == "write_self":   # the value reads the written region: flipped in place, or shifted by a row
      if flip and a[r, c].size:
        t[r, c] = t[r, c].flip(0) * 2
        a[r, c] = a[r, c][::-1] * 2
      elif not flip and rows > 1:
        t[1:, c] = t[:-1, c] + val
        a[1:, c] = a[:-1, c] + val
    elif kind == "write_index":   # rows picked by a tensor of indices, in any order
      idx = list(dict.fromkeys([pick % rows, (pick * 3 + 1) % rows, r.start % rows]))
      t[Tensor(idx).shard(devs), c] = float(val)
      a[idx, c] = val
    elif kind == "iop_whole":
      if flip:
        t += t.flip(1)
        a += a[:, ::-1].copy()
      else:
        t *= float(val)
        a *= val
    for tv, nv in views: np.testing.assert_array_equal(tv.numpy(), nv, err_msg=f"a view after {kind}")
    np.testing.assert_array_equal(t.numpy(), a, err_msg=f"the base after {kind}")

@pytest.mark.parametrize("dev", list(PAIRS))
@settings(max_examples=30)
@example(prog=(6, 2, 0, [("view", slice(2, 5, 1), slice(0, 2, 1), False, 0, 0), ("write_base", slice(1, 4, 1), slice(0, 2, 1), False, 0, 0)]))
@example(prog=(5, 4, 0, [("view", slice(1, 5, 2), slice(1, 3, 1), True, 0, 0), ("iadd_view", slice(0, 0, 1), slice(0, 0, 1), False, 2, 0),
                         ("setitem_iadd", slice(0, 4, 1), slice(0, 4, 2), False, -1, 0)]))
# an in-place op on an empty view of a tensor sharded along the rows (raised "cannot order the schedule": its copies
# between shards assigned each other)
@example(prog=(5, 4, 0, [("setitem_iadd", slice(0, 5, 2), slice(0, 0, 1), False, 0, 0)]))
@given(prog=programs())
def test_random_view_programs_match_numpy(dev, prog): run_program(PAIRS[dev], prog)

@pytest.mark.parametrize("axis", [None, 0])
def test_a_realized_view_of_a_sharded_tensor_keeps_its_values(axis):
  # realize() of a view of a realized tensor leaves it a view, as on one device (docs/guide.md): the base's next write shows
  # in it; a pad is a value of its own once realized (as torch's F.pad), and keeps its values
  e = Tensor([-3.0, 4.0]).shard(PAIRS["CPU"], axis=axis).realize()
  v, p = e[::-1], e.pad(((1, 2),))
  Tensor.realize(v, p)
  e.assign(Tensor([1.0, 2.0]).shard(PAIRS["CPU"], axis=axis)).realize()
  np.testing.assert_array_equal(v.numpy(), [2, 1])
  np.testing.assert_array_equal(p.numpy(), [0, -3, 4, 0, 0])

def test_reshape_of_an_empty_sharded_tensor():
  # the shards' sizes after the reshape were computed as 0 // 0 (ZeroDivisionError)
  t = Tensor(np.zeros((2, 0), np.float32)).shard(PAIRS["CPU"], axis=0).realize()
  assert t.reshape(1, 2, 0).expand(2, 2, 0).numpy().shape == (2, 2, 0)
  assert t.reshape(2, 0, 1).numpy().shape == (2, 0, 1)

def test_gathering_an_empty_lazy_sharded_tensor():
  # its shards' empty graphs are one node: the COPYs between the devices were ordered as a cycle of assigns
  t = Tensor(np.zeros((2, 0), np.float32)).shard(PAIRS["CPU"], axis=0) + 0
  np.testing.assert_array_equal(t.pad(((1, 0), (1, 0))).numpy(), np.zeros((3, 1), np.float32))

@pytest.mark.parametrize("shape", [(0,), (1, 0)])
def test_broadcasting_an_empty_sharded_tensor(shape):
  # relaid out onto t's shards, an empty range of the axis had no pieces to add up (reduce() of an empty list)
  t = Tensor(np.zeros((2, 0), np.float32)).shard(PAIRS["CPU"], axis=0).realize()
  assert (t + t.reshape(shape)).numpy().shape == (2, 0)

def test_any_reshape_of_an_empty_sharded_tensor():
  # nothing moves between the shards: it was refused as one that "moves items between the shards"
  t = Tensor(np.zeros((2, 0, 0), np.float32)).shard(PAIRS["CPU"], axis=0).realize()
  assert (t.reshape(0, 0, 2) + 1).numpy().shape == (0, 0, 2)

def test_a_view_of_a_realized_view_of_a_sharded_tensor_follows_it():
  # f was made from p; p's realize rebased the lazy base onto its buffer first, which remade f from the base, so f no longer
  # went through p's old graph and stayed a view of the base: the base's next write reached f and not p
  e = Tensor([-3.0]).shard(PAIRS["CPU"]) + 0
  p = e.pad(((1, 0),))
  f = p.flip(0)
  p.realize()
  e.assign(Tensor([0.0]).shard(PAIRS["CPU"])).realize()
  np.testing.assert_array_equal(p.numpy(), [0, -3])
  np.testing.assert_array_equal(f.numpy(), [-3, 0])

def test_reshape_of_an_empty_tensor_sharded_after_its_zero_axis():
  # (0, 3) split over three devices on axis 1, reshaped to (0, 1): the 0 before the axis made any split look like it divides,
  # each shard became (0, 1) and the tensor (0, 3), not the (0, 1) asked for
  t = Tensor(np.zeros((0, 3), np.float32)).shard(("CPU:0", "CPU:1", "CPU:2"), axis=1).realize()
  assert t.reshape(0, 1).shape == (0, 1) and t.reshape(0, 1).numpy().shape == (0, 1)
  assert (t.reshape(0, 1) + 1).numpy().shape == (0, 1)

def test_an_empty_axis_splits_into_empty_shards():
  # as public tinygrad (0 divides by any device count): it raised "leaves a shard empty"
  a = np.zeros((0, 3), np.float32)
  t = Tensor(a).shard(("CPU:0", "CPU:1", "CPU:2"), axis=0)
  assert [s.shape for s in t.uop.src] == [(0, 3)] * 3 and t.uop.arg == 0
  np.testing.assert_array_equal((t + 1).sum(0).numpy(), np.zeros(3, np.float32))
  np.testing.assert_array_equal(t.pad(((1, 0), (0, 0))).numpy(), np.zeros((1, 3), np.float32))
