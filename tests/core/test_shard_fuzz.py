"""Whole random programs over sharded tensors against numpy (torch for gradients, eager for TinyJit): tensors of random
shapes (sizes 0, 1 and ones that do not divide by the device count), float32 and int32, each sharded over three devices
on an axis of its own or replicated, go through views (slices with steps, flip, permute, reshape, expand, pad, shrink),
elementwise ops between differently sharded tensors, reductions over the sharded axis and others (sum, max, min, mean of
ints too, argmax, argmin), matmul with either operand sharded, cat and stack, slice writes (`t[1:3] = v`, `t[:, idx] = v`
with index lists and tensors), in-place ops and assigns that read their own target (`t += t.flip(0)`, `t.assign(t[::-1])`),
realizes and `.to()` one device. On CPU:0..2 and, with small shapes, on PYTHON:0..2. test_program_fuzz.py runs its own
programs on two devices; these draw what it does not: three devices (uneven shards), every axis, operands of other layouts.
A split that would leave a shard empty, and a reshape that moves elements between shards (as public tinygrad), must raise
a clear error; any other error, or a wrong value, fails."""
import warnings
import numpy as np, pytest
from hypothesis import given, settings, example, strategies as st
from tinygrad import Tensor, TinyJit, dtypes
from tinygrad.multi import shard_bounds
from tinygrad.engine.jit import JitError
from test_program_fuzz import _ref_cast, _slice, _np_view, grad_binary, grad_inplace, check_grads, self_read_update

DEVS = {"CPU": ("CPU:0", "CPU:1", "CPU:2"), "PYTHON": ("PYTHON:0", "PYTHON:1", "PYTHON:2")}
NPDT = {dtypes.float32: np.float32, dtypes.int32: np.int32, dtypes.int64: np.int64, dtypes.bool: np.bool_}

def _check(t: Tensor, a: np.ndarray, what: str):
  assert isinstance(t.device, tuple), f"{what}: the value left the devices ({t.device})"
  got = t.numpy()
  assert got.shape == a.shape, f"{what}: shape {got.shape} != {a.shape}"
  assert got.dtype == a.dtype, f"{what}: dtype {got.dtype} where the reference has {a.dtype}"
  if got.dtype.kind == "f": np.testing.assert_allclose(got, a, rtol=1e-5, atol=1e-5, err_msg=what)
  else: np.testing.assert_array_equal(got, a, err_msg=what)

def _splits(n: int, devs: tuple) -> bool:
  try: shard_bounds(n, len(devs))
  except ValueError: return False
  return True

def shard(a: np.ndarray, devs: tuple, axis: int | None, lazy: bool = False) -> Tensor:
  """`a` sharded over `devs` on `axis` (where that axis cannot be split, the error is checked and another axis, or none, is
  used); lazy: the single-device tensor is a graph (not a buffer) when it is sharded."""
  t = Tensor(a.copy(), device=devs[0]) + 0 if lazy else Tensor(a.copy())
  if axis is not None and axis >= a.ndim: axis = None
  if axis is not None and a.ndim and not _splits(a.shape[axis], devs):
    with pytest.raises(ValueError, match="leaves a shard empty"): t.shard(devs, axis)
    axis = next((d for d in range(a.ndim) if _splits(a.shape[d], devs)), None)   # another axis that splits
  return t.shard(devs, axis if a.ndim else None)

def _values(rng: np.random.Generator, shape: tuple, dt: str) -> np.ndarray:
  # small values (ties for max and argmax; sums of halves are exact in float32, int sums do not overflow)
  v = rng.integers(-3, 4, shape)
  return (v / 2).astype(np.float32) if dt == "float32" else v.astype(np.int32)

class Entry:
  """A tensor and its numpy twin. A root is written into; a view of a root (base) writes into and follows it (its numpy
  twin is a numpy view); anything else is a value (its twin a copy) that reads the roots in `own_reads` while lazy."""
  def __init__(self, t: Tensor, a: np.ndarray, base: "Entry | None" = None, root: bool = False, writable: bool = True,
               reads: frozenset = frozenset()):
    self.t, self.a, self.base, self.root, self.writable = t, a, base, root, writable
    self.own_reads = reads | ({id(self)} if root else frozenset())
  @property
  def reads(self) -> frozenset: return self.base.reads if self.base is not None else self.own_reads

SHAPES = {"CPU": [3, 1, 5, 7, 0, 2, 4, 6], "PYTHON": [3, 1, 5, 0, 2]}
STEPS = ["base", "view", "view", "view", "binary", "binary", "unary", "reduce", "reduce", "matmul", "cat", "write", "write",
         "write", "write", "realize", "to_one", "check"]
VIEWS = ["slice", "flip", "permute", "reshape", "expand", "pad", "shrink", "index"]
WRITES = ["setitem_const", "setitem_tensor", "setitem_index", "iadd_self", "assign_self", "iadd_other", "assign_other", "imul_view",
          "shift_iadd", "strided_set"]

@st.composite
def programs(draw, dev: str = "CPU", max_steps: int = 12):
  dims = SHAPES[dev]
  def base(): return (draw(st.lists(st.sampled_from(dims), min_size=1, max_size=3).map(tuple)), draw(st.sampled_from(["float32", "int32"])),
                      draw(st.sampled_from([None, 0, 1, 2])), draw(st.sampled_from(["realized", "lazy", "lazy_one"])))
  bases = [base() for _ in range(draw(st.integers(1, 3)))]
  steps = [(draw(st.sampled_from(STEPS)), draw(st.integers(0, 2**16)), draw(st.integers(0, 2**16)), draw(st.integers(-3, 3)),
            base()) for _ in range(draw(st.integers(1, max_steps)))]
  slices = [tuple(_slice(draw, 7) for _ in range(3)) for _ in steps]
  return bases, steps, slices, draw(st.integers(0, 2**16))

class Program:
  def __init__(self, devs: tuple, seed: int):
    self.devs, self.rng, self.entries = devs, np.random.default_rng(seed), []

  def fresh(self, shape: tuple, dt: str, axis: int | None, how: str = "realized") -> tuple[Tensor, np.ndarray]:
    a = _values(self.rng, shape, dt)
    t = shard(a, self.devs, axis, lazy=how == "lazy_one")
    return (t.realize() if how == "realized" else t + 0 if how == "lazy" else t), a

  def add_base(self, shape, dt, axis, how):
    t, a = self.fresh(shape, dt, axis, how)
    self.entries.append(Entry(t, a, root=True))

  def value(self, t: Tensor, a, *src: Entry, writable: bool = False):
    # a computed value: numpy's copy, cast to tinygrad's dtype (numpy promotes int32 sums to int64, int32 + float32 to float64)
    a = np.array(a)
    a = _ref_cast(a, NPDT[t.dtype]) if a.dtype != NPDT[t.dtype] else a
    self.entries.append(Entry(t, a, writable=writable, reads=frozenset().union(*(e.reads for e in src))))

  def view(self, e: Entry, kind: str, sl: tuple, k: int):
    t, a, nd = e.t, e.a, e.a.ndim
    if kind == "slice": return t[sl[:nd]], a[sl[:nd]]
    if kind == "flip": return t.flip(k % nd), np.flip(a, k % nd)
    if kind == "permute":
      perm = tuple(np.random.default_rng(k).permutation(nd).tolist())
      return t.permute(perm), a.transpose(perm)
    if kind == "shrink":
      # (the drawn slices cover three axes: a stack's fourth, and any past them, is kept whole)
      arg = tuple((min(max(x, 0) for x in s.indices(n)[:2]), max(max(x, 0) for x in s.indices(n)[:2])) for s, n in zip(sl, a.shape)) + \
        tuple((0, n) for n in a.shape[len(sl):])
      return t.shrink(arg), a[tuple(slice(lo, hi) for lo, hi in arg)]
    if kind == "index":
      if a.shape[0] == 0: return None
      i = k % a.shape[0] - (a.shape[0] if k % 2 else 0)
      return t[i], a[i, ...]
    if kind == "reshape":
      n = a.size
      shapes = [(n,), (1, n), (n, 1)] + [(a.shape[0], -1)] * (nd > 1 and a.shape[0] > 0) + [a.shape + (1,)] + [(1,) + a.shape] \
             + ([a.shape[:-1] + (2, a.shape[-1] // 2)] if a.shape[-1] % 2 == 0 and a.shape[-1] else [])
      shape = shapes[k % len(shapes)]
      if -1 in shape: shape = (shape[0], n // shape[0])
      v = _np_view(a, shape)
      if v is None: return None
      try: return t.reshape(shape), v
      except RuntimeError as err:   # as public tinygrad: a reshape may not move elements between shards
        assert "moves items between the shards" in str(err), err
        return None
    raise AssertionError(kind)

  def before_write(self, root: Entry):
    # values stay lazy in tinygrad and read a later write (docs/guide.md); numpy's are computed at once: realize the ones
    # that read the root being written (pending assigns into other roots included), as the guide tells users to
    pend = [e.t for e in self.entries if e.base is None and e is not root and id(root) in e.reads]
    if pend: Tensor.realize(*pend)

  def write(self, w: Entry, kind: str, src: Entry, sl: tuple, c: int, fresh_spec: tuple):
    t, a = w.t, w.a
    root = w.base if w.base is not None else w
    self.before_write(root)
    def fit(v: Tensor, va: np.ndarray, shape: tuple) -> tuple[Tensor, np.ndarray] | None:
      try: ok = np.broadcast_shapes(va.shape, shape) == shape
      except ValueError: ok = False
      if not ok: return None
      return (v.cast(t.dtype), _ref_cast(np.asarray(va), a.dtype)) if v.dtype != t.dtype else (v, va)
    reads = src.reads
    if kind in ("setitem_const", "setitem_tensor"):
      if a.ndim == 0: return
      idx = sl[0] if c % 2 else (slice(None),) * (a.ndim - 1) + (sl[0],)   # t[a:b:s], t[..., a:b:s]
      sub = a[idx].shape
      if kind == "setitem_const":
        t[idx] = c
        a[idx] = c
        reads = frozenset()
      else:   # a new tensor of another layout, or another entry broadcast into place
        r = fit(src.t, src.a, sub)
        if r is None:
          v, va = self.fresh(sub, "float32" if a.dtype.kind == "f" else "int32", fresh_spec[2])
          reads, r = frozenset(), (v, va)
        t[idx] = r[0]
        a[idx] = r[1]
    elif kind == "setitem_index":   # t[:, idx] = v by a list or a replicated tensor of distinct indices
      if a.ndim < 2 or a.shape[1] == 0: return
      n = a.shape[1]
      ids = self.rng.permutation(n)[:1 + c % n].tolist()
      it = Tensor(ids, dtype=dtypes.int32).shard(self.devs) if c % 2 else ids
      v, va = self.fresh((a.shape[0], len(ids)) + a.shape[2:], "float32" if a.dtype.kind == "f" else "int32", fresh_spec[2])
      t[:, it] = v
      a[:, ids] = va
      reads = frozenset()
    elif kind == "iadd_self":   # reads the target's other elements
      if a.ndim == 0: return
      ax = c % a.ndim
      t += t.flip(ax)
      a += np.flip(a, ax).copy()
      reads = frozenset()
    elif kind == "assign_self":
      if a.ndim == 0: return
      if c % 2:
        t.assign(t[::-1])
        a[...] = a[::-1].copy()
      else:
        t.assign(t.flip(a.ndim - 1) * 2 - t)
        a[...] = np.flip(a, a.ndim - 1) * np.array(2, a.dtype) - a
      reads = frozenset()
    elif kind in ("iadd_other", "assign_other"):
      r = fit(src.t, src.a, a.shape)
      if r is None: return
      if kind == "iadd_other":
        t += r[0]
        a += r[1]
      else:
        t.assign(r[0].expand(t.shape) if r[0].shape != t.shape else r[0])
        a[...] = r[1]
    elif kind in ("shift_iadd", "strided_set"):   # (across the shards, the sharded axis too)
      if not self_read_update(kind, t, a, c): return
      reads = frozenset()
    elif kind == "imul_view":   # an in-place op on a slice of the target: t[sl] *= c
      if a.ndim == 0: return
      t[sl[0]] *= c
      a[sl[0]] *= np.array(c, a.dtype)
      reads = frozenset()
    # a pending assign reads its source when it runs
    root.own_reads = root.own_reads | reads

  def reduce(self, e: Entry, k: int):
    t, a = e.t, e.a
    op, keep = ["sum", "max", "min", "mean", "argmax", "argmin", "sum_all", "max_all", "argmax_all", "var", "std"][(k >> 3) % 11], bool(k & 4)
    ax = k % a.ndim
    if op.endswith("_all"):
      if op != "sum_all" and a.size == 0: return None
      if op == "sum_all": return t.sum(), a.sum()
      if op == "max_all": return t.max(), a.max()
      try: return t.argmax(), np.array(a.argmax(), np.int32)
      except RuntimeError as err:   # it flattens: refused where that moves elements between shards (as public tinygrad)
        assert "moves items between the shards" in str(err), err
        return None
    if op != "sum" and op != "mean" and a.shape[ax] == 0: return None   # raises, as torch
    if op == "mean":
      with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)   # (numpy's mean of an empty slice: nan, as tinygrad's)
        return t.mean(ax, keepdim=keep), a.astype(np.float64).mean(ax, keepdims=keep).astype(np.float32)
    if op in ("var", "std"):   # (ints: float32 of their exact deviations)
      # checked here and not kept: a variance is an ulp or so off numpy's, which a later int cast would magnify
      with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)   # (numpy's var of fewer than 2: nan, as tinygrad's)
        ref = getattr(a.astype(np.float64), op)(ax, ddof=1, keepdims=keep).astype(np.float32)
      _check(getattr(t, op)(ax, keepdim=keep), ref, f"{op} over axis {ax} of {a.shape}")
      return None
    if op in ("argmax", "argmin"):
      r = getattr(a, op)(ax, keepdims=keep).astype(np.int32)
      return getattr(t, op)(ax, keepdim=keep), r
    return getattr(t, op)(ax, keepdim=keep), getattr(a, op)(ax, keepdims=keep)

def run_program(devs: tuple, prog):
  bases, steps, slices, seed = prog
  p = Program(devs, seed)
  for b in bases: p.add_base(*b)
  for i, ((kind, k1, k2, c, spec), sl) in enumerate(zip(steps, slices)):
    ents = p.entries
    e, f = ents[k1 % len(ents)], ents[k2 % len(ents)]
    if kind == "base": p.add_base(*spec)
    elif kind == "view":
      if e.a.ndim == 0: continue
      v = VIEWS[k2 % len(VIEWS)]
      if v == "expand":   # follows its base, not writable
        if e.a.ndim >= 3: continue
        t, a = e.t.reshape((1,) + e.t.shape).expand((2,) + e.t.shape), np.broadcast_to(e.a, (2,) + e.a.shape)
        ents.append(Entry(t, a, base=e.base or e if (e.root or e.base) else None, writable=False, reads=e.reads))
        continue
      if v == "pad":   # a value (numpy's pad copies)
        pads = tuple((k1 % 2, (k1 // 2) % 3) for _ in range(e.a.ndim))
        p.value(e.t.pad(pads), np.pad(e.a, pads), e)
        continue
      r = p.view(e, v, sl, k1)
      if r is None: continue
      if e.root or e.base is not None: ents.append(Entry(r[0], r[1], base=e.base or e, writable=e.writable))
      else: p.value(r[0], r[1], e)
    elif kind == "binary":
      # with another entry where they broadcast, else with a new tensor of e's shape and another layout
      try: np.broadcast_shapes(e.a.shape, f.a.shape)
      except ValueError: f = None
      if f is None or k2 & 1:
        t2, a2 = p.fresh(e.a.shape, spec[1], spec[2])
        src: tuple = (e,)
      else: t2, a2, src = f.t, f.a, (e, f)
      op = ["add", "sub", "mul", "maximum", "where", "cmplt", "idiv"][(k1 >> 4) % 7]
      if op == "add": p.value(e.t + t2, e.a + a2, *src)
      elif op == "sub": p.value(e.t - t2 * c, e.a - a2 * c, *src)
      elif op == "mul": p.value(e.t * t2, e.a * a2, *src)
      elif op == "maximum": p.value(e.t.maximum(t2), np.maximum(e.a, a2), *src)
      elif op == "where": p.value((e.t > t2).where(e.t, t2 * 2), np.where(e.a > a2, e.a, a2 * 2), *src)
      elif op == "cmplt":
        p.value((e.t < t2).cast(dtypes.int32) + e.t.cast(dtypes.int32), (e.a < a2).astype(np.int32) + _ref_cast(e.a, np.int32), *src)
      elif e.a.dtype.kind == "i" and a2.dtype.kind == "i":   # integer floor division by a nonzero divisor
        d, da = t2.abs() + 1, np.abs(a2) + 1
        p.value(e.t // d, np.floor_divide(e.a, da), *src)
    elif kind == "unary":
      op = ["neg", "relu", "abs", "cast", "exp", "cumsum", "contiguous", "sigmoid"][(k1 >> 4) % 8]
      if op == "neg": p.value(-e.t, -e.a, e)
      elif op == "relu": p.value(e.t.relu(), np.maximum(e.a, 0), e)
      elif op == "abs": p.value(e.t.abs(), np.abs(e.a), e)
      elif op == "cast":
        to, npto = (dtypes.float32, np.float32) if e.a.dtype.kind == "i" else (dtypes.int32, np.int32)
        p.value(e.t.cast(to), _ref_cast(e.a, npto), e)
      elif op == "exp": p.value(e.t.exp(), np.exp(e.a.astype(np.float64)), e)
      elif op == "cumsum" and e.a.ndim: p.value(e.t.cumsum(k2 % e.a.ndim), np.cumsum(e.a, k2 % e.a.ndim), e)
      elif op == "contiguous": p.value(e.t.contiguous(), e.a, e)
      elif op == "sigmoid": p.value(e.t.sigmoid(), 1 / (1 + np.exp(-e.a.astype(np.float64))), e)
    elif kind == "reduce":
      if e.a.ndim == 0: continue
      r = p.reduce(e, k2)
      if r is not None: p.value(r[0], r[1], e)
    elif kind == "matmul":
      # e @ (another entry or a new matrix of another layout), or (that) @ e
      if e.a.ndim == 0: continue
      n = e.a.shape[-1]
      if f.a.ndim in (1, 2) and f.a.shape[0] == n and not k2 & 1: t2, a2, src = f.t, f.a, (e, f)
      else:
        t2, a2 = p.fresh((n, spec[0][0]), spec[1], spec[2])
        src = (e,)
      if k1 & 1 and e.a.ndim == 2 and a2.ndim == 2:   # (that).T @ e.T
        p.value(t2.T @ e.t.T, a2.T.astype(np.float64) @ e.a.T.astype(np.float64), *src)
      else: p.value(e.t @ t2, e.a.astype(np.float64) @ a2.astype(np.float64), *src)
    elif kind == "cat":
      if e.a.ndim == 0: continue
      ax = k1 % e.a.ndim
      def fits(x: Entry) -> bool: return x.a.dtype == e.a.dtype and x.a.shape[:ax] + x.a.shape[ax+1:] == e.a.shape[:ax] + e.a.shape[ax+1:]
      others = [x for x in ents if x.a.ndim == e.a.ndim and fits(x)]
      g = others[k2 % len(others)]
      if k2 & 2:
        if g.a.shape != e.a.shape: continue
        p.value(Tensor.stack(e.t, g.t, dim=ax), np.stack([e.a, g.a], ax), e, g)
      else: p.value(Tensor.cat(e.t, g.t, e.t, dim=ax), np.concatenate([e.a, g.a, e.a], ax), e, g)
    elif kind == "write":
      if not e.writable or (not e.root and e.base is None): continue
      p.write(e, WRITES[(k1 >> 4) % len(WRITES)], f, sl, c, spec)
    elif kind == "realize":
      picks = [x for x in ents if x.base is None]
      if picks: Tensor.realize(*[x.t for x in picks[k2 % len(picks):]])
    elif kind == "to_one":   # gathered onto one of the devices: a value of its own
      d = devs[k2 % len(devs)]
      g = e.t.to(d)
      assert g.device == Tensor(0, device=d).device, f"to({d}) gave a tensor on {g.device}"
      np.testing.assert_allclose(g.numpy(), e.a, rtol=1e-5, atol=1e-5, err_msg=f"entry {k1 % len(ents)} gathered onto {d}")
    elif kind == "check": _check(e.t, e.a, f"entry {k1 % len(ents)} at step {i} ({kind})")
  for i, e in enumerate(p.entries): _check(e.t, e.a, f"entry {i} {'(a view)' if e.base is not None else ''} at the end")

_S = (slice(0, 0, 1),) * 3
@settings(max_examples=40, deadline=None)
@given(prog=programs("CPU"))
# (0, 3) split on axis 1, reshaped to (0, 1): the 0 before the axis made the split "divide", and the tensor stayed (0, 3)
@example(prog=([((0, 3), "float32", 1, "realized")], [("view", 2, 3, 0, ((1,), "float32", None, "realized"))], [_S], 0))
def test_random_sharded_programs_on_three_cpus(prog): run_program(DEVS["CPU"], prog)

@settings(max_examples=12, deadline=None)
@given(prog=programs("PYTHON", max_steps=8))
def test_random_sharded_programs_on_three_python_devices(prog): run_program(DEVS["PYTHON"], prog)

# ---- gradients: random programs over sharded leaves, against torch's autograd ----

GRAD_STEPS = ["view", "view", "unary", "binary", "binary", "reduce", "matmul", "cat", "inplace"]

@st.composite
def grad_programs(draw, dev: str = "CPU"):
  dims = SHAPES[dev][:3]   # (no empty tensors: a max over one raises)
  leaves = [(draw(st.lists(st.sampled_from(dims), min_size=1, max_size=3).map(tuple)), draw(st.sampled_from([None, 0, 1, 2])))
            for _ in range(draw(st.integers(1, 3)))]
  steps = [(draw(st.sampled_from(GRAD_STEPS)), draw(st.integers(0, 2**16)), draw(st.integers(0, 2**16)), draw(st.sampled_from([None, 0, 1])))
           for _ in range(draw(st.integers(1, 8)))]
  slices = [tuple(_slice(draw, 5) for _ in range(3)) for _ in steps]
  return leaves, steps, slices, draw(st.integers(0, 2**16))

def _torch_index(r, idx: tuple):
  import torch
  for d, s in enumerate(idx):   # torch has no negative steps: the same elements by index_select
    r = r.index_select(d, torch.tensor(list(range(*s.indices(r.shape[d]))), dtype=torch.long))
  return r

def run_grad_program(devs: tuple, prog):
  import torch
  leaves, steps, slices, seed = prog
  rng = np.random.default_rng(seed)
  vals = [rng.standard_normal(s).astype(np.float32) for s, _ in leaves]
  lt = [Tensor(v, requires_grad=True) for v in vals]
  lr = [torch.tensor(v, requires_grad=True) for v in vals]
  def sharded(t: Tensor, axis: int | None) -> Tensor:
    if axis is None or axis >= t.ndim or not _splits(t.shape[axis], devs): axis = None
    return t.shard(devs, axis)
  cur = [(sharded(t, ax), r) for t, r, (_, ax) in zip(lt, lr, leaves)]   # (tinygrad, torch) values built so far
  for (kind, k1, k2, ax), sl in zip(steps, slices):
    t, r = cur[k1 % len(cur)]
    nd = t.ndim
    if kind == "view" and nd:
      v = ["slice", "flip", "permute", "reshape", "pad", "expand", "shrink"][k2 % 7]
      if v == "slice":
        idx = sl[:nd]
        if 0 in np.empty(t.shape)[idx].shape: continue
        cur.append((t[idx], _torch_index(r, idx)))
      elif v == "flip": cur.append((t.flip(k1 % nd), r.flip(k1 % nd)))
      elif v == "permute":
        perm = tuple(np.random.default_rng(k1).permutation(nd).tolist())
        cur.append((t.permute(perm), r.permute(perm)))
      elif v == "reshape":
        try: cur.append((t.reshape(-1), r.reshape(-1)))
        except RuntimeError as err: assert "moves items between the shards" in str(err), err
      elif v == "pad":
        pads = tuple((k1 % 2, (k1 // 2) % 3) for _ in range(nd))
        cur.append((t.pad(pads), torch.nn.functional.pad(r, [p for pr in reversed(pads) for p in pr])))
      elif v == "expand" and nd < 3: cur.append((t.reshape((1,) + t.shape).expand((2,) + t.shape), r.reshape((1,) + r.shape).expand((2,) + r.shape)))
      elif v == "shrink" and t.shape[0] > 1: cur.append((t.shrink(((1, t.shape[0]),) + tuple((0, n) for n in t.shape[1:])), r[1:]))
    elif kind == "unary":
      u = ["relu", "sigmoid", "tanh", "square", "exp_tanh", "neg"][k2 % 6]
      if u == "relu": cur.append((t.relu(), r.relu()))
      elif u == "sigmoid": cur.append((t.sigmoid(), r.sigmoid()))
      elif u == "tanh": cur.append((t.tanh(), r.tanh()))
      elif u == "square": cur.append((t * t, r * r))
      elif u == "exp_tanh": cur.append((t.tanh().exp(), r.tanh().exp()))
      else: cur.append((-t, -r))
    elif kind == "binary":   # with another value (its own layout) where they broadcast, else with a new leaf laid out on `ax`
      t2, r2 = cur[k2 % len(cur)]
      try: ok = np.broadcast_shapes(t.shape, t2.shape) == t.shape
      except ValueError: ok = False
      if not ok:
        v = rng.standard_normal(t.shape).astype(np.float32)
        t2, r2 = sharded(Tensor(v), ax), torch.tensor(v)
      cur.append(grad_binary(t, r, t2, r2, k1))
    elif kind == "reduce" and nd:
      a, keep = k2 % nd, bool(k2 & 8)
      op = ["sum", "max", "mean", "logsumexp"][(k2 >> 4) % 4]
      if op == "max": cur.append((t.max(a, keepdim=keep), r.amax(a, keepdim=keep)))   # torch's amax splits ties evenly, as here
      elif op == "logsumexp": cur.append((t.logsumexp(a, keepdim=keep), r.logsumexp(a, keepdim=keep)))
      else: cur.append((getattr(t, op)(a, keepdim=keep), getattr(r, op)(a, keepdim=keep)))
    elif kind == "matmul" and nd:   # t @ w, w a new leaf laid out on `ax` (or another value that fits)
      t2, r2 = cur[k2 % len(cur)]
      if not (t2.ndim == 2 and t2.shape[0] == t.shape[-1]):
        v = rng.standard_normal((t.shape[-1], 3)).astype(np.float32)
        t2, r2 = sharded(Tensor(v), ax), torch.tensor(v)
      cur.append((t @ t2, r @ r2))
    elif kind == "cat" and nd:
      t2, r2 = cur[k2 % len(cur)]
      d = k1 % nd
      if t2.ndim != nd or any(m != n for i, (m, n) in enumerate(zip(t.shape, t2.shape)) if i != d): t2, r2 = t * 2, r * 2
      cur.append((Tensor.cat(t, t2, dim=d), torch.cat([r, r2], d)))
    elif kind == "inplace" and nd:
      cur.append(grad_inplace(t, r, sl[0] if sl[0].step > 0 else slice(None), *cur[k2 % len(cur)]))
  check_grads(cur[-1], seed, lt, lr, place=lambda w: w.shard(devs))

@settings(max_examples=30, deadline=None)
@given(prog=grad_programs())
def test_random_sharded_programs_gradients_match_torch(prog):
  pytest.importorskip("torch")
  run_grad_program(DEVS["CPU"], prog)

# ---- TinyJit: a random function of sharded inputs and sharded state, replayed on new inputs, against the plain function ----

JIT_STEPS = ["elementwise", "elementwise", "reduce", "matmul", "view", "cat", "write_state", "write_state", "write_input", "realize"]

@st.composite
def jit_programs(draw):
  spec = st.tuples(st.lists(st.sampled_from([3, 1, 5, 2]), min_size=1, max_size=3).map(tuple), st.sampled_from(["float32", "int32"]),
                   st.sampled_from([None, 0, 1]))
  inputs, state = draw(st.lists(spec, min_size=1, max_size=2)), draw(st.lists(spec, min_size=1, max_size=2))
  steps = [(draw(st.sampled_from(JIT_STEPS)), draw(st.integers(0, 2**16)), draw(st.integers(0, 2**16)), draw(st.integers(-2, 2)))
           for _ in range(draw(st.integers(1, 8)))]
  slices = [_slice(draw, 5) for _ in steps]
  # per input: a view (rows 2.. of a bigger sharded tensor) in every call, or in each call a new tensor, the last call's
  # buffers rewritten, or a lazy value
  views = [draw(st.booleans()) for _ in inputs]
  modes = [["view" if v else draw(st.sampled_from(["new", "same", "lazy"])) for v in views] for _ in range(4)]
  return inputs, state, steps, slices, draw(st.lists(st.integers(0, 2**16), min_size=1, max_size=2)), modes

def _fit(v: Tensor, t: Tensor) -> Tensor:
  """`v` made a value for `t` (its shape and dtype): broadcast where it can be, else its sum broadcast; cast to t's dtype."""
  try: ok = np.broadcast_shapes(v.shape, t.shape) == t.shape
  except ValueError: ok = False
  if not ok: v = v.sum()
  return v.expand(t.shape).cast(t.dtype) if v.dtype != t.dtype else v.expand(t.shape)

def make_jit_fn(prog, state: list[Tensor]):
  _, _, steps, slices, outs, _ = prog
  def fn(*ins):
    pool: list[Tensor] = list(ins) + list(state)
    views = set(range(len(pool)))   # the inputs, the state and the views of them (written after the call, run_jit_calls)
    for (kind, k1, k2, c), sl in zip(steps, slices):
      t, u = pool[k1 % len(pool)], pool[k2 % len(pool)]
      if kind == "view" and t.ndim and k1 % len(pool) in views: views.add(len(pool))
      if kind == "elementwise":
        op = ["add", "mul", "maximum", "where", "cast"][(k1 >> 4) % 5]
        if op == "cast": pool.append(t.cast(dtypes.float32 if dtypes.is_int(t.dtype) else dtypes.int32))
        else:
          u = _fit(u, t)
          pool.append(t + u if op == "add" else t * u.clip(-2, 2) if op == "mul" else t.maximum(u) if op == "maximum" else (t > u).where(t, u * 2))
      elif kind == "reduce" and t.ndim:
        ax, op = k2 % t.ndim, ["sum", "max", "mean", "argmax"][(k2 >> 3) % 4]
        pool.append(getattr(t, op)(ax, keepdim=bool(k2 & 4)))
      elif kind == "matmul" and 1 <= t.ndim <= 2: pool.append(t @ t.T if t.ndim == 2 else t.dot(t))
      elif kind == "view" and t.ndim:
        v = k2 % 3
        if v == 1 and 0 in np.empty(t.shape)[sl].shape: continue   # (no empty tensors: a max over one raises)
        if v == 1 and 0 in np.empty(t.shape)[sl].shape: views.discard(len(pool))
        pool.append(t.flip(k1 % t.ndim) if v == 0 else t[sl] if v == 1 else t.permute(tuple(reversed(range(t.ndim)))))
      elif kind == "cat" and t.ndim: pool.append(t.cat(t * 2, dim=k2 % t.ndim))
      elif kind in ("write_state", "write_input"):
        # what reads the target's old value is realized first (docs/guide.md: a graph needing a value before and after its
        # update raises), so every pending value is
        target = state[k1 % len(state)] if kind == "write_state" else ins[k1 % len(ins)]
        Tensor.realize(*[p for p in pool if p is not target])
        how = ["assign", "iadd", "setitem", "self"][k2 % 4]
        if how == "assign": target.assign(_fit(u * 2 - 1, target))
        elif how == "iadd" or target.ndim == 0: target += _fit(u, target)
        elif how == "self": target.assign(target.flip(0) * 2 - target)
        elif 0 not in np.empty(target.shape)[sl].shape: target[sl] = _fit(u, target[sl])
      elif kind == "realize": Tensor.realize(*pool[k1 % len(pool):])
    fn.views = [o % len(pool) in views and o % len(pool) >= len(ins) + len(state) for o in outs]   # type: ignore[attr-defined]
    return tuple(pool[o % len(pool)] for o in outs)
  return fn

def run_jit_calls(devs: tuple, prog, jit: bool) -> list[tuple[str, np.ndarray]]:
  inputs, state_specs, _, _, _, modes = prog
  rng = np.random.default_rng(len(prog[2]))
  state = [shard(_values(rng, s, dt), devs, ax).realize() for s, dt, ax in state_specs]
  fn = fn_ = make_jit_fn(prog, state)
  if jit: fn = TinyJit(fn)
  prev: list[Tensor | None] = [None] * len(inputs)
  seen = []
  for call, ms in enumerate(modes):
    ins, bigs = [], []
    for i, ((s, dt, ax), mode) in enumerate(zip(inputs, ms)):
      a = _values(rng, s, dt)
      if mode == "view":
        bigs.append(shard(np.concatenate([_values(rng, (2,) + s[1:], dt), a]), devs, ax).realize())
        x = bigs[-1][2:]
      elif mode == "same" and prev[i] is not None:   # the last call's buffers, rewritten
        x = prev[i]
        x.assign(shard(a, devs, ax)).realize()
      else: x = shard(a, devs, ax, lazy=mode == "lazy").realize() if mode == "new" else shard(a, devs, ax) * 1
      ins.append(x)
    prev = list(ins)
    # TinyJit realizes a lazy input at the start of every call (docs/guide.md, "Fast replays"), so the eager reference
    # does too: a view of a lazy input that the function realizes is a copy, of a realized one a view that sees its writes
    if not jit: Tensor.realize(*ins)
    # a lazy tensor built before the call from the state it may update keeps the value it had when built
    lazy = [(s * 2 + 1, s.numpy() * 2 + 1) for s in state]
    got = fn(*ins)
    if not jit: Tensor.realize(*got, *state, *ins, *bigs)
    seen += [(f"call {call}: output {j}", g.numpy()) for j, g in enumerate(got)]
    seen += [(f"call {call}: state {j}", g.numpy()) for j, g in enumerate(state)]
    seen += [(f"call {call}: input {j}", g.numpy()) for j, g in enumerate(ins)]
    seen += [(f"call {call}: the tensor input {j} views", g.numpy()) for j, g in enumerate(bigs)]
    # a returned view of an input or a state tensor is a view of it (a replay's too): writing into it writes that tensor
    if mine := [g for j, g in enumerate(got) if fn_.views[j]]:
      for g in mine: g += 1
      seen += [(f"call {call}, outputs written: {w} {j}", g.numpy()) for w, ts in (("state", state), ("input", ins), ("viewed", bigs))
               for j, g in enumerate(ts)]
    for k, (t, want) in enumerate(lazy): np.testing.assert_array_equal(t.numpy(), want, err_msg=f"call {call}: lazy value {k} built before it")
  return seen

def check_jit_program(devs: tuple, prog):
  eager = run_jit_calls(devs, prog, False)
  try: jitted = run_jit_calls(devs, prog, True)
  except JitError as err:   # a replay cannot write through a view that gathered shards: refused at capture
    assert "a view across the shards" in str(err) and any(k == "write_input" for k, *_ in prog[2]), err
    return
  for (what, e), (_, g) in zip(eager, jitted, strict=True):
    assert e.shape == g.shape and e.dtype == g.dtype, f"{what}: {g.shape} {g.dtype} where eager has {e.shape} {e.dtype}"
    if e.dtype.kind == "f": np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-5, err_msg=what)
    else: np.testing.assert_array_equal(g, e, err_msg=what)

def _jex(steps, slices, outs): return [((3,), "float32", None)], [((3,), "float32", None)], steps, slices, outs, [["new"]] * 4
@settings(max_examples=25, deadline=None)
@given(prog=jit_programs())
# an assign into the sharded state left pending: the capture did not include it, replays never wrote the state
@example(prog=_jex([("write_state", 0, 0, 0)], [slice(0, 0, 1)], [0]))
# a returned strided view of a replicated input, read after the capture: its first shard became a copy, stale in replays
@example(prog=_jex([("view", 0, 1, 0)], [slice(0, 3, 2)], [2]))
# a write into an input that is a view across shards (rows 2.. of 5 split 2, 2, 1): replays wrote the capture call's tensor
@example(prog=([((3,), "float32", 0)], [((3,), "float32", None)], [("write_input", 0, 0, 0)], [slice(0, 0, 1)], [0], [["view"]] * 4))
@example(prog=([((3,), "float32", 0)], [((3,), "float32", None)], [("write_input", 0, 0, 0)], [slice(0, 0, 1)], [1], [["view"]] * 4))
# a returned view across the shards of the state (a flip of its sharded axis 1), written after the call: the capture made
# it the replays' output copies, so the write did not reach the state
@example(prog=([((3,), "float32", None)], [((3, 3), "float32", 1), ((3,), "float32", None)], [("view", 1, 0, 0), ("elementwise", 0, 0, 0)],
               [slice(0, 0, 1)] * 2, [428], [["view"]] * 4))
def test_random_jitted_sharded_programs_match_eager(prog): check_jit_program(DEVS["CPU"], prog)
