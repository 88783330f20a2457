"""Whole random programs of what test_program_fuzz.py and test_op_mix_fuzz.py do not generate, against torch: advanced
indexing (index tensors on one or several axes, between slices, after an ellipsis, negative indices, 2-D index tensors,
bool masks, and any numpy-style mix of slices with negative steps, ints, None and an Ellipsis) read and written (`x[idx] = v`,
`x[:, idx] += v` with repeated indices: the last write wins, as torch's CPU index_put_ without accumulate, `x[i1, i2] =
x[i3, i4]` reading its own target, `x[mask] = v`, into views that write through; basic-index reads kept as views that must
follow later writes), the int dtypes met with each other, bool, float16 and float32 (promotion, //, % and / with negative
operands, shifts, bitwise ops, comparisons, casts between the dtypes at their extremes, sum/mean/prod/cumsum/max/argmax of
ints), scatter/scatter_reduce/gather, stable sorts, topk, cummax/cummin, masked_select/nonzero/masked_fill, roll,
repeat_interleave, fmod and rounding divisions, and realizes cut short part-way. Every value starts at its dtype's
extremes (NaN, +-inf, -0.0 for floats) some of the time. Zeros in an int divisor are replaced (torch raises; ours give 0,
docs/guide.md "Numerics"). The same programs through the large-size paths (sorted scatter, bitonic sort); a TinyJit
function of a state tensor whose index, mask and value inputs change every call; and programs over every int dtype
(uint16/uint32/uint64 too, which torch lacks) against numpy."""
import numpy as np, pytest
from hypothesis import given, settings, example, strategies as st
from tinygrad import Tensor, dtypes

torch = pytest.importorskip("torch", reason="the reference: pip install torch")

DTS = {"bool": (dtypes.bool, torch.bool), "uint8": (dtypes.uint8, torch.uint8), "int8": (dtypes.int8, torch.int8),
       "int16": (dtypes.int16, torch.int16), "int32": (dtypes.int32, torch.int32), "int64": (dtypes.int64, torch.int64),
       "float32": (dtypes.float32, torch.float32), "float16": (dtypes.float16, torch.float16)}
TD = {tg: td for tg, td in DTS.values()}
INTS = ["uint8", "int8", "int16", "int32", "int64"]
STEPS = ["getitem"] * 3 + ["setitem"] * 4 + ["binary"] * 4 + ["unary"] * 2 + ["reduce"] * 2 + ["cast"] * 2 + ["realize"] + \
        ["scatter"] * 2 + ["sort"] * 2 + ["select", "misc", "misc"] + ["getitem_any"] * 3 + ["setitem_any"] * 3
BINARY = ["add", "sub", "mul", "floordiv", "mod", "truediv", "maximum", "minimum", "lt", "eq", "ne", "and", "or", "xor", "where"]

@st.composite
def programs(draw, n_steps: int = 8):
  shapes = draw(st.lists(st.lists(st.sampled_from([0, 1, 2, 3, 4, 5]), min_size=1, max_size=3).map(tuple), min_size=1, max_size=3))
  bases = [(s, draw(st.sampled_from(list(DTS))), draw(st.booleans()), draw(st.integers(0, 2**16))) for s in shapes]
  steps = [(draw(st.sampled_from(STEPS)), draw(st.integers(0, 2**16)), draw(st.integers(0, 2**16)), draw(st.integers(0, 2**16)))
           for _ in range(draw(st.integers(1, n_steps)))]
  return bases, steps

def values(rng, shape: tuple, dt: str) -> np.ndarray:
  if dt == "bool": return rng.integers(0, 2, shape).astype(np.bool_)
  if dt in ("float32", "float16"):   # halves, and some of NaN, +-inf, -0.0 and the dtype's extremes
    big, tiny = (3.4e38, 1e-45) if dt == "float32" else (65504, 6e-8)
    ext = rng.choice(np.array([np.nan, np.inf, -np.inf, -0.0, big, -big, tiny], dtype=dt), shape)
    return np.where(rng.random(shape) < 0.15, ext, (rng.integers(-6, 7, shape) * 0.5).astype(dt)).astype(dt)
  info = np.iinfo(dt)
  small = rng.integers(max(info.min, -5), 6, shape)
  ext = rng.choice(np.array([info.min, info.max, info.min + 1, info.max - 1, 0, -1 if info.min else 1], dtype=dt), shape)
  return np.where(rng.random(shape) < 0.2, ext, small.astype(dt)).astype(dt)

def index(rng, shape: tuple, k: int):
  """A random advanced index of `shape` as (tinygrad index, torch index), or None where the shape has none."""
  nd = len(shape)
  def itensor(n: int, ishape: tuple):
    ix = rng.integers(-n, n, ishape)
    return Tensor(ix.astype(np.int32)), torch.tensor(ix, dtype=torch.int64)
  def sl(n: int):
    lo = int(rng.integers(0, n + 1))
    return slice(lo, None, 2) if k & 64 else slice(lo, None)
  kind = k % 7
  ishape = (int(rng.integers(0, 4)),) if k & 8 else (int(rng.integers(1, 3)), int(rng.integers(1, 3)))
  if kind == 0 and shape[0]: return itensor(shape[0], ishape)   # x[idx]
  if kind == 1 and nd >= 2 and shape[1]:   # x[:, idx] (or x[a:, idx])
    it, ix = itensor(shape[1], ishape)
    s = sl(shape[0]) if k & 16 else slice(None)
    return (s, it), (s, ix)
  if kind == 2 and nd >= 2 and shape[0] and shape[1]:   # x[i1, i2], the index tensors broadcast
    (a, ta), (b, tb) = itensor(shape[0], ishape), itensor(shape[1], ishape[-1:] if k & 32 else ishape)
    return (a, b), (ta, tb)
  if kind == 3 and nd >= 1 and shape[-1]:   # x[..., idx]
    it, ix = itensor(shape[-1], ishape)
    return (Ellipsis, it), (Ellipsis, ix)
  if kind == 4 and nd == 3 and shape[0] and shape[2]:   # x[i1, :, i2]: the advanced axes, apart, go first
    (a, ta), (b, tb) = itensor(shape[0], ishape), itensor(shape[2], ishape)
    return (a, slice(None), b), (ta, slice(None), tb)
  if kind == 5 and nd >= 2 and shape[0]:   # x[idx, a:]
    it, ix = itensor(shape[0], ishape)
    s = sl(shape[1])
    return (it, s), (ix, s)
  if kind == 6:   # x[mask] (a mask of the leading axes)
    m = rng.integers(0, 2, shape[:1 + k % nd]).astype(np.bool_)
    return Tensor(m), torch.tensor(m)
  return None

def cast_ref(r, dt):
  # float -> int truncates and saturates, NaN gives 0 (docs/guide.md "Numerics"; torch on x86 wraps)
  if r.dtype.is_floating_point and not dt.is_floating_point and dt != torch.bool:
    info = torch.iinfo(dt)
    r = torch.nan_to_num(r.to(torch.float64).trunc(), nan=0.0, posinf=2.0**64, neginf=-2.0**64)
    out = r.clamp(-2**62, 2**62).to(dt)   # (in range; float64's 2**63 past int64's max would wrap)
    out[r >= info.max], out[r <= info.min] = info.max, info.min
    return out
  return r.to(dt)

def any_index(rng, shape: tuple):
  """A random index of every kind numpy takes, as (tinygrad index, numpy index): per axis a slice (negative steps too), an
  int (negative too) or an index tensor (their shapes broadcast), with None and one Ellipsis between them."""
  parts, tparts, ishape = [], [], tuple(int(n) for n in rng.integers(1, 3, int(rng.integers(1, 3))))
  nd = len(shape)
  ell = rng.random() < 0.5
  lead = int(rng.integers(0, nd + 1)) if ell or rng.random() < 0.3 else nd   # (axes after those: an Ellipsis's, or left out)
  trail = int(rng.integers(0, nd - lead + 1)) if ell else 0
  for j, n in enumerate(shape[:lead] + (("...",) if ell else ()) + shape[nd - trail:]):
    if n == "...":   # (one of no axes parts no index tensors for torch, and so not here: numpy's rule differs)
      if lead + trail < nd: parts.append(Ellipsis)
      tparts.append(Ellipsis)
      continue
    if rng.random() < 0.15: parts.append(None); tparts.append(None)
    kind = int(rng.integers(0, 3)) if n else 0
    if kind == 0:
      step = int(rng.choice([1, 1, 2, -1, -2, 3]))
      lo, hi = (int(v) for v in rng.integers(-n - 1, n + 2, 2))
      s = slice(lo if rng.random() < 0.7 else None, hi if rng.random() < 0.7 else None, step)
      parts.append(s); tparts.append(s)
    elif kind == 1:
      i = int(rng.integers(-n, n))
      parts.append(i); tparts.append(i)
    else:
      ix = rng.integers(-n, n, ishape[int(rng.integers(0, len(ishape))):] if rng.random() < 0.3 else ishape)
      parts.append(ix); tparts.append(Tensor(ix.astype(np.int32)))
  return tuple(tparts), tuple(parts)

def np_view(a: np.ndarray, parts: tuple):
  """a[parts] with torch's rule for ints among index tensors (an int is a basic index, taken first: of a (2, 3, 4) x,
  x[1, :, [0, 1]] is (3, 2), numpy's (2, 3); docs/guide.md): (a view by the ints and Nones, the rest of the index)."""
  basic = tuple(p if isinstance(p, int) or p is None or p is Ellipsis else slice(None) for p in parts)
  rest = tuple(slice(None) if p is None else p for p in parts if not isinstance(p, int))
  return a[basic if Ellipsis in basic else basic + (Ellipsis,)], rest   # (a trailing ...: a 0-d view, not a scalar copy)

def tdiv(f, r, d):
  # torch's f(r, d) of ints where d may be -1 (INT64_MIN // -1 traps on x86): x // -1 is -x (wrapping), x % -1 is 0
  if r.dtype.is_floating_point or r.dtype in (torch.bool, torch.uint8) or isinstance(d, torch.Tensor) and d.dtype in (torch.bool, torch.uint8):
    return f(r, d)   # (no -1 in them: torch's uint8 == -1 would match 255)
  dt = torch.tensor(d) if not isinstance(d, torch.Tensor) else d
  res = f(r, torch.where(dt == -1, 1, dt).to(dt.dtype) if isinstance(d, torch.Tensor) else (1 if d == -1 else d))
  return torch.where(dt == -1, -res if f(torch.tensor(7), -1) == -7 else torch.zeros_like(res), res)

def _check(t: Tensor, r, what: str):
  assert t.dtype == {v: k for k, v in TD.items()}.get(r.dtype, None) or (r.dtype == torch.float64 and t.dtype == dtypes.float32), \
    f"{what}: dtype {t.dtype} where torch has {r.dtype}"
  got, want = t.numpy(), r.numpy()
  assert got.shape == want.shape, f"{what}: shape {got.shape} != {want.shape}"
  tol = 1e-3 if got.dtype == np.float16 else 1e-5
  if got.dtype.kind == "f": np.testing.assert_allclose(got, want.astype(got.dtype), rtol=tol, atol=tol, equal_nan=True, err_msg=what)
  else: np.testing.assert_array_equal(got, want, err_msg=what)

def binary(op: str, t, u, lib):
  if op == "add": return t + u
  if op == "sub": return t - u
  if op == "mul": return t * u
  if op == "floordiv": return t // u if lib is None else tdiv(lambda x, y: x // y, t, u)
  if op == "mod": return t % u if lib is None else tdiv(lambda x, y: x % y, t, u)
  if op == "truediv": return t / u
  if op == "maximum": return t.maximum(u) if lib is None else torch.maximum(t, torch.tensor(u, dtype=t.dtype) if isinstance(u, (int, float)) else u)
  if op == "minimum": return t.minimum(u) if lib is None else torch.minimum(t, torch.tensor(u, dtype=t.dtype) if isinstance(u, (int, float)) else u)
  if op == "lt": return t < u
  if op == "eq": return t == u
  if op == "ne": return t != u
  if op == "and": return t & u
  if op == "or": return t | u
  if op == "xor": return t ^ u
  if op == "where": return (t > u).where(t, u) if lib is None else torch.where(t > u, t, u)
  raise AssertionError(op)

def run(prog):
  bases, steps = prog
  pool: list[tuple[Tensor, object]] = []
  for shape, dt, lazy, seed in bases:
    a = values(np.random.default_rng(seed), shape, dt)
    t = Tensor(a)
    pool.append((t * 1 if lazy and dt != "bool" else t.realize(), torch.tensor(a)))   # (* 1: + 0 would make -0.0 0.0)
  def add(t: Tensor, r, what: str):
    _check(t, r, what)   # (each new value is checked when made, then again at the end: a later write must not change it)
    pool.append((t, r.clone()))
  for i, (kind, k1, k2, k3) in enumerate(steps):
    rng = np.random.default_rng(k3)
    t, r = pool[k1 % len(pool)]
    u, ru = pool[k2 % len(pool)]
    what = f"step {i} {kind} ({t.dtype} {t.shape}, {u.dtype} {u.shape})"
    nd = t.ndim
    if kind == "getitem_any" and nd:   # numpy's indexing (torch has no negative steps)
      tix, nix = any_index(rng, t.shape)
      v, rest = np_view(r.numpy(), nix)
      if any(isinstance(p, np.ndarray) for p in nix): add(t[tix], torch.from_numpy(np.array(v[rest])), f"{what} index {nix}")
      else:   # basic indices: a view, in torch too, that shows later writes into t (kept where torch has it: no negative step)
        w = v[rest if Ellipsis in rest else rest + (Ellipsis,)]
        _check(t[tix], torch.from_numpy(w.copy()), f"{what} index {nix}")
        if all(x >= 0 for x in w.strides): pool.append((t[tix], torch.from_numpy(w)))
    elif kind == "setitem_any" and nd and r.dtype != torch.bool:   # t[ix] = v or t[ix] += c (into t's numpy twin's memory)
      tix, nix = any_index(rng, t.shape)
      a, rest = np_view(r.numpy(), nix)
      sub = a[rest]
      if k3 & 1:
        t[tix] += 2
        a[rest] += np.array(2, a.dtype)
      else:
        v = values(rng, sub.shape[int(rng.integers(0, sub.ndim + 1)):], str(r.dtype).split(".")[1])
        t[tix] = Tensor(v)
        a[rest] = v
      _check(t, r, f"{what} setitem {nix}")
    elif kind == "getitem" and nd:
      ix = index(rng, t.shape, k2)
      if ix is None: continue
      add(t[ix[0]], r[ix[1]], f"{what} index {ix[1]}")
    elif kind == "setitem" and nd:
      if k2 & 128 and t.dtype != dtypes.bool:   # into a view that writes through (torch's too): a slice, a step, a transpose
        v = (k2 >> 8) % 3
        if v == 0: t, r = t[1:], r[1:]
        elif v == 1: t, r = t[..., ::2], r[..., ::2]
        elif nd >= 2: t, r = t.transpose(0, -1), r.transpose(0, -1)
      ix = index(rng, t.shape, k2)
      if ix is None: continue
      if isinstance(ix[1], torch.Tensor) and ix[1].dtype == torch.bool: continue   # (x[mask] = v: below)
      sub = r[ix[1]]
      how = k3 % 4
      if how == 0:   # x[idx] = v, of another tensor (cast to x's dtype) where it broadcasts, else a constant
        try: ok = torch.broadcast_shapes(ru.shape, sub.shape) == sub.shape
        except RuntimeError: ok = False
        if ok and ru.dtype != torch.bool or t.dtype == dtypes.bool:
          v, rv = (u, ru) if ok else (Tensor(True), torch.tensor(True))
          t[ix[0]] = v.cast(t.dtype)
          r[ix[1]] = cast_ref(rv, r.dtype).clone()
        else:
          t[ix[0]] = 3
          r[ix[1]] = 3
      elif how == 1 and t.dtype != dtypes.bool:   # x[idx] += c (a repeated index: each copy is x + c, so the last one wins)
        t[ix[0]] += 2
        r[ix[1]] += 2
      elif how == 2:   # x[idx] = x[idx2] (reads its own target at other rows)
        jx = index(np.random.default_rng(k3 + 1), t.shape, k2)
        if jx is None or isinstance(jx[1], torch.Tensor) and jx[1].dtype == torch.bool: continue
        src, rsrc = t[jx[0]], r[jx[1]].clone()
        try: ok = torch.broadcast_shapes(rsrc.shape, sub.shape) == sub.shape
        except RuntimeError: ok = False
        if not ok: continue
        t[ix[0]] = src
        r[ix[1]] = rsrc
      else:   # x[mask] = c, the mask a comparison of x
        mt, mr = t > 0, r > 0
        t[mt] = 1 if t.dtype == dtypes.bool else 5
        r[mr] = 1 if t.dtype == dtypes.bool else 5
      _check(t, r, f"{what} setitem {how} index {ix[1]}")
    elif kind == "binary":
      op = BINARY[k3 % len(BINARY)]
      try: ok = len(torch.broadcast_shapes(r.shape, ru.shape)) <= 4
      except RuntimeError: ok = False
      if not ok or k3 & 1024:   # a constant of t's dtype (a 0-d tensor of another int dtype promotes otherwise in torch)
        c = k3 % 7 - 3 if r.dtype not in (torch.bool, torch.uint8) else k3 % 5
        u, ru = Tensor(c, dtype=t.dtype), torch.tensor(c).to(r.dtype)
      # a Python number (not with bool: a Python int is int32 here, as public tinygrad's default int, torch's int64)
      if k3 & 2048 and u.ndim == 0 and r.dtype != torch.bool and ru.dtype != torch.bool: u, ru = u.item(), ru.item()
      rdt = torch.promote_types(r.dtype, ru.dtype) if isinstance(ru, torch.Tensor) else torch.result_type(r, ru)
      fl = rdt.is_floating_point
      if op in ("and", "or", "xor") and fl: continue
      if op == "mod" and fl:   # (float32 past a quotient of 2**48: NaN or exact by the device, docs/guide.md "Edge values")
        q = r.to(torch.float64) / (ru.to(torch.float64) if isinstance(ru, torch.Tensor) else ru)
        if bool((q.abs() > 2.0**48).any()): continue
      if op in ("floordiv", "mod", "maximum", "minimum", "where") and rdt == torch.bool: continue   # (torch refuses)
      if op == "sub" and torch.bool in (r.dtype, ru.dtype if isinstance(ru, torch.Tensor) else None): continue
      if op in ("floordiv", "mod") and not fl:   # no int division by 0 (torch raises)
        if isinstance(u, Tensor): u, ru = (u == 0).where(1, u).cast(u.dtype), torch.where(ru == 0, 1, ru).to(ru.dtype)
        elif u == 0: u, ru = 1, 1
      # (torch promotes a 0-d tensor as a number of its kind: both given a leading axis of 1, the promotion is the lattice's)
      if isinstance(ru, torch.Tensor) and 0 in (r.ndim, ru.ndim): want = binary(op, r[None], ru[None], torch)[0]
      else: want = binary(op, r, ru, torch)
      add(binary(op, t, u, None), want, f"{what} {op} {ru}")
    elif kind == "unary":
      op = ["neg", "abs", "shl", "shr", "invert", "sign"][k3 % 6]
      if op in ("neg", "abs", "sign") and r.dtype == torch.bool: continue
      if op in ("shl", "shr", "invert") and r.dtype.is_floating_point: continue
      if op in ("shl", "shr") and r.dtype == torch.bool: continue
      n = k2 % 4
      res = {"neg": lambda x: -x, "abs": lambda x: x.abs(), "shl": lambda x: x << n, "shr": lambda x: x >> n, "invert": lambda x: ~x,
             "sign": lambda x: x.sign() if isinstance(x, Tensor) or not x.is_floating_point() else torch.where(x.isnan(), x, x.sign())}[op]
      # (sign(NaN) is NaN: numpy's and public tinygrad's, torch gives 0)
      add(res(t), res(r), f"{what} {op} {n}")
    elif kind == "reduce" and nd:
      ax, keep = k2 % nd, bool(k2 & 4)
      op = ["sum", "mean", "prod", "cumsum", "max", "argmax", "min", "any"][k3 % 8]
      if op in ("max", "argmax", "min") and t.shape[ax] == 0: continue
      if op == "mean":   # (ints: float32 of the exact sum, where torch refuses)
        if r.dtype == torch.bool: continue
        if r.dtype == torch.int64 and r.shape[ax]:   # (exact: float64 rounds int64's extremes before they cancel)
          n = r.shape[ax]
          want = torch.tensor(np.vectorize(lambda x: x / n, otypes=[np.float64])(r.numpy().astype(object).sum(ax, keepdims=keep)))
        else: want = r.to(torch.float64).mean(ax, keepdim=keep)
        add(t.mean(ax, keepdim=keep), want.to(r.dtype if r.dtype.is_floating_point else torch.float32), f"{what} mean {ax}")
      elif op == "cumsum": add(t.cumsum(ax), r.cumsum(ax), f"{what} cumsum {ax}")
      elif op == "argmax": add(t.argmax(ax, keepdim=keep), r.to(torch.float64 if r.dtype != torch.int64 else r.dtype).argmax(ax, keepdim=keep).to(torch.int32), f"{what} argmax {ax}")
      elif op == "any": add(t.any(ax, keepdim=keep), r.bool().any(ax, keepdim=keep), f"{what} any {ax}")
      elif op in ("max", "min"): add(getattr(t, op)(ax, keepdim=keep), getattr(r, "a" + op)(ax, keepdim=keep), f"{what} {op} {ax}")
      elif op == "prod" and r.dtype == torch.float16:   # (in float32, rounded once; torch's CPU prod rounds each product to
        # float16: [-2, -65504, 0] is NaN there, through inf, and 0 here. docs/guide.md "Numerics")
        add(t.prod(ax, keepdim=keep), r.float().prod(ax, keepdim=keep).half(), f"{what} prod {ax}")
      else: add(getattr(t, op)(ax, keepdim=keep), getattr(r, op)(ax, keepdim=keep), f"{what} {op} {ax}")
    elif kind == "cast":
      dt = list(DTS)[k2 % len(DTS)]
      if DTS[dt][0] == t.dtype: continue   # (the tensor itself, as torch's .to(): a later write shows in it)
      add(t.cast(DTS[dt][0]), cast_ref(r, DTS[dt][1]), f"{what} cast to {dt}")
    elif kind == "scatter" and nd and t.dtype != dtypes.bool:
      # index and src of index's shape along dim, at most self's shape elsewhere (torch's rule); a repeated index: the last wins
      d = k2 % nd
      ishape = tuple(int(rng.integers(0, n + 1)) if j != d else int(rng.integers(0, 4)) for j, n in enumerate(t.shape))
      if t.shape[d] == 0 and 0 not in ishape: continue
      ix = rng.integers(0, max(t.shape[d], 1), ishape)
      it, ir = Tensor(ix.astype(np.int32)), torch.tensor(ix, dtype=torch.int64)
      src = values(rng, ishape, str(r.dtype).split(".")[1])
      st_, sr = Tensor(src), torch.tensor(src)
      how = ["scatter", "scatter_const", "sum", "prod", "mean", "amax", "amin", "gather"][k3 % 8]
      incl = bool(k3 & 8)
      if how == "scatter": add(t.scatter(d, it, st_), r.scatter(d, ir, sr), f"{what} scatter {d} {ir}")
      elif how == "scatter_const": add(t.scatter(d, it, 2), r.scatter(d, ir, 2), f"{what} scatter {d} {ir} 2")
      elif how == "gather":
        gshape = tuple(min(a, b) if j != d else b for j, (a, b) in enumerate(zip(t.shape, ishape)))
        ix = rng.integers(0, max(t.shape[d], 1), gshape) if t.shape[d] or 0 in gshape else None
        if ix is None: continue
        add(t.gather(d, Tensor(ix.astype(np.int32))), r.gather(d, torch.tensor(ix, dtype=torch.int64)), f"{what} gather {d} {ix}")
      else:
        if how == "mean" and r.dtype.is_floating_point is False and (r.dtype == torch.int64 or r.dtype == torch.uint8): continue
        add(t.scatter_reduce(d, it, st_, how, include_self=incl), r.scatter_reduce(d, ir, sr, how, include_self=incl),
            f"{what} scatter_reduce {how} include_self={incl} {d} {ir} {sr}")
    elif kind == "sort" and nd:
      d, desc = k2 % nd, bool(k2 & 8)
      how = ["sort", "argsort", "topk", "cummin", "cummax"][k3 % 5]
      if how == "sort":
        v, ix = t.sort(d, descending=desc)
        rv, rix = r.sort(dim=d, descending=desc, stable=True)
        add(v, rv, f"{what} sort {d} {desc}")
        add(ix, rix.to(torch.int32), f"{what} sort indices {d} {desc}")
      elif how == "argsort": add(t.argsort(d, descending=desc), r.argsort(dim=d, descending=desc, stable=True).to(torch.int32), f"{what} argsort {d}")
      elif how == "topk":
        if r.dtype == torch.bool or r.shape[d] == 0: continue
        kk = 1 + k3 % r.shape[d]
        v, ix = t.topk(kk, d, largest=desc)
        rv, _ = r.topk(kk, d, largest=desc)   # (torch's tie order among equal values is not stable: values only)
        add(v, rv, f"{what} topk {kk} {d} {desc}")
      else:
        if r.shape[d] == 0 or r.dtype == torch.bool: continue
        v, ix = getattr(t, how)(d)
        rv, rix = getattr(torch, how)(r, d)
        add(v, rv, f"{what} {how} {d}")
    elif kind == "select":
      m = values(rng, t.shape, "bool")
      how = k3 % 3
      if how == 0: add(t.masked_select(Tensor(m)), r.masked_select(torch.tensor(m)), f"{what} masked_select {m}")
      elif how == 1: add(t.nonzero(), r.nonzero().to(torch.int32), f"{what} nonzero")
      else: add(t.masked_fill(Tensor(m), fv := t.dtype == dtypes.bool or 1), r.masked_fill(torch.tensor(m), fv), f"{what} masked_fill {m}")
    elif kind == "misc" and nd:
      how = ["roll", "repeat_interleave", "fmod", "trunc_div", "floor_div", "flip_cumsum"][k3 % 6]
      d = k2 % nd
      if how == "roll": add(t.roll(k3 % 7 - 3, d), r.roll(k3 % 7 - 3, d), f"{what} roll {k3 % 7 - 3} {d}")
      elif how == "repeat_interleave": add(t.repeat_interleave(1 + k3 % 3, d), r.repeat_interleave(1 + k3 % 3, d), f"{what} repeat_interleave")
      elif r.dtype == torch.bool: continue
      elif how == "flip_cumsum": add(t.flip(d).cumsum(d).flip(d), r.flip(d).cumsum(d).flip(d), f"{what} flip cumsum {d}")
      else:
        c = (k3 % 7 - 3) or 2
        if r.dtype == torch.uint8: c = abs(c)
        if how == "fmod":   # (float32 past a quotient of 2**48: NaN or exact by the device, docs/guide.md "Edge values")
          if r.dtype.is_floating_point and bool((r.abs() / abs(c) > 2.0**48).any()): continue
          add(t.fmod(c), tdiv(torch.fmod, r, c), f"{what} fmod {c}")
        else:
          mode = how.split("_")[0]
          add(t.div(c, rounding_mode=mode), tdiv(lambda x, y: x.div(y, rounding_mode=mode), r, c), f"{what} {how} {c}")
    elif kind == "realize":
      if k3 % 2: t.realize()
      else:   # a realize of some entries whose step k fails part-way: what ran counts as done, the rest runs later
        from tinygrad.engine import realize as engine
        orig, seen = engine.ExecStep.run, {"n": 0}
        def fail(step, *args, **kwargs):
          seen["n"] += 1
          if seen["n"] == 1 + k2 % 4: raise RuntimeError("the device failed")
          return orig(step, *args, **kwargs)
        engine.ExecStep.run = fail
        try: Tensor.realize(*[x for x, _ in pool[k1 % len(pool):]])
        except RuntimeError as err:
          if "the device failed" not in str(err): raise
        finally: engine.ExecStep.run = orig
  for j, (t, r) in enumerate(pool): _check(t, r, f"entry {j} at the end")

@settings(max_examples=60, deadline=None)
@given(prog=programs())
@example(prog=([((3, 3, 4), "float16", False, 90)], [("reduce", 0, 0, 2)]))   # a float16 prod through 65504 * -2 times 0
@example(prog=([((2,), "float32", True, 1), ((1,), "bool", False, 0)], [("binary", 1, 0, 4323)]))   # True // a lazy -0.0
def test_random_index_int_programs_match_torch(prog): run(prog)

# the same programs through the paths that large sizes take: scatter, scatter_reduce and a tensor-index setitem by sorting
# each line's indices (past _SCATTER_ONEHOT_MAX), sort by the bitonic network (past _RANK_SORT_MAX)
@settings(max_examples=30, deadline=None)
@given(prog=programs())
def test_random_index_int_programs_match_torch_large_size_paths(prog):
  from tinygrad.mixin import indexing, sorting
  old = indexing._SCATTER_ONEHOT_MAX, sorting._RANK_SORT_MAX
  indexing._SCATTER_ONEHOT_MAX, sorting._RANK_SORT_MAX = 0, 1
  try: run(prog)
  finally: indexing._SCATTER_ONEHOT_MAX, sorting._RANK_SORT_MAX = old

# ---- the same kinds of steps as a TinyJit function of a state tensor and index/mask/value inputs that change each call ----

JIT_STEPS = ["gather_rows", "set_rows", "iadd_cols", "mask_set", "scatter", "int_ops", "sum", "set_pair", "scatter_reduce", "cumsum"]

@st.composite
def jit_programs(draw):
  n, m = draw(st.integers(1, 4)), draw(st.integers(1, 4))
  return (n, m, draw(st.sampled_from(INTS + ["float32"])), draw(st.integers(1, 3)),
          draw(st.lists(st.tuples(st.sampled_from(JIT_STEPS), st.integers(0, 2**16)), min_size=1, max_size=5)), draw(st.integers(0, 2**16)))

def jit_step(lib, kind: str, k: int, state, x, ir, ic, mask, outs: list):
  """One step on (tinygrad or torch) tensors: state (n, m) written in place, x (n, m) a value input, ir/ic row/column
  indices (length L, negative ones too, repeated), mask (n, m) bool."""
  tiny = lib is None
  if kind == "gather_rows": outs.append(x[ir] * 1)
  elif kind == "set_rows": state[ir] = x[ir].flip(0)
  elif kind == "iadd_cols": state[:, ic] += 1 + k % 3
  elif kind == "mask_set": state[mask] = k % 5
  elif kind == "set_pair": state[ir, ic] = x[ir, ic] * 2   # (the index tensors broadcast)
  elif kind in ("scatter", "scatter_reduce"):   # along the columns, at ic (scatter takes no negative index)
    idx = (ic % state.shape[1]).reshape(1, -1).expand(state.shape[0], -1)
    src = x[:, :1].expand(-1, idx.shape[1])
    if kind == "scatter":
      new = state.scatter(1, idx, src)
      if tiny: state.assign(new)
      else: state.copy_(new)
    else: outs.append(state.scatter_reduce(1, idx, src if tiny else src.contiguous(), ["sum", "amax", "amin", "prod"][k % 4], include_self=bool(k & 4)))
  elif kind == "int_ops":
    if state.dtype in (dtypes.float32, torch.float32): outs.append(state * x - 1)
    else:   # (no zero divisor: torch raises)
      d = (x == 0).where(3, x).cast(state.dtype) if tiny else torch.where(x == 0, 3, x).to(state.dtype)
      outs.append(state // d if tiny else tdiv(lambda a, b: a // b, state, d))
      outs.append(state % d if tiny else tdiv(lambda a, b: a % b, state, d))
  elif kind == "sum": outs.append(state.sum(k % 2))
  elif kind == "cumsum": outs.append(state.cumsum(k % 2))

def run_jit(prog, n_calls: int = 4):
  from tinygrad import TinyJit
  n, m, dt, L, steps, seed = prog
  tdt, rdt = DTS[dt]
  rng = np.random.default_rng(seed)
  s0 = values(rng, (n, m), dt)
  state, rstate = Tensor(s0).realize(), torch.tensor(s0)
  def f(x, ir, ic, mask):
    outs: list = []
    for kind, k in steps: jit_step(None, kind, k, state, x, ir, ic, mask, outs)
    return [o.contiguous().realize() for o in outs] + [state.contiguous().realize()]
  jf = TinyJit(f)
  for call in range(n_calls):
    x = values(rng, (n, m), dt)
    ir, ic = rng.integers(-n, n, L), rng.integers(-m, m, L)
    mask = rng.integers(0, 2, (n, m)).astype(np.bool_)
    got = jf(Tensor(x), Tensor(ir.astype(np.int32)), Tensor(ic.astype(np.int32)), Tensor(mask))
    routs: list = []
    rx, rir, ric, rmask = torch.tensor(x), torch.tensor(ir), torch.tensor(ic), torch.tensor(mask)
    for kind, k in steps: jit_step(torch, kind, k, rstate, rx, rir, ric, rmask, routs)
    routs.append(rstate.clone())
    assert len(got) == len(routs)
    for j, (g, w) in enumerate(zip(got, routs)): _check(g, w, f"call {call} output {j} of {steps}")
    _check(state, rstate, f"call {call} the state after {steps}")

@settings(max_examples=25, deadline=None)
@given(prog=jit_programs())
def test_random_index_int_jitted_programs_match_torch(prog): run_jit(prog)

# ---- every int dtype (the unsigned ones torch lacks) against numpy: promotion, wrapping, unsigned division, casts ----

NP_INTS = ["uint8", "int8", "uint16", "int16", "uint32", "int32", "uint64", "int64"]
TG = {"uint8": dtypes.uint8, "int8": dtypes.int8, "uint16": dtypes.uint16, "int16": dtypes.int16, "uint32": dtypes.uint32,
      "int32": dtypes.int32, "uint64": dtypes.uint64, "int64": dtypes.int64, "float32": dtypes.float32, "bool": dtypes.bool}
NP_OPS = ["add", "sub", "mul", "floordiv", "mod", "lt", "eq", "and", "or", "xor", "maximum", "minimum", "shl", "shr", "cast",
          "cast", "sum", "cumsum", "max", "argmax", "neg", "abs", "cmp_const", "where", "cast_float", "prod"]

@st.composite
def np_programs(draw):
  bases = [(draw(st.lists(st.sampled_from([1, 2, 3]), min_size=1, max_size=2).map(tuple)), draw(st.sampled_from(NP_INTS)), draw(st.booleans()),
            draw(st.integers(0, 2**16))) for _ in range(draw(st.integers(1, 3)))]
  return bases, draw(st.lists(st.tuples(st.sampled_from(NP_OPS), st.integers(0, 2**16), st.integers(0, 2**16)), min_size=1, max_size=6))

def _np_check(t: Tensor, a: np.ndarray, what: str):
  got = t.numpy()
  assert got.dtype == a.dtype, f"{what}: dtype {got.dtype} where numpy has {a.dtype}"
  assert got.shape == a.shape, f"{what}: shape {got.shape} != {a.shape}"
  if a.dtype.kind == "f": np.testing.assert_allclose(got, a, rtol=1e-6, equal_nan=True, err_msg=what)
  else: np.testing.assert_array_equal(got, a, err_msg=what)

def run_np(prog):
  bases, steps = prog
  pool: list[tuple[Tensor, np.ndarray]] = []
  for shape, dt, lazy, seed in bases:
    a = values(np.random.default_rng(seed), shape, dt)
    pool.append(((Tensor(a) + 0) if lazy else Tensor(a).realize(), a))
  def add(t: Tensor, a: np.ndarray, what: str):
    a = np.asarray(a)
    _np_check(t, a, what)
    pool.append((t, a))
  with np.errstate(all="ignore"):
    for i, (op, k1, k2) in enumerate(steps):
      t, a = pool[k1 % len(pool)]
      u, b = pool[k2 % len(pool)]
      what = f"step {i} {op} ({a.dtype} {a.tolist()}, {b.dtype} {b.tolist()})"
      fl = a.dtype.kind == "f"
      try: np.broadcast_shapes(a.shape, b.shape)
      except ValueError: u, b = t, a
      # (uint64 with a signed int is float32 here, float64 in numpy; bool and floats: the torch programs' own)
      mixed64 = {a.dtype.kind, b.dtype.kind} == {"u", "i"} and np.uint64 in (a.dtype.type, b.dtype.type)
      if op in ("add", "sub", "mul", "floordiv", "mod", "lt", "eq", "and", "or", "xor", "maximum", "minimum", "where"):
        if mixed64 or a.dtype.kind not in "iu" or b.dtype.kind not in "iu": continue
        if op in ("floordiv", "mod"):   # (a zero divisor: 0 here, numpy too but with a warning)
          ref = getattr(np, "floor_divide" if op == "floordiv" else "mod")(a, b)
          ref = np.where(b == 0, np.zeros_like(ref), ref)
          add(t // u if op == "floordiv" else t % u, ref, what)
        elif op == "where": add((t < u).where(t, u), np.where(a < b, a, b).astype(np.result_type(a, b)), what)
        else:
          f = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "lt": np.less, "eq": np.equal, "and": np.bitwise_and,
               "or": np.bitwise_or, "xor": np.bitwise_xor, "maximum": np.maximum, "minimum": np.minimum}[op]
          add({"add": lambda: t + u, "sub": lambda: t - u, "mul": lambda: t * u, "lt": lambda: t < u, "eq": lambda: t == u,
               "and": lambda: t & u, "or": lambda: t | u, "xor": lambda: t ^ u, "maximum": lambda: t.maximum(u),
               "minimum": lambda: t.minimum(u)}[op](), f(a, b), what)
      elif op in ("shl", "shr") and a.dtype.kind in "iu":
        n = k2 % (a.dtype.itemsize * 8)
        add(t << n if op == "shl" else t >> n, np.left_shift(a, a.dtype.type(n)) if op == "shl" else np.right_shift(a, a.dtype.type(n)), f"{what} {n}")
      elif op == "cast" and a.dtype.kind in "iu":   # int to int wraps
        dt = NP_INTS[k2 % len(NP_INTS)]
        if dt != str(a.dtype): add(t.cast(TG[dt]), a.astype(dt), f"{what} to {dt}")
      elif op == "cast_float" and a.dtype.kind in "iu":   # int to float32: rounded once, to nearest even
        add(t.cast(dtypes.float32), a.astype(np.float32), what)
      elif op in ("sum", "cumsum", "prod") and a.dtype.kind in "iu" and a.ndim:   # int64 (uint64 for uint64), wrapping
        acc = np.uint64 if a.dtype == np.uint64 else np.int64
        ax = k2 % a.ndim
        add(getattr(t, op)(ax), getattr(np, op)(a.astype(acc), ax).astype(acc), f"{what} axis {ax}")
      elif op in ("max", "argmax") and a.dtype.kind in "iu" and a.ndim:
        ax = k2 % a.ndim
        add(getattr(t, op)(ax), np.max(a, ax) if op == "max" else np.argmax(a, ax).astype(np.int32), f"{what} axis {ax}")
      elif op == "neg" and a.dtype.kind in "iu": add(-t, -a, what)
      elif op == "abs" and a.dtype.kind in "iu": add(t.abs(), np.abs(a), what)
      elif op == "cmp_const" and a.dtype.kind in "iu":   # a Python int outside the dtype: exact (docs/guide.md "Numerics")
        c = [-1, 2**31, 2**32, 2**63, -2**63 - 1, 2**64 - 1, 255, 256, -129][k2 % 9]
        got = [t < c, t == c, t > c][k2 % 3]
        ref = [lambda x: x < c, lambda x: x == c, lambda x: x > c][k2 % 3]
        add(got, np.array([ref(int(x)) for x in a.flatten().tolist()], dtype=np.bool_).reshape(a.shape), f"{what} vs {c}")
  for j, (t, a) in enumerate(pool): _np_check(t, a, f"entry {j} at the end")

@settings(max_examples=60, deadline=None)
@given(prog=np_programs())
def test_random_int_programs_match_numpy(prog): run_np(prog)
