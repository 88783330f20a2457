"""Whole random programs of differentiable ops on float32 tensors, their leaves' gradients against torch's autograd (CPU):
a few leaves of random shapes (1, odd sizes and sometimes 0; values normal, on a coarse grid that makes ties and hits the
kinks exactly, or >= 0 with zeros) go through steps drawn from the ops whose gradients are subtle: max/min/amax and
maximum/minimum over ties, relu/abs/clamp at their kinks, sort/topk with equal values, argmax gathers, gather, scatter
and scatter_reduce, tensor-index getitem and setitem with repeated indices, cumsum/cumprod/cummax, pads in every mode,
views, conv2d/conv_transpose2d, pools with overlapping windows and ceil_mode, interpolate, softmax/log_softmax/logsumexp
with -inf entries, layernorm/batchnorm, broadcast matmul, sqrt/log/pow near 0, detach, in-place updates of copies (one
read before the update too);
then backward of a random weighting of some of the results. test_program_fuzz.py has the small elementwise version.
Where torch has no single answer (a repeated setitem/scatter index: torch picks any writer and passes the gradient to
every one of them) or ours differs on purpose (docs/guide.md: ties of cummax and max_pool2d split, scatter_reduce amax
without self), the reference is built in torch from the semantics we document. GRAD_FUZZ_EXAMPLES=n runs n examples."""
import os, numpy as np, pytest
from hypothesis import given, settings, strategies as st, HealthCheck
from tinygrad import Tensor
torch = pytest.importorskip("torch", reason="torch (CPU) is the gradient reference: pip install torch")
F = torch.nn.functional

OPS = ["view", "view", "kink", "near0", "binary", "binary", "reduce", "softmax", "cum", "sort", "argmax_gather", "gather", "scatter",
       "scatter_reduce", "index", "setitem", "pad", "conv", "pool", "interpolate", "norm", "matmul", "detach", "inplace",
       "update_after_read"]

@st.composite
def programs(draw):
  dims = st.sampled_from([1, 1, 2, 3, 3, 5] + [0] * draw(st.sampled_from([0, 0, 0, 1])))
  leaves = draw(st.lists(st.tuples(st.lists(dims, min_size=1, max_size=4).map(tuple), st.sampled_from(["normal", "grid", "grid", "pos"])),
                         min_size=1, max_size=3))
  steps = draw(st.lists(st.tuples(st.sampled_from(OPS), st.integers(0, 2**16), st.integers(0, 2**16)), min_size=1, max_size=6))
  return leaves, steps, draw(st.integers(0, 2**16))

def _values(rng, shape, kind):
  if kind == "normal": return rng.standard_normal(shape).astype(np.float32)
  if kind == "grid": return (rng.integers(-2, 3, shape) * 0.5).astype(np.float32)   # ties, and 0, +-0.5, +-1 hit the kinks
  return (rng.integers(0, 3, shape) * rng.uniform(0.5, 1.5, shape)).astype(np.float32)   # >= 0 with zeros: sqrt, log, pow

class Skip(Exception): pass

class Prog:
  """The pool of (tinygrad, torch) value pairs a program builds, and its leaves."""
  def __init__(self, seed: int, device: str | None):
    self.rng, self.device, self.pool, self.leaves = np.random.default_rng(seed), device, [], []
  def leaf(self, a: np.ndarray) -> tuple:
    p = (Tensor(a, device=self.device, requires_grad=True), torch.tensor(a, requires_grad=True))
    self.leaves.append(p)
    return p
  def const(self, a: np.ndarray) -> tuple: return Tensor(a, device=self.device), torch.tensor(a)
  def idx(self, a: np.ndarray) -> tuple: return Tensor(a.astype(np.int32), device=self.device), torch.tensor(a.astype(np.int64))

def _torch_slice(r, idx):
  # torch has no negative steps: the same elements by index_select
  for d, s in enumerate(idx): r = r.index_select(d, torch.tensor(list(range(*s.indices(r.shape[d]))), dtype=torch.long))
  return r

def _chunks(n: int, k: int) -> tuple: return (k, n // k) if k and n % k == 0 else (1, n)

def _as4d(t, r, k: int):
  """t as (N, C, H, W): itself when 4-d, else its elements laid out as (1, C, H, W) by a factorisation drawn from k."""
  if t.ndim == 4: return t, r
  n = t.numel()
  c, rest = _chunks(n, [1, 2, 3][k % 3])
  h, w = _chunks(rest, [1, 2, 3, 5][(k >> 2) % 4])
  return t.reshape(1, c, h, w), r.reshape(1, c, h, w)

def _has_ties(a: np.ndarray, axis: int) -> bool:
  s = np.sort(a, axis=axis)
  return bool((np.diff(s, axis=axis) == 0).any())

def exact(t: Tensor, r) -> None:
  """Skip unless ours holds torch's value bit for bit: a tie or a kink between computed values (std's, sqrt's) is one
  rounding away from none, and then the two gradients differ rightly. (Reading t realizes it; the graph stays.)"""
  if not np.array_equal(t.numpy(), r.detach().numpy(), equal_nan=True): raise Skip

def _split_max(x, dim: int, valid):
  """x's max along dim over the `valid` elements, its gradient split among the tied maxima and exactly 0 elsewhere (amax's
  own backward multiplies a NaN gradient by 0 at the others: a NaN ours rightly does not have)."""
  xd = x.detach()
  m = xd.masked_fill(~valid, -float("inf")).amax(dim, keepdim=True)
  return torch.where(valid & (xd == m), x, -float("inf")).amax(dim)

def _copy(t: Tensor, k: int) -> Tensor:
  # a copy to update in place: lazy, or realized (its buffer then holds the old value, its kept graph what it came from)
  return (t * 1).contiguous().realize() if (k >> 8) % 2 else t * 1

def step(p: Prog, op: str, k1: int, k2: int):
  t, r = p.pool[k1 % len(p.pool)]
  nd, shape, rng = t.ndim, t.shape, p.rng
  ax = k2 % nd if nd else 0
  a = r.detach().numpy()
  finite = bool(np.isfinite(a).all())
  if op == "view":
    if not nd: return t.reshape(1, 1), r.reshape(1, 1)
    v = ["slice", "flip", "permute", "reshape", "expand_reduce", "shrink"][k2 % 6]
    if v == "slice":
      idx = tuple(slice(int(rng.integers(-3, 3)), int(rng.integers(-3, 4)), int(rng.choice([-2, -1, 1, 2, 3]))) for _ in range(nd))
      return t[idx], _torch_slice(r, idx)
    if v == "flip": return t.flip(ax), r.flip(ax)
    if v == "permute":
      perm = tuple(rng.permutation(nd).tolist())
      return t.permute(perm), r.permute(perm)
    if v == "reshape":
      s = (t.numel(),) if k1 % 2 else _chunks(t.numel(), 3)
      return t.reshape(s), r.reshape(s)
    if v == "expand_reduce":   # an expand the gradient must sum back, then a reduce over the new axis or another
      e = int(rng.integers(1, 4))
      te, re_ = t.unsqueeze(ax).expand(*shape[:ax], e, *shape[ax:]), r.unsqueeze(ax).expand(*shape[:ax], e, *shape[ax:])
      rax = ax if k1 % 3 else (ax + 1) % (nd + 1)
      return te.sum(rax), re_.sum(rax)
    sh = tuple((int(rng.integers(0, max(s, 1))), s) if s else (0, 0) for s in shape)
    sh = tuple((b, max(b, e - int(rng.integers(0, 2)))) for b, e in sh)
    return t.shrink(sh), r[tuple(slice(b, e) for b, e in sh)]
  if op == "kink":
    exact(t, r)
    v = ["relu", "abs", "clamp", "clamp_t", "leaky", "hardtanh", "relu6", "sign_mul"][k2 % 8]
    if v == "relu": return t.relu(), r.relu()
    if v == "abs": return t.abs(), r.abs()
    if v == "clamp":   # bounds on the grid: values sit exactly on them
      lo, hi = [(-0.5, 0.5), (0.0, None), (None, 0.5), (0.5, 0.5), (1.0, -1.0)][k1 % 5]
      return t.clamp(lo, hi), r.clamp(lo, hi)
    if v == "clamp_t":   # tensor bounds that broadcast
      lo = (rng.integers(-2, 2, shape[-1:] if nd else ()) * 0.5).astype(np.float32)
      (lt, lr), (ht, hr) = p.const(lo), p.const(lo + 0.5 * (k1 % 3))
      return t.clamp(lt, ht), r.clamp(lr, hr)
    if v == "leaky": return t.leaky_relu(0.1), F.leaky_relu(r, 0.1)
    if v == "hardtanh": return t.hardtanh(), F.hardtanh(r)
    if v == "relu6": return t.relu6(), F.relu6(r)
    return t.sign() * t, r.sign() * r
  if op == "near0":
    exact(t, r)
    v = ["sqrt", "log", "pow_c", "pow_t", "rpow", "rsqrt", "div"][k2 % 7]
    tp, rp = (t.relu(), r.relu()) if k1 % 2 else (t.abs(), r.abs())
    if v == "sqrt": return tp.sqrt(), rp.sqrt()
    if v == "log": return tp.log(), rp.log()
    if v == "pow_c":
      e = [2.0, 3.0, 0.5, 0.0, -1.0, 1.5, 1.0, -0.5, 2.5][k1 % 9]
      # (torch's x ** -0.5 is rsqrt: NaN at -inf and -inf at -0.0; its pow by a tensor -0.5 is C's pow, as ours: docs/guide.md)
      return (tp if k1 % 4 < 2 else t) ** e, (rp if k1 % 4 < 2 else r) ** (torch.tensor(e) if e == -0.5 else e)
    if v == "pow_t":   # a tensor exponent: d/dy at a zero base
      e = (rng.integers(-1, 3, shape) * 0.5).astype(np.float32)
      et, er = p.leaf(e)
      return tp ** et, rp ** er
    if v == "rpow": return 2.0 ** t, 2.0 ** r
    if v == "rsqrt": return tp.rsqrt(), rp.rsqrt()
    return 1.0 / tp, 1.0 / rp
  if op == "binary":
    t2, r2 = p.pool[k2 % len(p.pool)]
    try: np.broadcast_shapes(shape, t2.shape)
    except ValueError: t2, r2 = t2.sum(), r2.sum()
    v = ["add", "mul", "sub", "div", "maximum", "minimum", "where", "where_c"][(k1 >> 3) % 8]
    if v in ("maximum", "minimum", "where", "where_c"): exact(t, r), exact(t2, r2)
    if v == "add": return t + t2, r + r2
    if v == "mul": return t * t2, r * r2
    if v == "sub": return t - t2, r - r2
    if v == "div": return t / (t2 * t2 + 1), r / (r2 * r2 + 1)
    if v == "maximum": return t.maximum(t2), torch.maximum(r, r2)
    if v == "minimum": return t.minimum(t2), torch.minimum(r, r2)
    if v == "where": return (t > t2).where(t, t2 * 2), torch.where(r > r2, r, r2 * 2)
    return (t2 >= 0).where(t, 1.5), torch.where(r2 >= 0, r, torch.tensor(1.5))   # a broadcast condition and a constant
  if op == "reduce":
    v = ["sum", "mean", "max", "min", "prod", "std", "var", "logsumexp", "max_all", "sum_multi"][(k1 >> 3) % 10]
    if v in ("max", "min", "max_all"): exact(t, r)
    if v == "max_all":
      if t.numel() == 0: raise Skip
      return t.max(), r.amax()
    if not nd: return t.sum(), r.sum()
    keep = bool(k1 & 4)
    if v == "sum_multi":
      axes = tuple(sorted({ax, (k1 >> 5) % nd}))
      return t.sum(axes, keepdim=keep), r.sum(axes, keepdim=keep)
    if v in ("max", "min") and shape[ax] == 0: raise Skip
    if v == "max": return t.max(ax, keepdim=keep), r.amax(ax, keepdim=keep)   # torch's amax splits ties evenly, as ours
    if v == "min": return t.min(ax, keepdim=keep), r.amin(ax, keepdim=keep)
    if v == "prod": return t.prod(ax, keepdim=keep), r.prod(ax, keepdim=keep)
    if v in ("std", "var"):
      if shape[ax] < 2: raise Skip   # (correction >= N: a documented difference)
      return getattr(t, v)(ax, keepdim=keep), getattr(r, v)(ax, keepdim=keep)
    if v == "logsumexp": return t.logsumexp(ax, keepdim=keep), r.logsumexp(ax, keepdim=keep)
    return getattr(t, v)(ax, keepdim=keep), getattr(r, v)(ax, keepdim=keep)
  if op == "softmax":
    if not nd: raise Skip
    if k1 % 3:   # -inf entries (a whole row of them sometimes: NaN in both)
      m = rng.random(shape) < [0.3, 0.6][k1 % 2]
      mt, mr = Tensor(m, device=p.device), torch.tensor(m)
      t, r = t.masked_fill(mt, -float("inf")), r.masked_fill(mr, -float("inf"))
    v = ["softmax", "log_softmax", "logsumexp"][(k1 >> 3) % 3]
    if v == "logsumexp": return t.logsumexp(ax), r.logsumexp(ax)
    return getattr(t, v)(ax), getattr(r, v)(ax)
  if op == "cum":
    if not nd: raise Skip
    v = ["cumsum", "cumprod", "cummax", "cummin"][(k1 >> 3) % 4]
    if v in ("cumsum", "cumprod"): return getattr(t, v)(ax), getattr(r, v)(ax)
    exact(t, r)
    if not finite: raise Skip
    if _has_ties(a, ax):   # ours splits a tie among the tied positions (docs/guide.md): the running amax of each prefix in torch
      n = shape[ax]
      tri = torch.tensor(np.tril(np.ones((n, n), bool)))   # [i, j]: j <= i
      rm = (r if v == "cummax" else -r).movedim(ax, -1).unsqueeze(-2).expand(*[s for i, s in enumerate(shape) if i != ax], n, n)
      ref = _split_max(rm, -1, tri.expand(rm.shape)).movedim(-1, ax)
      return getattr(t, v)(ax)[0], ref if v == "cummax" else -ref
    return getattr(t, v)(ax)[0], getattr(torch, v)(r, ax)[0]
  if op == "sort":
    if not nd or not finite: raise Skip
    exact(t, r)
    desc = bool(k1 & 8)
    if k1 % 2:   # ours is stable: equal values keep their order, as torch's stable sort
      vt, it = t.sort(ax, descending=desc)
      vr, ir = torch.sort(r, dim=ax, descending=desc, stable=True)
      assert (it.numpy() == ir.numpy()).all(), "sort's indices"
      return vt, vr
    k = int(rng.integers(0, shape[ax] + 1))
    vt, it = t.topk(k, ax, largest=desc)
    ir = torch.sort(r, dim=ax, descending=desc, stable=True)[1].narrow(ax, 0, k)   # ties in their order (ours); torch's topk: any
    assert (it.numpy() == ir.numpy()).all(), "topk's indices"
    return vt, r.gather(ax, ir)
  if op == "argmax_gather":
    if not nd or shape[ax] == 0 or not finite: raise Skip
    exact(t, r)
    fn = "argmax" if k1 % 2 else "argmin"
    it, ir = getattr(t, fn)(ax, keepdim=True), getattr(r, fn)(ax, keepdim=True)
    assert (it.numpy() == ir.numpy()).all(), f"{fn}'s indices"
    return t.gather(ax, it), r.gather(ax, ir)
  if op == "gather":
    if not nd or shape[ax] == 0: raise Skip
    ishape = tuple(int(rng.integers(0, s + 1)) if i != ax else int(rng.integers(0, 5)) for i, s in enumerate(shape))
    it, ir = p.idx(rng.integers(0, shape[ax], ishape))
    return t.gather(ax, it), r.gather(ax, ir)
  if op in ("scatter", "scatter_reduce"):
    if not nd or shape[ax] == 0: raise Skip
    ishape = tuple(int(rng.integers(0, s + 1)) if i != ax else int(rng.integers(0, 2 * s + 1)) for i, s in enumerate(shape))
    ia = rng.integers(0, shape[ax], ishape)
    it, ir = p.idx(ia)
    src = _values(rng, ishape, "grid" if k1 % 2 else "normal")
    st_, sr = p.leaf(src)
    if op == "scatter":
      # a repeated index: ours writes the last src (torch: any, its gradient to all): torch's take of that last one
      n, m = shape[ax], ishape[ax]
      hit = (np.moveaxis(ia, ax, -1)[..., None, :] == np.arange(n)[:, None])   # [..., k, j]: src j goes to k
      last = np.where(hit, np.arange(1, m + 1), 0).max(-1) if m else np.zeros(hit.shape[:-1], int)
      lastm = np.moveaxis(last, -1, ax)   # (ishape outside ax, n along ax)
      full = np.zeros(shape, bool)
      full[tuple(slice(0, s) if i != ax else slice(None) for i, s in enumerate(lastm.shape))] = lastm > 0
      gidx = np.zeros(shape, np.int64)
      gidx[tuple(slice(0, s) if i != ax else slice(None) for i, s in enumerate(lastm.shape))] = np.maximum(lastm - 1, 0)
      srcp = F.pad(sr, [q for i in reversed(range(nd)) for q in (0, (shape[i] - ishape[i]) if i != ax else 0)]) if m else sr.new_zeros(shape)
      picked = srcp.gather(ax, torch.tensor(gidx)) if m else srcp
      return t.scatter(ax, it, st_), torch.where(torch.tensor(full), picked, r)
    red = ["sum", "mean", "amax", "amin", "prod"][(k1 >> 3) % 5]
    incl = bool(k1 & 4)
    if red in ("amax", "amin"): exact(t, r)
    if red == "prod" and not finite: raise Skip   # torch's self gradient is g * result / self: NaN at an inf self, even one left as it is
    out_r = r.scatter_reduce(ax, ir, sr, red, include_self=incl)
    if red in ("amax", "amin") and not incl:   # torch counts self where it equals the result (docs/guide.md): skip those
      hit = np.zeros(shape, bool)
      np.put_along_axis(hit[tuple(slice(0, s) if i != ax else slice(None) for i, s in enumerate(ishape))], ia, True, ax) if ia.size else None
      if (hit & (a == out_r.detach().numpy())).any(): raise Skip
    return t.scatter_reduce(ax, it, st_, red, include_self=incl), out_r
  if op == "index":   # tensor indices with repeats, beside a slice
    if not nd or shape[ax] == 0: raise Skip
    ia = rng.integers(-shape[ax], shape[ax], int(rng.integers(1, 6)))
    it, ir = p.idx(ia)
    if ax + 1 < nd and k1 % 2:
      return t[(slice(None),) * ax + (it, slice(None, None, 2))], r[(slice(None),) * ax + (ir, slice(None, None, 2))]
    return t[(slice(None),) * ax + (it,)], r[(slice(None),) * ax + (ir,)]
  if op == "setitem":   # z = t * 1; z[..., idx] = v with repeated indices: the last v wins (ours, numpy's)
    if not nd or shape[ax] == 0: raise Skip
    ia = rng.integers(0, shape[ax], int(rng.integers(1, 5)))
    vshape = shape[:ax] + (len(ia),) + shape[ax + 1:]
    vt, vr = p.leaf(_values(rng, vshape[-1:] if k1 % 2 else vshape, "grid"))
    z = t * 1
    z[(slice(None),) * ax + (p.idx(ia)[0],)] = vt
    # torch's index_put picks any writer and gives every one the gradient: the reference writes only the last one
    keep = np.array([j for j in range(len(ia)) if ia[j] not in ia[j + 1:]], np.int64)
    zr = r * 1
    vrb = vr.expand(vshape)
    zr[(slice(None),) * ax + (torch.tensor(ia[keep]),)] = vrb.index_select(ax, torch.tensor(keep))
    return z, zr
  if op == "pad":
    k = [1, 2, 3][k1 % 3]
    mode = ["constant", "reflect", "replicate", "circular"][(k1 >> 2) % 4]
    if nd < k: raise Skip
    pads = [(int(rng.integers(0, 3)), int(rng.integers(0, 3))) for _ in range(k)]
    if mode == "reflect": pads = [(min(b, s - 1), min(e, s - 1)) for (b, e), s in zip(pads, shape[-k:])]
    if mode == "circular": pads = [(min(b, s), min(e, s)) for (b, e), s in zip(pads, shape[-k:])]
    if mode != "constant" and any(s == 0 for s in shape): raise Skip
    flat = [q for pr in reversed(pads) for q in pr]
    lead = nd - k
    rr = r.reshape((1,) * (1 - lead) + shape) if lead < 1 else r.reshape((int(np.prod(shape[:lead])),) + shape[lead:])
    if mode == "constant": out_r = F.pad(rr, flat, value=0.5)
    else: out_r = F.pad(rr.unsqueeze(0) if lead < 2 else rr, flat, mode=mode)
    out_r = out_r.reshape(shape[:lead] + tuple(s + b + e for s, (b, e) in zip(shape[lead:], pads)))
    return t.pad(((0, 0),) * lead + tuple(pads), mode=mode, **({"value": 0.5} if mode == "constant" else {})), out_r
  if op == "conv":
    if not finite: raise Skip   # torch's backward convolves with inf among zeros of its own (NaN where the gradient is finite)
    if t.numel() == 0: raise Skip   # (torch gives an empty input's output its input's 0 channels, not the weight's)
    x, xr = _as4d(t, r, k1)
    n, c, h, w = x.shape
    tr = bool(k1 & 16)
    g = [g for g in (1, 2, 3) if c % g == 0][(k1 >> 5) % len([g for g in (1, 2, 3) if c % g == 0])]
    co = g * int(rng.integers(1, 3))
    kh, kw = int(rng.integers(1, 4)), int(rng.integers(1, 4))
    s, d = (int(rng.integers(1, 3)), int(rng.integers(1, 3))), (int(rng.integers(1, 3)), int(rng.integers(1, 3)))
    pad = (int(rng.integers(0, 2)), int(rng.integers(0, 3)))
    wt, wr = p.leaf(_values(rng, (c, co // g, kh, kw) if tr else (co, c // g, kh, kw), "normal"))
    bt, br = p.leaf(_values(rng, (co,), "normal")) if k1 & 64 else (None, None)
    try:
      if tr:
        op_ = (int(rng.integers(0, max(s[0], d[0]))), int(rng.integers(0, max(s[1], d[1]))))
        out_r = F.conv_transpose2d(xr, wr, br, stride=s, padding=pad, output_padding=op_, groups=g, dilation=d)
      else: out_r = F.conv2d(xr, wr, br, stride=s, padding=pad, dilation=d, groups=g)
    except RuntimeError: raise Skip   # a kernel larger than the padded input, an empty batch (torch refuses, as ours)
    if 0 in out_r.shape[2:]: raise Skip   # (ours refuses an empty output as torch's conv2d does; torch's conv_transpose2d gives it)
    if tr: return x.conv_transpose2d(wt, bt, groups=g, stride=s, dilation=d, padding=pad, output_padding=op_), out_r
    return x.conv2d(wt, bt, groups=g, stride=s, dilation=d, padding=pad), out_r
  if op == "pool":
    x, xr = _as4d(t, r, k1)
    if x.numel() == 0: raise Skip
    ks = (int(rng.integers(1, 4)), int(rng.integers(1, 4)))
    s = (max(1, ks[0] - int(rng.integers(0, 2))), max(1, ks[1] - int(rng.integers(0, 2))))   # overlapping windows
    pad, ceil = (int(rng.integers(0, ks[0] // 2 + 1)), int(rng.integers(0, ks[1] // 2 + 1))), bool(k1 & 8)
    if k1 & 16:
      cip = bool(k1 & 32)
      try: out_r = F.avg_pool2d(xr, ks, s, pad, ceil_mode=ceil, count_include_pad=cip)
      except RuntimeError: raise Skip
      return x.avg_pool2d(ks, s, padding=pad, ceil_mode=ceil, count_include_pad=cip), out_r
    d = (int(rng.integers(1, 3)), 1)
    exact(t, r)
    try: out_r = F.max_pool2d(xr, ks, s, pad, dilation=d, ceil_mode=ceil)
    except RuntimeError: raise Skip
    out_t = x.max_pool2d(ks, s, dilation=d, padding=pad, ceil_mode=ceil)
    # a window of padding only (dilation): torch's index points outside its plane and its backward writes there (heap corruption)
    if torch.isinf(F.max_pool2d(torch.zeros(xr.shape), ks, s, pad, dilation=d, ceil_mode=ceil)).any(): raise Skip
    if finite and _has_ties(a.ravel(), 0):
      # ours splits a tie among the window's tied elements (docs/guide.md; torch: all to the first): each window's amax
      oh, ow = out_r.shape[-2:]
      need = [(o - 1) * st_ + dd * (kk - 1) + 1 - (sz + 2 * pp) for o, st_, dd, kk, sz, pp in zip((oh, ow), s, d, ks, x.shape[-2:], pad)]
      xp = F.pad(xr, [pad[1], pad[1] + max(need[1], 0), pad[0], pad[0] + max(need[0], 0)], value=-float("inf"))
      cols = F.unfold(xp.reshape(-1, 1, *xp.shape[-2:]), ks, dilation=d, stride=s)   # (N*C, kh*kw, L)
      assert cols.shape[-1] == oh * ow, (cols.shape, oh, ow)
      out_r = _split_max(cols, 1, ~torch.isinf(cols)).reshape(out_r.shape)
    return out_t, out_r
  if op == "interpolate":
    if nd < 3 or t.numel() == 0 or not finite: raise Skip   # (torch's identity resize is 0 * inf = NaN beside an inf; ours copies)
    k = min(nd - 2, 1 + k1 % 2)
    size = tuple(int(rng.integers(1, 7)) for _ in range(k))
    mode = ["nearest", "nearest-exact", "linear"][(k1 >> 2) % 3]
    ac = mode == "linear" and bool(k1 & 32)
    tmode = mode if mode != "linear" else ["linear", "bilinear", "trilinear"][k - 1]
    lead = nd - 2 - k
    xr = r.reshape((int(np.prod(shape[:lead + 1])),) + shape[lead + 1:]) if lead else r
    out_r = F.interpolate(xr, size=size, mode=tmode, **({"align_corners": ac} if mode == "linear" else {}))
    return t.interpolate(size, mode=mode, align_corners=ac), out_r.reshape(shape[:nd - k] + size)
  if op == "norm":
    if not nd: raise Skip
    if k1 % 2:   # layernorm over the last axes (torch's normalized_shape)
      k = 1 + (k1 >> 3) % nd
      return t.layernorm(tuple(range(nd - k, nd)), eps=1e-5), F.layer_norm(r, shape[nd - k:], eps=1e-5)
    if nd < 2 or shape[1] == 0: raise Skip
    axes = tuple(i for i in range(nd) if i != 1)
    if np.prod([shape[i] for i in axes]) < 2: raise Skip   # (torch refuses one value per channel)
    wt, wr = p.leaf(_values(rng, (shape[1],), "normal"))
    bt, br = p.leaf(_values(rng, (shape[1],), "normal"))
    out_t = t.batchnorm(wt, bt, t.mean(axes), t.var(axes, correction=0).add(1e-5).rsqrt())
    return out_t, F.batch_norm(r, None, None, wr, br, training=True, eps=1e-5)
  if op == "matmul":
    if not nd: raise Skip
    bshape = ((int(rng.integers(1, 3)),) if k1 % 3 == 0 else ()) + (1,) * (k1 % 2) + (shape[-1], int(rng.integers(0, 4)))
    if k1 % 3 == 0 and nd >= 2: bshape = shape[:-2] + bshape[-2:] if (k1 >> 2) % 2 else bshape
    try: np.broadcast_shapes(shape[:-2], bshape[:-2])
    except ValueError: raise Skip
    t2, r2 = p.leaf(_values(rng, bshape, "normal")) if k1 & 8 else (t.transpose(-1, -2), r.transpose(-1, -2)) if nd >= 2 else p.leaf(_values(rng, bshape, "normal"))
    if k1 & 8 or nd < 2: return t @ t2, r @ r2
    return t2 @ t, r2 @ r   # (n, m) and its transpose: the leaf is used twice
  if op == "detach":
    t2, r2 = p.pool[k2 % len(p.pool)]
    if t2.shape != shape: t2, r2 = t2.sum(), r2.sum()
    return t * t2.detach(), r * r2.detach()
  if op == "inplace":   # in-place updates of a fresh copy: a slice +=, *= of another value, a masked write
    if not nd: raise Skip
    t2, r2 = p.pool[k2 % len(p.pool)]
    z, zr = _copy(t, k2), r * 1
    sl = (slice(None),) * ax + (slice(int(rng.integers(0, 2)), None, int(rng.integers(1, 3))),)
    sub = np.empty(shape)[sl].shape
    # (nothing written, or all of it overwritten: ours passes no gradient to what is lost, torch a 0 that meets log(0)'s inf
    # as NaN)
    if 0 in sub or (k1 % 3 == 2 and sub == shape): raise Skip
    try: fits = np.broadcast_shapes(t2.shape, sub) == sub
    except ValueError: fits = False
    if not fits: t2, r2 = t2.sum(), r2.sum()
    v = k1 % 3
    if v == 0:
      z[sl] += t2 * 2
      zr[sl] += r2 * 2
    elif v == 1:
      z[sl] *= t2
      zr[sl] *= r2
    else:
      z += t2.sum()
      zr += r2.sum()
      z[sl] = t2 - 1
      zr[sl] = r2 - 1
    return z, zr
  if op == "update_after_read":   # a copy read (y = z * 2 + 1: torch saves none of z), then updated in place: y keeps the old z
    if not nd: raise Skip
    t2, r2 = p.pool[k2 % len(p.pool)]
    try: fits = np.broadcast_shapes(t2.shape, shape) == shape
    except ValueError: fits = False
    if not fits: t2, r2 = t2.sum(), r2.sum()
    # (a realized copy too: backward raised a false "an in-place update made since" for y = z * 2 + 1 then, whose gradient
    # reads no value of z)
    z, zr = _copy(t, k2), r * 1
    y, yr = z * 2 + 1, zr * 2 + 1
    if k1 % 2:
      z += t2 * t2
      zr += r2 * r2
    else:
      if shape[ax] == 1: raise Skip   # (all of z overwritten: see inplace)
      z[(slice(None),) * ax + (slice(0, 1),)] = t2.sum()
      zr[(slice(None),) * ax + (slice(0, 1),)] = r2.sum()
    p.pool.append((y, yr))
    return z, zr
  raise AssertionError(op)

def check(leaves, steps, seed, device=None) -> None:
  p = Prog(seed, device)
  for shape, kind in leaves:
    p.pool.append(p.leaf(_values(p.rng, shape, kind)))
  for op, k1, k2 in steps:
    try: out = step(p, op, k1, k2)
    except Skip: continue
    assert out[0].shape == tuple(out[1].shape), f"{op}: shape {out[0].shape} where torch has {tuple(out[1].shape)}"
    ref = out[1].detach().numpy()
    if np.isnan(ref).any():   # a NaN value: checked here, not built on (a NaN gradient into a where-shaped rule is not specified)
      np.testing.assert_allclose(out[0].numpy(), ref, rtol=1e-4, atol=1e-4 * (1 + np.abs(ref[np.isfinite(ref)]).max(initial=0)),
                                 equal_nan=True, err_msg=f"{op}'s value")
      continue
    p.pool.append(out)
  # the loss: a random weighting of the last value and of some others (a leaf among them sometimes)
  rng = np.random.default_rng(seed + 1)
  outs = [p.pool[-1]] + [p.pool[int(i)] for i in rng.integers(0, len(p.pool), int(rng.integers(0, 3)))]
  wts = [rng.standard_normal(o[0].shape).astype(np.float32) for o in outs]
  loss_t = sum(((o[0] * Tensor(w, device=device)).sum() for o, w in zip(outs, wts)), Tensor(0.0, device=device))
  loss_r = sum(((o[1] * torch.tensor(w)).sum() for o, w in zip(outs, wts)), torch.tensor(0.0))
  loss_t.backward()
  if loss_r.requires_grad: loss_r.backward()
  for i, (o, w) in enumerate(zip(outs, wts)):
    ref = o[1].detach().numpy()
    np.testing.assert_allclose(o[0].numpy(), ref, rtol=1e-4, atol=1e-4 * (1 + np.abs(ref[np.isfinite(ref)]).max(initial=0)), equal_nan=True,
                               err_msg=f"output {i}'s value")
  grads = [(lt.grad.numpy() if lt.grad is not None else np.zeros(lt.shape, np.float32),
            lr.grad.numpy() if lr.grad is not None else np.zeros(lt.shape, np.float32)) for lt, lr in p.leaves]
  # where a NaN gradient flows (inf * 0 at a point with no derivative: sqrt(|x|) at 0), how it mixes with others is each
  # rule's own (torch's cumprod of a 0 keeps it out of the elements before, ours adds it): ours may be NaN where torch's is
  # not then, never the other way (a finite gradient where torch has none: the abs and pow bugs)
  nan_flows = any(np.isnan(gr).any() for _, gr in grads)
  for i, ((gt, gr), (lt, _)) in enumerate(zip(grads, p.leaves)):
    if nan_flows: gt = np.where(np.isnan(gt) & ~np.isnan(gr), gr, gt)
    scale = 1 + np.abs(gr[np.isfinite(gr)]).max(initial=0)
    np.testing.assert_allclose(gt, gr, rtol=1e-3, atol=1e-3 * scale, equal_nan=True, err_msg=f"the gradient of leaf {i} {tuple(lt.shape)}")

N = int(os.getenv("GRAD_FUZZ_EXAMPLES", "0"))   # 0: the CI sizes below
def _hs(n: int): return settings(max_examples=N or n, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))

@_hs(100)
@given(prog=programs())
def test_random_programs_gradients_match_torch(prog): check(*prog)

@_hs(50)
@given(prog=programs())
def test_random_programs_gradients_match_torch_on_python(prog): check(*prog, device="PYTHON")

def test_a_repeated_index_write_passes_the_gradient_to_the_value_written_only():
  # docs/guide.md: the last duplicate is written and only it gets y[1]'s gradient (torch's index_put and scatter give it to
  # every duplicate, the value they did not write too); self gets none where it was overwritten, as torch
  gw = np.array([1., 10., 100., 1000.], np.float32)
  v, x = Tensor([1.0, 2.0, 3.0], requires_grad=True), Tensor.ones(4, requires_grad=True)
  y = x * 1
  y[Tensor([1, 1, 2])] = v
  s, base = Tensor([5.0, 6.0, 7.0], requires_grad=True), Tensor.zeros(4, requires_grad=True)
  o = base.scatter(0, Tensor([1, 1, 2]), s)
  ((y + o) * Tensor(gw)).sum().backward()
  np.testing.assert_array_equal(y.numpy(), [1, 2, 3, 1])
  np.testing.assert_array_equal(o.numpy(), [0, 6, 7, 0])
  for g in (v.grad, s.grad): np.testing.assert_array_equal(g.numpy(), [0, 10, 100])
  for g in (x.grad, base.grad): np.testing.assert_array_equal(g.numpy(), [1, 0, 0, 1000])
