"""Vectorize: the scalar lanes an UPCAST or UNROLL made become vector ops, where the renderer declares them (an SLP pass).

After the optimizer a kernel holds, for an upcast axis, one STORE per lane; the lanes' trees are alike and differ only in
index constants. Stores to consecutive addresses are packed into one vector STORE, and their values are packed lane by
lane: same op -> the vector op, consecutive loads -> one vector load, one value on every lane -> a broadcast, anything
else -> a VECTORIZE of the scalars (a gather, always correct). A reduce whose value is an unrolled chain of its own op
(`acc += x0+x1+x2+x3`) over consecutive loads becomes a reduce into a vector accumulator, summed across lanes once after
its loop. Renderers opt in with `vector_bytes` (the widest vector), `vector_ops` and `vector_dtypes` (the element types with
vector types); with any of them empty (the defaults) this pass changes nothing.
A vector access may start at any element (a conv's taps, `x[1:]`); where the renderer's vectors need their own alignment
(`unaligned_vectors = False`) only accesses whose offset is a multiple of the lane count by construction become vectors.
"""
from __future__ import annotations
from collections import Counter
from tinygrad.uop import Ops, GroupOp
from tinygrad.uop.ops import UOp
from tinygrad.dtype import DType, PtrDType, AddrSpace, dtypes
from tinygrad.renderer import Renderer

def _affine(idx: UOp) -> tuple[frozenset, int]:
  """idx as (the multiset of its non-constant terms, its constant): two indices with the same terms differ by a constant."""
  if (ret := idx.__dict__.get("_vaff")) is not None: return ret   # (kept on the node: every lane group asks for each load's)
  terms: list[UOp] = []
  const, todo = 0, [idx]
  while todo:
    u = todo.pop()
    if u.op is Ops.ADD: todo.extend(u.src)
    elif u.op is Ops.CONST: const += int(u.arg)
    else: terms.append(u)
  ret = idx.__dict__["_vaff"] = (frozenset(Counter(terms).items()), const)
  return ret

def _twos(idx: UOp) -> int:
  """The exponent of the largest power of two that divides idx by construction (64 for 0): constants, sums, products, shifts."""
  if idx.op is Ops.CONST: return 64 if int(idx.arg) == 0 else min(64, (int(idx.arg) & -int(idx.arg)).bit_length() - 1)
  if idx.op in (Ops.ADD, Ops.SUB): return min(_twos(s) for s in idx.src)
  if idx.op is Ops.MUL: return min(64, sum(_twos(s) for s in idx.src))
  if idx.op is Ops.SHL and idx.src[1].op is Ops.CONST: return min(64, _twos(idx.src[0]) + int(idx.src[1].arg))
  if idx.op is Ops.CAST and dtypes.is_int(idx.dtype): return _twos(idx.src[0])
  return 0

def _multiple_of(idx: UOp, n: int) -> bool:
  """idx is a multiple of n (a power of two) by construction."""
  return 1 << _twos(idx) >= n

def _flatten(u: UOp, op: Ops) -> list[UOp]:
  """The leaves of a nested chain of `op`, left to right."""
  out, todo = [], [u]
  while todo:
    x = todo.pop()
    if x.op is op: todo.extend(reversed(x.src))
    else: out.append(x)
  return out

class _Packer:
  def __init__(self, ren: Renderer):
    self.ren = ren
    self.memo: dict[tuple[UOp, ...], UOp] = {}
  def ok(self, dt: DType) -> bool:
    return not isinstance(dt, PtrDType) and dt.count == 1 and dt in self.ren.vector_dtypes
  def width(self, dt: DType) -> int: return max(1, self.ren.vector_bytes // dt.itemsize)

  def pack(self, lanes: tuple[UOp, ...]) -> UOp:
    # depth-first with an explicit stack: lane trees can be thousands of ops deep
    stack = [lanes]
    while stack:
      ln = stack[-1]
      if ln in self.memo:
        stack.pop()
        continue
      kind = self._kind(ln)
      todo = [k for k in self._children(ln, kind) if k not in self.memo]
      if todo:
        stack.extend(todo)
        continue
      stack.pop()
      self.memo[ln] = self._build(ln, kind)
    return self.memo[lanes]
  def _kind(self, lanes: tuple[UOp, ...]) -> str:
    u0, n = lanes[0], len(lanes)
    if all(u is u0 for u in lanes): return "broadcast"
    # (dtypes compared by identity first: DType.__eq__ is a Python call per lane; interned, they are almost always the same)
    dt0 = u0.dtype
    if any(u.op is not u0.op or u.arg != u0.arg or len(u.src) != len(u0.src) or (u.dtype is not dt0 and u.dtype != dt0) for u in lanes): return "gather"
    if u0.op is Ops.LOAD: return "load" if self._load(lanes) is not None else "gather"
    if u0.op is Ops.GEP and all(u.src[0] is u0.src[0] and u.arg == (i,) for i, u in enumerate(lanes)) and u0.src[0].dtype.count == n:
      return "gep"
    if u0.op is Ops.REDUCE and u0.arg in self.ren.vector_ops and all(u.src[1:] == u0.src[1:] for u in lanes): return "reduce"
    if (u0.op in GroupOp.ALU or u0.op in (Ops.CAST, Ops.BITCAST)) and u0.op in self.ren.vector_ops and \
       all(self.ok(s.dtype) and all(u.src[k].dtype is s.dtype or u.src[k].dtype == s.dtype for u in lanes) for k, s in enumerate(u0.src)): return "alu"
    return "gather"
  def _children(self, lanes: tuple[UOp, ...], kind: str) -> list[tuple[UOp, ...]]:
    if kind == "reduce": return [tuple(u.src[0] for u in lanes)]
    if kind == "alu": return [tuple(u.src[k] for u in lanes) for k in range(len(lanes[0].src))]
    return []
  def _build(self, lanes: tuple[UOp, ...], kind: str) -> UOp:
    u0 = lanes[0]
    vdt = u0.dtype.vec(len(lanes))
    if kind == "broadcast": return UOp.const(vdt, u0.arg) if u0.op is Ops.CONST else UOp(Ops.VECTORIZE, vdt, lanes)
    if kind == "load":
      vload = self._load(lanes)
      assert vload is not None
      return vload
    if kind == "gep": return u0.src[0]
    kids = [self.memo[k] for k in self._children(lanes, kind)]
    if kind == "reduce": return UOp(Ops.REDUCE, vdt, (kids[0],) + u0.src[1:], u0.arg)
    if kind == "alu": return UOp(u0.op, vdt, tuple(kids), u0.arg)
    return UOp(Ops.VECTORIZE, vdt, lanes)
  def _load(self, lanes: tuple[UOp, ...]) -> UOp | None:
    # consecutive elements of one buffer under one gate: a vector load
    idxs = [u.src[0] for u in lanes]
    i0 = idxs[0]
    if len(lanes[0].src) != 1 or i0.op is not Ops.INDEX or i0.src[0].op not in (Ops.DEFINE_GLOBAL, Ops.DEFINE_LOCAL): return None
    if any(i.op is not Ops.INDEX or i.src[0] is not i0.src[0] or i.src[2:] != i0.src[2:] for i in idxs): return None
    base, c0 = _affine(i0.src[1])
    for k, i in enumerate(idxs):
      b, c = _affine(i.src[1])
      if b != base or c != c0 + k: return None
    if not self.ren.unaligned_vectors and not _multiple_of(i0.src[1], len(lanes)): return None   # a gather instead
    return UOp(Ops.LOAD, lanes[0].dtype.vec(len(lanes)), (i0,))

def _good(u: UOp) -> bool:
  """Worth a vector op: it holds a vector load and gathers no scalar loads."""
  topo = u.toposort()
  vload = any(x.op is Ops.LOAD and x.dtype.count > 1 for x in topo)
  gather = any(x.op is Ops.VECTORIZE and any(s.op is Ops.LOAD for s in x.src) and len(set(x.src)) > 1 for x in topo)
  return vload and not gather

def _store_runs(stores: list[UOp], p: _Packer) -> list[list[UOp]]:
  """Runs of stores to consecutive addresses of one buffer under one gate, each at most the vector width."""
  groups: dict[tuple, dict[int, UOp]] = {}
  for s in stores:
    if s.op is not Ops.STORE or len(s.src) != 2: continue   # (a hand-written kernel's SINK holds more than stores)
    idx = s.src[0]
    if idx.op is not Ops.INDEX or idx.src[0].op is not Ops.DEFINE_GLOBAL or not p.ok(s.src[1].dtype): continue
    base, c = _affine(idx.src[1])
    groups.setdefault((idx.src[0], idx.src[2:], base), {})[c] = s
  runs: list[list[UOp]] = []
  for by_c in groups.values():
    cs = sorted(by_c)
    i = 0
    while i < len(cs):
      j = i
      while j + 1 < len(cs) and cs[j+1] == cs[j] + 1: j += 1
      # split the run [i, j] into power-of-two chunks no wider than the vector
      w = p.width(by_c[cs[i]].src[1].dtype)
      while i <= j:
        n = 1
        while n * 2 <= min(w, j - i + 1) and (p.ren.unaligned_vectors or _multiple_of(by_c[cs[i]].src[0].src[1], n * 2)): n *= 2
        if n > 1: runs.append([by_c[c] for c in cs[i:i+n]])
        i += n
  return runs

def vectorize(sink: UOp, ren: Renderer) -> UOp:
  """Pack lanes into vector ops the renderer declares (see the module docstring); unchanged when it declares none."""
  if ren.vector_bytes == 0 or not ren.vector_ops: return sink
  p = _Packer(ren)
  stores = list(sink.src)
  new: dict[UOp, UOp | None] = {}
  for run in _store_runs(stores, p):
    val = p.pack(tuple(s.src[1] for s in run))
    new[run[0]] = UOp(Ops.STORE, dtypes.void, (run[0].src[0], val))
    for s in run[1:]: new[s] = None
  ret = UOp(Ops.SINK, dtypes.void, tuple(x for s in stores if (x := new.get(s, s)) is not None), sink.arg)
  # a scalar reduce over an unrolled chain of its own op: a vector accumulator, combined across lanes after the loop
  sub: dict[UOp, UOp] = {}
  for u in ret.toposort():
    if u.op is not Ops.REDUCE or not p.ok(u.dtype) or u.arg not in ren.vector_ops: continue
    # a reduce inside this one's value (a fused softmax's max in its sum) is packed already: read its vector form
    leaves = _flatten(u.src[0].substitute(sub) if sub else u.src[0], u.arg)
    n = 1
    while n * 2 <= min(len(leaves), p.width(u.dtype)) and len(leaves) % (n * 2) == 0: n *= 2
    if n < 2: continue
    # leaves k, k+n, k+2n ... share lane k: each lane accumulates len(leaves)//n of them
    vals = [p.pack(tuple(leaves[c*n:(c+1)*n])) for c in range(len(leaves) // n)]
    if not all(_good(v) for v in vals): continue
    acc = vals[0]
    for v in vals[1:]: acc = UOp(u.arg, acc.dtype, (acc, v))
    red = UOp(Ops.REDUCE, acc.dtype, (acc,) + u.src[1:], u.arg)
    out = red.gep(0)
    for k in range(1, n): out = UOp(u.arg, u.dtype, (out, red.gep(k)))
    sub[u] = out
  return ret.substitute(sub) if sub else ret
