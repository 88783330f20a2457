"""Specs: rule tables that define well-formed graphs at each level (docs/ir.md), and type_verify that checks them.

A spec rule returns True when the node it matched is valid and False when it is not; the first rule that returns
either decides. A node that no rule accepts, or one a rule rejects, raises SpecError naming the node and the rule.
"""
from __future__ import annotations
from tinygrad.uop import Ops, GroupOp
from tinygrad.uop.ops import UOp
from tinygrad.uop.upat import UPat, PatternMatcher, _location
from tinygrad.dtype import PtrDType, AddrSpace, dtypes
from tinygrad.helpers import SPEC, all_int, prod

class SpecError(RuntimeError):
  """A graph broke its spec: names the node (op, dtype, arg, sources) and the rule."""

def _const_ok(x: UOp) -> bool:
  # the arg is the Python type that holds a value of the dtype, and a value the dtype can hold
  dt = x.dtype.scalar()
  if dtypes.is_bool(dt): return type(x.arg) is bool
  if dtypes.is_int(dt): return type(x.arg) is int and dtypes.min(dt) <= x.arg <= dtypes.max(dt)
  return dtypes.is_float(dt) and type(x.arg) is float
def _same(x: UOp, *srcs: UOp) -> bool: return all(s.dtype == x.dtype for s in srcs)
def _alu_binary(x: UOp) -> bool:
  if len(x.src) != 2 or not _same(x, *x.src): return False
  if x.op in (Ops.AND, Ops.OR, Ops.XOR): return dtypes.is_int(x.dtype) or dtypes.is_bool(x.dtype)   # integer or bool
  if x.op is Ops.IDIV: return dtypes.is_int(x.dtype)                                              # truncating int division
  if x.op is Ops.FDIV: return dtypes.is_float(x.dtype)
  return True
def _cmp(x: UOp) -> bool:
  return len(x.src) == 2 and x.dtype == dtypes.bool.vec(x.src[0].dtype.count) and x.src[0].dtype == x.src[1].dtype
def _where(x: UOp) -> bool:
  c, a, b = x.src
  return c.dtype.scalar() == dtypes.bool and c.dtype.count in (1, x.dtype.count) and _same(x, a, b)
def _unary(x: UOp) -> bool:
  if len(x.src) != 1 or not _same(x, x.src[0]): return False
  return x.op in (Ops.NEG,) or dtypes.is_float(x.dtype)   # EXP2, LOG2, SIN, SQRT, RECIPROCAL, TRUNC are float-only
def _shift(x: UOp) -> bool:
  return len(x.src) == 2 and _same(x, x.src[0]) and (dtypes.is_int(x.dtype) or dtypes.is_bool(x.dtype)) and dtypes.is_int(x.src[1].dtype)
def _ldexp(x: UOp) -> bool:
  return len(x.src) == 2 and _same(x, x.src[0]) and dtypes.is_float(x.dtype) and x.src[1].dtype == dtypes.int32.vec(x.dtype.count)
def _bitcast(x: UOp) -> bool: return x.dtype.itemsize == x.src[0].dtype.itemsize
def _ptr(x: UOp, space: AddrSpace | None = None) -> bool:
  return isinstance(x.dtype, PtrDType) and (space is None or x.dtype.addrspace is space)

# ALU, casts and constants: the same at both levels
spec_alu = PatternMatcher([
  (UPat((Ops.ADD, Ops.SUB, Ops.MUL, Ops.IDIV, Ops.FDIV, Ops.MOD, Ops.POW, Ops.MAX, Ops.AND, Ops.OR, Ops.XOR), name="x"), _alu_binary),  # x:T op y:T -> T
  (UPat(GroupOp.Comparison, name="x"), _cmp),                                                     # x:T < y:T -> bool
  (UPat(Ops.WHERE, src=(UPat(), UPat(), UPat()), name="x"), _where),                              # c:bool ? x:T : y:T -> T
  (UPat(GroupOp.Unary, name="x"), _unary),                                                        # f(x:T) -> T
  (UPat((Ops.SHL, Ops.SHR), name="x"), _shift),                                                   # x:int << n:int -> x's dtype
  (UPat(Ops.LDEXP, name="x"), _ldexp),                                                            # x:float * 2**n:int32 -> x's dtype
  (UPat(Ops.MULACC, src=(UPat(), UPat(), UPat()), name="x"), lambda x: _same(x, *x.src)),          # a*b+c, all T
  (UPat(Ops.CAST, src=(UPat(),), name="x"), lambda x: x.dtype != dtypes.void),                   # C conversion
  (UPat(Ops.BITCAST, src=(UPat(),), name="x"), _bitcast),                                          # same size reinterpret
])

spec_tensor = spec_alu + PatternMatcher([
  (UPat(Ops.CONST, src=(UPat(Ops.DEVICE),), name="x"), _const_ok),                                # a scalar on a device
  (UPat(Ops.CONST, src=(), name="x"), _const_ok),
  (UPat(Ops.DEVICE, src=(), name="x"), lambda x: isinstance(x.arg, str) or (isinstance(x.arg, tuple) and all(isinstance(d, str) for d in x.arg))),
  (UPat(Ops.UNIQUE, src=(), name="x"), lambda x: isinstance(x.arg, int)),
  (UPat(Ops.BUFFER, src=(UPat(Ops.UNIQUE), UPat(Ops.DEVICE)), name="x"), lambda x: isinstance(x.arg, int) and x.arg >= 0),
  (UPat(Ops.RESHAPE, src=(UPat.var("s"),), name="x"),
   lambda x, s: isinstance(x.arg, tuple) and _same(x, s) and (not all_int(x.arg) or prod(x.arg) == s.size)),  # same element count
  (UPat(Ops.PERMUTE, src=(UPat.var("s"),), name="x"), lambda x, s: sorted(x.arg) == list(range(len(s.shape))) and _same(x, s)),
  (UPat(Ops.EXPAND, src=(UPat.var("s"),), name="x"),
   lambda x, s: len(x.arg) == len(s.shape) and all(a == b or b == 1 for a, b in zip(x.arg, s.shape)) and _same(x, s)),  # 1 -> n only
  (UPat(Ops.PAD, src=(UPat.var("s"),), name="x"),
   lambda x, s: len(x.arg) == len(s.shape) and all(b >= 0 and a >= 0 for b, a in x.arg) and _same(x, s)),
  (UPat(Ops.SHRINK, src=(UPat.var("s"),), name="x"),
   lambda x, s: len(x.arg) == len(s.shape) and all(0 <= b <= e <= n for (b, e), n in zip(x.arg, s.shape)) and _same(x, s)),
  (UPat(Ops.FLIP, src=(UPat.var("s"),), name="x"), lambda x, s: len(x.arg) == len(s.shape) and _same(x, s)),
  (UPat(Ops.REDUCE_AXIS, src=(UPat.var("s"),), name="x"),
   lambda x, s: x.arg[0] in GroupOp.Reduce and all(0 <= a < len(s.shape) for a in x.arg[1]) and _same(x, s)),
  (UPat((Ops.CONTIGUOUS, Ops.DETACH), src=(UPat.var("s"),), name="x"), lambda x, s: _same(x, s)),
  (UPat(Ops.COPY, src=(UPat.var("s"), UPat(Ops.DEVICE)), name="x"), lambda x, s: _same(x, s)),
  (UPat(Ops.ASSIGN, src=(UPat.var("t"), UPat.var("v")), name="x"), lambda x, t, v: _same(x, t, v)),
  (UPat(Ops.DEFINE_VAR, src=(), name="x"), lambda x: dtypes.is_int(x.dtype) and x.arg[1] <= x.arg[2]),
  (UPat((Ops.SINK, Ops.KERNEL, Ops.NOOP, Ops.CUSTOM)), lambda: True),
  (UPat(Ops.AFTER, src=(UPat.var("s"), UPat(Ops.KERNEL)), name="x"), lambda x, s: _same(x, s)),  # a custom kernel's output
])

def _index(x: UOp, buf: UOp, idx: UOp) -> bool:
  gate_ok = len(x.src) == 2 or (len(x.src) == 3 and x.src[2].dtype.scalar() == dtypes.bool)
  return gate_ok and _ptr(buf) and buf.op in GroupOp.Defines and dtypes.is_int(idx.dtype) and _ptr(x) and x.dtype.base == buf.dtype.base
def _load(x: UOp, p: UOp) -> bool:
  return isinstance(p.dtype, PtrDType) and x.dtype.scalar() == p.dtype.base.scalar()
def _store(x: UOp, p: UOp, v: UOp) -> bool:
  return x.dtype == dtypes.void and isinstance(p.dtype, PtrDType) and v.dtype.scalar() == p.dtype.base.scalar()
def _gep(x: UOp, v: UOp) -> bool:
  return isinstance(x.arg, tuple) and all(0 <= i < v.dtype.vcount for i in x.arg) and x.dtype == v.dtype.scalar().vec(len(x.arg))
def _range(x: UOp, end: UOp) -> bool: return dtypes.is_int(x.dtype) and end.dtype == x.dtype and isinstance(x.arg, tuple)

spec_kernel = spec_alu + PatternMatcher([
  (UPat(Ops.CONST, src=(), name="x"), _const_ok),                                                # a scalar constant, arg of dtype's type
  (UPat(Ops.DEFINE_GLOBAL, src=(), name="x"), lambda x: _ptr(x, AddrSpace.GLOBAL) and isinstance(x.arg, int)),  # slot number
  (UPat(Ops.DEFINE_LOCAL, src=(), name="x"), lambda x: _ptr(x, AddrSpace.LOCAL)),
  (UPat(Ops.DEFINE_REG, src=(), name="x"), lambda x: _ptr(x, AddrSpace.REG)),
  (UPat(Ops.DEFINE_VAR, src=(), name="x"),
   lambda x: dtypes.is_int(x.dtype) and isinstance(x.arg, tuple) and len(x.arg) == 3 and x.arg[1] <= x.arg[2]),  # (name, min, max)
  (UPat(Ops.SPECIAL, src=(UPat.var("end"),), name="x"), lambda x, end: dtypes.is_int(x.dtype) and dtypes.is_int(end.dtype) and isinstance(x.arg, str)),
  (UPat(Ops.RANGE, src=(UPat.var("end"),), name="x"), _range),                                   # int loop index, one src: its end
  (UPat(Ops.END, src=(UPat(Ops.RANGE),), name="x", allow_any_len=True), lambda x: x.dtype == dtypes.void),
  (UPat(Ops.END, src=(UPat(), UPat(Ops.RANGE)), name="x", allow_any_len=True),   # a hand-written kernel's END(body, *ranges)
   lambda x: x.dtype == dtypes.void and all(r.op is Ops.RANGE for r in x.src[1:])),
  (UPat(Ops.REDUCE, src=(UPat.var("v"),), name="x", allow_any_len=True),
   lambda x, v: _same(x, v) and x.arg in GroupOp.Reduce and all(r.op is Ops.RANGE for r in x.src[1:])),
  (UPat(Ops.INDEX, src=(UPat.var("buf"), UPat.var("idx")), name="x", allow_any_len=True), _index),  # DEFINE_*[int (, bool gate)]
  (UPat(Ops.LOAD, src=(UPat.var("p"),), name="x", allow_any_len=True), _load),                    # element of the pointer
  (UPat(Ops.STORE, src=(UPat.var("p"), UPat.var("v")), name="x", allow_any_len=True), _store),     # void, value of the pointer's type
  (UPat(Ops.BARRIER, name="x"), lambda x: x.dtype == dtypes.void),
  (UPat(Ops.PREFETCH, src=(UPat(Ops.INDEX),), name="x"), lambda x: x.dtype == dtypes.void),       # a cache hint for an address
  (UPat(Ops.IF, src=(UPat.var("c"),), name="x", allow_any_len=True), lambda x, c: x.dtype == dtypes.void and c.dtype == dtypes.bool),
  (UPat(Ops.ENDIF, src=(UPat(Ops.IF),), name="x"), lambda x: x.dtype == dtypes.void),
  (UPat(Ops.VECTORIZE, name="x"), lambda x: len(x.src) > 0 and x.dtype == x.src[0].dtype.vec(len(x.src)) and all(s.dtype == x.src[0].dtype for s in x.src)),
  (UPat(Ops.GEP, src=(UPat.var("v"),), name="x"), _gep),
  (UPat(Ops.VCONST, src=(), name="x"), lambda x: isinstance(x.arg, tuple) and len(x.arg) == x.dtype.count),
  (UPat((Ops.WMMA, Ops.SINK, Ops.NOOP, Ops.CUSTOM)), lambda: True),
  # program level
  (UPat(Ops.PROGRAM, src=(UPat(Ops.SINK), UPat(Ops.DEVICE)), allow_any_len=True), lambda: True),
  (UPat(Ops.DEVICE, src=(), name="x"), lambda x: isinstance(x.arg, str)),
  (UPat((Ops.LINEAR, Ops.SOURCE, Ops.BINARY)), lambda: True),
])

SPEC_NAMES: dict[int, str] = {id(spec_tensor): "spec_tensor", id(spec_kernel): "spec_kernel", id(spec_alu): "spec_alu"}

def _describe(u: UOp) -> str:
  srcs = ", ".join(f"{s.op.name}:{s.dtype}" for s in u.src)
  return f"{u.op} dtype={u.dtype} arg={u.arg!r} src=({srcs})"
def _check(u: UOp, spec: PatternMatcher) -> None:
  if spec.rewrite(u) is True: return
  name = SPEC_NAMES.get(id(spec), "the spec")
  # find the rule that decided, for the message (the slow path runs only on failure)
  for p, fxn, _, has_ctx, names in spec.pdict.get(u.op, []):
    for m in p.match(u, {}):
      kwargs = m if names is None else {k: v for k, v in m.items() if k in names}
      ret = fxn(ctx=None, **kwargs) if has_ctx else fxn(**kwargs)
      if ret is False:
        rule = "" if fxn.__name__ == "<lambda>" else f" ({fxn.__name__})"
        raise SpecError(f"{name}: {_describe(u)} breaks the rule at {_location(fxn)}{rule}")
      if ret is True: return
  raise SpecError(f"{name}: no rule accepts {_describe(u)}; {u.op} with these sources and dtype is not valid at this level (docs/ir.md)")

def type_verify(uops: list[UOp] | UOp, spec: PatternMatcher = spec_kernel) -> None:
  """Check every node (a graph given by its root, or a linearized list) against `spec`; raise SpecError on the first bad one."""
  for u in (uops.toposort() if isinstance(uops, UOp) else uops): _check(u, spec)

def verify_if_enabled(u: UOp, spec: PatternMatcher = spec_kernel) -> UOp:
  """type_verify(u, spec) when SPEC=1; returns `u` so a pass can end with `return verify_if_enabled(ret, spec_kernel)`."""
  if SPEC: type_verify(u, spec)
  return u
