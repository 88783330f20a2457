"""The symbolic simplifier: constant folding, identities, like terms, div/mod and comparisons decided by value bounds.

Three rule tables, each a superset of the last: `symbolic_simple` (local identities, no bounds), `symbolic` (bounds,
like terms, div/mod), `sym` (index arithmetic: gates, WHERE, casts). `simplify(u)` rewrites with `sym` greedily, or by
equality saturation (egraph.py) then greedily when EGRAPH=1. Every rule holds for integers of the node's dtype with
C semantics (IDIV/MOD truncate toward zero, wraparound at the width): rules that look inside a sum or product first
check with `_nowrap` that its bounds are exact, i.e. no wraparound happened.
"""
from __future__ import annotations
import math, functools, operator
from typing import Callable, cast
from tinygrad.uop import Ops, GroupOp
from tinygrad.uop.ops import UOp, exec_alu, AxisType, reduce_identity
from tinygrad.uop.upat import UPat, PatternMatcher, graph_rewrite
from tinygrad.dtype import dtypes, PtrDType
from tinygrad.helpers import EGRAPH

# index dtype first: `dt in tuple` tries each entry with DType.__eq__, which is slow when it is not the same object
ints = tuple(dict.fromkeys((dtypes.index, dtypes.int64) + dtypes.ints))
intb = ints + (dtypes.bool,)
X, Y, Z = UPat.var("x"), UPat.var("y"), UPat.var("z")
XI, YI, ZI = UPat.var("x", ints), UPat.var("y", ints), UPat.var("z", ints)
XB, CB = UPat.var("x", dtypes.bool), UPat.var("c", dtypes.bool)
C, C1, C2 = UPat.cvar("c"), UPat.cvar("c1"), UPat.cvar("c2")
TRUE, FALSE = UPat.const(dtypes.bool, True), UPat.const(dtypes.bool, False)

# ---- helpers ----
def _low(x: UOp, c1: UOp, y: UOp, c2: UOp) -> bool:
  # x*c1+y with y a remainder below c1 (all >= 0) and c2 a multiple of c1: its div/mod by c2 are x's by c2/c1
  return 0 < c1.arg < c2.arg and c2.arg % c1.arg == 0 and x.vmin >= 0 and y.vmin >= 0 and y.vmax < c1.arg and _nowrap(x * c1 + y)
def _nowrap(x: UOp) -> bool:
  # bounds narrower than the dtype's range: the sums/products that built x were computed exactly (no wraparound)
  return x.vmin != dtypes.min(x.dtype) or x.vmax != dtypes.max(x.dtype)
def _fits(x: UOp, v: int) -> bool: return dtypes.min(x.dtype) <= v <= dtypes.max(x.dtype)
def _sum(terms: list[UOp]) -> UOp: return functools.reduce(operator.add, terms)
def _terms(x: UOp) -> list[UOp]:
  # the addends of an ADD chain, left to right (iterative: chains can be deep)
  out: list[UOp] = []
  stack = [x]
  while stack:
    n = stack.pop()
    if n.op is Ops.ADD: stack.extend(reversed(n.src))
    else: out.append(n)
  return out

def _const_fold(a: UOp) -> UOp | None:
  return a.const_like(exec_alu(a.op, a.dtype, [s.arg for s in a.src])) if a.dtype.count == 1 else None
def _cast_const(x: UOp, c: UOp) -> UOp | None:
  if x.dtype.count != 1 or isinstance(x.dtype, PtrDType): return None
  return x.const_like(c.arg)
def _fold_bounds(x: UOp) -> UOp | None:
  lo, hi = x._min_max
  return x.const_like(lo) if lo == hi and x.dtype.count == 1 else None

# ---- div / mod ----
def _divmod_fold(d: UOp, x: UOp, c: UOp) -> UOp | None:
  # d is x//c or x%c, c > 1: split x = q*c + r over its addends and divide the q part exactly
  cv = c.arg
  if cv <= 1 or not _nowrap(x): return None
  terms = _terms(x)
  g = math.gcd(cv, *(t.const_factor() for t in terms))
  if g > 1:  # (g*y)//(g*k) -> y//k and (g*y)%(g*k) -> (y%k)*g, exact for every sign
    parts = [t.divides(g) for t in terms]
    if all(p is not None for p in parts):
      y = _sum([p for p in parts if p is not None])
      return y // (cv//g) if d.op is Ops.IDIV else (y % (cv//g)) * g
  quo = [t for t in terms if t.const_factor() % cv == 0]
  rem = [t for t in terms if t.const_factor() % cv != 0]
  r = _sum(rem) if rem else x.const_like(0)
  if not _nowrap(r): return None
  q = [t.divides(cv) for t in quo]
  if any(t is None for t in q): return None
  qs = _sum([t for t in q if t is not None]) if q else x.const_like(0)
  # trunc is floor for x >= 0 and ceil for x <= 0; r//c then either keeps r's sign or is one constant k
  if x.vmin >= 0: same, klo, khi = r.vmin >= 0, r.vmin // cv, r.vmax // cv
  elif x.vmax <= 0: same, klo, khi = r.vmax <= 0, -(-r.vmin // cv), -(-r.vmax // cv)
  else: return None
  if same:
    if not quo: return None
    return qs + r // cv if d.op is Ops.IDIV else r % cv
  if klo != khi: return None
  return qs + klo if d.op is Ops.IDIV else r + (-klo * cv)

def _coeff(t: UOp) -> tuple[int, UOp | None]:
  # an addend as (integer factor, the rest): 3 -> (3, None), y*5 -> (5, y), y -> (1, y)
  if t.op is Ops.CONST: return t.arg, None
  if t.op is Ops.MUL and t.src[1].op is Ops.CONST: return t.src[1].arg, t.src[0]
  return 1, t
def _divmod_coeffs(d: UOp, x: UOp, c: UOp) -> UOp | None:
  # x >= 0 written x = q*c + r, r's factors reduced mod c where |factor| >= c and its constant chosen so 0 <= min(r) < c:
  # x//c -> q + r//c, x%c -> r%c. A sliding window's index (kh*(W+2)+ox)%(W+1) becomes (kh+ox)%(W+1), which the bounds
  # then fold to kh+ox: the conv's loads turn affine
  cv = c.arg
  if cv <= 1 or x.vmin < 0 or not _nowrap(x): return None
  parts = [_coeff(t) for t in _terms(x)]
  const = sum(f for f, b in parts if b is None)
  red = [(f if -cv < f < cv else f % cv, b) for f, b in parts if b is not None]
  ts = [b if f == 1 else b * f for f, b in red if f != 0]
  r0 = _sum(ts) if ts else x.const_like(0)
  lo = r0.vmin + const
  rc = const - cv * (lo // cv)
  # no factor reduced: only the constant may move, and a move by a multiple of c when the constant already is one is what
  # _divmod_fold undoes (it drops constant multiples of c), so the two rules would rewrite max(..)%8 <-> (max(..)-16)%8 forever
  if all(f == f2 for (f, b), (f2, _) in zip([p for p in parts if p[1] is not None], red)) and (rc == const or const % cv == 0): return None
  r = r0 + rc if rc else r0
  if r.vmin < 0 or not _nowrap(r): return None
  if d.op is Ops.MOD: return r % cv
  qs = [b if (f - f2) // cv == 1 else b * ((f - f2) // cv) for (f, b), (f2, _) in zip([p for p in parts if p[1] is not None], red) if f != f2]
  q = _sum(cast(list[UOp], qs)) + (const - rc) // cv if qs else x.const_like((const - rc) // cv)   # b is never None here (red's)
  return q + r // cv
def _mod_by_bounds(x: UOp, c: UOp) -> UOp | None:
  return x if c.arg > 0 and -c.arg < x.vmin and x.vmax < c.arg else None
def _div_neg(x: UOp, c: UOp) -> UOp | None:
  return (x // (-c.arg)) * -1 if c.arg < 0 and _fits(c, -c.arg) else None
def _mod_neg(x: UOp, c: UOp) -> UOp | None:
  return x % (-c.arg) if c.arg < 0 and _fits(c, -c.arg) else None
def _div_div(x: UOp, c1: UOp, c2: UOp) -> UOp | None:
  return x // (c1.arg*c2.arg) if c1.arg > 0 and c2.arg > 0 and _fits(x, c1.arg*c2.arg) else None
def _pos_multiple(c1: UOp, c2: UOp) -> bool: return c1.arg > 0 and c2.arg > 0 and c1.arg % c2.arg == 0

# ---- comparisons ----
def _lt_mul(x: UOp, c1: UOp, c2: UOp, m: UOp) -> UOp | None:
  return x < -(-c2.arg // c1.arg) if c1.arg > 0 and _nowrap(m) else None
def _lt_add(x: UOp, c1: UOp, c2: UOp, a: UOp) -> UOp | None:
  return x < c2.arg - c1.arg if _nowrap(a) and _fits(x, c2.arg - c1.arg) else None
def _lt_div(x: UOp, c1: UOp, c2: UOp) -> UOp | None:
  return x < c2.arg * c1.arg if c1.arg > 0 and x.vmin >= 0 and _fits(x, c2.arg * c1.arg) else None

# ---- gates: simplify a WHERE branch or an INDEX address knowing the gate's value ----
_VARS = (Ops.DEFINE_VAR, Ops.RANGE, Ops.SPECIAL)
def _gate_bounds(gate: UOp, value: bool) -> dict[UOp, tuple[int, int]]:
  # variable -> bounds implied by `gate == value`, from clauses v<c / c<v (an AND chain when value is True)
  # and from their negations c!=True (v>=c, a pad's lower edge: a cat's second part), which hold with the value flipped
  todo, clauses = [(gate, value)], []
  while todo:
    g, value = todo.pop()
    if g.op is Ops.AND and value: todo.extend((s, True) for s in g.src)
    elif g.op is Ops.CMPNE and g.src[1].op is Ops.CONST and g.src[1].arg is True: todo.append((g.src[0], not value))
    else: clauses.append((g, value))
  out: dict[UOp, tuple[int, int]] = {}
  for g, value in clauses:
    if g.op is not Ops.CMPLT or not dtypes.is_int(g.src[0].dtype): continue
    a, b = g.src
    if a.op in _VARS and b.op is Ops.CONST: v, lo, hi = a, (a.vmin, b.arg-1) if value else (b.arg, a.vmax), None
    elif b.op in _VARS and a.op is Ops.CONST: v, lo, hi = b, (a.arg+1, b.vmax) if value else (b.vmin, a.arg), None
    else: continue
    old = out.get(v, (int(v.vmin), int(v.vmax)))
    out[v] = (max(old[0], int(lo[0])), min(old[1], int(lo[1])))
  return out
_PURE = GroupOp.ALU | {Ops.CONST, Ops.CAST, Ops.DEFINE_VAR, Ops.RANGE, Ops.SPECIAL}
_AFFINE = {Ops.ADD, Ops.MUL, Ops.CONST, *_VARS}
def _all_of(x: UOp, key: str, ok: Callable[[UOp], bool]) -> bool:
  # every node under x is `ok`, memoised on each node (UOps are immutable) under `key`: a chain of n WHEREs costs O(n)
  # here, not a toposort of the subgraph per WHERE
  if (r := x.__dict__.get(key)) is not None: return r
  for n in x.toposort(gate=lambda n: key not in n.__dict__):
    if key not in n.__dict__: n.__dict__[key] = ok(n) and all(s.__dict__[key] for s in n.src)
  return x.__dict__[key]
def _pure(x: UOp) -> bool: return _all_of(x, "_pure", lambda n: n.op in _PURE)
# (not bool: a bool's bounds of a wider int interval can be one point, True)
def _affine(x: UOp) -> bool: return _all_of(x, "_affine", lambda n: n.op in _AFFINE and n.dtype.scalar() != dtypes.bool)
def _under_gate(x: UOp, gate: UOp, value: bool) -> UOp | None:
  # the cheap test first: most gates (float compares, a relu's x>0) bound no variable, so there is nothing to narrow
  bounds = {v: b for v, b in _gate_bounds(gate, value).items() if b != (v.vmin, v.vmax) and b[0] <= b[1]}
  # arithmetic only: a LOAD under a WHERE still executes, so its own gate must stay even where the WHERE makes it redundant
  if not bounds or not _pure(x): return None
  # sums and products of variables (a padded store's address, most gated indices) fold the same under the narrowed bounds
  # as under the old while every narrowed variable keeps two values or more: there only _fold_bounds reads bounds, and a
  # node's bounds are one point iff its sources' are (or one is 0) either way. x's own fixed point is then the answer,
  # a memo hit, instead of a copy of x over new variables rewritten and copied back (ViT: 2300 indices, ~0.2 s)
  if all(lo < hi for lo, hi in bounds.values()) and _affine(x):
    ret = graph_rewrite(x, sym, name="gate")
    return ret if ret is not x else None
  sub = {v: UOp.variable(f"{v.render()}@[{lo},{hi}]", lo, hi, v.dtype) for v, (lo, hi) in bounds.items()}
  ret = graph_rewrite(x.substitute(sub), sym, name="gate").substitute({nv: v for v, nv in sub.items()})
  return ret if ret is not x else None
def _where_gate(w: UOp, c: UOp, t: UOp, f: UOp) -> UOp | None:
  nt, nf = _under_gate(t, c, True), _under_gate(f, c, False)
  return None if nt is None and nf is None else c.where(t if nt is None else nt, f if nf is None else nf)
def _index_gate(i: UOp, buf: UOp, idx: UOp, g: UOp) -> UOp | None:
  nidx = _under_gate(idx, g, True)
  return None if nidx is None else buf.index(nidx, g).replace(dtype=i.dtype)

def _reduce_invariant(r: UOp) -> UOp | None:
  # a reduce over a range its value does not depend on (an expanded axis) needs no loop: sum -> x*n, max -> x. Besides
  # the time, n copies of x summed one by one in float32 stall at 2**24 where x*n is correctly rounded
  if any(x.op is Ops.RANGE and x.src[0].op is Ops.CONST and x.src[0].arg == 0 for x in r.src[1:]):   # no iteration: the identity
    if r.arg in (Ops.ADD, Ops.MUL, Ops.MAX): return r.const_like(reduce_identity(r.arg, r.dtype))
  if r.arg not in (Ops.ADD, Ops.MAX): return None
  deps = r.src[0].range_set
  free = [x for x in r.src[1:] if x not in deps and x.op is Ops.RANGE and x.arg[1] is AxisType.REDUCE and x.src[0].op is Ops.CONST]
  if not free: return None
  rest = tuple(x for x in r.src[1:] if x not in free)
  v = UOp(Ops.REDUCE, r.dtype, (r.src[0],) + rest, r.arg) if rest else r.src[0]
  return v * v.const_like(math.prod(x.src[0].arg for x in free)) if r.arg is Ops.ADD else v

def _is_r(t: UOp, r: UOp) -> bool:
  # r itself, or r cast to an int type that holds it (the index arithmetic widened to int64 around an int32 range)
  return t is r or (t.op is Ops.CAST and t.src[0] is r and dtypes.is_int(t.dtype) and dtypes.min(t.dtype) <= r.vmin and r.vmax <= dtypes.max(t.dtype))
def _linear_in(e: UOp, r: UOp) -> tuple[int, UOp] | None:
  # e as r*k + rest with k in (1, -1) and rest free of r, else None
  k, rest = 0, []
  for t in _terms(e):
    if _is_r(t, r): k += 1
    elif t.op is Ops.MUL and _is_r(t.src[0], r) and t.src[1].op is Ops.CONST and t.src[1].arg == -1: k -= 1
    elif r in t.range_set: return None
    else: rest.append(t)
  return (k, _sum(rest) if rest else e.const_like(0)) if k in (1, -1) else None
def _threshold(c: UOp, r: UOp) -> UOp | None:
  # a comparison true exactly for r < t (r an integer), as t; None when it is not of that form
  # (signed only, and the cut computed without wraparound: unsigned b-e would wrap where e > b)
  if c.op is not Ops.CMPLT or not dtypes.is_int(c.src[0].dtype) or dtypes.is_unsigned(c.src[0].dtype): return None
  a, b = c.src
  t: UOp | None = None
  if r not in b.range_set and (la := _linear_in(a, r)) is not None and la[0] == 1: t = b + la[1] * -1   # r+e < b
  elif r not in a.range_set and (lb := _linear_in(b, r)) is not None and lb[0] == -1: t = lb[1] + a * -1  # a < e-r
  return t if t is not None and _nowrap(t) else None
def _sum_pieces(v: UOp, r: UOp, lo: UOp, hi: UOp, depth: int = 0) -> UOp | None:
  # sum of v over r in [lo, hi) (lo <= hi) without a loop, when v is piecewise free of r: WHEREs whose conditions cut r's
  # interval at one point each (r < t) split it, the pieces free of r are counted
  if r not in v.range_set: return v * (hi + lo * -1).cast(v.dtype)
  if v.op is not Ops.WHERE or depth > 8: return None
  c, a, b = v.src
  if c.op is Ops.AND: return _sum_pieces(c.src[0].where(c.src[1].where(a, b), b), r, lo, hi, depth + 1)
  if c.op is Ops.CMPNE and c.src[1].op is Ops.CONST and c.src[1].arg is True: return _sum_pieces(c.src[0].where(b, a), r, lo, hi, depth + 1)
  if (t := _threshold(c, r)) is None: return None
  # the cut clamped into [lo, hi): it then fits r's type whatever type the comparison was made in
  wide = lambda x: x if x.dtype == t.dtype else x.cast(t.dtype)
  m = t.maximum(wide(lo)).minimum(wide(hi))
  if m.dtype != r.dtype: m = m.cast(r.dtype)
  if (sa := _sum_pieces(a, r, lo, m, depth + 1)) is None or (sb := _sum_pieces(b, r, m, hi, depth + 1)) is None: return None
  return sa + sb
def _reduce_collapse(red: UOp) -> UOp | None:
  # a sum over a range of something that only changes at a few cut points (an arange built as a cumsum of ones: count the
  # r below a bound) or that is zero except where r equals a value x free of r (a one-hot gather: Embedding's
  # arange == idx): no loop. The gather reads v at x clamped into the range, so the load stays in bounds; the WHERE
  # drops it when x is outside. Sums of ints only for the counting (floats would round differently than the loop)
  if red.arg is not Ops.ADD: return None
  v = red.src[0]
  for r in red.src[1:]:
    if r.op is not Ops.RANGE or r.arg[1] is not AxisType.REDUCE: continue
    new: UOp | None = None
    if dtypes.is_int(v.dtype) and v.dtype.count == 1: new = _sum_pieces(v, r, r.const_like(0), r.src[0])
    if new is None and v.op is Ops.WHERE and v.src[0].op in (Ops.CMPEQ, Ops.CMPNE):
      c, on, off = v.src if v.src[0].op is Ops.CMPEQ else (v.src[0], v.src[2], v.src[1])
      if off.op is Ops.CONST and off.arg == 0:
        x, y = c.src
        if r in x.range_set: x, y = y, x
        # x == y ^ m (m free of r: a gather by an index xor'ed with a mask, sort's partner) is y == x ^ m, an exact inverse
        if y.op is Ops.XOR and r not in x.range_set and (m := next((s for s in y.src if r not in s.range_set), None)) is not None:
          x, y = x ^ m, y.src[1] if y.src[0] is m else y.src[0]
        # x == r + e (e free of r: a shard's or a slice's arange starts at e) is r == x - e, exact under wraparound too
        lin = _linear_in(y, r) if r not in x.range_set and dtypes.is_int(x.dtype) else None
        if lin is not None:
          k, e = lin
          if k == -1: x = e + x * -1                                  # x == e - r -> r == e - x
          elif not (e.op is Ops.CONST and e.arg == 0): x = x + e * -1
          ok = (x >= x.const_like(0)) & (x < r.src[0].cast(x.dtype))   # r.src[0]: the range's size (maybe symbolic)
          new = ok.where(on.substitute({r: ok.where(x.cast(r.dtype), r.const_like(0))}), off)
    if new is not None:
      rest = tuple(x for x in red.src[1:] if x is not r)
      return UOp(Ops.REDUCE, red.dtype, (new,) + rest, red.arg) if rest else new
  return None

def _cast_narrow(n: UOp, a: UOp) -> UOp | None:
  # T(x op y) -> T(x) op T(y) for a narrowing int cast when x, y and the result all fit T (no wraparound either way): the
  # cast sinks to the leaves, where T(W(r)) folds (index64 keeps an int32 range's arithmetic in int64, an arange's -r+c)
  if not (dtypes.is_int(n.dtype) and dtypes.is_int(a.dtype) and n.dtype.itemsize < a.dtype.itemsize and _nowrap(a)): return None
  lo, hi = dtypes.min(n.dtype), dtypes.max(n.dtype)
  if not all(lo <= x.vmin and x.vmax <= hi for x in (a, *a.src)): return None
  return UOp(a.op, n.dtype, tuple(x.cast(n.dtype) for x in a.src))

def _add_zero(x: UOp, c: UOp) -> UOp | None:
  # x+0 -> x, except a float x that may be -0.0 plus +0.0: IEEE gives +0.0 there (Tensor([-0.0]) + 0 gave -0.0, torch 0.0).
  # x+(-0.0) is x for every x; a float cast from an int or bool is never -0.0
  if not dtypes.is_float(x.dtype) or math.copysign(1.0, c.arg) < 0: return x
  return x if x.op is Ops.CAST and not dtypes.is_float(x.src[0].dtype) else None

def _cast_roundtrip(n: UOp, w: UOp, x: UOp) -> UOp | None:
  ok = n.dtype == x.dtype and dtypes.is_int(x.dtype) and dtypes.is_int(w.dtype) and dtypes.min(w.dtype) <= dtypes.min(x.dtype) \
    and dtypes.max(x.dtype) <= dtypes.max(w.dtype)
  return x if ok else None

# ---- tables ----
symbolic_simple = PatternMatcher([
  (UPat(GroupOp.ALU, src=UPat(Ops.CONST, src=()), name="a"), _const_fold),                     # op(c1, c2) -> c
  (UPat(Ops.CAST, src=(UPat(Ops.CONST, src=(), name="c"),), name="x"), _cast_const),            # cast(c) -> c'
  (UPat(Ops.CAST, name="x"), lambda x: x.src[0] if x.src[0].dtype == x.dtype else None),        # cast(x:T, T) -> x
  (X + UPat(Ops.CONST, arg=0, name="c"), _add_zero),                                            # x+0 -> x (floats: see _add_zero)
  (X * 1, lambda x: x),                                                                        # x*1 -> x
  (XI * 0, lambda x: x.const_like(0)),                                                         # x*0 -> 0 (ints: floats keep NaN/inf)
  (X // 1, lambda x: x),                                                                       # x//1 -> x
  (UPat.var("x", dtypes.floats) / 1, lambda x: x),                                             # x/1 -> x
  (XI % 1, lambda x: x.const_like(0)),                                                         # x%1 -> 0
  (XI // XI, lambda x: x.const_like(1) if x.vmin > 0 or x.vmax < 0 else None),                 # x//x -> 1 (x != 0)
  (XI % XI, lambda x: x.const_like(0)),                                                        # x%x -> 0
  (XI - XI, lambda x: x.const_like(0)),                                                        # x-x -> 0 (ints)
  (XI - YI, lambda x, y: x + y*-1),                                                            # x-y -> x+y*-1 (ints: one form for like terms)
  (UPat.var("x", dtypes.floats) - C, lambda x, c: x + c.const_like(-c.arg)),                   # x-c -> x+(-c) (floats: exact)
  (-(-X), lambda x: x),                                                                        # -(-x) -> x
  (-XI, lambda x: x * -1),                                                                     # -x -> x*-1 (ints)
  (XB & TRUE, lambda x: x),                                                                    # x&True -> x
  (XB & FALSE, lambda x: x.const_like(False)),                                                 # x&False -> False
  (XB | FALSE, lambda x: x),                                                                   # x|False -> x
  (XB | TRUE, lambda x: x.const_like(True)),                                                   # x|True -> True
  (XB ^ FALSE, lambda x: x),                                                                   # x^False -> x
  (XB ^ TRUE, lambda x: x.ne(True)),                                                           # x^True -> !x
  (UPat.var("x", intb) & UPat.var("x", intb), lambda x: x),                                    # x&x -> x
  (UPat.var("x", intb) | UPat.var("x", intb), lambda x: x),                                    # x|x -> x
  (UPat.var("x", intb) ^ UPat.var("x", intb), lambda x: x.const_like(0)),                      # x^x -> 0
  (XI & 0, lambda x: x.const_like(0)),                                                         # x&0 -> 0
  (XI & -1, lambda x: x),                                                                      # x&-1 -> x
  (XI | 0, lambda x: x),                                                                       # x|0 -> x
  (XI ^ 0, lambda x: x),                                                                       # x^0 -> x
  (XB.ne(FALSE), lambda x: x),                                                                 # x!=False -> x
  (XB.eq(TRUE), lambda x: x),                                                                  # x==True -> x
  (XB.ne(TRUE).ne(TRUE), lambda x: x),                                                         # !!x -> x
  (X.maximum(X), lambda x: x),                                                                 # max(x,x) -> x
  (TRUE.where(X, Y), lambda x, y: x),                                                          # True ? x : y -> x
  (FALSE.where(X, Y), lambda x, y: y),                                                         # False ? x : y -> y
  (UPat.var("c").where(X, X), lambda c, x: x),                                                 # c ? x : x -> x
  (CB.where(TRUE, FALSE), lambda c: c),                                                        # c ? True : False -> c
  (CB.where(FALSE, TRUE), lambda c: c.ne(True)),                                               # c ? False : True -> !c
  (CB.ne(TRUE).where(X, Y), lambda c, x, y: c.where(y, x)),                                    # !c ? x : y -> c ? y : x
  (X < X, lambda x: UOp.const(dtypes.bool, False)),                                            # x<x -> False (NaN<NaN too)
  (UPat.var("x", intb).ne(UPat.var("x", intb)), lambda x: UOp.const(dtypes.bool, False)),      # x!=x -> False (ints)
  (UPat.var("x", intb).eq(UPat.var("x", intb)), lambda x: UOp.const(dtypes.bool, True)),       # x==x -> True (ints)
], pure=True)

symbolic = symbolic_simple + PatternMatcher([
  (UPat(GroupOp.ALU, dtype=intb, name="x"), _fold_bounds),                                      # vmin == vmax -> const
  (UPat(GroupOp.Commutative, src=(C, X), name="a"),
   lambda a, c, x: a.replace(src=(x, c)) if x.op is not Ops.CONST else None),                  # c+x -> x+c (constants right)
  # reassociation and like terms (ring identities: exact under wraparound)
  ((XI + C1) + C2, lambda x, c1, c2: x + (c1 + c2)),                                           # (x+c1)+c2 -> x+(c1+c2)
  ((XI * C1) * C2, lambda x, c1, c2: x * (c1 * c2)),                                           # (x*c1)*c2 -> x*(c1*c2)
  ((XI + C1) + YI, lambda x, c1, y: (x + y) + c1 if y.op is not Ops.CONST else None),          # (x+c)+y -> (x+y)+c
  ((XI * C1) * YI, lambda x, c1, y: (x * y) * c1 if y.op is not Ops.CONST else None),          # (x*c)*y -> (x*y)*c
  ((XI + C1) * C2, lambda x, c1, c2: x * c2 + c1 * c2),                                        # (x+c1)*c2 -> x*c2+c1*c2
  ((XI * C1 + YI) * C2, lambda x, c1, y, c2: x * (c1 * c2) + y * c2),                          # (x*c1+y)*c2 -> x*(c1*c2)+y*c2
  (XI + XI, lambda x: x * 2),                                                                  # x+x -> x*2
  (XI * C1 + XI * C2, lambda x, c1, c2: x * (c1 + c2)),                                        # x*c1+x*c2 -> x*(c1+c2)
  (XI * C1 + XI, lambda x, c1: x * (c1 + 1)),                                                  # x*c+x -> x*(c+1)
  ((YI + XI * C1) + XI * C2, lambda y, x, c1, c2: y + x * (c1 + c2)),                          # (y+x*c1)+x*c2 -> y+x*(c1+c2)
  ((YI + XI * C1) + XI, lambda y, x, c1: y + x * (c1 + 1)),                                    # (y+x*c)+x -> y+x*(c+1)
  ((YI + XI) + XI * C1, lambda y, x, c1: y + x * (c1 + 1)),                                    # (y+x)+x*c -> y+x*(c+1)
  ((YI + XI) + XI, lambda y, x: y + x * 2),                                                    # (y+x)+x -> y+x*2
  # div and mod (C: truncate toward zero)
  (XI // C, _div_neg),                                                                         # x//-c -> (x//c)*-1
  (XI % C, _mod_neg),                                                                          # x%-c -> x%c
  (XI % C, _mod_by_bounds),                                                                    # x%c -> x when -c<x<c
  ((XI // C1) // C2, _div_div),                                                                # (x//a)//b -> x//(a*b)
  ((XI % C1) // C2, lambda x, c1, c2: (x // c2) % (c1.arg // c2.arg) if _pos_multiple(c1, c2) else None),  # (x%(a*b))//a -> (x//a)%b
  ((XI % C1) % C2, lambda x, c1, c2: x % c2 if _pos_multiple(c1, c2) else None),               # (x%(a*b))%b -> x%b
  (UPat(Ops.IDIV, ints, (X, C), name="d"), _divmod_fold),                                      # (x*c+y)//c -> x+y//c when signs allow
  (UPat(Ops.MOD, ints, (X, C), name="d"), _divmod_fold),                                       # (x*c+y)%c -> y%c when signs allow
  (UPat(Ops.IDIV, ints, (X, C), name="d"), _divmod_coeffs),                                    # (x*(a*c+b)+y)//c -> x*a+(x*b+y)//c (x, y>=0)
  (UPat(Ops.MOD, ints, (X, C), name="d"), _divmod_coeffs),                                     # (x*(a*c+b)+y)%c -> (x*b+y)%c (x, y>=0)
  (XI % C + (XI // C) * C, lambda x, c: x),                                                    # x%c+(x//c)*c -> x
  ((YI + XI % C) + (XI // C) * C, lambda y, x, c: y + x),                                      # (y+x%c)+(x//c)*c -> y+x
  ((YI + (XI // C) * C) + XI % C, lambda y, x, c: y + x),                                      # (y+(x//c)*c)+x%c -> y+x
  ((ZI + XI // C) * C + XI % C, lambda z, x, c: z * c + x),                                    # (z+x//c)*c+x%c -> z*c+x
  ((YI + (ZI + XI // C) * C) + XI % C, lambda y, z, x, c: (y + z * c) + x),                    # (y+(z+x//c)*c)+x%c -> (y+z*c)+x
  ((XI * C1 + YI) // C2, lambda x, c1, y, c2: x // (c2.arg // c1.arg) if _low(x, c1, y, c2) else None),   # (x*a+y)//(a*k) -> x//k (0<=y<a)
  ((XI * C1 + YI) % C2, lambda x, c1, y, c2: x % (c2.arg // c1.arg) * c1 + y if _low(x, c1, y, c2) else None),  # (x*a+y)%(a*k) -> (x%k)*a+y (0<=y<a)
  ((XI // C1) * C2 + (XI % C1) * C, lambda x, c1, c2, c: x * c if c1.arg * c.arg == c2.arg else None),  # (x//k)*(k*c)+(x%k)*c -> x*c
  # comparisons and max decided or narrowed by bounds
  ((XI * C1).named("m") < C2, _lt_mul),                                                        # x*c1<c2 -> x<ceil(c2/c1) (c1>0)
  ((XI + C1).named("a") < C2, _lt_add),                                                        # x+c1<c2 -> x<c2-c1
  ((XI // C1) < C2, _lt_div),                                                                  # x//c1<c2 -> x<c2*c1 (x>=0, c1>0)
  ((XI + C1).ne(C2), lambda x, c1, c2: x.ne(exec_alu(Ops.SUB, x.dtype, [c2.arg, c1.arg]))),    # x+c1!=c2 -> x!=c2-c1 (a bijection)
  (XI.maximum(YI), lambda x, y: x if x.vmin >= y.vmax else None),                              # max(x,y) -> x when x>=y
], pure=True)

sym = symbolic + PatternMatcher([
  (UPat.var("c").where(UPat.var("c").where(X, Y), Z), lambda c, x, y, z: c.where(x, z)),      # c ? (c ? x : y) : z -> c ? x : z
  (UPat.var("c").where(X, UPat.var("c").where(Y, Z)), lambda c, x, y, z: c.where(x, z)),      # c ? x : (c ? y : z) -> c ? x : z
  (UPat(Ops.WHERE, src=(CB, X, Y), name="w"), lambda w, c, x, y: _where_gate(w, c, x, y)),     # c ? f(v) : g(v) with v's bounds narrowed by c
  (UPat(Ops.INDEX, src=(UPat.var("buf"), UPat.var("idx"), TRUE), name="i"),
   lambda i, buf, idx: UOp(Ops.INDEX, i.dtype, (buf, idx))),                                   # buf[idx if True] -> buf[idx]
  (UPat(Ops.INDEX, src=(UPat.var("buf"), UPat.var("idx"), UPat.var("g")), name="i"), _index_gate),  # buf[f(v) if g] with v narrowed by g
  ((XI < C1) & (XI < C2), lambda x, c1, c2: x < min(c1.arg, c2.arg)),                          # x<a & x<b -> x<min(a,b)
  (UPat(Ops.CAST, src=(UPat(Ops.CAST, src=(X,), name="w"),), name="n"), _cast_roundtrip),      # T(W(x:T)) -> x (W holds every T)
  (UPat(Ops.CAST, src=(UPat((Ops.ADD, Ops.MUL), name="a"),), name="n"), _cast_narrow),          # T(x+y) -> T(x)+T(y) (narrowing, all fit T)
  (UPat(Ops.REDUCE, name="r"), _reduce_invariant),                                              # sum_r x -> x*n, max_r x -> x (x free of r)
  (UPat(Ops.REDUCE, name="red"), _reduce_collapse),     # sum_r (r<t ? a : b) -> a*t+b*(n-t); sum_r (x==r ? v(r) : 0) -> 0<=x<n ? v(x) : 0
], pure=True)

# rules the e-graph adds: reorderings greedy rewriting must not use (they loop), saturation explores them under its budget
pm_reorder = PatternMatcher([
  ((XI + YI) + Z, lambda x, y, z: (x + z) + y if z.op is not Ops.CONST else None),             # (x+y)+z -> (x+z)+y
  ((XI * YI) * Z, lambda x, y, z: (x * z) * y if z.op is not Ops.CONST else None),             # (x*y)*z -> (x*z)*y
])

def simplify(u: UOp) -> UOp:
  """`u` rewritten with `sym` to a fixed point; with EGRAPH=1 by equality saturation first, then greedily."""
  greedy = graph_rewrite(u, sym, name="simplify")
  if not EGRAPH: return greedy
  from tinygrad.uop.egraph import egraph_simplify, dag_cost
  sat = graph_rewrite(egraph_simplify(u, sym + pm_reorder), sym, name="simplify")
  # the e-graph explores a superset of greedy's moves, but its budget can stop it short: never return worse than greedy
  return sat if dag_cost(sat) <= dag_cost(greedy) else greedy
