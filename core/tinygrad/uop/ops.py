"""UOp: the immutable, hash-consed node of every graph in tinygrad (tensor graphs, kernels, programs)."""
from __future__ import annotations
import math, weakref, functools, operator, re, keyword
from _weakref import _remove_dead_weakref   # type: ignore[attr-defined]
from enum import Enum, auto
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Sequence, SupportsIndex
from tinygrad.uop import Ops, GroupOp
from tinygrad.dtype import DType, PtrDType, AddrSpace, dtypes, ConstType, truncate_int, truncate_float, least_upper_dtype
from tinygrad.helpers import prod, all_int, to_function_name, EGRAPH, EGRAPH_BUDGET

class AxisType(Enum):
  """What a RANGE loops over; the optimizer and renderers decide how to map each kind."""
  GLOBAL = auto(); LOOP = auto(); LOCAL = auto(); REDUCE = auto(); UPCAST = auto(); UNROLL = auto(); GROUP_REDUCE = auto(); THREAD = auto()
  DEVICE = auto()   # the devices of a multi-device tensor (UOp._shard's piece index is an expression of such a range)

@dataclass(frozen=True)
class KernelInfo:
  """A kernel SINK's arg (public tinygrad's): the kernel's `name`, and `opts_to_apply`, the optimization actions
  (codegen.opt.Opt) to apply instead of the heuristics' (None: the heuristics or BEAM; (): none). A SINK whose arg is a
  plain string is named by it."""
  name: str = "test"
  opts_to_apply: tuple | None = None
  @property
  def function_name(self) -> str: return to_function_name(self.name)

def kernel_name(sink: UOp) -> str:
  """The function name of the kernel a SINK describes: its KernelInfo's (made a valid identifier), its string arg, else "kernel"."""
  return sink.arg.function_name if isinstance(sink.arg, KernelInfo) else sink.arg if isinstance(sink.arg, str) else "kernel"

_CONST = Ops.CONST   # (a module name: an `Ops.X` read costs ~0.1 us on CPython 3.11, see _DEVICE_RULES; this runs for every node)
def _argkey(op: Ops, arg: Any) -> Any:
  # 0.0 == -0.0 and 1 == 1.0 == True in Python: keep such consts apart in the cache
  if op is _CONST:
    if isinstance(arg, float) and arg != arg: return ("nan", float)  # every NaN is one const (nan != nan breaks the lookup)
    return (arg, type(arg), math.copysign(1.0, arg) if isinstance(arg, float) else 0)
  return arg

class _CacheRef(weakref.ref):
  __slots__ = ("key",)
  key: tuple
_UCACHE: dict[tuple, weakref.ReferenceType[UOp]] = {}
# (bound as defaults: nodes a module-level cache holds are freed at interpreter exit, after this module's globals are gone)
def _drop_cached(ref: _CacheRef, remove: Callable = _remove_dead_weakref, cache: dict = _UCACHE) -> None: remove(cache, ref.key)
class UOpMetaClass(type):
  # key -> a weak reference to the one live UOp with it, whose callback drops the entry when the node is freed (only if it
  # is still that dead reference: atomic, as WeakValueDictionary does). A plain dict: WeakValueDictionary's Python-level
  # get/set made building a node ~2x slower (codegen builds hundreds of thousands)
  ucache = _UCACHE
  def __call__(cls, op: Ops, dtype: DType = dtypes.void, src: tuple[UOp, ...] = (), arg: Any = None, tag: Any = None) -> UOp:
    key = (op, dtype, src, _argkey(op, arg) if op is _CONST else arg, tag)   # (the call only for a CONST: ~0.07 us a node)
    try:
      ref = UOpMetaClass.ucache.get(key)
    except TypeError as e: raise TypeError(f"UOp arg must be hashable, got {arg!r} for {op}") from e
    if ref is not None and (ret := ref()) is not None: return ret
    # a node over a multi-device UOp (a MULTI, or a DEVICE of several devices) is built by the lowering registered for
    # it (tinygrad.multi: one node per device); checked only once such a UOp exists, so single-device graphs pay nothing
    if _multi_live and op is not Ops.MULTI and op is not Ops.SINK and \
       any(s.op is Ops.MULTI or (s.op is Ops.DEVICE and type(s.arg) is tuple) for s in src):
      return _multi_lowering(op, dtype, src, arg, tag)  # type: ignore[misc]
    if not _multi_live and (op is Ops.MULTI or (op is Ops.DEVICE and type(arg) is tuple)): _go_multi()
    # the fields are set through their slot descriptors: a Python __init__ of six object.__setattr__ calls cost twice as much
    ret = object.__new__(cls)   # type: ignore[arg-type]
    set_op, set_dtype, set_src, set_arg, set_tag = _UOP_SLOTS
    set_op(ret, op)
    set_dtype(ret, dtype)
    set_src(ret, src)
    set_arg(ret, arg)
    set_tag(ret, tag)
    ref = _CacheRef(ret, _drop_cached)
    ref.key = key
    # two threads building one node must get one object (`is` is equality): setdefault and _remove_dead_weakref are each
    # atomic, so the first insert wins and an entry is only ever dropped while its node is dead
    cache = UOpMetaClass.ucache
    while (cur := cache.setdefault(key, ref)) is not ref:
      if (live := cur()) is not None: return live
      _remove_dead_weakref(cache, key)
    return ret

# The IR does not know device buffers either: tinygrad.engine.buffers registers how UOp.buffer finds one
_buffer_lookup: Callable[[UOp], Any] | None = None
_buffer_reduce: Callable[[UOp, int], Any] | None = None
_buffer_fill: Callable[[UOp, Any], None] | None = None
def register_buffer_lookup(fn: Callable[[UOp], Any], reduce: Callable[[UOp, int], Any] | None = None,
                           fill: Callable[[UOp, Any], None] | None = None) -> None:
  """`fn(buffer_node)` gives a BUFFER's device Buffer; `reduce(buffer_node, protocol)` is its pickle (and copy.deepcopy)
  form, __reduce_ex__'s, whose state (its bytes) `fill(buffer_node, state)` copies into the loaded node's Buffer."""
  global _buffer_lookup, _buffer_reduce, _buffer_fill
  _buffer_lookup, _buffer_reduce, _buffer_fill = fn, reduce, fill

# The IR does not know multi-device tensors: tinygrad.multi registers how a node over one is built (register_multi_lowering)
_multi_lowering: Callable[..., UOp] | None = None
_multi_shard: Callable[..., UOp] | None = None
_multi_shard_by: Callable[..., UOp] | None = None
_multi_live = False
def register_multi_lowering(fn: Callable[..., UOp], shard: Callable[..., UOp], shard_by: Callable[..., UOp]) -> None:
  """Build every later node over a MULTI or a DEVICE tuple with `fn(op, dtype, src, arg, tag)`, UOp.shard with
  `shard(uop, devices, axis)` and UOp._shard with `shard_by(uop, axis, piece)` (set by tinygrad.multi)."""
  global _multi_lowering, _multi_shard, _multi_shard_by
  _multi_lowering, _multi_shard, _multi_shard_by = fn, shard, shard_by
def _go_multi() -> None:
  global _multi_live
  if _multi_lowering is None:
    raise RuntimeError("a multi-device UOp (MULTI, or a DEVICE of several devices) was built before its lowering was registered: "
                       "import tinygrad.multi (import tinygrad does) first")
  _multi_live = True

_NO_RANGES: frozenset = frozenset()

def _fill_up(u: UOp, key: str, fn: Callable[[UOp], Any], leaves: frozenset = frozenset()) -> Any:
  """u.__dict__[key], set to fn(node) on u and on every node below it without one, sources first (fn reads its sources'
  values; a node whose op is in `leaves` reads none). Iterative, so a deep graph never recurses; a node is computed once
  and pushed at most once per user, with no visited set or gate call per node (a gated toposort cost ~a tenth of building
  a small op's graph)."""
  stack = [u]
  while stack:
    n = stack[-1]
    if key in n.__dict__:
      stack.pop()
      continue
    top = len(stack)
    if n.op not in leaves: stack.extend(s for s in n.src if key not in s.__dict__)
    if len(stack) == top: n.__dict__[key] = fn(stack.pop())
  return u.__dict__[key]

def _range_set(n: UOp) -> frozenset:
  acc = _NO_RANGES
  for x in (s.__dict__["_rs"] for s in n.src):
    if x and not x <= acc: acc = x if not acc else acc | x   # (most nodes share their sources' set)
  return acc | {n} if n.op is Ops.RANGE else acc

def _rebuild(node: UOp, new_src: tuple[UOp, ...]) -> UOp:
  return node if new_src == node.src else UOp(node.op, node.dtype, new_src, node.arg, node.tag)

def substitute_all(roots: Sequence[UOp], dvars: dict[UOp, UOp]) -> list[UOp]:
  """[r.substitute(dvars) for r in roots], with one memo: a node the graphs share is visited once (a realize rewrites every
  live tensor's graph, and those share most of their nodes), and nothing below a replaced node is visited."""
  done: dict[UOp, UOp] = dict(dvars)
  for r in roots:
    if r in done: continue
    stack: list[tuple[UOp, bool]] = [(r, False)]
    while stack:
      node, visited = stack.pop()
      if node in done: continue
      if visited: done[node] = _rebuild(node, tuple(map(done.__getitem__, node.src)))
      else:
        stack.append((node, True))
        stack.extend((s, False) for s in node.src if s not in done)
  return [done[r] for r in roots]

_REACH_MAX = 64   # (more buffers than this: a model's forward graph, which the callers walk anyway)
def buffers_reached(u: UOp) -> frozenset[int] | None:
  """The ids of the BUFFER nodes u's graph reads, or None for more than _REACH_MAX of them: cached on each node, so a node
  is visited once in its life. A realize asks which live lazy graphs can read what it overwrites (or hold what it
  computed): walking each one every time made building a model quadratic (each layer's random init is a realize, and
  walked every earlier layer's lazy init graph: 80 nn.Linear took 12 s). Ids, not the nodes: a BUFFER's set holding the
  node itself would be a reference cycle, and its memory freed only by the garbage collector (the graph keeps every
  buffer it reads alive, so an id in a live graph's set names that buffer)."""
  if (r := u.__dict__.get("_reach", False)) is not False: return r
  stack = [u]
  while stack:
    n = stack[-1]
    d = n.__dict__
    if "_reach" in d:
      stack.pop()
      continue
    if n.op is Ops.BUFFER:
      d["_reach"] = frozenset((id(n),))
      stack.pop()
      continue
    if pend := [s for s in n.src if "_reach" not in s.__dict__]:
      stack.extend(pend)
      continue
    acc: frozenset[int] | None = frozenset()
    for s in n.src:
      if (sr := s.__dict__["_reach"]) is None:
        acc = None
        break
      if sr is acc or sr <= acc: continue
      acc = sr if acc <= sr else acc | sr
    d["_reach"] = acc if acc is None or len(acc) <= _REACH_MAX else None
    stack.pop()
  return u.__dict__["_reach"]

def _c_idiv(a: int, b: int) -> int: return abs(a) // abs(b) * (1 if (a >= 0) == (b >= 0) else -1)
def _c_mod(a: int, b: int) -> int: return a - _c_idiv(a, b) * b

class UOp(metaclass=UOpMetaClass):
  """An immutable node: `op`, `dtype`, sources `src`, and an `arg`. Building an equal UOp returns the same object, so `is` is equality."""
  __slots__ = ("op", "dtype", "src", "arg", "tag", "__weakref__", "__dict__")
  op: Ops
  dtype: DType
  src: tuple[UOp, ...]
  arg: Any
  tag: Any
  def __init__(self, op: Ops, dtype: DType = dtypes.void, src: tuple[UOp, ...] = (), arg: Any = None, tag: Any = None):
    object.__setattr__(self, "op", op)
    object.__setattr__(self, "dtype", dtype)
    object.__setattr__(self, "src", src)
    object.__setattr__(self, "arg", arg)
    object.__setattr__(self, "tag", tag)
  def __setattr__(self, name: str, value: Any) -> None: raise AttributeError("UOp is immutable")
  def __reduce__(self): return UOp, (self.op, self.dtype, self.src, self.arg, self.tag)
  def __reduce_ex__(self, protocol: SupportsIndex):
    # a BUFFER carries its data (its Buffer lives in __dict__, which __reduce__'s fields drop) and a new UNIQUE when loaded
    if self.op is Ops.BUFFER and _buffer_reduce is not None: return _buffer_reduce(self, int(protocol))
    return self.__reduce__()
  def __setstate__(self, state: Any) -> None:
    # (only a BUFFER's reduce has a state: its bytes; a state, not an argument, so that pickle's memo does not hold them)
    if _buffer_fill is None: raise RuntimeError("no buffer lookup registered (import tinygrad.engine.buffers)")
    _buffer_fill(self, state)
  def replace(self, **kwargs: Any) -> UOp:
    """A UOp equal to this one with the given fields changed."""
    return UOp(kwargs.get("op", self.op), kwargs.get("dtype", self.dtype), kwargs.get("src", self.src), kwargs.get("arg", self.arg), kwargs.get("tag", self.tag))
  def __repr__(self) -> str:
    return f"UOp({self.op}, {self.dtype}, arg={self.arg!r}{', tag='+repr(self.tag) if self.tag is not None else ''}, src=({', '.join(str(s.op) for s in self.src)}))"
  def __bool__(self) -> bool:
    # a condition over bound variables is decided by their values (`if start_pos > 0:`), as in public tinygrad
    if self.dtype.scalar() == dtypes.bool and self.vmin == self.vmax: return bool(self.vmin)
    if self.dtype.scalar() == dtypes.bool and all_bound(self):
      ret = bool(sym_infer(self, {}))
      # a TinyJit capture replays this branch for other values: record the condition (>= 0 while it holds) for it to check
      # (sort's `if shape[d] <= 1` taken at n=1 replayed the identity, unsorted, for n=5)
      if assumed is not None: assumed.append(self.where(UOp.const(dtypes.int, 0), UOp.const(dtypes.int, -1)) if ret else
                                             self.where(UOp.const(dtypes.int, -1), UOp.const(dtypes.int, 0)))
      return ret
    raise TypeError(f"the truth value of a UOp is ambiguous ({self.render()}); bind its variables, or use .vmin/.vmax or simplify")

  # ---- graph helpers ----
  def toposort(self, gate: Callable[[UOp], bool] | None = None) -> dict[UOp, None]:
    """Every node reachable from this one, sources before users (iterative: no recursion limit). `gate(x)` False stops descent below x."""
    ret: dict[UOp, None] = {}
    stack: list[tuple[UOp, bool]] = [(self, False)]
    while stack:
      node, visited = stack.pop()
      if node in ret: continue
      if visited: ret[node] = None
      else:
        stack.append((node, True))
        if gate is None or gate(node):
          for s in reversed(node.src):
            if s not in ret: stack.append((s, False))
    return ret
  @property
  def parents(self) -> dict[UOp, None]: return self.toposort()
  @property
  def range_set(self) -> frozenset[UOp]:
    """The RANGE nodes this graph reads, memoised per node: `r in x.range_set` asks what `r in x.toposort()` did, without
    walking x's graph each time (the simplifier and the heuristics ask it of every lane of an upcast kernel)."""
    rs = self.__dict__.get("_rs")
    if rs is not None: return rs
    return _fill_up(self, "_rs", _range_set)
  def sink(*srcs: UOp, arg: Any = None) -> UOp: return UOp(Ops.SINK, dtypes.void, srcs, arg)   # x.sink(y) or UOp.sink(x, y, arg=...)
  def substitute(self, dvars: dict[UOp, UOp]) -> UOp:
    """This graph with every node in `dvars` replaced by its value."""
    return substitute_all((self,), dvars)[0] if dvars else self
  def substitute_each(self, x: UOp, vals: Sequence[UOp]) -> list[UOp]:
    """[self.substitute({x: v}) for v in vals], walking the graph once: each value rebuilds only the nodes above `x`."""
    above: dict[UOp, None] = {x: None}   # x and the nodes that depend on it, sources first
    for n in self.toposort():
      if any(s in above for s in n.src): above[n] = None
    if self not in above: return [self for _ in vals]
    order = list(above)[1:]
    out = []
    for v in vals:
      done: dict[UOp, UOp] = {x: v}
      for n in order: done[n] = _rebuild(n, tuple([done.get(s, s) for s in n.src]))
      out.append(done[self])
    return out
  def simplify(self) -> UOp:
    """This expression rewritten by the symbolic simplifier (e-graph when EGRAPH=1)."""
    from tinygrad.uop.symbolic import simplify
    return simplify(self)
  def ssimplify(self) -> UOp | ConstType:
    ret = self.simplify()
    return ret.arg if ret.op is Ops.CONST else ret
  def render(self) -> str:
    """A readable expression for this graph (((x*4)+y)//4)."""
    out: dict[UOp, str] = {}
    for n in self.toposort(): out[n] = _render_one(n, [out[s] for s in n.src])
    return out[self]

  # ---- constructors ----
  @staticmethod
  def const(dtype: DType | ConstType, b: ConstType | DType | None = None, src: tuple[UOp, ...] = ()) -> UOp:
    """A constant of `dtype` (value converted as the device would store it). Public tinygrad's order, UOp.const(value) or
    UOp.const(value, dtype), is taken too (the dtype then defaults to the value's)."""
    if not isinstance(dtype, DType): dtype, b = (b if isinstance(b, DType) else dtypes.from_py(dtype)), dtype
    if isinstance(b, UOp): return b
    if dtype.count > 1: return UOp(Ops.VECTORIZE, dtype, (UOp.const(dtype.scalar(), b, src),) * dtype.count)  # type: ignore[arg-type]
    return UOp(Ops.CONST, dtype, src, dtypes.as_const(b, dtype))  # type: ignore[arg-type]
  def const_like(self, b: ConstType) -> UOp: return UOp.const(self.dtype, b)
  @staticmethod
  def variable(name: str, min_val: int, max_val: int, dtype: DType = dtypes.index) -> UOp:
    """A symbolic integer variable with inclusive bounds."""
    if min_val > max_val: raise ValueError(f"variable {name}: min {min_val} > max {max_val}")
    return UOp(Ops.DEFINE_VAR, dtype, arg=(name, min_val, max_val))
  def bind(self, val: int) -> UOp:
    """This variable with a value: a BIND, usable in Tensor shapes (the value is checked against the variable's bounds)."""
    if self.op is not Ops.DEFINE_VAR: raise TypeError(f"bind needs a variable (DEFINE_VAR), got {self.op}")
    name, lo, hi = self.arg
    # an integer: a python int or what converts as one (operator.index: numpy's np.int64 from a shape or an argmax), never a
    # bool or a float (3.0 is not rounded for you)
    try:
      if isinstance(val, bool): raise TypeError
      val = operator.index(val)
    except TypeError: raise TypeError(f"variable {name}: bind needs an int (or a numpy integer), got {type(val).__name__} {val!r}") from None
    if not lo <= val <= hi: raise ValueError(f"variable {name}: value {val} is outside its range [{lo}, {hi}]; bind a value in range or widen it")
    return UOp(Ops.BIND, self.dtype, (self, UOp.const(self.dtype, val)))
  def unbind(self) -> tuple[UOp, int]:
    """(variable, value) of a BIND."""
    if self.op is not Ops.BIND: raise TypeError(f"unbind needs a bound variable (BIND), got {self.op}")
    return self.src[0], self.src[1].arg
  def unbind_all(self) -> tuple[UOp, dict[UOp, int]]:
    """This graph with every bound variable (a node, or in a movement op's shape argument) replaced by its variable, and
    {variable: value}."""
    vals: dict[UOp, int] = {}
    def unbind(a: Any) -> Any:
      if isinstance(a, tuple): return tuple(unbind(x) for x in a)
      if not isinstance(a, UOp) or not sym_vars(a): return a
      binds = sym_vars(a)
      vals.update({b.src[0]: b.src[1].arg for b in binds})
      return a.substitute({b: b.src[0] for b in binds})
    done: dict[UOp, UOp] = {}
    for n in self.toposort(gate=lambda y: y.op is not Ops.BIND):
      done[n] = unbind(n) if n.op is Ops.BIND else UOp(n.op, n.dtype, tuple(done[x] for x in n.src),
                                                        unbind(n.arg) if n.op in GroupOp.Movement else n.arg, n.tag)
    return done[self], vals
  @property
  def val(self) -> int:
    """The value of a bound variable."""
    return self.unbind()[1]
  @property
  def expr(self) -> str:
    """The name of a variable (bound or not)."""
    v = self.src[0] if self.op is Ops.BIND else self
    if v.op is not Ops.DEFINE_VAR: raise TypeError(f"expr needs a variable, got {self.op}")
    return v.arg[0]
  @staticmethod
  def range(end: int | UOp, axis: int, axis_type: AxisType = AxisType.LOOP, dtype: DType = dtypes.index) -> UOp:
    return UOp(Ops.RANGE, dtype, (UOp.const(dtype, end) if isinstance(end, int) else end,), (axis, axis_type))
  def alu(self, op: Ops, *src: UOp) -> UOp:
    dtype = dtypes.bool.vec(self.dtype.count) if op in GroupOp.Comparison else (src[-1].dtype if op is Ops.WHERE else self.dtype)
    return UOp(op, dtype, (self,) + src)
  def cast(self, dtype: DType) -> UOp: return self if self.dtype == dtype else UOp(Ops.CAST, dtype, (self,))
  def bitcast(self, dtype: DType) -> UOp: return self if self.dtype == dtype else UOp(Ops.BITCAST, dtype, (self,))
  def where(self, x: UOp | ConstType, y: UOp | ConstType) -> UOp:
    # (two constants under a vector condition are vectors: a lane-wise select, codegen/decompositions.py on vectors)
    xu = x if isinstance(x, UOp) else (y.const_like(x) if isinstance(y, UOp) else UOp.const(dtypes.from_py(x).vec(self.dtype.count), x))
    yu = y if isinstance(y, UOp) else xu.const_like(y)
    return UOp(Ops.WHERE, xu.dtype, (self, xu, yu))
  def index(self, idx: UOp, gate: UOp | None = None) -> UOp: return UOp(Ops.INDEX, self.dtype, (self, idx) if gate is None else (self, idx, gate))
  def load(self, *src: UOp, dtype: DType | None = None) -> UOp:
    return UOp(Ops.LOAD, dtype if dtype is not None else (self.dtype.base if isinstance(self.dtype, PtrDType) else self.dtype), (self,) + src)
  def store(self, val: UOp | ConstType) -> UOp:
    return UOp(Ops.STORE, dtypes.void, (self, val if isinstance(val, UOp) else UOp.const(self.dtype.base if isinstance(self.dtype, PtrDType) else self.dtype, val)))
  def gep(self, i: int | tuple[int, ...]) -> UOp:
    idx = (i,) if isinstance(i, int) else i
    if self.dtype.vcount == 1 and idx == (0,): return self
    return UOp(Ops.GEP, self.dtype.scalar().vec(len(idx)), (self,), idx)

  # ---- python operators build ALU ops ----
  def ufix(self, x: UOp | ConstType) -> UOp:
    if isinstance(x, UOp): return x
    dt = self.dtype
    if isinstance(x, float) and not dtypes.is_float(dt): dt = dtypes.default_float
    return UOp.const(dt.scalar().vec(self.dtype.count) if dt.count == 1 else dt, x)
  def _binop(self, op: Ops, x: UOp | ConstType, reverse: bool) -> UOp:
    if not isinstance(x, (UOp, int, float)) and isinstance(getattr(x, "uop", None), UOp): return NotImplemented   # a Tensor: its reflected operator builds the op
    other = self.ufix(x)
    # a Python number goes second in a commutative op (2*i is i*2, 3+i is i+3): a size written either way is one UOp, so
    # shapes compare equal (a cat's 2*i+3 rows is the user's 2*i+3) and `!=`, identity here, is False for them, as public
    # tinygrad's symbolic `!=` (it simplifies both sides) is; they were two UOps
    if reverse and op in GroupOp.Commutative and not isinstance(x, UOp): reverse = False
    a = self
    # an int and a float: the float's dtype, as Python's int*float. The op took self's dtype: a bound Variable n=3 gave
    # n*0.5 -> 1 and n+0.5 -> 3 (an int op over a float constant), BatchNorm's mom*n a 0 running-variance update
    if a.dtype is not other.dtype and not isinstance(a.dtype, PtrDType) and not isinstance(other.dtype, PtrDType) \
       and dtypes.is_float(a.dtype) != dtypes.is_float(other.dtype) and a.dtype.count == other.dtype.count:
      if op in (Ops.IDIV, Ops.MOD, Ops.AND, Ops.OR, Ops.XOR, Ops.SHL, Ops.SHR): raise TypeError(f"{op.name} of {a.dtype} and {other.dtype}: cast the float to an int first")
      a, other = (a.cast(other.dtype), other) if dtypes.is_float(other.dtype) else (a, other.cast(a.dtype))
    return other.alu(op, a) if reverse else a.alu(op, other)
  def __add__(self, x): return self._binop(Ops.ADD, x, False)
  def __radd__(self, x): return self._binop(Ops.ADD, x, True)
  def __sub__(self, x): return self._binop(Ops.SUB, x, False)
  def __rsub__(self, x): return self._binop(Ops.SUB, x, True)
  def __mul__(self, x): return self._binop(Ops.MUL, x, False)
  def __rmul__(self, x): return self._binop(Ops.MUL, x, True)
  def __floordiv__(self, x): return self._binop(Ops.IDIV, x, False)   # C (truncating) division on ints
  def __rfloordiv__(self, x): return self._binop(Ops.IDIV, x, True)
  def _truediv(self, x: UOp | ConstType, reverse: bool) -> UOp:
    # Python's int/int is a float: a symbolic size over an int (interpolate's n/out) was an FDIV of dtype int, which ran as
    # an integer division (3/4 gave 0), so ints and bools are cast to the default float first
    if not isinstance(x, (UOp, int, float)): return self._binop(Ops.FDIV, x, reverse)   # a Tensor: its reflected operator
    fl = lambda u: u if dtypes.is_float(u.dtype) else u.cast(dtypes.default_float.vec(u.dtype.count) if u.dtype.count > 1 else dtypes.default_float)
    a = fl(self)
    b = fl(a.ufix(x))
    if a.dtype != b.dtype: a, b = (a.cast(b.dtype), b) if b.dtype.itemsize > a.dtype.itemsize else (a, b.cast(a.dtype))
    return b.alu(Ops.FDIV, a) if reverse else a.alu(Ops.FDIV, b)
  def __truediv__(self, x): return self._truediv(x, False)
  def __rtruediv__(self, x): return self._truediv(x, True)
  def __mod__(self, x): return self._binop(Ops.MOD, x, False)          # C remainder (sign of the dividend)
  def __rmod__(self, x): return self._binop(Ops.MOD, x, True)
  def __and__(self, x): return self._binop(Ops.AND, x, False)
  def __rand__(self, x): return self._binop(Ops.AND, x, True)
  def __or__(self, x): return self._binop(Ops.OR, x, False)
  def __ror__(self, x): return self._binop(Ops.OR, x, True)
  def __xor__(self, x): return self._binop(Ops.XOR, x, False)
  def __rxor__(self, x): return self._binop(Ops.XOR, x, True)
  def __lshift__(self, x): return self._binop(Ops.SHL, x, False)
  def __rshift__(self, x): return self._binop(Ops.SHR, x, False)
  def __lt__(self, x): return self._binop(Ops.CMPLT, x, False)
  def __gt__(self, x): return self._binop(Ops.CMPLT, x, True)
  def __le__(self, x): return self._binop(Ops.CMPLT, x, True).logical_not()
  def __ge__(self, x): return self._binop(Ops.CMPLT, x, False).logical_not()
  def __neg__(self): return UOp(Ops.NEG, self.dtype, (self,))
  def __invert__(self): return self.logical_not() if dtypes.is_bool(self.dtype) else self ^ -1
  def logical_not(self) -> UOp: return self.ne(True)
  def ne(self, x: UOp | ConstType) -> UOp: return self._binop(Ops.CMPNE, x, False)
  def eq(self, x: UOp | ConstType) -> UOp: return self._binop(Ops.CMPEQ, x, False)
  def maximum(self, x: UOp | ConstType) -> UOp: return self._binop(Ops.MAX, x, False)
  def minimum(self, x: UOp | ConstType) -> UOp: return -(-self).maximum(-self.ufix(x))
  def exp2(self) -> UOp: return UOp(Ops.EXP2, self.dtype, (self,))
  def log2(self) -> UOp: return UOp(Ops.LOG2, self.dtype, (self,))
  def sin(self) -> UOp: return UOp(Ops.SIN, self.dtype, (self,))
  def sqrt(self) -> UOp: return UOp(Ops.SQRT, self.dtype, (self,))
  def reciprocal(self) -> UOp: return UOp(Ops.RECIPROCAL, self.dtype, (self,))
  def trunc(self) -> UOp: return UOp(Ops.TRUNC, self.dtype, (self,))
  __hash__ = object.__hash__
  def __eq__(self, x: object) -> bool: return self is x

  # ---- value bounds ----
  @property
  def vmin(self) -> ConstType: return self._min_max[0]
  @property
  def vmax(self) -> ConstType: return self._min_max[1]
  @property
  def _min_max(self) -> tuple[ConstType, ConstType]:
    mm = self.__dict__.get("_mm")
    if mm is not None: return mm
    if all("_mm" in s.__dict__ for s in self.src):   # the usual case in a rewrite: the sources' bounds are known
      mm = self.__dict__["_mm"] = _bounds(self)
      return mm
    return _fill_up(self, "_mm", _bounds)
  def divides(self, v: int) -> UOp | None:
    """This expression divided by `v` when that is exact by construction, else None."""
    if v == 1: return self
    if self.op is Ops.CONST: return self.const_like(self.arg // v) if self.arg % v == 0 else None
    if self.op is Ops.ADD:
      d0, d1 = self.src[0].divides(v), self.src[1].divides(v)
      return d0 + d1 if d0 is not None and d1 is not None else None
    if self.op is Ops.MUL:
      d0 = self.src[0].divides(v)
      if d0 is not None: return d0 * self.src[1]
      d1 = self.src[1].divides(v)
      if d1 is not None: return self.src[0] * d1
    return None
  def const_factor(self) -> int:
    """The largest known integer factor of this expression."""
    if self.op is Ops.CONST: return self.arg
    if self.op is Ops.ADD: return math.gcd(self.src[0].const_factor(), self.src[1].const_factor())
    if self.op is Ops.MUL: return self.src[1].arg if self.src[1].op is Ops.CONST else (self.src[0].arg if self.src[0].op is Ops.CONST else 1)
    return 1

  # ---- tensor-level shape ----
  @property
  def shape(self) -> tuple[int, ...]:
    """The shape of a tensor-level UOp."""
    sh = self.__dict__.get("_shape")
    if sh is not None: return sh
    # (a new node over known sources, as a Tensor op builds it, or one whose shape is its own arg: no walk. A fresh
    # BUFFER's sources, UNIQUE and DEVICE, never have one: the walk over them cost ~4 us of every realize's result)
    if self.op in _OWN_SHAPE or all("_shape" in s.__dict__ for s in self.src): self.__dict__["_shape"] = _shape(self)
    else: _fill_up(self, "_shape", _shape, _OWN_SHAPE)
    return self.__dict__["_shape"]
  @property
  def size(self) -> int: return prod(self.shape)
  # ---- multi-device tensors (built by tinygrad.multi) ----
  @property
  def axis(self) -> int | None:
    """The axis a multi-device tensor (MULTI) is sharded on (a mesh: its first); None when it is replicated or on one device."""
    if self.op is not Ops.MULTI: return None
    return self.arg[0][0] if isinstance(self.arg, tuple) else self.arg
  @property
  def bounds(self) -> tuple[tuple[sint, sint], ...]:
    """The [start, end) of each shard of a multi-device tensor along its sharded axis (a tuple, as public tinygrad's)."""
    if self.op is not Ops.MULTI or not isinstance(self.arg, int): raise ValueError(f"bounds: {self.op} is not a sharded multi-device tensor (axis {self.axis})")
    out: list[tuple[sint, sint]] = []
    for s in self.src: out.append((out[-1][1] if out else 0, ssimplify((out[-1][1] if out else 0) + s.shape[self.arg])))
    return tuple(out)
  def shard(self, devices: tuple[str, ...] | list[str], axis: int | None = None) -> UOp:
    """This tensor-level UOp split over `devices` along `axis` (None: replicated), as Tensor.shard does."""
    if _multi_shard is None: raise RuntimeError("UOp.shard needs tinygrad.multi (import tinygrad does)")
    return _multi_shard(self, devices, axis)
  def copy_to_device(self, device: str | tuple[str, ...]) -> UOp:
    """A copy of this tensor-level UOp on `device` (a tuple: one on each, replicated)."""
    return UOp(Ops.COPY, self.dtype, (self, UOp(Ops.DEVICE, arg=device)))
  def _shard(self, axis: int, piece: UOp) -> UOp:
    """This multi-device tensor split along `axis` too, device i keeping piece `piece`(i): `piece` is an expression of a
    DEVICE range (UOp.range(4, -1, AxisType.DEVICE) // 2 and % 2 shard two axes over a 2 x 2 mesh of 4 devices)."""
    if _multi_shard_by is None: raise RuntimeError("UOp._shard needs tinygrad.multi (import tinygrad does)")
    return _multi_shard_by(self, axis, piece)
  def unshard(self, axis: int | tuple[int, ...], device_range: Any = None) -> UOp:
    """The multi-device tensor itself (_shard already gives it its whole shape); checks that `axis` are its sharded axes.
    A replicated one's copies become the shards of one tensor along `axis` (an empty output for a sharded custom kernel)."""
    axes = {axis} if isinstance(axis, int) else set(axis)
    # a replicated tensor's copies read as the shards of one tensor (public tinygrad builds a sharded empty output so)
    if self.op is Ops.MULTI and self.arg is None and isinstance(axis, int): return UOp(Ops.MULTI, self.dtype, self.src, axis)
    have = {a for a, _ in self.arg} if self.op is Ops.MULTI and isinstance(self.arg, tuple) else {self.axis}
    if axes != have: raise RuntimeError(f"unshard: axes {sorted(axes)} are not the sharded axes {sorted(a for a in have if a is not None)}")
    return self
  def has_buffer_identity(self) -> bool:
    """Whether this is a BUFFER seen through RESHAPEs (for a multi-device tensor: every shard)."""
    if self.op is Ops.MULTI: return all(s.has_buffer_identity() for s in self.src)
    return reshape_base(self).op is Ops.BUFFER
  @property
  def buffer(self) -> Any:
    """The device Buffer of a BUFFER UOp, or of a reshape of one (its elements in the same order: a realized (10, 10) tensor's
    `t.uop.buffer`, as in public tinygrad). The engine registers how it is found: register_buffer_lookup."""
    if _buffer_lookup is None: raise RuntimeError("no buffer lookup registered (import tinygrad.engine.buffers)")
    return _buffer_lookup(reshape_base(self))
  def contiguous_view_offset(self) -> int | None:
    """For a view (RESHAPEs and SHRINKs) of a BUFFER whose elements are one contiguous run of it: where the run starts, in
    elements; None for any other view."""
    chain, u = [], self
    while u.op in (Ops.RESHAPE, Ops.SHRINK):
      chain.append(u)
      u = u.src[0]
    if u.op is not Ops.BUFFER: return None
    off = 0
    for n in reversed(chain):
      if n.op is not Ops.SHRINK: continue
      shape = n.src[0].shape
      # contiguous: every dim after the first one the view keeps more than 1 of is whole
      big = [i for i, (b, e) in enumerate(n.arg) if not sint_eq(e - b, 1)]
      if any(not (isinstance(b, int) and b == 0 and sint_eq(e, d)) for (b, e), d in list(zip(n.arg, shape))[big[0]+1 if big else len(shape):]): return None
      stride: sint = 1
      for i in reversed(range(len(shape))):
        off = off + n.arg[i][0] * stride
        stride = stride * shape[i]
    ret = ssimplify(off)
    return ret if isinstance(ret, int) else None
  @property
  def base(self) -> UOp:
    """This tensor-level UOp below its movement ops (the node a view reads)."""
    u = self
    while u.op in GroupOp.Movement: u = u.src[0]
    return u
  @property
  def realized(self) -> Any:
    """The device Buffer of a BUFFER UOp once allocated (a tuple of them for a MULTI of such), else None."""
    if self.op is Ops.MULTI:
      parts = [s.realized for s in self.src]
      return tuple(parts) if all(p is not None for p in parts) else None
    if self.op is not Ops.BUFFER or _buffer_lookup is None: return None
    return b if (b := self.buffer).is_allocated() else None
  @property
  def is_realized(self) -> bool:
    """Whether the node a view reads (`base`) has allocated device memory: `t.uop.is_realized` after `t.realize()`, as in
    public tinygrad (a constant or a Variable never is)."""
    return self.base.realized is not None
  @property
  def shard_shape(self) -> tuple[sint, ...]:
    """The shape of one shard (of the first: with uneven shards the last may be smaller); the shape when not sharded."""
    return self.src[0].shape if self.axis is not None else self.shape
  @property
  def device(self) -> str:
    """The device of a tensor-level UOp: its DEVICE source's, a COPY's target, else its first source's (cached per node)."""
    # (cached: a Tensor op asks for its operands' device, so an uncached walk would make graph building quadratic)
    if not _device_from_sources(self): _fill_up(self, "_device", _device, _OWN_DEVICE)
    if (dev := self.__dict__["_device"]) is None: raise ValueError(f"{self.op} has no device")
    return dev
  # tensor-level movement constructors (no-ops return self); a new node's shape and device are set as it is built (_view)
  def reshape(self, shape: tuple[sint, ...]) -> UOp:
    return self if shape == self.shape else _view(Ops.RESHAPE, self, tuple(shape), tuple(shape))
  def permute(self, order: tuple[int, ...]) -> UOp:
    if (order := tuple(order)) == tuple(range(len(order))): return self
    sh = self.shape
    return _view(Ops.PERMUTE, self, order, tuple([sh[i] for i in order]))
  def expand(self, shape: tuple[sint, ...]) -> UOp: return self if (shape := tuple(shape)) == self.shape else _view(Ops.EXPAND, self, shape, shape)
  def pad(self, arg: tuple[tuple[sint, sint], ...]) -> UOp: return self if all(p == (0, 0) for p in arg) else UOp(Ops.PAD, self.dtype, (self,), tuple(arg))
  def shrink(self, arg: tuple[tuple[sint, sint], ...]) -> UOp:
    return self if all(s == (0, n) for s, n in zip(arg, self.shape)) else UOp(Ops.SHRINK, self.dtype, (self,), tuple(arg))
  def flip(self, axes: tuple[bool, ...]) -> UOp: return self if not any(axes) else UOp(Ops.FLIP, self.dtype, (self,), tuple(axes))
  def r(self, op: Ops, axes: tuple[int, ...]) -> UOp:
    sh = self.shape
    axes = tuple(a for a in sorted(axes) if sh[a] != 1)
    return self if not axes else _view(Ops.REDUCE_AXIS, self, (op, axes), tuple([1 if i in axes else s for i, s in enumerate(sh)]))
  def flatten(self) -> UOp: return self.reshape((prod(self.shape),))
  def numel(self) -> int: return prod(self.shape)

  # ---- a kernel written by hand (Tensor.custom_kernel), in public tinygrad's words: buffers seen in a shape, indexed ----
  @staticmethod
  def placeholder(shape: tuple[int, ...], dtype: DType, slot: int, addrspace: AddrSpace = AddrSpace.GLOBAL) -> UOp:
    """Buffer `slot` of a hand-written kernel (LOCAL, REG: scratch memory of the kernel), viewed as a tensor of `shape`."""
    op = {AddrSpace.GLOBAL: Ops.DEFINE_GLOBAL, AddrSpace.LOCAL: Ops.DEFINE_LOCAL, AddrSpace.REG: Ops.DEFINE_REG}[addrspace]
    return UOp(Ops.RESHAPE, dtype, (UOp(op, dtype.ptr(prod(shape), addrspace), (), slot),), tuple(shape))
  def __getitem__(self, idx: Any) -> UOp:
    """An element of a placeholder view: INDEX(view, offset) (a value; the store target when stored into). A `:` keeps its
    axis: `x[i, :]` is the row i view."""
    idx = tuple(idx) if isinstance(idx, tuple) else (idx,)
    if len(idx) != len(self.shape): raise IndexError(f"{len(idx)} indices for a view of shape {self.shape}")
    if any(isinstance(i, slice) for i in idx):
      if any(isinstance(i, slice) and i != slice(None) for i in idx): raise IndexError(f"only a whole axis (:) slices a kernel view, got {idx}")
      cut = UOp(Ops.SHRINK, self.dtype, (self,), tuple((0, s) if isinstance(i, slice) else (i, i+1) for i, s in zip(idx, self.shape)))
      return UOp(Ops.RESHAPE, self.dtype, (cut,), tuple(s for i, s in zip(idx, self.shape) if isinstance(i, slice)))
    return UOp(Ops.INDEX, self.dtype, (self, _view_offset(self, tuple(UOp.const(dtypes.index, i) if isinstance(i, int) else i for i in idx))))
  def __iter__(self): raise TypeError("a UOp is not iterable")   # (__getitem__ alone would make tuple(uop) silently empty)
  def after(self, *deps: UOp) -> UOp: return UOp(Ops.AFTER, self.dtype, (self,) + deps) if deps else self
  def end(self, *ranges: UOp) -> UOp: return UOp(Ops.END, dtypes.void, (self,) + ranges) if ranges else self
  def set(self, val: UOp | ConstType, end: UOp | tuple[UOp, ...] | list[UOp] = ()) -> UOp:
    """Store `val` here (an INDEX), closing the loops `end`: the view after that store."""
    return self.src[0].after(self.store(val).end(*((end,) if isinstance(end, UOp) else end)))
  def group(*srcs: UOp) -> UOp: return srcs[0] if len(srcs) == 1 else UOp(Ops.SINK, dtypes.void, srcs)
  def reduce(self, *ranges: UOp, arg: Ops | tuple, dtype: DType | None = None) -> UOp:
    """`self` accumulated by `arg` (Ops.ADD, Ops.MUL, Ops.MAX) over the loops `ranges`, in a hand-written kernel: the value
    after them (`(a[i, k] * b[k, j]).reduce(k, arg=Ops.ADD)`); dtype: the accumulator's, when not self's (self is cast to it)."""
    op = arg[0] if isinstance(arg, tuple) else arg   # (public tinygrad's master spells it (op, 0))
    if op not in (Ops.ADD, Ops.MUL, Ops.MAX): raise ValueError(f"reduce: arg must be Ops.ADD, Ops.MUL or Ops.MAX, got {arg!r}")
    if not ranges or any(r.op is not Ops.RANGE for r in ranges):
      raise ValueError(f"reduce: needs the loops it runs over (UOp.range), got {[r.op for r in ranges]}")
    x = self if dtype is None else self.cast(dtype)
    return UOp(Ops.REDUCE, x.dtype, (x,) + ranges, op)
  @staticmethod
  def custom_kernel(*srcs: UOp, fxn: Callable, grad_fxn: Callable | None = None) -> list[UOp]:
    """Each of `srcs` after the kernel fxn(*placeholders) ran on their buffers (see Tensor.custom_kernel)."""
    if not srcs: raise TypeError("custom_kernel needs at least one tensor (the kernel's buffers)")
    if any(s.op is Ops.MULTI for s in srcs):   # one kernel per device, on each tensor's shard there
      devs = {s.device for s in srcs}
      if len(devs) != 1 or any(s.op is not Ops.MULTI for s in srcs): raise ValueError(f"custom_kernel's tensors must be on the same devices, got {sorted(map(str, devs))}")
      per = [UOp.custom_kernel(*[s.src[d] for s in srcs], fxn=fxn, grad_fxn=grad_fxn) for d in range(len(srcs[0].src))]
      return [UOp(Ops.MULTI, s.dtype, tuple(p[j] for p in per), s.arg) for j, s in enumerate(srcs)]
    if not all(all_int(s.shape) for s in srcs): raise ValueError(f"custom_kernel needs concrete shapes, got {[s.shape for s in srcs]}")
    if len(devs := {s.device for s in srcs}) != 1: raise ValueError(f"custom_kernel's tensors must be on one device, got {sorted(map(str, devs))}")
    ast = fxn(*[UOp.placeholder(s.shape, s.dtype, i) for i, s in enumerate(srcs)])
    if not isinstance(ast, UOp) or ast.op is not Ops.SINK:
      raise TypeError(f"custom_kernel's fxn must return a kernel SINK (stores ended over their ranges, then .sink()), got {ast.op if isinstance(ast, UOp) else type(ast).__name__}")
    k = UOp(Ops.KERNEL, dtypes.void, srcs, CustomKernel(ast, grad_fxn))
    return [UOp(Ops.AFTER, s.dtype, (s, k)) for s in srcs]

@dataclass(frozen=True)
class CustomKernel:
  """A KERNEL node's arg for Tensor.custom_kernel: the hand-written kernel (over placeholders) and its gradient function."""
  ast: UOp
  grad_fxn: Callable | None = None

def reshape_base(u: UOp) -> UOp:
  """The node under u's RESHAPEs (u itself without one): a realized tensor's BUFFER, seen through its shape."""
  while u.op is Ops.RESHAPE: u = u.src[0]
  return u

def _flat(idx: tuple[Any, ...], shape: tuple[int, ...]) -> UOp:
  return sum((i * prod(shape[k+1:]) for k, i in enumerate(idx)), UOp.const(dtypes.index, 0))
def view_index(v: UOp, idx: tuple[UOp, ...]) -> tuple[UOp, tuple[UOp, ...]]:
  """(base, index there) of element `idx` of view `v`: movement ops (and AFTERs) over a base node walked down."""
  while v.op in GroupOp.Movement or v.op is Ops.AFTER:
    if v.op is Ops.AFTER: v = v.src[0]
    elif v.op is Ops.RESHAPE:   # row-major order is kept through any chain of reshapes: the flat offset is the same
      flat = _flat(idx, v.shape)
      while v.op in (Ops.RESHAPE, Ops.AFTER): v = v.src[0]
      idx = tuple((flat // prod(v.shape[k+1:])) % s for k, s in enumerate(v.shape))
    elif v.op is Ops.PERMUTE: idx, v = tuple(idx[v.arg.index(k)] for k in range(len(idx))), v.src[0]
    elif v.op is Ops.SHRINK: idx, v = tuple(i + b for i, (b, _) in zip(idx, v.arg)), v.src[0]
    elif v.op is Ops.EXPAND: idx, v = tuple(i if s == n else UOp.const(dtypes.index, 0) for i, s, n in zip(idx, v.src[0].shape, v.shape)), v.src[0]
    elif v.op is Ops.FLIP: idx, v = tuple(s - 1 - i if f else i for i, s, f in zip(idx, v.shape, v.arg)), v.src[0]
    else: raise TypeError(f"cannot index a kernel view through {v.op} (a PAD); index the placeholder under it")
  return v, idx
def _view_offset(v: UOp, idx: tuple[UOp, ...]) -> UOp:
  """The element offset in the buffer under placeholder view `v` (movement ops over a DEFINE_*) of element `idx` of `v`."""
  base, bidx = view_index(v, idx)
  if base.op not in GroupOp.Defines: raise TypeError(f"cannot index {base.op} in a kernel: index a placeholder (or its views)")
  return bidx[0]

def _device_from_sources(u: UOp) -> bool:
  """Store u's device (the _device rule) when each of its sources has its own stored, with no walk; whether u has one now."""
  d = u.__dict__
  if "_device" not in d and all("_device" in s.__dict__ for s in u.src): d["_device"] = _device(u)
  return "_device" in d

def _view(op: Ops, src: UOp, arg: Any, shape: tuple[sint, ...]) -> UOp:
  """The one-source tensor-level node `op(src, arg)` (a movement op, a reduce, a CONTIGUOUS: a node of its source's
  device), given its `shape`: stored on it with its source's device as it is built, where asking for either walked the
  new nodes (~1 us each, ~20 of a@b's ~45 us of build). A source built by an ALU op (a@b's product) gets its device from
  its sources here. A node over a multi-device tensor is its lowering's (a MULTI), whose shape and device are its own."""
  u = UOp(op, src.dtype, (src,), arg)
  if u.op is op:
    d = u.__dict__
    if "_shape" not in d: d["_shape"] = shape
    if "_device" not in d and _device_from_sources(src): d["_device"] = src.__dict__["_device"]
  return u

_UOP_SLOTS = tuple(getattr(UOp, f).__set__ for f in ("op", "dtype", "src", "arg", "tag"))   # UOpMetaClass builds nodes with them

# (the rules are looked up by op in dicts and frozensets: on CPython 3.11 each `Ops.X` attribute read costs ~0.1 us,
# enum's metaclass __getattr__ blocking the fast path, and these run for every node a Tensor op builds)
_DEVICE_RULES: dict[Ops, Callable[[UOp], Any]] = {
  Ops.DEVICE: lambda n: n.arg,
  Ops.MULTI: lambda n: tuple(s.device for s in n.src),
  Ops.COPY: lambda n: n.src[1].arg,
  Ops.CALL: lambda n: n.src[1].__dict__["_device"]}   # its output buffer's (src[0], the kernel's SINK, has none)
def _device(n: UOp) -> Any:
  if (rule := _DEVICE_RULES.get(n.op)) is not None: return rule(n)
  for s in n.src:   # the first source's with one
    if (d := s.__dict__["_device"]) is not None: return d
  return None

_OWN_DEVICE = frozenset({Ops.DEVICE})   # _device reads no source
_OWN_SHAPE = frozenset({Ops.BUFFER, Ops.CONST, Ops.DEFINE_VAR, Ops.BIND, Ops.RESHAPE, Ops.EXPAND, Ops.DEVICE, Ops.UNIQUE})   # _shape reads no source
_SHAPELESS = frozenset({Ops.DEVICE, Ops.UNIQUE})   # sources that give no shape
def _shape_alu(n: UOp) -> tuple[Any, ...]:   # a constant source is 0-d: the others give the shape
  for x in n.src:
    if x.op not in _SHAPELESS and (sh := x.shape) != (): return sh
  return ()
def _shape_multi(n: UOp) -> tuple[Any, ...]:
  arg, sh = n.arg, n.src[0].shape
  if arg is None: return sh
  if isinstance(arg, tuple): return tuple(d * (max(dict(arg)[i]) + 1) if i in dict(arg) else d for i, d in enumerate(sh))   # a mesh
  return tuple(sum(s.shape[i] for s in n.src) if i == arg else d for i, d in enumerate(sh))
_SHAPE_RULES: dict[Ops, Callable[[UOp], tuple[Any, ...]]] = {
  **{op: _shape_alu for op in GroupOp.ALU},
  Ops.BUFFER: lambda n: (n.arg,),
  **{op: lambda n: () for op in (Ops.CONST, Ops.DEFINE_VAR, Ops.BIND, Ops.DEVICE, Ops.UNIQUE, Ops.SINK, Ops.KERNEL, Ops.STORE, Ops.END)},
  Ops.RESHAPE: lambda n: n.arg, Ops.EXPAND: lambda n: n.arg,
  Ops.PERMUTE: lambda n: tuple(n.src[0].shape[i] for i in n.arg),
  Ops.PAD: lambda n: tuple(ssimplify(s+b+a) for s, (b, a) in zip(n.src[0].shape, n.arg)),
  Ops.SHRINK: lambda n: tuple(ssimplify(e-b) for b, e in n.arg),
  Ops.REDUCE_AXIS: lambda n: tuple(1 if i in n.arg[1] else s for i, s in enumerate(n.src[0].shape)),
  Ops.ASSIGN: lambda n: n.src[0].shape,
  Ops.MULTI: _shape_multi}
def _shape(n: UOp) -> tuple[Any, ...]:   # ints, or symbolic sizes (sint)
  if (rule := _SHAPE_RULES.get(n.op)) is not None: return rule(n)
  if n.op in GroupOp.Defines and isinstance(n.dtype, PtrDType): return (n.dtype.size,)   # a hand-written kernel's buffer (UOp.placeholder)
  srcs = [s for s in n.src if s.op not in _SHAPELESS]
  return srcs[0].shape if srcs else ()

# ---- bounds of one node from its sources' bounds ----
_FULL: dict[DType, tuple[ConstType, ConstType]] = {}   # a dtype's whole range, asked for every node
def _bounds(n: UOp) -> tuple[ConstType, ConstType]:
  dt = n.dtype.scalar()
  if n.op is Ops.CONST: return (n.arg, n.arg)
  if n.op is Ops.DEFINE_VAR: return (n.arg[1], n.arg[2])
  if n.op is Ops.BIND: return n.src[0]._min_max   # a shape must hold for every value the variable may take
  if n.op in (Ops.RANGE, Ops.SPECIAL): return (0, n.src[0].vmax - 1)
  if isinstance(n.dtype, PtrDType) or dt == dtypes.void: return (0, 0)
  if (full := _FULL.get(dt)) is None: full = _FULL[dt] = (dtypes.min(dt), dtypes.max(dt))
  if dtypes.is_float(dt) and n.op is not Ops.CAST: return full
  s = [x._min_max for x in n.src]
  ret = _alu_bounds(n, s)
  if ret is None: return full
  lo, hi = ret
  if dtypes.is_bool(dt): return (bool(lo), bool(hi))
  if dtypes.is_int(dt) and (lo < full[0] or hi > full[1]): return full  # wraparound possible
  return (lo, hi)

def _alu_bounds(n: UOp, s: list[tuple[Any, Any]]) -> tuple[Any, Any] | None:
  op = n.op
  if op is Ops.ADD: return (s[0][0]+s[1][0], s[0][1]+s[1][1])
  if op is Ops.SUB: return (s[0][0]-s[1][1], s[0][1]-s[1][0])
  if op is Ops.NEG: return (-s[0][1], -s[0][0])
  if op is Ops.MUL:
    vals = [a*b for a in s[0] for b in s[1]]
    return (min(vals), max(vals))
  if op is Ops.MAX: return (max(s[0][0], s[1][0]), max(s[0][1], s[1][1]))
  if op in (Ops.IDIV, Ops.MOD) and dtypes.is_int(n.dtype) and s[1] == (0, 0): return (0, 0)   # x // 0 and x % 0 are 0 in the IR
  if op is Ops.IDIV and dtypes.is_int(n.dtype):
    (a0, a1), (b0, b1) = s
    if b0 <= 0 <= b1: return None
    vals = [_c_idiv(a, b) for a in (a0, a1) for b in (b0, b1)]
    return (min(vals), max(vals))
  if op is Ops.MOD and dtypes.is_int(n.dtype):
    (a0, a1), (b0, b1) = s
    if b0 <= 0 <= b1: return None
    m = max(abs(b0), abs(b1)) - 1
    if a0 >= 0: return (0, min(a1, m))
    if a1 <= 0: return (max(a0, -m), 0)
    return (max(a0, -m), min(a1, m))
  if op is Ops.CMPLT: return (s[0][1] < s[1][0], s[0][0] < s[1][1])
  if op in (Ops.CMPNE, Ops.CMPEQ):
    disjoint = s[0][1] < s[1][0] or s[1][1] < s[0][0]
    same_const = s[0][0] == s[0][1] == s[1][0] == s[1][1]
    lo, hi = (disjoint, not same_const)
    return (lo, hi) if op is Ops.CMPNE else (not hi, not lo)
  if op is Ops.WHERE:
    if s[0][0]: return s[1]
    if not s[0][1]: return s[2]
    return (min(s[1][0], s[2][0]), max(s[1][1], s[2][1]))
  if dtypes.is_bool(n.dtype) and op in (Ops.AND, Ops.OR, Ops.XOR):
    if op is Ops.AND: return (s[0][0] and s[1][0], s[0][1] and s[1][1])
    if op is Ops.OR: return (s[0][0] or s[1][0], s[0][1] or s[1][1])
    return None
  # two's complement: x & m lies in [0, m] for any x once one side m is non-negative (the shift guard's amount & (bits-1))
  if op is Ops.AND and dtypes.is_int(n.dtype) and (s[0][0] >= 0 or s[1][0] >= 0): return (0, min(x[1] for x in s if x[0] >= 0))
  if op is Ops.SHL and n.src[1].op is Ops.CONST and 0 <= n.src[1].arg < 63: return (s[0][0] << n.src[1].arg, s[0][1] << n.src[1].arg)
  if op is Ops.SHR and n.src[1].op is Ops.CONST and 0 <= n.src[1].arg < 63: return (s[0][0] >> n.src[1].arg, s[0][1] >> n.src[1].arg)
  if op is Ops.CAST:
    src_dt, dt = n.src[0].dtype.scalar(), n.dtype.scalar()
    if dtypes.is_float(dt): return (float(s[0][0]), float(s[0][1])) if dtypes.is_int(src_dt) or dtypes.is_bool(src_dt) else None
    if dtypes.is_int(dt) and (dtypes.is_int(src_dt) or dtypes.is_bool(src_dt)): return (int(s[0][0]), int(s[0][1]))
    if dtypes.is_bool(dt): return (not s[0][0] <= 0 <= s[0][1], not s[0][0] == s[0][1] == 0)  # False only where 0 is in range
  return None

# ---- evaluation: the exact result of one ALU op as the device computes it ----
def _fdiv(a: float, b: float) -> float:
  if b == 0: return math.nan if a == 0 or math.isnan(a) else math.copysign(math.inf, a) * math.copysign(1.0, b)
  return a / b
def _safe(f: Callable[[float], float], nan_on: Callable[[float], bool]) -> Callable[[float], float]:
  def g(x: float) -> float:
    if math.isnan(x) or nan_on(x): return math.nan
    try: return f(x)
    except OverflowError: return math.inf
  return g
def _pow(a: float, b: float) -> float:
  # C's pow (what math.pow computes), with its inf answers where math.pow raises: 0 to a negative power, overflow
  try: return math.pow(a, b)
  except ValueError:
    if a != 0: return math.nan   # a negative base to a non-integer power
    return math.copysign(math.inf, a) if b == int(b) and int(b) % 2 else math.inf
  except OverflowError: return -math.inf if a < 0 and b == int(b) and int(b) % 2 else math.inf
def _log2(x: float) -> float:
  if math.isnan(x) or x < 0: return math.nan
  if x == 0: return -math.inf
  return math.inf if math.isinf(x) else math.log2(x)
# shifts by an amount outside [0, 64) (a dtype is at most 64 bits): numpy's and torch's answer, 0 for <<, the sign fill for >>
def _ldexp(a: float, b: int) -> float:
  # C's ldexp: overflow is inf (math.ldexp raises), an exponent past any result's range saturates
  if math.isnan(a) or math.isinf(a) or a == 0: return a
  try: return math.ldexp(a, max(-4000, min(4000, int(b))))
  except OverflowError: return math.copysign(math.inf, a)
def _shl(a: int, b: int) -> int: return a << b if 0 <= b < 64 else 0
def _shr(a: int, b: int) -> int: return a >> b if 0 <= b < 64 else (-1 if a < 0 else 0)

python_alu: dict[Ops, Callable[..., Any]] = {
  Ops.EXP2: _safe(lambda x: 2.0**x if x < 1100 else math.inf, lambda x: False), Ops.LOG2: _log2,
  Ops.SIN: _safe(math.sin, math.isinf), Ops.SQRT: _safe(math.sqrt, lambda x: x < 0),
  Ops.RECIPROCAL: lambda x: _fdiv(1.0, x), Ops.NEG: operator.neg, Ops.TRUNC: lambda x: x if math.isinf(x) or math.isnan(x) else math.copysign(float(math.trunc(x)), x),
  Ops.ADD: operator.add, Ops.SUB: operator.sub, Ops.MUL: operator.mul, Ops.FDIV: _fdiv, Ops.MAX: max,
  Ops.IDIV: lambda a, b: _c_idiv(a, b) if b != 0 else 0, Ops.MOD: lambda a, b: _c_mod(a, b) if b != 0 else 0,
  Ops.CMPLT: operator.lt, Ops.CMPNE: operator.ne, Ops.CMPEQ: operator.eq,
  Ops.AND: operator.and_, Ops.OR: operator.or_, Ops.XOR: operator.xor, Ops.SHL: _shl, Ops.SHR: _shr,
  Ops.WHERE: lambda c, a, b: a if c else b, Ops.MULACC: lambda a, b, c: a*b+c,
  Ops.POW: _pow, Ops.LDEXP: _ldexp}

def exec_alu(op: Ops, dtype: DType, operands: Sequence[ConstType]) -> ConstType:
  """The value of `op` on constant operands, with the wraparound and rounding of `dtype`."""
  dt = dtype.scalar()
  if op is Ops.MAX and dtypes.is_float(dt) and any(isinstance(x, float) and math.isnan(x) for x in operands): return math.nan
  try: ret = python_alu[op](*operands)
  except (OverflowError, ValueError, ZeroDivisionError): ret = math.nan if dtypes.is_float(dt) else 0
  return dtypes.as_const(ret, dt)

def reduce_identity(op: Ops, dtype: DType) -> ConstType:
  """The value a reduce by `op` starts from, its result over no elements: 0 for ADD, 1 for MUL, the dtype's minimum for MAX
  (-inf for floats, False for bool)."""
  if op is Ops.ADD: return 0
  if op is Ops.MUL: return 1
  if op is Ops.MAX: return dtypes.min(dtype)
  raise ValueError(f"reduce_identity: {op} is no reduce op; valid: Ops.ADD, Ops.MUL, Ops.MAX")

def sym_infer(expr: UOp | int, var_vals: dict[UOp, int] | dict[str, int]) -> int:
  """The integer value of `expr` with its variables set (keys are DEFINE_VAR UOps or their names). The expression is
  compiled once into a Python function (kept on the UOp): a replay evaluates launch sizes without walking the graph."""
  if isinstance(expr, int): return expr
  if (fn := expr.__dict__.get("_infer")) is None: fn = expr.__dict__["_infer"] = _compile_infer(expr)
  return fn(var_vals)

def _var_value(var_vals: Any, v: UOp) -> Any:
  if v in var_vals: return var_vals[v]
  if v.arg[0] in var_vals: return var_vals[v.arg[0]]
  raise KeyError(f"no value for variable {v.arg[0]}")

def _wrap_int(bits: int, signed: bool) -> Callable[[int], int]:
  mask, half = (1 << bits) - 1, 1 << (bits - 1)
  return (lambda v: ((v + half) & mask) - half) if signed else (lambda v: v & mask)

# int ops whose Python spelling is exact before the wraparound (C division and modulo: python_alu's, not // and %)
_infer_infix = {Ops.ADD: "{} + {}", Ops.SUB: "{} - {}", Ops.MUL: "{} * {}", Ops.MAX: "max({}, {})", Ops.CMPLT: "{} < {}",
                Ops.CMPNE: "{} != {}", Ops.CMPEQ: "{} == {}", Ops.IDIV: "_idiv({}, {})", Ops.MOD: "_mod({}, {})"}

def _compile_infer(expr: UOp) -> Callable[[Any], int]:
  """A function of var_vals computing `expr` exactly as exec_alu would, node by node. The generated code holds only names
  it makes itself and int literals (variables, their names, other constants and ops are passed in as default arguments,
  locals of the function, never spelled from args)."""
  tables: dict[str, Any] = {"_var": _var_value, "_alu": exec_alu, "_ac": dtypes.as_const, "_idiv": python_alu[Ops.IDIV],
                            "_mod": python_alu[Ops.MOD]}
  lines, name, consts = [], {}, []
  def const(v: Any) -> str:
    consts.append(v)
    return f"k{len(consts)-1}"
  for i, n in enumerate(expr.toposort(gate=lambda x: x.op is not Ops.BIND)):   # a BIND is a value: its variable needs none
    name[n] = x = f"x{i}"
    src = [name[s] for s in n.src] if n.op is not Ops.BIND else []
    if n.op is Ops.CONST and type(n.arg) is int: name[n] = f"({n.arg!r})"   # an int literal, inlined
    elif n.op is Ops.CONST: lines.append(f"{x} = {const(n.arg)}")
    elif n.op is Ops.DEFINE_VAR:   # keyed by the variable or by its name
      k, nm = const(n), const(n.arg[0])
      lines.append(f"{x} = vv[{k}] if {k} in vv else vv[{nm}] if {nm} in vv else _var(vv, {k})")
    elif n.op is Ops.BIND:
      k, nm, v = const(n.src[0]), const(n.src[0].arg[0]), const(n.src[1].arg)
      lines.append(f"{x} = vv[{k}] if {k} in vv else vv.get({nm}, {v})")
    elif n.op in _infer_infix and dtypes.is_int(n.dtype) and n.dtype.count == 1 and all(dtypes.is_int(s.dtype) for s in n.src):
      op = _infer_infix[n.op]
      # C division and modulo are Python's // and % when neither side can be negative
      if n.op in (Ops.IDIV, Ops.MOD) and n.src[0].vmin >= 0 and n.src[1].vmin > 0: op = "{} // {}" if n.op is Ops.IDIV else "{} % {}"
      # bounds strictly inside the dtype cannot wrap (bounds are clamped to the dtype's limits: one at a limit may be cut)
      if dtypes.min(n.dtype) < n.vmin and n.vmax < dtypes.max(n.dtype): lines.append(f"{x} = {op.format(*src)}")
      else: lines.append(f"{x} = {const(_wrap_int(n.dtype.itemsize * 8, not dtypes.is_unsigned(n.dtype)))}({op.format(*src)})")
    elif n.op in (Ops.CMPLT, Ops.CMPNE, Ops.CMPEQ) and n.dtype == dtypes.bool and all(dtypes.is_int(s.dtype) for s in n.src):
      lines.append(f"{x} = {_infer_infix[n.op].format(*src)}")
    elif n.op is Ops.CAST: lines.append(f"{x} = _ac({src[0]}, {const(n.dtype)})")
    elif n.op in GroupOp.ALU: lines.append(f"{x} = _alu({const(n.op)}, {const(n.dtype)}, ({', '.join(src)},))")
    else: raise ValueError(f"cannot infer the value of {n.op}")
  body = "\n".join(f"  {l}" for l in lines)
  params = "".join(f", k{i}=K[{i}]" for i in range(len(consts)))
  exec(compile(f"def infer(vv{params}):\n{body}\n  return {name[expr]}\n", "<sym_infer>", "exec"), g := tables | {"K": consts})
  return g["infer"]

# ---- render ----
_infix = {Ops.ADD: "+", Ops.SUB: "-", Ops.MUL: "*", Ops.IDIV: "//", Ops.FDIV: "/", Ops.MOD: "%", Ops.CMPLT: "<", Ops.CMPNE: "!=",
          Ops.CMPEQ: "==", Ops.AND: "&", Ops.OR: "|", Ops.XOR: "^", Ops.SHL: "<<", Ops.SHR: ">>"}
def _render_one(n: UOp, s: list[str]) -> str:
  if n.op is Ops.CONST: return repr(n.arg) if not isinstance(n.arg, bool) else str(n.arg)
  if n.op is Ops.DEFINE_VAR: return n.arg[0]
  if n.op is Ops.BIND: return s[0]
  if n.op is Ops.RANGE: return f"r{n.arg[0]}"
  if n.op is Ops.SPECIAL: return str(n.arg)
  if n.op in _infix: return f"({s[0]}{_infix[n.op]}{s[1]})"
  if n.op is Ops.NEG: return f"(-{s[0]})"
  if n.op is Ops.MAX: return f"max({s[0]}, {s[1]})"
  if n.op is Ops.WHERE: return f"({s[1]} if {s[0]} else {s[2]})"
  if n.op is Ops.CAST: return f"{n.dtype.name}({s[0]})"
  return f"{n.op.name}({', '.join(s)})" if s else n.op.name

def resolve(x: UOp | ConstType, default: bool = True) -> bool:
  """A Python bool for a condition when its bounds decide it, else `default`."""
  if not isinstance(x, UOp): return bool(x)
  if x.dtype.scalar() != dtypes.bool: raise TypeError(f"resolve needs a bool UOp, got {x.dtype}")
  return bool(x.vmin) if x.vmin == x.vmax else default

sint = int | UOp   # a size that may be symbolic

def ssimplify(x: sint) -> sint:
  """A size in canonical form: an int, or a simplified expression of variables (equal sizes become the same UOp). A sum
  of products is also rebuilt with its like terms combined when that is smaller ((i+j+i)-i -> i+j): the simplifier keeps
  the operands' order, so it cannot cancel terms that an earlier step put elsewhere."""
  if not isinstance(x, UOp): return x
  return _ssimplify(x, EGRAPH.value, EGRAPH_BUDGET.value)
@functools.lru_cache(maxsize=8192)
def _ssimplify(x: UOp, _egraph: Any, _budget: Any) -> sint:
  # a symbolic shape's sizes are simplified again by every op that takes them (a simplify is a graph rewrite, ~0.1 ms): the
  # answer is kept per node (nodes are immutable) and simplifier mode
  ret = x.simplify()
  if ret.op in _POLY_OPS and (p := _poly(ret)) is not None:
    canon = _from_poly(p, ret.dtype)
    if not isinstance(canon, UOp) or _arith_size(canon) < _arith_size(ret): return canon
  return int(ret.arg) if ret.op is Ops.CONST else ret

_POLY_OPS = (Ops.ADD, Ops.SUB, Ops.NEG, Ops.MUL)
Poly = dict[tuple[UOp, ...], int]   # {monomial (its factors, sorted): coefficient}
def _poly(x: sint, limit: int = 32) -> Poly | None:
  """`x` as a polynomial over the nodes that are not +, -, * or a constant (None past `limit` terms)."""
  if not isinstance(x, UOp): return {(): x} if x else {}
  if x.op is Ops.CONST: return {(): x.arg} if x.arg else {}
  if x.op not in _POLY_OPS: return {(x,): 1}
  parts = [_poly(s, limit) for s in x.src]
  if any(q is None for q in parts): return None
  out: Poly = {}
  def add(k: tuple[UOp, ...], v: int) -> None:
    out[k] = out.get(k, 0) + v
    if not out[k]: del out[k]
  if x.op is Ops.NEG:
    for k, v in parts[0].items(): add(k, -v)  # type: ignore[union-attr]
  elif x.op is Ops.MUL:
    for ka, va in parts[0].items():  # type: ignore[union-attr]
      for kb, vb in parts[1].items(): add(tuple(sorted(ka + kb, key=_atom_key)), va * vb)  # type: ignore[union-attr]
  else:
    for q, sign in zip(parts, (1, 1 if x.op is Ops.ADD else -1)):
      for k, v in q.items(): add(k, sign * v)  # type: ignore[union-attr]
  return out if len(out) <= limit else None
def _atom_key(u: UOp) -> tuple[str, int]: return (u.render(), id(u))
def _from_poly(p: Poly, dtype: DType) -> sint:
  terms = sorted(p.items(), key=lambda kv: (len(kv[0]) == 0, [_atom_key(f) for f in kv[0]]))   # the constant last
  out: sint = 0
  for k, v in terms:
    t: sint = v
    for f in k: t = f if isinstance(t, int) and t == 1 else f * t if isinstance(t, int) else t * f
    out = t if isinstance(out, int) and out == 0 else out + t
  return out
def _arith_size(x: UOp) -> int: return sum(1 for n in x.toposort(gate=lambda y: y.op in _POLY_OPS) if n.op in _POLY_OPS)
# the conditions a shape was accepted under because they hold for the bound values of its variables (not for every value in
# their ranges): TinyJit collects them while it captures and checks them again for each replay's values (None: not collected)
assumed: list[UOp] | None = None
def all_bound(x: UOp) -> bool:
  """Whether every variable in `x` is bound (a BIND: it has a value), so `x` has one value."""
  return not any(n.op is Ops.DEFINE_VAR for n in x.toposort(gate=lambda y: y.op is not Ops.BIND))
def sint_le(a: sint, b: sint) -> bool:
  """a <= b for every value the variables in a and b may take; where that is not provable and every variable is bound,
  a <= b for their values (public tinygrad's rule: a shape over bound variables holds when it holds for their values)."""
  if not isinstance(a, UOp) and not isinstance(b, UOp): return a <= b
  d = ssimplify(b - a)  # type: ignore[operator]
  if not isinstance(d, UOp): return d >= 0
  if d.vmin >= 0: return True
  if not all_bound(d) or sym_infer(d, {}) < 0: return False
  if assumed is not None: assumed.append(d)
  return True
def sint_eq(a: sint, b: sint) -> bool:
  """a == b as sizes: equal ints, or expressions whose difference simplifies to 0 (i+j and j+i are one size)."""
  if a is b: return True
  if not isinstance(a, UOp) and not isinstance(b, UOp): return a == b
  return _sint_eq(a, b)
@functools.lru_cache(maxsize=4096)
def _sint_eq(a: sint, b: sint) -> bool:
  # (a symbolic shape's broadcasts compare its sizes again for every op: each comparison is a simplify, ~0.1 ms, so the
  # answers are kept, and sizes whose ranges do not meet are told apart by their bounds)
  (alo, ahi), (blo, bhi) = ((x.vmin, x.vmax) if isinstance(x, UOp) else (x, x) for x in (a, b))
  if ahi < blo or bhi < alo: return False
  return ssimplify(a - b) == 0 or ((pa := _poly(a)) is not None and pa == _poly(b))  # type: ignore[operator]

class BroadcastError(ValueError, IndexError):
  """Shapes that do not broadcast (a ValueError as in numpy, and an IndexError as public tinygrad raises)."""
def _broadcast_shape(*shapes: tuple[sint, ...]) -> tuple[sint, ...]:
  """The shape `shapes` broadcast to (numpy's rule, aligned at the right). A symbolic size is never 1: it broadcasts with 1
  and with an equal size only (also one whose variable may be 0)."""
  if len(shapes) == 2 and shapes[0] == shapes[1]: return tuple(shapes[0])   # (most ops: a third of building `a * b`)
  nd = max((len(s) for s in shapes), default=0)
  out: list[sint] = []
  for dims in zip(*[(1,) * (nd - len(s)) + tuple(s) for s in shapes]):
    rest: list[sint] = []
    for d in dims:
      if (isinstance(d, UOp) or d != 1) and not any(sint_eq(d, r) for r in rest): rest.append(d)
    if len(rest) > 1:
      raise BroadcastError(f"cannot broadcast shapes {' and '.join(shape_str(tuple(s)) for s in shapes)}: sizes {shape_str(rest)} differ in one "
                           f"dimension{vals_str(*shapes)}")
    out.append(rest[0] if rest else 1)
  return tuple(out)
def smax(x: sint) -> int:
  """The largest value a size may take."""
  return int(x.vmax) if isinstance(x, UOp) else x
def sym_vars(x: Any) -> dict[UOp, None]:
  """The BINDs (bound variables) in a size, a shape, or a nested tuple of them, in order."""
  if isinstance(x, UOp): return {n: None for n in x.toposort(gate=lambda y: y.op is not Ops.BIND) if n.op is Ops.BIND}
  if isinstance(x, (tuple, list)): return {n: None for y in x if not isinstance(y, int) for n in sym_vars(y)}
  return {}

def shape_str(x: Any) -> str:
  """A size or shape for an error message: symbolic sizes as their expression (`(6, (n+-1))`), not a UOp repr."""
  if isinstance(x, UOp): return x.render()
  if isinstance(x, list): return "[" + ", ".join(shape_str(y) for y in x) + "]"
  if isinstance(x, tuple): return "(" + ", ".join(shape_str(y) for y in x) + ("," if len(x) == 1 else "") + ")"
  return str(x)
def vals_str(*xs: Any) -> str:
  """The bound values behind the sizes in an error message (`, with a=3, b=4`; two binds of one variable show both)."""
  vs = sym_vars(xs)
  return f", with {', '.join(f'{b.src[0].arg[0]}={b.src[1].arg}' for b in vs)}" if vs else ""

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
def Variable(name: str, min_val: int, max_val: int, dtype: DType = dtypes.index) -> UOp:
  """A symbolic integer in [min_val, max_val] for Tensor shapes and kernels: `Variable("start_pos", 1, 1023).bind(pos)`.
  The name reaches kernel source as an argument name, so it must be a plain identifier."""
  if not isinstance(name, str) or not _IDENT.fullmatch(name) or keyword.iskeyword(name):
    raise ValueError(f"Variable name {name!r} is not a plain identifier ([A-Za-z_][A-Za-z0-9_]*, not a keyword): it becomes a kernel argument name")
  for what, v in (("min", min_val), ("max", max_val)):
    if not isinstance(v, int) or isinstance(v, bool): raise TypeError(f"Variable {name}: {what} must be an int, got {v!r}")
  if not dtypes.is_int(dtype): raise TypeError(f"Variable {name}: dtype must be an int dtype, got {dtype}")
  if not dtypes.min(dtype) <= min_val <= max_val <= dtypes.max(dtype):
    raise ValueError(f"Variable {name}: range [{min_val}, {max_val}] must be non-empty and fit {dtype} ({dtypes.min(dtype)}..{dtypes.max(dtype)})")
  return UOp.variable(name, min_val, max_val, dtype)

def __getattr__(name: str) -> Any:
  # public tinygrad's import path `from tinygrad.uop.ops import UPat, PatternMatcher, graph_rewrite`: they live in upat.py,
  # which imports this module, so they are re-exported on first use
  if name in ("UPat", "PatternMatcher", "graph_rewrite", "RewriteError"):
    from tinygrad.uop import upat
    return getattr(upat, name)
  raise AttributeError(f"module 'tinygrad.uop.ops' has no attribute {name!r}")
