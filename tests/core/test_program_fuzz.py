"""Whole random programs against numpy (and torch for gradients): a few tensors of random shapes (0, 1 and odd sizes,
float32, float16, int8, uint8, int16, int32 and int64) go through a sequence of steps, each a view (reshape, permute, slice with steps, flip, pad, expand,
shrink), an elementwise op (a division brings in NaN and +-inf), a reduce (var and std of ints too), an assign or in-place
op into a tensor or a view of it (sources that read the target included: t[1:] += t[:-1], t[::2] = t[1::2] * 2,
x.assign(x.T @ x), its running sum, t[idx] = a row of t), a realize or a realize that fails part-way; the same steps run on numpy arrays, whose views write
through like tinygrad's. Single ops are tested elsewhere: these find the bugs in how ops meet (a view of a pending
assign, an update reading its own target, a realize cut short between them)."""
import numpy as np, pytest
from hypothesis import given, settings, example, strategies as st
from tinygrad import Tensor, dtypes
from tinygrad.engine import realize as engine

# ---- the reference's rules where numpy's differ from tinygrad's documented ones (docs/guide.md, "Numerics") ----

def _ref_cast(a: np.ndarray, dt) -> np.ndarray:
  # float -> int truncates and saturates, NaN gives 0 (numpy: undefined, INT_MIN on x86)
  if np.issubdtype(dt, np.integer) and a.dtype.kind == "f":
    info = np.iinfo(dt)
    with np.errstate(invalid="ignore"): return np.where(np.isnan(a), 0, np.clip(np.trunc(a), info.min, info.max)).astype(dt)
  return a.astype(dt)

def _np_dtype(t: Tensor):
  return {dtypes.float32: np.float32, dtypes.float16: np.float16, dtypes.int8: np.int8, dtypes.uint8: np.uint8, dtypes.int16: np.int16,
          dtypes.int32: np.int32, dtypes.int64: np.int64, dtypes.bool: np.bool_}[t.dtype]

def _check(t: Tensor, a: np.ndarray, what: str):
  got = t.numpy()
  assert got.shape == a.shape, f"{what}: shape {got.shape} != {a.shape}"
  assert (got.dtype.kind == "f") == (a.dtype.kind == "f"), f"{what}: dtype {got.dtype} where numpy has {a.dtype}"
  tol = 4e-3 if got.dtype == np.float16 else 1e-5   # (numpy rounds a float16 sum or mean otherwise than a float32 accumulator)
  if got.dtype.kind == "f": np.testing.assert_allclose(got, a.astype(got.dtype), rtol=tol, atol=tol, equal_nan=True, err_msg=what)
  else: np.testing.assert_array_equal(got, a, err_msg=what)

# ---- the program: entries are (tensor, numpy array, writable, bases it reads) ----

class Entry:
  def __init__(self, t: Tensor, a: np.ndarray, base: "Entry | None" = None, writable: bool = True, reads: frozenset = frozenset()):
    self.t, self.a, self.writable = t, a, writable
    self.base = base.base if base is not None and base.base is not None else base   # the tensor a view writes into
    self.own_reads = reads | {id(self)}
    self.buffered = False   # (a base made realized: its views stay views when realized)

  @property
  def reads(self) -> frozenset:
    # the tensors whose buffers this one's lazy graph reads: a view reads what its base reads now (a pending assign into
    # the base reads its source), a computed value what its inputs read when it was made
    return self.own_reads | self.base.reads if self.base is not None else self.own_reads
  @reads.setter
  def reads(self, v: frozenset): self.own_reads = v

def _np_view(a: np.ndarray, shape: tuple) -> np.ndarray | None:
  # numpy's reshape copies where strides cannot express it; the view tinygrad has then is not numpy's, so skip it
  v = a.view()
  try: v.shape = shape
  except AttributeError: return None
  return v

def self_read_update(kind: str, t: Tensor, a: np.ndarray, c: int) -> bool:
  """An update of t (and its numpy twin a) that reads its own target through another view; False where a's shape has none.
  shift_iadd: t[1:] += t[:-1] (or t[:-1] += t[1:]) along an axis, each element adding its neighbour's old value;
  strided_set: t[0:2m:2] = t[1:2m:2] * 2 (or the odd rows from the even ones)."""
  if kind == "shift_iadd":
    if a.ndim == 0: return False
    ax = abs(c) % a.ndim
    hi, lo = (tuple(s if d == ax else slice(None) for d in range(a.ndim)) for s in (slice(1, None), slice(None, -1)))
    dst, srci = (hi, lo) if c >= 0 else (lo, hi)
    t[dst] += t[srci]
    a[dst] += a[srci].copy()
    return True
  if a.ndim == 0 or a.shape[0] < 2: return False
  m2 = a.shape[0] // 2 * 2
  dst2, src2 = (slice(0, m2, 2), slice(1, m2, 2)) if c % 2 else (slice(1, m2, 2), slice(0, m2, 2))
  t[dst2] = t[src2] * 2
  a[dst2] = a[src2] * np.array(2, a.dtype)
  return True

def _reshapes(shape: tuple) -> list[tuple]:
  n = int(np.prod(shape))
  outs = [(n,), (1, n), (n, 1)] + ([(2, n // 2)] if n % 2 == 0 and n else []) + ([(n // 3, 3)] if n % 3 == 0 and n else [])
  return outs + ([shape[::-1]] if len(shape) > 1 and 0 in shape else []) + ([shape + (1,)] if len(shape) < 3 else [])

VIEWS = ["slice", "flip", "permute", "reshape", "shrink", "index", "pad", "expand"]
ELEMENTWISE = ["add", "sub", "mul_const", "neg", "maximum", "where", "abs", "div_const", "floordiv_const", "mod_const", "cast",
               "sigmoid", "clip", "contiguous", "detach", "cumsum", "pow", "div", "cummax", "cumprod", "cube"]
WRITES = ["assign_const", "assign_self_view", "assign_other", "iadd", "imul", "setitem", "setitem_iadd", "assign_reduce", "setitem_index",
          "isub", "idiv", "shift_iadd", "strided_set", "assign_matmul", "setitem_index_bcast", "assign_cumsum"]

def _slice(draw, n: int) -> slice:
  step = draw(st.sampled_from([1, 1, 2, 3, -1, -2]))
  lo, hi = sorted(draw(st.tuples(st.integers(0, n), st.integers(0, n))))
  return slice(lo, hi, step) if step > 0 else slice(hi - 1 if hi > 0 else None, lo - 1 if lo > 0 else None, step)

@st.composite
def programs(draw, n_steps: int = 10):
  shapes = draw(st.lists(st.lists(st.sampled_from([0, 1, 2, 3, 4, 5]), min_size=1, max_size=3).map(tuple), min_size=1, max_size=3))
  bases = [(s, draw(st.sampled_from(["float32", "int32", "float16", "int8", "uint8", "int16", "int64"])), draw(st.sampled_from(["realized", "lazy", "const"]))) for s in shapes]
  steps = [(draw(st.sampled_from(["view"] * 3 + ["elementwise"] * 3 + ["reduce"] * 2 + ["write"] * 5 + ["realize", "interrupt", "check"])),
            draw(st.integers(0, 2**16)), draw(st.integers(0, 2**16)), draw(st.integers(-3, 3))) for _ in range(draw(st.integers(1, n_steps)))]
  # slices for every step, drawn against the largest dim so they shrink to fit any entry
  slices = [tuple(_slice(draw, 5) for _ in range(4)) for _ in steps]
  return bases, steps, slices

class Program:
  def __init__(self, device: str | tuple | None, axis: int | None = None):
    self.device, self.axis, self.entries = device, axis, []

  def _tensor(self, a: np.ndarray) -> Tensor:
    # several devices: sharded along `axis` where the tensor has one of 2 or more, else replicated
    t = Tensor(a.copy(), device=self.device if isinstance(self.device, str) else None)
    if not isinstance(self.device, tuple): return t
    return t.shard(self.device, axis=self.axis if self.axis is not None and a.ndim > self.axis and a.shape[self.axis] >= 2 else None)

  def add_base(self, shape: tuple, dt: str, how: str):
    a = (np.arange(int(np.prod(shape))).reshape(shape) % 7 - 3).astype(dt)
    if how == "const" and isinstance(self.device, str):   # a lazy tensor whose value is a graph of no buffer
      t = (Tensor.arange(a.size, device=self.device).reshape(shape) % 7 - 3).cast(dt)
    else: t = self._tensor(a).realize() if how == "realized" else self._tensor(a) + 0
    self.entries.append(e := Entry(t, a))
    e.buffered = how == "realized"   # a tensor with a buffer from the start keeps it: every write is an assign into it

  def derived(self, t: Tensor, a: np.ndarray, reads: frozenset, writable: bool = True):
    # a computed value: a tensor of its own (writable: an assign into it is an assign into a lazy tensor)
    a = np.array(a)   # (numpy reduces to 0-d give scalars, which cannot be written into)
    if t.dtype != dtypes.bool: a = _ref_cast(a, _np_dtype(t)) if a.dtype != _np_dtype(t) else a
    self.entries.append(Entry(t, a, writable=writable, reads=reads))

  def view(self, e: Entry, kind: str, sl: tuple, k: int):
    t, a, nd = e.t, e.a, e.a.ndim
    if (k >> 13) % 4 == 1: t = t.detach()   # (a view of its detach(): a view of e too, as torch's detach() shares the storage)
    if kind in ("slice", "shrink"):
      idx = tuple(sl[i] for i in range(nd))
      if kind == "shrink":   # shrink takes (start, end) pairs: the positive-step slice of the same bounds
        idx = tuple(slice(*sorted((min(s.start or 0, n), min(max(s.stop if s.stop is not None else n, 0), n)))) for s, n in zip(idx, a.shape))
        return t.shrink(tuple((s.start, s.stop) for s in idx)), a[idx], True
      return t[idx], a[idx], True
    if kind == "flip":
      ax = k % nd
      return t.flip(ax), np.flip(a, ax), True
    if kind == "permute":
      perm = tuple(np.random.default_rng(k).permutation(nd).tolist())
      return t.permute(perm), a.transpose(perm), True
    if kind == "reshape":
      shape = _reshapes(a.shape)[k % len(_reshapes(a.shape))]
      v = _np_view(a, shape)
      return (t.reshape(shape), v, True) if v is not None else None
    if kind == "index":
      if a.shape[0] == 0: return None
      i = k % a.shape[0] - (a.shape[0] if k % 2 else 0)   # negative indices too
      return t[i], a[i, ...], True   # (a[i] of a 1-D array is a scalar copy, a[i, ...] the 0-d view)
    if kind == "pad":
      pads = tuple((k % 2, (k // 2) % 3) for _ in range(nd))
      return t.pad(pads), np.pad(a, pads), False
    if kind == "expand":
      if nd >= 4: return None
      return t.reshape((1,) + a.shape).expand((2,) + a.shape), np.broadcast_to(a, (2,) + a.shape), False
    raise AssertionError(kind)

  def elementwise(self, x: Entry, y: Entry, kind: str, c: int):
    t, a = x.t, x.a
    fl = a.dtype.kind == "f"
    try: bshape = np.broadcast_shapes(a.shape, y.a.shape)
    except ValueError: bshape = None
    ut, ua = (y.t, y.a) if bshape is not None and len(bshape) <= 4 else (c, np.array(c, dtype=np.int32))
    if kind == "add": return t + ut, a + ua
    if kind == "sub": return t - ut, a - ua
    if kind == "mul_const": return t * c, a * np.array(c, a.dtype)
    if kind == "neg": return -t, -a
    if kind == "maximum": return t.maximum(ut), np.maximum(a, ua)
    if kind == "where": return (t > ut).where(t, ut), np.where(a > ua, a, ua)
    if kind == "abs": return t.abs(), np.abs(a)
    if kind == "div_const": return t / 4, (a / 4).astype(np.float32)
    if kind == "cast": return (t.cast(dtypes.int32), _ref_cast(a, np.int32)) if fl else (t.cast(dtypes.float32), a.astype(np.float32))
    if kind == "sigmoid": return t.sigmoid(), (1 / (1 + np.exp(-a.astype(np.float64)))).astype(np.float32)
    if kind == "clip": return (t.clip(0, 2), np.clip(a, 0, 2)) if a.dtype == np.uint8 else (t.clip(-1, 2), np.clip(a, -1, 2))
    if kind == "contiguous": return t.contiguous(), a.copy()   # (torch's contiguous() of a contiguous tensor is itself)
    if kind == "detach": return t.detach() * 1, a.copy()
    if kind == "cumsum": return (t.cumsum(0), np.cumsum(a, 0)) if a.ndim else (t * 1, a.copy())
    if kind == "div":   # t / u: an int quotient is float32, 0 / 0 NaN and x / 0 +-inf (the edge values enter the program)
      with np.errstate(all="ignore"): return t / ut, np.true_divide(a.astype(np.float64), ua)   # (derived() rounds it to t's dtype)
    if kind == "cummax": return (t.cummax(0)[0], np.maximum.accumulate(a, 0)) if a.ndim and a.shape[0] else (t * 1, a.copy())
    if kind == "cumprod":   # (ints: an int64 product that wraps as numpy's; float16: float32 products rounded once)
      if not a.ndim: return t * 1, a.copy()
      return t.cumprod(0), np.cumprod(a.astype(np.float32), 0).astype(a.dtype) if a.dtype == np.float16 else np.cumprod(a, 0)
    if kind == "cube":   # ints wrap in their own width (t * t * t of int8 100 is 64)
      with np.errstate(all="ignore"): return t * t * t, a * a * a
    if kind == "pow":   # an int tensor exponent: exact and wrapping past 2**24 (it went through float)
      return (t * t, a * a) if fl else (t ** (t % 4 + 14), a ** (a % np.array(4, a.dtype) + np.array(14, a.dtype)))
    d = c if c != 0 else 2
    if kind == "floordiv_const": return t // d, (np.floor_divide(a, np.array(d, a.dtype)))
    if kind == "mod_const": return t % d, (np.mod(a, np.array(d, a.dtype)))
    raise AssertionError(kind)

  def reduce(self, e: Entry, k: int):
    t, a = e.t, e.a
    ax, keep, op = k % a.ndim, bool(k & 4), ["sum", "max", "mean", "min", "var", "prod", "std"][(k >> 3) % 7]
    if op in ("max", "min") and a.shape[ax] == 0: return None   # raises, as torch (tested elsewhere)
    if op == "mean":
      with np.errstate(all="ignore"): ref = a.mean(ax, keepdims=keep).astype(np.float32)
      return t.mean(ax, keepdim=keep), ref
    if op in ("var", "std"):   # (ints: float32, of their exact deviations; float16 in float32, rounded once)
      # checked here and not kept: a variance is an ulp or so off numpy's, which a later % or int cast would magnify
      with np.errstate(all="ignore"):
        ref = getattr(a.astype(np.float64), op)(ax, ddof=1, keepdims=keep).astype(np.float16 if a.dtype == np.float16 else np.float32)
      _check(getattr(t, op)(ax, keepdim=keep), ref, f"{op} over axis {ax} of a {a.dtype} {a.shape}")
      return None
    if op == "prod":   # (ints in int64, wrapping as numpy's; float16 in its own dtype)
      if a.dtype == np.float16: return None   # (numpy multiplies float16 in float16, each product rounded; tinygrad too, in another order)
      with np.errstate(all="ignore"): return t.prod(ax, keepdim=keep), np.prod(a.astype(np.int64) if a.dtype.kind in "iu" else a, ax, keepdims=keep)
    return getattr(t, op)(ax, keepdim=keep), getattr(a, op)(ax, keepdims=keep)

  def before_write(self, target: Entry):
    # a lazy value keeps the value it had when built, as numpy's: the realize that updates a buffer computes its live
    # readers first (docs/guide.md, "In-place updates"). Not a reader of a pending update of the target (it sees the later
    # updates too): those are realized first, as the guide tells users to do
    tb = target.base if target.base is not None else target
    if tb.t._is_realized(): return
    pending = [e.t for e in self.entries if e.base is None and e is not tb and id(tb) in e.reads]
    if pending: Tensor.realize(*pending)

  def write(self, target: Entry, kind: str, src: Entry, sl: tuple, c: int):
    t, a = target.t, target.a
    if not target.writable: return
    # the value, cast to the target's dtype: assign never casts
    def fit(v: Tensor, va: np.ndarray) -> tuple[Tensor, np.ndarray]:
      if v.shape != t.shape:
        try: np.broadcast_shapes(va.shape, a.shape)
        except ValueError: return t * c, a * np.array(c, a.dtype)
        if np.broadcast_shapes(va.shape, a.shape) != a.shape: return t * c, a * np.array(c, a.dtype)
        v, va = v.expand(t.shape), np.broadcast_to(va, a.shape)
      return (v.cast(t.dtype), _ref_cast(va, a.dtype)) if v.dtype != t.dtype else (v, va)
    self.before_write(target)
    # a pending assign is a lazy value too: it reads its source when it runs (so it is realized before the source is written)
    tb = target.base if target.base is not None else target
    if kind in ("assign_other", "iadd", "imul", "setitem", "isub"): tb.reads = tb.own_reads | src.reads
    if kind == "assign_const":
      t.assign(self._tensor(np.full(a.shape, c, a.dtype)))
      a[...] = c
    elif kind == "assign_self_view":   # reads the target at other elements: flipped, transposed, shifted
      if a.ndim and a.shape[0] > 1 and c % 3 == 0: v, va = t[1:].pad(((0, 1),) + ((0, 0),) * (a.ndim - 1)), np.pad(a[1:], ((0, 1),) + ((0, 0),) * (a.ndim - 1))
      elif a.ndim == 2 and a.shape[0] == a.shape[1] and c % 3 == 1: v, va = t.T + t, a.T + a
      else: v, va = t.flip(0) * 2 - 1 if a.ndim else t * 2 - 1, (np.flip(a, 0) if a.ndim else a) * np.array(2, a.dtype) - np.array(1, a.dtype)
      v, va = fit(v, va)
      t.assign(v)
      a[...] = va
    elif kind == "assign_other":
      v, va = fit(src.t, src.a)
      t.assign(v)
      a[...] = va
    elif kind in ("isub", "idiv"):   # t -= src (reading the target's other elements where src is a view of it); t //= c, t /= 4
      if kind == "isub":
        v, va = fit(src.t, src.a)
        t -= v
        a -= va
      elif a.dtype.kind == "f":
        t /= 4
        a /= np.float32(4)
      else:
        t //= (c or 3)
        a //= np.array(c or 3, a.dtype)
    elif kind in ("iadd", "imul"):
      v, va = fit(src.t, src.a)   # the source may be a view of the target
      if kind == "imul": v, va = fit(v.clip(0 if np.uint8 in (a.dtype, va.dtype) else -2, 2), np.clip(va, 0 if np.uint8 in (a.dtype, va.dtype) else -2, 2))
      if kind == "iadd": t += v
      else: t *= v
      if kind == "iadd": a += va
      else: a *= va
    elif kind in ("setitem", "setitem_iadd"):
      if a.ndim == 0: return
      idx = sl[0] if c % 2 else (slice(None),) * (a.ndim - 1) + (sl[0],)   # t[a:b], t[..., ::2]
      sub_a = a[idx]
      if kind == "setitem":
        v, va = src.t, src.a
        try: ok = np.broadcast_shapes(va.shape, sub_a.shape) == sub_a.shape
        except ValueError: ok = False
        if not ok: v, va = t[idx].flip(0) if sub_a.ndim else t[idx], np.flip(sub_a, 0).copy() if sub_a.ndim else sub_a.copy()
        if v.dtype != t.dtype: v, va = v.cast(t.dtype), _ref_cast(np.asarray(va), a.dtype)
        t[idx] = v
        a[idx] = va
      else:
        t[idx] += c
        a[idx] += np.array(c, a.dtype)
    elif kind == "setitem_index":   # t[idx] = t[other] by index lists or tensors (a repeated index: the last write wins)
      if a.ndim == 0 or a.shape[0] == 0: return
      rng = np.random.default_rng(c + 3)
      n = a.shape[0]
      idx, other = rng.integers(0, n, 1 + c % 3).tolist(), rng.integers(0, n, 1 + c % 3).tolist()
      def index(ix: list[int]) -> Tensor | list[int]:   # on the target's devices (replicated there)
        if c % 2: return ix
        it = Tensor(ix, dtype=dtypes.int32, device=self.device if isinstance(self.device, str) else None)
        return it.shard(self.device) if isinstance(self.device, tuple) else it
      t[index(idx)] = t[index(other)]
      a[idx] = a[other]
    elif kind in ("shift_iadd", "strided_set"):
      if not self_read_update(kind, t, a, c): return
    elif kind == "assign_matmul":   # a square block assigned its transpose's product with it: x.assign(x.T @ x)
      if a.ndim != 2 or 0 in a.shape: return
      n = min(a.shape)
      blk, ba = (t, a) if a.shape[0] == a.shape[1] else (t[:n, :n], a[:n, :n])
      wide = np.float64 if a.dtype.kind == "f" else np.int64   # (ints wrap modulo their width, as numpy's int matmul)
      blk.assign(blk.T @ blk if c % 2 else blk @ blk.T)
      with np.errstate(all="ignore"): ba[...] = _ref_cast(ba.T.astype(wide) @ ba.astype(wide) if c % 2 else ba.astype(wide) @ ba.T.astype(wide), a.dtype)
    elif kind == "setitem_index_bcast":   # t[idx tensor] = one row of t itself (broadcast over the picked rows), or a column of picked rows
      if a.ndim == 0 or a.shape[0] == 0: return
      rng = np.random.default_rng(c + 7)
      n = a.shape[0]
      idx = rng.integers(-n, n, 1 + abs(c) % 3).tolist()   # (negative indices too)
      it = Tensor(idx, dtype=dtypes.int32, device=self.device if isinstance(self.device, str) else None)
      if isinstance(self.device, tuple): it = it.shard(self.device)
      row = abs(c) % n
      if c % 2 or a.ndim == 1:
        t[it] = t[row]
        a[idx] = a[row].copy()
      else:   # a (len(idx), ..., 1) value of other rows' first column, broadcast along the last axis (a repeated index: the last wins)
        other = rng.integers(0, n, len(idx)).tolist()
        t[it] = t[other][..., :1]
        a[idx] = a[other][..., :1]
    elif kind == "assign_cumsum":   # the target's running sum along its first axis (reads the elements before each)
      if a.ndim == 0: return
      ref = np.cumsum(a.astype(np.float32) if a.dtype == np.float16 else a, 0)
      v, va = fit(t.cumsum(0), ref)
      t.assign(v)
      a[...] = va
    elif kind == "assign_reduce":   # the target's own sum, broadcast back (reads every element before any is written)
      s = t.sum(0, keepdim=True) if a.ndim else t * 1
      v, va = fit(s, a.sum(0, keepdims=True) if a.ndim else a * 1)
      t.assign(v)
      a[...] = va

  def interrupt(self, picks: list[Entry], k: int):
    # a realize whose step k fails: what ran counts as done, the rest runs on the next realize (docs/guide.md)
    orig, seen = engine.ExecStep.run, {"n": 0}
    def run(step, *args, **kwargs):
      seen["n"] += 1
      if seen["n"] == k: raise RuntimeError("the device failed")
      return orig(step, *args, **kwargs)
    engine.ExecStep.run = run
    try: Tensor.realize(*[e.t for e in picks])
    except RuntimeError as err:
      if "the device failed" not in str(err): raise
    finally: engine.ExecStep.run = orig

  def check_all(self, what: str):
    for i, e in enumerate(self.entries): _check(e.t, e.a, f"entry {i} {'(a view)' if e.base is not None else ''} after {what}")

def run_program(device, prog, axis: int | None = None):
  bases, steps, slices = prog
  p = Program(device, axis)
  for s, dt, how in bases: p.add_base(s, dt, how)
  unsigned = any(dt == "uint8" for _, dt, _ in bases)
  for i, ((kind, k1, k2, c), sl) in enumerate(zip(steps, slices)):
    if unsigned: c = abs(c)   # (a negative Python int does not fit uint8: OverflowError, tested elsewhere)
    ents = p.entries
    e, f = ents[k1 % len(ents)], ents[k2 % len(ents)]
    if kind == "view":
      if e.a.ndim == 0: continue
      try: r = p.view(e, VIEWS[k2 % len(VIEWS)], sl, k1)
      except RuntimeError as err:   # a reshape that moves elements between shards is refused (as in public tinygrad)
        if "moves items between the shards" not in str(err): raise
        continue
      if r is None: continue
      t, a, w = r
      # a view writes into e's tensor and follows its writes; expand follows them too (numpy's broadcast_to is a view), but
      # assigning into it raises; pad is a value (numpy's np.pad and torch's F.pad copy): writes into it stay in it
      if VIEWS[k2 % len(VIEWS)] == "pad": p.entries.append(Entry(t, a, reads=e.reads))
      else: p.entries.append(Entry(t, a, base=e, writable=w and e.writable))
    elif kind == "elementwise":
      t, a = p.elementwise(e, f, ELEMENTWISE[(k1 >> 4) % len(ELEMENTWISE)], c)
      p.derived(t, a, e.reads | f.reads)
    elif kind == "reduce":
      if e.a.ndim == 0: continue
      r = p.reduce(e, k2)
      if r is not None: p.derived(r[0], r[1], e.reads)
    elif kind == "write": p.write(e, WRITES[(k1 >> 4) % len(WRITES)], f, sl, c)
    elif kind in ("realize", "interrupt"):
      # realize() leaves a view of a realized tensor a view (numpy's: nothing changes), and copies one of a lazy tensor
      # (docs/guide.md), which the model does not track: those views are left out
      own = [x for x in ents if x.base is None or x.base.buffered]
      picks = own[k2 % len(own):]
      if kind == "realize": Tensor.realize(*[x.t for x in picks])
      else: p.interrupt(picks, 1 + k1 % 4)
    elif kind == "check": _check(e.t, e.a, f"entry {k1 % len(ents)} at step {i}")
  p.check_all("the program")

def _ex(bases, steps): return (bases, steps, [(slice(0, 0, 1),) * 4] * len(steps))
F0, F1, F2, F21, F22 = ((0,), "float32", "realized"), ((1,), "float32", "realized"), ((2,), "float32", "realized"), ((2, 1), "float32", "realized"), ((2, 2), "float32", "realized")
L1 = ((1,), "float32", "lazy")

@settings(max_examples=80, deadline=None)
@given(prog=programs())
# a realized sum over an axis of size 1 was its input's buffer: a write into the input changed it
@example(prog=_ex([F0, F1], [("reduce", 1, 0, 0), ("view", 0, 0, 0), ("write", 1, 0, 0)]))
# a view of a realized sum (a view of the reduce inside) kept reading the input
@example(prog=_ex([F0, F21], [("reduce", 1, 0, 0), ("view", 290, 1, 0), ("write", 1, 0, 0)]))
@example(prog=_ex([F0, F22, F0], [("reduce", 1, 0, 0), ("view", 3, 5, 0), ("write", 1, 0, 0)]))   # s[-1], made through a view nothing holds
# b.assign(c) into a lazy b took c's buffer: a later write into either showed in both
@example(prog=_ex([L1], [("elementwise", 0, 0, 0), ("write", 1, 0, 1), ("write", 32, 1, 0), ("write", 0, 0, 0)]))
# t[0:0] = (empty) stored the empty value into a one-element t
@example(prog=_ex([F0, F1], [("write", 81, 0, 0)]))
# pad by zeros was a writable view of its input
@example(prog=_ex([F1], [("view", 0, 6, 0), ("write", 0, 0, 0)]))
# numpy() of a view of a lazy tensor realized the view on its own: it no longer followed its base
@example(prog=_ex([F0, F0], [("reduce", 0, 4, 0), ("write", 1, 0, 0), ("view", 98, 1, 0), ("check", 3, 0, 0), ("view", 0, 0, 0), ("write", 152, 0, 0)]))
# realizing a lazy tensor and a view of it together raised KeyError
@example(prog=_ex([F0, F0, L1], [("view", 104, 6, 0), ("realize", 0, 0, 0)]))
# a sum over a size-1 axis of a pending assign was, once realized, the assign's target buffer
@example(prog=_ex([F1, F0], [("write", 0, 0, 1), ("reduce", 0, 0, 0), ("write", 0, 0, 0)]))
# int ** an int tensor went through float: (-3)**15 was off by some units, int8 powers saturated instead of wrapping
@example(prog=_ex([((1,), "int32", "realized")], [("elementwise", 256, 0, 0)]))
# a slice of a pad that cuts the padding away again (the same UOps as a view of the input's buffer) showed a later write
# into the input, and a write into it reached the input
@example(prog=([((3,), "float32", "realized")], [("view", 1, 6, 0), ("view", 1, 0, 0), ("write", 0, 0, 1), ("write", 2, 0, 1)],
               [(slice(0, 0, 1),) * 4, (slice(1, 4, 1),) * 4, (slice(0, 0, 1),) * 4, (slice(0, 0, 1),) * 4]))
# two tensors of one graph (cummax of the same tensor) shared one buffer after a realize cut short ran its kernel
@example(prog=_ex([F0, ((2,), "float32", "lazy")], [("elementwise", 289, 0, 0), ("elementwise", 4666, 0, 0), ("elementwise", 1, 0, 0),
                                                    ("write", 234, 0, 0), ("interrupt", 2, 0, 0), ("write", 237, 0, 0)]))
def test_random_programs_match_numpy(prog): run_program(None, prog)

# the same programs on two devices: every tensor replicated, or split along its first axis (where it has 2 or more rows)
@pytest.mark.parametrize("axis", [None, 0], ids=["replicated", "split"])
@settings(max_examples=25, deadline=None)
@given(prog=programs())
# pad by zeros and gathering the empty shards of a lazy tensor (a cycle of COPYs)
@example(prog=_ex([F1], [("view", 0, 6, 0), ("write", 0, 0, 0)]))
@example(prog=_ex([((2, 0), "float32", "lazy")], [("view", 1, 6, 0)]))
# a realized pad of a sharded tensor was remade from its base's next write
@example(prog=_ex([F0, F0, F1], [("view", 227, 6, 0), ("write", 128, 0, 0)]))
# a flip of a pad of a lazy sharded tensor, the pad realized first: the flip stayed a view of the base
@example(prog=_ex([L1], [("view", 1, 6, 0), ("view", 1, 1, 0), ("write", 0, 0, 0)]))
# a view realized while its realized base had a pending write became copies of its own and missed the base's next write
@example(prog=_ex([F1], [("write", 0, 0, 1), ("view", 0, 1, 0), ("realize", 0, 0, 0), ("write", 0, 0, 0)]))
# a lazy tensor made replicated by an assign (its own sum), reshaped across its rows, then assigned a value split on axis 0:
# the view, made again from its reshape over the new value's shards, raised "moves items between the shards" in the assign
@example(prog=_ex([((5, 2, 4), "float32", "lazy")], [("write", 112, 0, 0), ("view", 3, 3, 0), ("write", 0, 0, 0)]))
# a slice across the shards of a realized tensor, its realize cut short after the copies' first kernel: it left its base
# (taken for a view of a lazy one: a tensor on several devices has no base buffer of its own) and missed the base's next write
@example(prog=([F2], [("view", 0, 0, 0), ("interrupt", 1, 0, 0), ("write", 0, 0, 0)], [(slice(0, 1, 1),) * 4, (slice(0, 0, 1),) * 4, (slice(0, 0, 1),) * 4]))
def test_random_sharded_programs_match_numpy(prog, axis): run_program(("CPU:0", "CPU:1"), prog, axis)

# ---- gradients: random programs over leaves, against torch's autograd ----


GRAD_STEPS = ["view", "view", "unary", "binary", "binary", "reduce", "inplace"]
UNARY = ["relu", "sigmoid", "tanh", "neg", "square", "exp_tanh", "abs", "leaky_relu", "softplus", "gelu"]

@st.composite
def grad_programs(draw):
  shapes = draw(st.lists(st.lists(st.sampled_from([1, 2, 3, 4]), min_size=1, max_size=3).map(tuple), min_size=1, max_size=2))
  steps = [(draw(st.sampled_from(GRAD_STEPS)), draw(st.integers(0, 2**16)), draw(st.integers(0, 2**16))) for _ in range(draw(st.integers(1, 8)))]
  slices = [tuple(_slice(draw, 4) for _ in range(4)) for _ in steps]
  return shapes, steps, slices, draw(st.integers(0, 2**16))

def _grad_unary(x, kind: str, lib):
  if kind == "relu": return x.relu()
  if kind == "sigmoid": return x.sigmoid()
  if kind == "tanh": return x.tanh()
  if kind == "neg": return -x
  if kind == "square": return x * x
  if kind == "exp_tanh": return x.tanh().exp()
  if kind == "abs": return x.abs()
  if kind == "leaky_relu": return x.leaky_relu(0.1) if lib == "tiny" else lib.nn.functional.leaky_relu(x, 0.1)
  if kind == "softplus": return x.softplus() if lib == "tiny" else lib.nn.functional.softplus(x)
  if kind == "gelu": return x.gelu() if lib == "tiny" else lib.nn.functional.gelu(x, approximate="tanh")
  raise AssertionError(kind)

# (shared with test_shard_fuzz.py's sharded programs)
def grad_binary(t, r, t2, r2, k1: int):
  """One binary op of (tinygrad, torch) values that broadcast: add, mul, sub, maximum or a where."""
  import torch
  op = ["add", "mul", "sub", "maximum", "where"][(k1 >> 4) % 5]
  if op == "add": return t + t2, r + r2
  if op == "mul": return t * t2, r * r2
  if op == "sub": return t - t2, r - r2
  if op == "maximum": return t.maximum(t2), torch.maximum(r, r2)
  return (t > t2).where(t, t2 * 2), torch.where(r > r2, r, r2 * 2)

def grad_inplace(t, r, idx, w, wr):
  """An in-place update of a copy (not a leaf): z = t * 1; z[idx] += w * 2 (w summed where it does not fit)."""
  z, zr = t * 1, r * 1
  sub = np.empty(t.shape)[idx].shape
  try: ok = np.broadcast_shapes(w.shape, sub) == sub
  except ValueError: ok = False
  if not ok: w, wr = w.sum(), wr.sum()
  z[idx] += w * 2
  zr[idx] += wr * 2
  return z, zr

def check_grads(out, seed: int, leaves_t: list, leaves_r: list, place=lambda t: t) -> None:
  """The program's value and its leaves' gradients of a random weighting of it (`place` lays the weights out like it)."""
  import torch
  out_t, out_r = out
  wts = np.random.default_rng(seed + 1).standard_normal(out_t.shape).astype(np.float32)
  (out_t * place(Tensor(wts))).sum().backward()
  (out_r * torch.tensor(wts)).sum().backward()
  np.testing.assert_allclose(out_t.numpy(), out_r.detach().numpy(), rtol=1e-4, atol=1e-5, err_msg="the value")
  for i, (lt, lr) in enumerate(zip(leaves_t, leaves_r)):
    gr = lr.grad.numpy() if lr.grad is not None else np.zeros(lt.shape, np.float32)
    gt = lt.grad.numpy() if lt.grad is not None else np.zeros(lt.shape, np.float32)
    np.testing.assert_allclose(gt, gr, rtol=1e-4, atol=1e-5, err_msg=f"the gradient of leaf {i}")

def run_grad_program(prog):
  import torch
  shapes, steps, slices, seed = prog
  rng = np.random.default_rng(seed)
  vals = [rng.standard_normal(s).astype(np.float32) for s in shapes]
  leaves_t = [Tensor(v, requires_grad=True) for v in vals]
  leaves_r = [torch.tensor(v, requires_grad=True) for v in vals]
  cur = list(zip(leaves_t, leaves_r))   # (tinygrad, torch) values built so far
  for (kind, k1, k2), sl in zip(steps, slices):
    t, r = cur[k1 % len(cur)]
    nd = t.ndim
    if kind == "view" and nd:
      v = ["slice", "flip", "permute", "reshape", "pad", "expand"][k2 % 6]
      if v == "slice":
        idx = tuple(sl[i] for i in range(nd))
        na = np.empty(t.shape)[idx]
        if na.size == 0: continue
        # torch has no negative steps: the same elements by a positive-step slice, then flip
        pos = tuple(slice(s.indices(n)[0], s.indices(n)[1], s.indices(n)[2]) for s, n in zip(idx, t.shape))
        t2 = t[idx]
        rr = r
        for d, (s, n) in enumerate(zip(idx, t.shape)):
          start, stop, step = s.indices(n)
          ids = list(range(start, stop, step))
          rr = rr.index_select(d, torch.tensor(ids, dtype=torch.long))
        cur.append((t2, rr))
      elif v == "flip": cur.append((t.flip(k1 % nd), r.flip(k1 % nd)))
      elif v == "permute":
        perm = tuple(np.random.default_rng(k1).permutation(nd).tolist())
        cur.append((t.permute(perm), r.permute(perm)))
      elif v == "reshape": cur.append((t.reshape(-1), r.reshape(-1)))
      elif v == "pad":
        pads = tuple((k1 % 2, (k1 // 2) % 3) for _ in range(nd))
        cur.append((t.pad(pads), torch.nn.functional.pad(r, [p for pr in reversed(pads) for p in pr])))
      elif v == "expand" and nd < 4: cur.append((t.reshape((1,) + t.shape).expand((2,) + t.shape), r.reshape((1,) + r.shape).expand((2,) + r.shape)))
    elif kind == "unary":
      u = UNARY[k2 % len(UNARY)]
      cur.append((_grad_unary(t, u, "tiny"), _grad_unary(r, u, torch)))
    elif kind == "binary":
      t2, r2 = cur[k2 % len(cur)]
      try: np.broadcast_shapes(t.shape, t2.shape)
      except ValueError: t2, r2 = t2.sum(), r2.sum()
      cur.append(grad_binary(t, r, t2, r2, k1))
    elif kind == "reduce" and nd:
      ax, keep = k2 % nd, bool(k2 & 8)
      if t.shape[ax] == 0: continue
      op = ["sum", "max", "mean"][(k2 >> 4) % 3]
      if op == "max": cur.append((t.max(ax, keepdim=keep), r.amax(ax, keepdim=keep)))   # torch's amax splits ties evenly, as here
      else: cur.append((getattr(t, op)(ax, keepdim=keep), getattr(r, op)(ax, keepdim=keep)))
    elif kind == "inplace" and nd:
      # an in-place update of a copy (not a leaf): z = t * 1; z[sl] += w (torch differentiates it, and so does tinygrad)
      cur.append(grad_inplace(t, r, sl[0] if sl[0].step > 0 else slice(None), *cur[k2 % len(cur)]))
  check_grads(cur[-1], seed, leaves_t, leaves_r)

@settings(max_examples=60, deadline=None)
@given(prog=grad_programs())
def test_random_programs_gradients_match_torch(prog):
  pytest.importorskip("torch")
  run_grad_program(prog)
