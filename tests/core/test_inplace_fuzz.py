"""Whole random programs of in-place updates against numpy's eager semantics, where test_program_fuzz.py's model helps the
implementation: no tensor is realized for it before a write (every live lazy reader of the target must keep the value it had,
docs/guide.md "In-place updates"), tensors live on several devices (a device, a second one, and a pair that shards them) and
move between them by `.to()` and `.shard()` (a copy keeps the value it had; writes into it stay in it), updates read their
own target through any view (`x.assign(x.T)`, `x[1:4] = x[0:3].flip(0)`, `t[idx] = t[idx2]` with index tensors, `v += v.flip(0)`
for a view of a view), reduces read the tensors between the writes (sum, max, mean, var, std, cumsum, prod: of ints as well,
docs/guide.md "Integer sums"), the dtypes include bool and half, and a realize of any subset of the tensors (views of lazy tensors
among them, which become copies, docs/guide.md) comes at random points, also cut short at a random step (a device error or
Ctrl-C) and run again. Views are taken of a tensor or of its detach() (a view too, as torch's). A write into a broadcast view must raise and leave
the tensor as it was. The same steps as a TinyJit function of its state tensors must leave them as the plain function does."""
import numpy as np, pytest
from hypothesis import given, settings, example, strategies as st
from tinygrad import Tensor, Device, TinyJit, dtypes
from tinygrad.multi import shard_bounds
from tinygrad.uop import Ops
from tinygrad.engine import realize as engine
from test_program_fuzz import _ref_cast, _np_dtype, _np_view

DTYPES = ["float32", "float16", "int8", "uint8", "int32", "int64", "bool"]

def _check(t: Tensor, a: np.ndarray, what: str):
  got = t.numpy()
  assert got.shape == a.shape, f"{what}: shape {got.shape} != {a.shape}"
  assert (got.dtype.kind == "f") == (a.dtype.kind == "f"), f"{what}: dtype {got.dtype} where numpy has {a.dtype}"
  if got.dtype.kind == "f":
    tol = 1e-2 if got.dtype == np.float16 else 1e-5   # (numpy rounds each float16 op, a fused kernel once)
    np.testing.assert_allclose(got, a.astype(got.dtype), rtol=tol, atol=tol, equal_nan=True, err_msg=what)
  else: np.testing.assert_array_equal(got, a, err_msg=what)

def _splits(n: int, parts: int) -> bool:
  try: shard_bounds(n, parts)
  except ValueError: return False   # (it would leave a shard empty: tested in test_shard_fuzz.py)
  return n >= parts

class Entry:
  """A tensor and its numpy twin. A view has a parent and `fn`, the numpy view of the parent's array that it is (so it can be
  made again over a new array); anything else is a root: its own values (a copy in numpy)."""
  def __init__(self, t: Tensor, a: np.ndarray, parent: "Entry | None" = None, fn=None, writable: bool = True):
    self.t, self.a, self.parent, self.fn, self.writable, self.bcast = t, a, parent, fn, writable, False
  @property
  def root(self) -> "Entry": return self.parent.root if self.parent is not None else self

@st.composite
def programs(draw, n_steps: int = 12):
  base = st.tuples(st.lists(st.sampled_from([1, 2, 3, 4, 5]), min_size=1, max_size=3).map(tuple), st.sampled_from(DTYPES),
                   st.sampled_from(["realized", "lazy"]), st.integers(0, 2))
  bases = draw(st.lists(base, min_size=1, max_size=3))
  kinds = ["view"] * 4 + ["value"] * 3 + ["stat"] * 2 + ["move"] * 2 + ["write"] * 7 + ["realize", "check", "interrupt"]
  steps = draw(st.lists(st.tuples(st.sampled_from(kinds), st.integers(0, 2**16), st.integers(0, 2**16), st.integers(-3, 3)),
                        min_size=n_steps // 2, max_size=n_steps))
  return bases, steps

class Program:
  def __init__(self, devs: tuple):
    # two device names and (optionally) a tuple to shard over, spelled as a tensor's .device spells them
    self.devs, self.entries = tuple(tuple(map(Device.canonicalize, d)) if isinstance(d, tuple) else Device.canonicalize(d) for d in devs), []

  def place(self, t: Tensor, d: "int | str | tuple", k: int) -> Tensor:
    """t on device d (an index into devs, or a device), sharded on an axis drawn by k where d is several devices."""
    dev = self.devs[d % len(self.devs)] if isinstance(d, int) else d
    if dev == t.device: return t
    if isinstance(dev, tuple):   # sharded on an axis that splits over the devices, or replicated
      if isinstance(t.device, tuple): t = t.to(self.devs[0])
      axes = [ax for ax in range(t.ndim) if _splits(t.shape[ax], len(dev))]
      return t.shard(dev, axis=axes[k % len(axes)] if axes and k % 3 else None)
    return t.to(dev)

  def add(self, t: Tensor, a: np.ndarray, **kw) -> Entry | None:
    # (an identity view, `t[0:1]` of one row, is the tensor itself, as documented: realizing it realizes the tensor)
    if kw.get("parent") is not None and any(t is e.t for e in self.entries): return None
    a = np.asarray(a) if kw.get("parent") is not None else np.array(a)   # (a view's twin is a numpy view, a value's a copy)
    if a.dtype != _np_dtype(t): a = a.astype(np.bool_) if t.dtype == dtypes.bool else _ref_cast(a, _np_dtype(t))
    self.entries.append(e := Entry(t, a, **kw))
    return e

  def view(self, e: Entry, k: int, c: int):
    t, a, nd = e.t, e.a, e.a.ndim
    if nd == 0: return
    if (k >> 14) % 4 == 1: t = t.detach()   # (a view of its detach(): a view of e too, as torch's detach() shares the storage)
    kind, ax = ["slice", "flip", "permute", "reshape", "index", "expand", "slice2"][k % 7], (k >> 3) % nd
    n = a.shape[ax]
    if kind in ("slice", "slice2"):   # one axis, any step (a negative one too)
      step = [1, 2, -1, -2, 3][(k >> 5) % 5]
      lo, hi = sorted(((k >> 8) % (n + 1), (k >> 11) % (n + 1)))
      s = slice(lo, hi, step) if step > 0 else slice(hi - 1 if hi > 0 else None, lo - 1 if lo > 0 else None, step)
      fn = lambda x, ax=ax, s=s: x[(slice(None),) * ax + (s,)]
      self.add(t[(slice(None),) * ax + (s,)], fn(a), parent=e, fn=fn, writable=e.writable)
    elif kind == "flip":
      fn = lambda x, ax=ax: np.flip(x, ax)
      self.add(t.flip(ax), fn(a), parent=e, fn=fn, writable=e.writable)
    elif kind == "permute":
      perm = tuple(np.random.default_rng(k).permutation(nd).tolist())
      fn = lambda x, perm=perm: x.transpose(perm)
      self.add(t.permute(perm), fn(a), parent=e, fn=fn, writable=e.writable)
    elif kind == "reshape":
      shapes = [(a.size,), a.shape + (1,), (1,) + a.shape] + ([(2, a.size // 2)] if a.size % 2 == 0 else [])
      shape = shapes[(k >> 3) % len(shapes)]
      if _np_view(a, shape) is None: return   # (numpy copies: not a view)
      try: v = t.reshape(shape)
      except RuntimeError as err:   # as public tinygrad: a reshape may not move elements between the shards
        assert "moves items between the shards" in str(err), err
        return
      fn = lambda x, shape=shape: _np_view(x, shape)
      self.add(v, fn(a), parent=e, fn=fn, writable=e.writable)
    elif kind == "index":
      i = c % n if n else None
      if i is None: return
      fn = lambda x, i=i, ax=ax: x[(slice(None),) * ax + (i, Ellipsis)]
      self.add(t[(slice(None),) * ax + (i,)], fn(a), parent=e, fn=fn, writable=e.writable)
    else:   # a broadcast view: it follows its base, but cannot be written
      fn = lambda x: np.broadcast_to(x, (2,) + x.shape)
      if (v := self.add(t.reshape((1,) + t.shape).expand((2,) + t.shape), fn(a), parent=e, fn=fn, writable=False)) is not None: v.bcast = True

  def operand(self, e: Entry, f: Entry, k: int) -> tuple[Tensor, np.ndarray] | None:
    """f's value for an op with e: on e's devices, e's dtype, and a shape that broadcasts to e's (None where it cannot)."""
    try:
      if np.broadcast_shapes(e.a.shape, f.a.shape) != e.a.shape: return None
    except ValueError: return None
    u, ua = f.t, f.a
    u = self.place(u, e.t.device, k)
    if u.dtype != e.t.dtype: u, ua = u.cast(e.t.dtype), ua.astype(np.bool_) if e.t.dtype == dtypes.bool else _ref_cast(ua, e.a.dtype)
    return u, ua

  def value(self, e: Entry, f: Entry, k: int, c: int):
    t, a = e.t, e.a
    kind = ["add", "mul", "where", "sum", "max", "cast", "pad", "contiguous", "neg", "cat"][k % 10]
    if kind in ("add", "mul", "where"):
      o = self.operand(e, f, k)
      if o is None: return
      u, ua = o
      if t.dtype == dtypes.bool:   # (^, & and | for +, * and where)
        if kind == "add": return self.add(t ^ u, a ^ ua)
        return self.add(t & u, a & ua) if kind == "mul" else self.add(t | u, a | ua)
      with np.errstate(all="ignore"):
        if kind == "add": return self.add(t + u, a + ua)
        if kind == "mul": return self.add(t * u, a * ua)
      return self.add((t > u).where(t, u), np.where(a > ua, a, ua))
    if kind in ("sum", "max") and a.ndim:
      ax = (k >> 4) % a.ndim
      if kind == "sum":   # (ints and bools: int64, as torch)
        return self.add(t.sum(ax), a.astype(np.float64 if a.dtype.kind == "f" else np.int64).sum(ax))
      return self.add(t.max(ax), a.max(ax)) if a.shape[ax] else None
    if kind == "cast":
      dt = DTYPES[(k >> 4) % len(DTYPES)]
      if t.dtype == getattr(dtypes, dt): return   # (the tensor itself, as torch's .to(its dtype))
      return self.add(t.cast(dt), a.astype(np.bool_) if dt == "bool" else _ref_cast(a, np.dtype(dt)))
    if kind == "pad" and a.ndim:   # a value of its own (torch's F.pad copies)
      return self.add(t.pad(((1, c % 2),) + ((0, 0),) * (a.ndim - 1)), np.pad(a, ((1, c % 2),) + ((0, 0),) * (a.ndim - 1)))
    if kind == "contiguous": return self.add(t.contiguous(), a.copy())
    if kind == "neg" and t.dtype != dtypes.bool:
      with np.errstate(all="ignore"): return self.add(-t, -a)
    if kind == "cat" and a.ndim: return self.add(t.cat(t.flip(0)), np.concatenate([a, np.flip(a, 0)]))

  def stat(self, e: Entry, k: int, c: int):
    """A reduce of another kind than value's sum and max, over one axis: mean/var/std (ints and bools: float32 from the
    exact values), cumsum and prod (ints and bools: int64, wrapping as numpy's), var_mean; a mean over an empty axis is NaN."""
    t, a = e.t, e.a
    if a.ndim == 0: return
    ax, kind = (k >> 4) % a.ndim, ["mean", "var", "std", "cumsum", "prod", "var_mean"][k % 6]
    n, a64 = a.shape[ax], a.astype(np.float64)
    if kind in ("var", "std", "var_mean") and (n < 2 or t.dtype == dtypes.bool): return
    with np.errstate(all="ignore"):
      if kind == "mean": return self.add(t.mean(ax), a64.mean(ax) if n else np.full(np.delete(a.shape, ax), np.nan))
      if kind == "var": return self.add(t.var(ax, correction=c % 2), a64.var(ax, ddof=c % 2))
      if kind == "std": return self.add(t.std(ax), a64.std(ax, ddof=1))
      if kind == "var_mean":
        v, m = t.var_mean(ax)
        self.add(v, a64.var(ax, ddof=1))
        return self.add(m, a64.mean(ax))
      acc = a64 if a.dtype.kind == "f" else a.astype(np.int64)   # (numpy's float16 cumsum and prod round each step: ours once)
      return self.add(t.cumsum(ax), np.cumsum(acc, ax)) if kind == "cumsum" else self.add(t.prod(ax), np.prod(acc, ax))

  def write(self, e: Entry, f: Entry, k: int, c: int):
    t, a = e.t, e.a
    kind = ["assign_self", "setitem_overlap", "iop", "setitem_index", "setitem_const", "assign_other", "iop_self"][k % 7]
    if not e.writable:   # a broadcast view (or a view of one): the write raises and changes nothing
      if a.size == 0: return
      with pytest.raises(ValueError, match="broadcast"):
        if c % 2: t.assign(t * 0 if t.dtype != dtypes.bool else t ^ t)
        else: t[0] = t[0] * 0 if t.dtype != dtypes.bool else t[0] ^ t[0]
      return
    if kind == "assign_self":   # the target's value read elsewhere: transposed, flipped, rolled
      if a.ndim == 2 and a.shape[0] == a.shape[1] and c % 2: v, va = t.T, a.T.copy()
      elif a.ndim and a.shape[0] > 1 and c % 3 == 0: v, va = t[1:].cat(t[:1]), np.concatenate([a[1:], a[:1]])
      elif a.ndim: v, va = t.flip(c % a.ndim), np.flip(a, c % a.ndim).copy()
      else: return
      t.assign(v)
      a[...] = va
    elif kind == "setitem_overlap":   # t[s1] = t[s2] (maybe flipped) along an axis, the two ranges overlapping
      if a.ndim == 0 or a.size == 0: return
      ax = (k >> 3) % a.ndim
      n = a.shape[ax]
      ln = 1 + (k >> 6) % n
      s1, s2 = (k >> 9) % (n - ln + 1), (k >> 12) % (n - ln + 1)
      dst, src = [(slice(None),) * ax + (slice(s, s + ln),) for s in (s1, s2)]
      v, va = t[src], a[src].copy()
      if c % 2: v, va = v.flip(ax), np.flip(va, ax).copy()
      if c % 3 == 0: v = self.place(self.place(v, 1 if v.device != self.devs[1] else 0, k), t.device, k)   # a round trip
      t[dst] = v
      a[dst] = va
    elif kind in ("iop", "iop_self"):   # t op= f (or a view of t's own values), op by dtype
      if kind == "iop_self" and a.ndim:
        o = (t.flip(0), np.flip(a, 0).copy()) if c % 2 else (t.permute(*reversed(range(a.ndim))), a.transpose().copy())
      else: o = self.operand(e, f, k)
      if o is None or o[1].shape != a.shape and kind == "iop_self": o = self.operand(e, f, k)
      if o is None: return
      u, ua = o
      if t.dtype == dtypes.bool:
        if c % 2: t |= u
        else: t ^= u
        a[...] = a | ua if c % 2 else a ^ ua
        return
      with np.errstate(all="ignore"):
        if c % 3 == 0: t -= u
        elif c % 3 == 1: t += u
        else: t *= u
        if c % 3 == 0: a[...] = a - ua
        elif c % 3 == 1: a[...] = a + ua
        else: a[...] = a * ua
    elif kind == "setitem_index":   # t[idx] = t[idx2] by index tensors on t's devices (a repeated index: the last write wins)
      if a.ndim == 0 or a.shape[0] == 0: return
      n, rng = a.shape[0], np.random.default_rng(k)
      idx, idx2 = rng.integers(0, n, 1 + c % 3).tolist(), rng.integers(-n, n, 1 + c % 3).tolist()
      idx = list(dict.fromkeys(idx))   # (numpy's last-wins and a kernel's order only agree on distinct indices)
      idx2 = idx2[:len(idx)]
      def it(ix): return self.place(Tensor(ix, dtype=dtypes.int32, device=self.devs[0]), t.device, 0)   # (replicated where t is sharded)
      t[it(idx)] = t[it(idx2)] if k % 2 else t[idx2]
      a[idx] = a[idx2].copy()
    elif kind == "setitem_const":
      if a.ndim == 0: return
      s = slice((k >> 3) % (a.shape[0] + 1), None, 1 + (k >> 6) % 2)
      val = bool(c % 2) if t.dtype == dtypes.bool else abs(c) if t.dtype == dtypes.uint8 else c
      t[s] = val
      a[s] = val
    elif kind == "assign_other":
      o = self.operand(e, f, k)
      if o is None: return
      u, ua = o
      t.assign(u.expand(t.shape) if u.shape != t.shape else u)
      a[...] = np.broadcast_to(ua, a.shape)

  def realize(self, k: int, cut: int = 0):
    picks = [e for i, e in enumerate(self.entries) if (k >> (i % 16)) & 1]
    if not picks: return
    # a view of a tensor with no buffer yet is computed into a buffer of its own (docs/guide.md): its own root from now on
    detach = [e for e in picks if e.parent is not None and not self._backed(e)]
    if cut:   # the realize fails at its step `cut` (a device error, or Ctrl-C), and is run again: as one whole realize
      orig, seen = engine.ExecStep.run, {"n": 0}
      def run(step, *args, **kwargs):
        seen["n"] += 1
        if seen["n"] == cut: raise (KeyboardInterrupt if cut % 2 else RuntimeError)("the device failed")
        return orig(step, *args, **kwargs)
      engine.ExecStep.run = run
      try: Tensor.realize(*[e.t for e in picks])
      except (RuntimeError, KeyboardInterrupt) as err:
        if "the device failed" not in str(err): raise
      finally: engine.ExecStep.run = orig
    Tensor.realize(*[e.t for e in picks])
    for e in detach:
      # (a broadcast view's copy can be written, and so can the views made from it that broadcast nothing themselves)
      e.a, e.parent, e.fn, e.writable = e.a.copy(), None, None, True
      self._refresh(e)

  def _backed(self, e: Entry) -> bool:
    # a view stays one when realized if the tensor it views has a buffer: a realized one, or one with a pending write into
    # its buffer (a write into a lazy tensor only makes it another graph: the realize computes the view into a copy)
    r = e.root.t
    return r._is_realized() or all(s.op is Ops.ASSIGN for s in (r.uop.src if r.uop.op is Ops.MULTI else (r.uop,)))

  def _refresh(self, p: Entry):
    for e in self.entries:
      if e.parent is p:
        e.a, e.writable = e.fn(p.a), p.writable and not e.bcast
        self._refresh(e)

def _base_value(shape: tuple, dt: str) -> np.ndarray:
  a = np.arange(int(np.prod(shape))).reshape(shape) % 7 - 3
  return (a > 0) if dt == "bool" else (a + 3).astype(np.uint8) if dt == "uint8" else a.astype(dt)

def run_program(devs: tuple, prog):
  bases, steps = prog
  p = Program(devs)
  for shape, dt, how, d in bases:
    a = _base_value(shape, dt)
    t = p.place(Tensor(a.copy(), device=devs[0]), d, d)
    p.add(t.realize() if how == "realized" else t + 0 if dt != "bool" else t | False, a.copy())
  for i, (kind, k1, k2, c) in enumerate(steps):
    ents = p.entries
    e, f = ents[k1 % len(ents)], ents[k2 % len(ents)]
    if kind == "view": p.view(e, k2, c)
    elif kind == "value": p.value(e, f, k2, c)
    elif kind == "stat": p.stat(e, k2, c)
    elif kind == "move":
      t = p.place(e.t, k2, c)
      if t is not e.t: p.add(t, e.a.copy())
    elif kind == "write": p.write(e, f, k2, c)
    elif kind == "realize": p.realize(k2)
    elif kind == "interrupt": p.realize(k2, 1 + k1 % 4)
    elif kind == "check": _check(e.t, e.a, f"entry {k1 % len(ents)} at step {i}")
  for i, e in enumerate(p.entries): _check(e.t, e.a, f"entry {i}{' (a view)' if e.parent is not None else ''} after the program")

DEVS = {"CPU": ("CPU", "PYTHON", ("CPU:0", "CPU:1")), "PYTHON": ("PYTHON", "CPU")}

@settings(max_examples=40, deadline=None, derandomize=True)
@given(prog=programs())
# a pad of an empty copy to another device, written into, then its source assigned: "cannot order the schedule"
@example(prog=([((4, 1), "float32", "realized", 0)], [("view", 65536, 0, 1), ("move", 10171, 112, 3), ("value", 251, 3366, 3),
         ("write", 2047, 407, -1), ("write", 301, 10507, 2), ("write", 236, 49637, 1), ("realize", 247, 21048, 2), ("write", 1, 1, -1)]))
# n = -v; v.assign(v.flip(2)); n -= v; v.assign(n): n, the value of the second update, read the first as the buffer
@example(prog=([((2, 2, 4), "uint8", "realized", 0), ((2,), "uint8", "realized", 0), ((2,), "uint8", "realized", 1)],
               [("view", 3825, 245, 0), ("value", 259, 468, 3), ("write", 9408, 3031, 2), ("view", 152, 963, -3), ("write", 65536, 3093, 0),
                ("write", 3093, 1006, 1)]))
# e2 = e0 + e0; v = e2.flip(0); u = v.flip(0); e0.assign(e0.flip(0)); realize(e0, v): e2, a reader of e0's old value, got a
# buffer too, and u (made from v, which became a copy) followed e2's writes instead of v's
@example(prog=([((1,), "float32", "realized", 0)], [("view", 0, 0, 0), ("value", 0, 0, 0), ("view", 68, 1, 0), ("view", 3, 1, 0),
               ("write", 0, 0, 0), ("realize", 0, 9, 0), ("write", 332, 2, 0)]))
# v = x.detach()[0] of lazy x; realize(x, v) cut short after x's kernel and run again: v stayed a view of x's buffer, and
# the roll x.assign(x[1:].cat(x[:1])) showed in it
@example(prog=([((2,), "float32", "lazy", 0)], [("view", 0, 0, 0), ("view", 0, 0, 0), ("view", 0, 0, 0), ("view", 0, 16384, 0),
               ("interrupt", 1, 17, 0), ("write", 0, 0, 0)]))
# v = x[2:0:-1]; x.assign(x.flip(0)): the view was handed the flip's buffer (the old values)
@example(prog=([((4,), "float32", "realized", 0)], [("view", 0, 2149, 0), ("write", 0, 0, 1)]))
def test_random_inplace_programs_match_numpy(prog): run_program(DEVS["CPU"], prog)

@settings(max_examples=12, deadline=None, derandomize=True)
@given(prog=programs(8))
def test_random_inplace_programs_match_numpy_python_device(prog): run_program(DEVS["PYTHON"], prog)

# ---- the same steps as a TinyJit function of its state, called again and again, against the plain function ----

def _run_steps(devs: tuple, ts, inits: list, steps) -> Tensor:
  """A program's steps over the tensors `ts` (a jitted function's body); the last entry's value."""
  p = Program(devs)
  p.entries = [Entry(t, a.copy()) for t, a in zip(ts, inits)]   # (the numpy twins only give shapes here)
  for kind, k1, k2, c in steps:
    ents = p.entries
    e, f = ents[k1 % len(ents)], ents[k2 % len(ents)]
    if kind == "view": p.view(e, k2, c)
    elif kind == "value": p.value(e, f, k2, c)
    elif kind == "stat": p.stat(e, k2, c)
    elif kind == "write": p.write(e, f, k2, c)
  return p.entries[-1].t.clone()   # (a copy: the last entry may be a state tensor, which a call may not return to be passed back)

def run_jit_program(devs: tuple, prog, calls: int = 4):
  """The program's steps (no realizes or reads inside) as a function writing into its bases, the state; jitted and plain
  runs from the same values must leave the same state after every call (the plain run is checked against numpy above)."""
  bases, steps = prog
  inits = [_base_value(shape, dt) for shape, dt, _, _ in bases]
  def state() -> list[Tensor]:
    p = Program(devs)
    return [p.place(Tensor(a.copy(), device=devs[0]), d, d).realize() for a, (_, _, _, d) in zip(inits, bases)]
  def fn(*ts: Tensor) -> Tensor: return _run_steps(devs, ts, inits, steps)
  jitted, plain = state(), state()
  jf = TinyJit(fn)
  for call in range(calls):
    outs = (jf(*jitted), fn(*plain))
    Tensor.realize(*plain, outs[1])
    for i, (j, q) in enumerate(zip(jitted, plain)): _check(j, q.numpy(), f"call {call}: state {i}")
    _check(outs[0], outs[1].numpy(), f"call {call}: the output")

@settings(max_examples=15, deadline=None, derandomize=True)
@given(prog=programs(8))
def test_random_inplace_programs_jitted_match_plain(prog): run_jit_program(DEVS["CPU"], prog)

def run_jit_state_program(devs: tuple, prog, lazy: bool, calls: int = 4):
  """run_jit_program's steps over state the function holds itself (a closure, not its arguments), left lazy (a graph
  reading the initial values) or realized before the first call, and written between calls from outside too (`+= 1` on
  the first state tensor); jitted and plain must agree after every call. Lazy state was computed inside the captured
  kernels: replays reset it, or missed the writes between calls (probe42)."""
  bases, steps = prog
  inits = [_base_value(shape, dt) for shape, dt, _, _ in bases]
  def state() -> list[Tensor]:
    p = Program(devs)
    ts = [p.place(Tensor(a.copy(), device=devs[0]), d, d) for a, (_, _, _, d) in zip(inits, bases)]
    # (a lazy graph of its own over a buffer, as `w = init.clone()`)
    return [t.clone() if lazy else t.realize() for t in ts]
  def make(ts: list[Tensor]):
    def fn(x: Tensor) -> Tensor: return _run_steps(devs, ts, inits, steps)
    return fn
  jitted, plain = state(), state()
  jf, pf = TinyJit(make(jitted)), make(plain)
  x = Tensor([1.0]).realize()
  for call in range(calls):
    outs = (jf(x), pf(x))
    Tensor.realize(*plain, outs[1])
    for i, (j, q) in enumerate(zip(jitted, plain)): _check(j, q.numpy(), f"call {call}: state {i}")
    _check(outs[0], outs[1].numpy(), f"call {call}: the output")
    if jitted[0].dtype != dtypes.bool:
      for s in (jitted[0], plain[0]): s += 1

@settings(max_examples=int(__import__("os").getenv("HELD_STATE_EXAMPLES", "15")), deadline=None, derandomize=True)
@given(prog=programs(8), lazy=st.booleans())
def test_random_inplace_programs_on_held_state_jitted_match_plain(prog, lazy): run_jit_state_program(DEVS["CPU"], prog, lazy)
