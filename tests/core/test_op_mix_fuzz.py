"""Whole random programs of the ops test_program_fuzz.py does not mix: matmuls (batched, broadcast, a transposed operand,
int operands that wrap), cat and stack, gather, sort and topk, softmax and log_softmax, triu, reduces over several axes
(keepdim), argmax, var, einsum, pads in every mode, max and average pooling, constant int powers, normalize, cumsum, views the next ops read
through (split, merge, pad, shrink, flip, expand, a step), and in-place updates between them (a slice +=, a square tensor assigned its own
product, a row set from a reduce of its tensor), in float32 and the int dtypes, against numpy. Each new tensor keeps the
value it had when built (docs/guide.md, "In-place updates"), so the reference copies each result; views that write
through are test_program_fuzz.py's. On the CPU and on the PYTHON device."""
import numpy as np, pytest
from hypothesis import given, settings, example, strategies as st
from tinygrad import Tensor, dtypes

NP = {dtypes.float32: np.float32, dtypes.int8: np.int8, dtypes.uint8: np.uint8, dtypes.int16: np.int16, dtypes.int32: np.int32,
      dtypes.uint32: np.uint32, dtypes.int64: np.int64, dtypes.bool: np.bool_}
OPS = ["matmul", "matmul", "cat", "stack", "reduce", "argmax", "softmax", "permute", "gather", "sort", "topk", "triu", "var", "einsum",
       "iadd_slice", "assign_product", "setitem_row", "realize", "pad_mode", "pool", "pow_int", "normalize", "view", "view", "cumsum"]
PAD_MODES = {"constant": "constant", "reflect": "reflect", "replicate": "edge", "circular": "wrap"}   # ours: numpy's

@st.composite
def programs(draw, n_steps: int):
  dt = draw(st.sampled_from(["float32", "float32", "int32", "int8", "uint8", "int16", "int64", "uint32"]))
  shapes = draw(st.lists(st.lists(st.sampled_from([0, 1, 2, 3, 5, 7]), min_size=1, max_size=3).map(tuple), min_size=1, max_size=3))
  lazy = draw(st.lists(st.booleans(), min_size=len(shapes), max_size=len(shapes)))
  steps = draw(st.lists(st.tuples(st.sampled_from(OPS), st.integers(0, 2**16), st.integers(0, 2**16)), min_size=n_steps // 2, max_size=n_steps))
  return getattr(dtypes, dt), list(zip(shapes, lazy)), steps, draw(st.integers(0, 2**16))

def _ref(a, t: Tensor) -> np.ndarray:
  # numpy's result as the tensor's dtype (ints wrap as the kernels do: +, * and sums are exact modulo the width)
  return np.array(np.asarray(a).astype(np.int64) if NP[t.dtype] is not np.float32 and np.asarray(a).dtype.kind in "iub" else a).astype(NP[t.dtype])

def run(prog, device=None):
  dt, bases, steps, seed = prog
  rng = np.random.default_rng(seed)
  def values(shape, d=dt):
    if d == dtypes.float32: return rng.standard_normal(shape).astype(np.float32)
    return rng.integers(0 if d in (dtypes.uint8, dtypes.uint32) else -3, 4, shape).astype(NP[d])
  pool: list[tuple[Tensor, np.ndarray]] = []
  for shape, lazy in bases:
    a = values(shape)
    pool.append((Tensor(a, device=device) + 0 if lazy else Tensor(a, device=device).realize(), a))
  def add(t: Tensor, a) -> None:
    if int(np.prod(t.shape)) <= 2000: pool.append((t, _ref(a, t)))
  for op, k, r in steps:
    i = k % len(pool)
    t, a = pool[i]
    if t.dtype not in NP or t.dtype == dtypes.bool: continue
    nd, s, fl = a.ndim, a.shape, t.dtype == dtypes.float32
    ax = r % nd if nd else 0
    if op == "matmul" and nd:
      b = values(((r % 3,) if r % 5 == 0 and nd > 2 else ()) + (s[-1], r % 4), t.dtype)
      bt = Tensor(np.ascontiguousarray(np.swapaxes(b, -1, -2)), device=device).transpose(-1, -2) if r % 2 else Tensor(b, device=device)
      try: np.broadcast_shapes(s[:-2], b.shape[:-2])   # batch dims that do not broadcast raise, in numpy too
      except ValueError: continue
      add(t @ bt, np.matmul(a.astype(np.float64 if fl else np.int64), b.astype(np.float64 if fl else np.int64)))
    elif op == "cat" and nd:
      s2 = list(s)
      s2[ax] = r % 3
      b = values(tuple(s2), t.dtype)
      add(t.cat(Tensor(b, device=device), t.flip(ax), dim=ax), np.concatenate([a, b, np.flip(a, ax)], ax))
    elif op == "stack": add(Tensor.stack(t, t + 1, dim=r % (nd + 1)), np.stack([a, (a.astype(np.int64) + 1) if not fl else a + 1], r % (nd + 1)))
    elif op == "reduce" and nd:
      axes = tuple(sorted({(r >> j) % nd for j in range(1 + r % nd)}))
      kind = ["sum", "max", "min", "prod", "mean"][k % 5]
      if kind in ("max", "min") and any(s[x] == 0 for x in axes): continue
      # (the mean of ints is float32 of the exact sum; an empty one NaN)
      src = a if kind in ("max", "min") else a.astype(np.float64 if fl or kind == "mean" else np.int64)
      add(getattr(t, kind)(axes, keepdim=bool(r & 1)), getattr(np, kind)(src, axis=axes, keepdims=bool(r & 1)))
    elif op == "argmax" and nd and s[ax]:
      add(t.argmax(ax) if r & 2 else t.argmin(ax), np.argmax(a, ax) if r & 2 else np.argmin(a, ax))
    elif op == "softmax" and nd and fl and s[ax]:
      e = np.exp(a.astype(np.float64) - a.max(ax, keepdims=True))
      add(t.softmax(ax), e / e.sum(ax, keepdims=True)) if r & 2 else add(t.log_softmax(ax), np.log(e / e.sum(ax, keepdims=True)))
    elif op == "permute":
      perm = tuple(np.random.default_rng(r).permutation(nd).tolist())
      add(t.permute(perm).contiguous(), a.transpose(perm))
    elif op == "view" and nd:   # a view the ops after read through (split or merge, pad, shrink, flip, expand, a step), plus 0:
      # a value of its own, as every entry here (a view of a realized tensor follows its writes: test_program_fuzz.py's)
      kind, vr = ["split", "merge", "pad", "shrink", "flip", "expand", "step"][r % 7], np.random.default_rng(r)
      t = t + 0
      if kind == "split" and s[ax] and s[ax] % 2 == 0: add(t.reshape(s[:ax] + (2, s[ax] // 2) + s[ax + 1:]), a.reshape(s[:ax] + (2, s[ax] // 2) + s[ax + 1:]))
      elif kind == "merge" and nd >= 2: add(t.reshape(s[:-2] + (s[-2] * s[-1],)), a.reshape(s[:-2] + (s[-2] * s[-1],)))
      elif kind == "pad":
        pads = [tuple(vr.integers(0, 3, 2).tolist()) for _ in range(nd)]
        add(t.pad(pads, value=1), np.pad(a, pads, constant_values=1))
      elif kind == "shrink":
        lo = [int(vr.integers(0, n + 1)) for n in s]
        sl = [(l, int(vr.integers(l, n + 1))) for l, n in zip(lo, s)]
        add(t.shrink(tuple(sl)), a[tuple(slice(l, h) for l, h in sl)])
      elif kind == "flip": add(t.flip(ax), np.flip(a, ax))
      elif kind == "expand" and nd < 4: add(t.reshape((1,) + s).expand((1 + r % 3,) + s), np.broadcast_to(a, (1 + r % 3,) + s))
      elif kind == "step": add(t[(slice(None),) * ax + (slice(None, None, -2 if r & 8 else 2),)], a[(slice(None),) * ax + (slice(None, None, -2 if r & 8 else 2),)])
    elif op == "cumsum" and nd:   # (ints in int64, as sum; float32 in float32: the reference's float64 within the tolerance)
      add(t.cumsum(ax), np.cumsum(a.astype(np.float64 if fl else np.int64), ax))
    elif op == "gather" and nd and s[ax]:
      s2 = [n if j != ax else 1 + r % 3 for j, n in enumerate(s)]
      idx = np.random.default_rng(r).integers(0, s[ax], s2)
      add(t.gather(ax, Tensor(idx.astype(np.int32), device=device)), np.take_along_axis(a, idx, ax))
    elif op == "sort" and nd: add(t.sort(ax, descending=bool(r & 2))[0], -np.sort(-a.astype(np.float64 if fl else np.int64), ax) if r & 2 else np.sort(a, ax))
    elif op == "topk" and nd and s[ax]:
      n = 1 + r % s[ax]
      add(t.topk(n, ax)[0], np.take(-np.sort(-a.astype(np.float64 if fl else np.int64), ax), range(n), axis=ax))
    elif op == "triu" and nd >= 2: add(t.triu(r % 5 - 2), np.triu(a, r % 5 - 2))
    elif op == "var" and nd and s[ax] > 1:   # (ints: float32, as mean; std too)
      add(t.var(ax) if r & 2 else t.std(ax, keepdim=True), a.astype(np.float64).var(ax, ddof=1) if r & 2 else a.astype(np.float64).std(ax, ddof=1, keepdims=True))
    elif op == "einsum" and nd == 2:
      # (ints: each product in the tensor's dtype, wrapping as t * t does, then summed in int64 as sum(); public tinygrad's too)
      if fl: ref = np.einsum("ij,kj->ik", a.astype(np.float64), a)
      else: ref = (a[:, None, :].astype(np.int64) * a[None, :, :]).astype(a.dtype).astype(np.int64).sum(-1)
      add(Tensor.einsum("ij,kj->ik", t, t), ref)
    elif op == "pad_mode" and nd and a.size:   # (an empty tensor: reflect refuses even pads of 0, as torch)
      mode = list(PAD_MODES)[r % 4]
      lim = s[-1] - 1 if mode == "reflect" else s[-1] if mode == "circular" else 3   # (reflect: pads below the size)
      p0, p1 = min((r >> 2) % 4, lim), min((r >> 4) % 4, lim)
      add(t.pad((p0, p1), mode=mode), np.pad(a, [(0, 0)] * (nd - 1) + [(p0, p1)], mode=PAD_MODES[mode]))
    elif op == "pool" and nd >= 2 and min(s[-2:]) >= 1:
      # max (any dtype) or average (float32) pooling of the last two axes, windows up to 3 x 3 and strides up to 3
      kk, st = (1 + r % min(3, s[-2]), 1 + (r >> 2) % min(3, s[-1])), (1 + (r >> 4) % 3, 1 + (r >> 6) % 3)
      win = np.lib.stride_tricks.sliding_window_view(a, kk, axis=(-2, -1))[..., ::st[0], ::st[1], :, :]
      if fl and r & 256: add(t.avg_pool2d(kk, st), win.astype(np.float64).mean((-2, -1)))
      else: add(t.max_pool2d(kk, st), win.max((-2, -1)))
    elif op == "pow_int":
      # a constant int power: float32 (negative ones too: 1/x**n, inf at 0) or ints (wrapping)
      n = [-3, -2, -1, 2, 3, 5][r % 6] if fl else r % 6
      with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        add(t ** n, a.astype(np.float64) ** n if fl else a.astype(np.int64) ** n)
    elif op == "normalize" and nd and fl:
      p = [1.0, 2.0, 3.0][r % 3]
      norm = (np.abs(a.astype(np.float64)) ** p).sum(ax, keepdims=True) ** (1 / p)
      add(t.normalize(p=p, dim=ax), a / np.maximum(norm, 1e-12))
    elif op in ("iadd_slice", "setitem_row", "assign_product") and nd and s[0]:
      if not t._is_realized():   # (an update goes into a buffer: the entry becomes one, with the value it had)
        t = t.contiguous().realize()
        pool[i] = (t, a := a.copy())
      if op == "iadd_slice":
        lo = r % s[0]
        v = values(a[lo:].shape, t.dtype)
        t[lo:] += Tensor(v, device=device)
        a[lo:] = _ref(a[lo:].astype(np.float64 if fl else np.int64) + v, t)
      elif op == "setitem_row":
        row = r % s[0]
        t[row] = (t[row] * 2 + t.sum()).cast(t.dtype)
        a[row] = _ref(a[row].astype(np.float64 if fl else np.int64) * 2 + _ref(a.astype(np.float64 if fl else np.int64).sum(), t.sum()), t)
      elif nd == 2 and s[0] == s[1]:
        t.assign(t @ t.T)
        a[...] = _ref(a.astype(np.float64 if fl else np.int64) @ a.T.astype(np.float64 if fl else np.int64), t)
    elif op == "realize": t.realize()
  for j, (t, a) in enumerate(pool):
    got = t.numpy()
    assert got.shape == a.shape, f"entry {j}: shape {got.shape} != {a.shape}"
    if a.dtype.kind == "f": np.testing.assert_allclose(got, a, rtol=2e-3, atol=2e-3, equal_nan=True, err_msg=f"entry {j}")
    else: np.testing.assert_array_equal(got, a, err_msg=f"entry {j}")

@settings(max_examples=60, deadline=None)
@given(programs(12))
# int8 products past 127 (a row set from the sum): einsum's wrap in int8 before the int64 sum, as t * t does
@example((dtypes.int8, [((1, 7), False)], [("setitem_row", 0, 0), ("einsum", 0, 0)], 0))
def test_random_op_mixes_match_numpy(prog): run(prog)

@settings(max_examples=8, deadline=None)
@given(programs(5))
def test_random_op_mixes_match_numpy_python_device(prog): run(prog, "PYTHON")
