"""UPat patterns, the PatternMatcher rule table, and graph_rewrite: the hot loop of the compiler."""
from __future__ import annotations
import itertools, inspect, os, functools, operator
from typing import Any, Callable, Iterable, Sequence
from tinygrad.uop import Ops, GroupOp
from tinygrad.uop.ops import UOp, _rebuild
from tinygrad.dtype import DType, dtypes, ConstType

# the VIZ recorder (tinygrad.viz.record.Recorder) while one is installed; None otherwise, so recording costs a global read
TRACER: Any = None

class RewriteError(RuntimeError):
  """A rewrite rule raised: names the rule (file:line) and the node it failed on."""

class UPat:
  """A pattern over UOps.

  op: an Ops or a tuple/set of them (None: any). dtype: a DType or tuple of them. arg: must equal (None: any).
  src: a tuple (sources in order), a list (sources in any order: commutative), or one UPat (every source matches it).
  name: capture the matched node under this name. allow_any_len: src is a prefix.
  """
  __slots__ = ("op", "dtype", "arg", "name", "src", "allow_any_len", "custom_early_reject", "early_reject", "location", "dtype_set")
  def __init__(self, op: Ops | Iterable[Ops] | None = None, dtype: DType | Iterable[DType] | None = None,
               src: UPat | tuple[UPat, ...] | list[UPat] | None = None, arg: Any = None, name: str | None = None,
               allow_any_len: bool = False, custom_early_reject: set[Ops] | None = None):
    self.op: tuple[Ops, ...] | None = None if op is None else ((op,) if isinstance(op, Ops) else tuple(op))
    self.dtype: tuple[DType, ...] | None = None if dtype is None else ((dtype,) if isinstance(dtype, DType) else tuple(dtype))
    # match tests membership in a set: one hash instead of a Python-level DType.__eq__ per listed dtype
    self.dtype_set: frozenset[DType] | None = None if self.dtype is None else frozenset(self.dtype)
    self.arg, self.name, self.allow_any_len = arg, name, allow_any_len
    # src is stored as a list of alternative source tuples; a lone UPat means "all sources match it"
    self.src: list[tuple[UPat, ...]] | UPat | None
    if isinstance(src, list): self.src = [tuple(p) for p in itertools.permutations(src)] if len(src) <= 4 else [tuple(src)]
    elif isinstance(src, tuple): self.src = [src]
    else: self.src = src
    if isinstance(self.src, list):
      # dedup identical permutations (patterns are compared by identity)
      self.src = list({tuple(id(p) for p in s): s for s in self.src}.values())
    # source ops that must be present for any match: checked before the full match
    if custom_early_reject is not None: self.early_reject = set(custom_early_reject)
    elif isinstance(self.src, list) and len(self.src) >= 1:
      self.early_reject = {pp.op[0] for pp in self.src[0] if pp.op is not None and len(pp.op) == 1}
    else: self.early_reject = set()
    self.custom_early_reject = custom_early_reject

  @staticmethod
  def any(*src: UPat) -> UPatAny: return UPatAny(src=src)
  @staticmethod
  def var(name: str | None = None, dtype: DType | Iterable[DType] | None = None) -> UPat: return UPat(dtype=dtype, name=name)
  @staticmethod
  def cvar(name: str | None = None, dtype: DType | Iterable[DType] | None = None) -> UPat: return UPat(Ops.CONST, dtype, name=name)
  @staticmethod
  def const(dtype: DType | Iterable[DType] | None, b: ConstType) -> UPat: return UPat(Ops.CONST, dtype, arg=b)
  def named(self, name: str) -> UPat:
    return type(self)(self.op, self.dtype, self._src_arg(), self.arg, name, self.allow_any_len, self.custom_early_reject)
  def _src_arg(self) -> Any:
    if self.src is None or isinstance(self.src, UPat): return self.src
    return self.src[0] if len(self.src) == 1 else list(self.src[0])

  # build ALU patterns with python operators: UPat.var("x") + UPat.cvar("c")
  def alu(self, op: Ops, *src: UPat) -> UPat:
    asrc = (self,) + src
    return UPat(op, dtypes.bool if op in GroupOp.Comparison else None, list(asrc) if op in GroupOp.Commutative else asrc)
  def _fix(self, x: UPat | ConstType) -> UPat: return x if isinstance(x, UPat) else UPat.const(None, x)
  def __add__(self, x): return self.alu(Ops.ADD, self._fix(x))
  def __radd__(self, x): return self._fix(x).alu(Ops.ADD, self)
  def __sub__(self, x): return self.alu(Ops.SUB, self._fix(x))
  def __mul__(self, x): return self.alu(Ops.MUL, self._fix(x))
  def __rmul__(self, x): return self._fix(x).alu(Ops.MUL, self)
  def __floordiv__(self, x): return self.alu(Ops.IDIV, self._fix(x))
  def __truediv__(self, x): return self.alu(Ops.FDIV, self._fix(x))
  def __mod__(self, x): return self.alu(Ops.MOD, self._fix(x))
  def __lt__(self, x): return self.alu(Ops.CMPLT, self._fix(x))
  def __and__(self, x): return self.alu(Ops.AND, self._fix(x))
  def __or__(self, x): return self.alu(Ops.OR, self._fix(x))
  def __xor__(self, x): return self.alu(Ops.XOR, self._fix(x))
  def __neg__(self): return UPat(Ops.NEG, None, (self,))
  def ne(self, x): return self.alu(Ops.CMPNE, self._fix(x))
  def eq(self, x): return self.alu(Ops.CMPEQ, self._fix(x))
  def maximum(self, x): return self.alu(Ops.MAX, self._fix(x))
  def where(self, x, y): return UPat(Ops.WHERE, None, (self, self._fix(x), self._fix(y)))
  def cast(self, dtype: DType | None = None): return UPat(Ops.CAST, dtype, (self,))

  def __repr__(self) -> str:
    return f"UPat({self.op}, {self.dtype}, arg={self.arg!r}, name={self.name!r})"

  def match(self, uop: UOp, store: dict[str, UOp]) -> list[dict[str, UOp]]:
    """Every way `uop` matches this pattern, each a dict of captures extending `store`."""
    if (self.op is not None and uop.op not in self.op) or (self.dtype_set is not None and uop.dtype not in self.dtype_set and uop.dtype.scalar() not in self.dtype_set) \
       or (self.arg is not None and self.arg != uop.arg): return []
    if self.name is not None:
      prev = store.get(self.name)
      if prev is not None and prev is not uop: return []
      store = {**store, self.name: uop}
    if self.src is None: return [store]
    if isinstance(self.src, UPat):
      stores = [store]
      for s in uop.src: stores = [r for st in stores for r in self.src.match(s, st)]
      return stores
    res: list[dict[str, UOp]] = []
    for vp in self.src:
      if len(uop.src) != len(vp) and not (self.allow_any_len and len(uop.src) >= len(vp)): continue
      stores = [store]
      for p, s in zip(vp, uop.src):
        stores = [r for st in stores for r in p.match(s, st)]
        if not stores: break
      res.extend(stores)
    return res

class UPatAny(UPat):
  """Matches when any of its alternatives does."""
  def __init__(self, *args: Any, **kwargs: Any):
    super().__init__(*args, **kwargs)
    self.early_reject = set(self.custom_early_reject or ())  # its src are alternatives, not sources the node must have
  def match(self, uop: UOp, store: dict[str, UOp]) -> list[dict[str, UOp]]:
    assert isinstance(self.src, list)
    res = [r for p in self.src[0] for r in p.match(uop, store)]
    if self.name is None: return res
    return [{**r, self.name: uop} for r in res if r.get(self.name, uop) is uop]

# ---- rules compiled to Python: one function per (pattern, callback) that tests the pattern with inlined checks and calls
# the callback on each match, in the order UPat.match lists them. The interpreted match builds every match as a dict
# before the first callback runs and walks the pattern generically: the simplifier spent most of its time there
def _compile_rule(p: UPat, fxn: Callable, has_ctx: bool, names: tuple[str, ...] | None) -> Callable[[UOp, Any], Any] | None:
  """`rule(u, ctx)`: the first result of `fxn` on a match of `p` that is neither None nor `u`, else None; None when `p` uses
  what only the interpreter matches (UPatAny, a source pattern applied to every source)."""
  consts: dict[str, Any] = {"fxn": fxn}
  def k(obj: Any) -> str:
    consts[name := f"k{len(consts)}"] = obj
    return name
  lines: list[str] = []
  nvar = [0]
  def checks(pat: UPat, var: str) -> list[str]:
    conds = []
    if pat.op is not None: conds.append(f"{var}.op is {k(pat.op[0])}" if len(pat.op) == 1 else f"{var}.op in {k(frozenset(pat.op))}")
    # (a plain scalar DType is its own scalar(): one set lookup, whose DType.__hash__ is a Python call, not two)
    if pat.dtype_set is not None:
      conds.append(f"({var}.dtype in {(ks := k(pat.dtype_set))} or ({var}.dtype._scalar is not None or type({var}.dtype) is not {k(DType)})"
                   f" and {var}.dtype.scalar() in {ks})")
    if pat.arg is not None: conds.append(f"not ({k(pat.arg)} != {var}.arg)")
    return conds
  def gen(pat: UPat, var: str, bound: dict[str, str], ind: str, cont: Callable[[dict[str, str], str], None]) -> bool:
    if type(pat) is not UPat: return False
    # one pattern for every source (constant folding's op(CONST, ...)): compiled when it captures nothing and has no sources
    each = pat.src if isinstance(pat.src, UPat) else None
    if each is not None and (type(each) is not UPat or each.name is not None or each.src not in (None, [()])): return False
    conds = checks(pat, var)
    if each is not None:
      nvar[0] += 1
      ec = checks(each, e := f"e{nvar[0]}") + ([f"not {e}.src"] if each.src is not None else [])
      conds.append(f"all({' and '.join(ec) or 'True'} for {e} in {var}.src)")
    if pat.name is not None:
      if pat.name in bound: conds.insert(0, f"{var} is {bound[pat.name]}")   # (first: the cheapest test, and the most selective)
      else: bound = {**bound, pat.name: var}
    if conds:
      lines.append(f"{ind}if {' and '.join(conds)}:")
      ind += "  "
    if pat.src is None or isinstance(pat.src, UPat):   # (an each-source pattern is checked in conds)
      cont(bound, ind)
      return True
    for alt in pat.src:
      lines.append(f"{ind}if len({var}.src) {'>=' if pat.allow_any_len else '=='} {len(alt)}:")
      kids = []
      for i in range(len(alt)):
        nvar[0] += 1
        kids.append(f"v{nvar[0]}")
        lines.append(f"{ind}  {kids[-1]} = {var}.src[{i}]")
      def chain(j: int, b: dict[str, str], ind2: str, alt: tuple[UPat, ...] = alt, kids: list[str] = kids) -> None:
        if j == len(alt): cont(b, ind2)
        elif not gen(alt[j], kids[j], b, ind2, lambda b2, ind3: chain(j + 1, b2, ind3)): raise _NotCompiled
      chain(0, bound, ind + "  ")
    return True
  def call(bound: dict[str, str], ind: str) -> None:
    args = [f"{n}={v}" for n, v in bound.items() if names is None or n in names] + (["ctx=ctx"] if has_ctx else [])
    lines.append(f"{ind}r = fxn({', '.join(args)})")
    lines.append(f"{ind}if r is not None and r is not u: return r")
  try:
    if not gen(p, "u", {}, "  ", call): return None
  except _NotCompiled: return None
  src = "def rule(u, ctx):\n" + "\n".join(lines) + "\n  return None\n"
  env: dict[str, Any] = dict(consts)
  exec(compile(src, f"<rule {_location(fxn)}>", "exec"), env)
  return env["rule"]

class _NotCompiled(Exception): pass

def _location(fxn: Callable) -> str:
  code = getattr(fxn, "__code__", None)
  return f"{os.path.relpath(code.co_filename)}:{code.co_firstlineno}" if code is not None else repr(fxn)

_memo_ids = itertools.count()
_op_of = operator.attrgetter("op")
_SELF = object()   # a memoised fixed point that is the node itself (storing the node would make a cycle only gc frees)

class PatternMatcher:
  """An ordered table of (UPat, callback) rules, dispatched on the node's op; tables compose with `+`.

  A callback receives the pattern's named captures as keyword arguments (and `ctx` when it declares it) and returns the
  replacement UOp, or None to decline.
  """
  def __init__(self, patterns: Sequence[tuple[UPat, Callable]], pure: bool = False):
    self.patterns = list(patterns)
    # pure: every rule reads only the nodes it matched (no ctx, no flags), so a node's fixed point is a property of the
    # node: graph_rewrite keeps it on the node under this key, and a later rewrite with this table skips the whole subgraph
    self.memo: str | None = f"_fp{next(_memo_ids)}" if pure else None
    self.pdict: dict[Ops, list[tuple[UPat, Callable, frozenset[Ops], bool, tuple[str, ...] | None]]] = {}
    for p, fxn in self.patterns:
      params = inspect.signature(fxn).parameters
      takes_all = any(v.kind is inspect.Parameter.VAR_KEYWORD for v in params.values())
      names = None if takes_all else tuple(k for k in params if k != "ctx")
      entry = (p, fxn, frozenset(p.early_reject), "ctx" in params, names)
      for op in (p.op if p.op is not None else tuple(Ops)): self.pdict.setdefault(op, []).append(entry)
    self._fast: dict[Ops, list[tuple[Callable[[UOp, Any], Any], frozenset[Ops], Callable]]] | None = None
    self._heads: dict[Ops, tuple[frozenset[DType], ...] | None] | None = None
  def may_fire(self, nodes: Iterable[UOp], ctx: Any = None) -> bool:
    """Whether some rule rewrites one of `nodes` as it stands. False: graph_rewrite(g, self, ctx) of a graph g made of
    exactly these nodes returns g itself (it rebuilds a node from unchanged sources as the node, and tries the rules on
    that). Only nodes whose own op and dtype fit a rule's pattern are handed to the rules."""
    if (heads := self._heads) is None:
      # per op: the dtype sets of its rules' patterns, None when one takes any dtype (a UPatAny's match ignores its own)
      acc: dict[Ops, list[frozenset[DType]] | None] = {}
      for op, rules in self.pdict.items():
        sets = [e[0].dtype_set if type(e[0]) is UPat else None for e in rules]
        acc[op] = None if any(d is None for d in sets) else [d for d in sets if d is not None]
      heads = self._heads = {op: None if d is None else tuple(d) for op, d in acc.items()}
    get, missing, rewrite = heads.get, (), self.rewrite
    for u in nodes:
      if (ds := get(u.op, missing)) == () or (ds is not None and not any(u.dtype in d or u.dtype.scalar() in d for d in ds)): continue
      if rewrite(u, ctx) is not None: return True   # (UPat.match's dtype test above: the dtype or its scalar in the set)
    return False
  def __add__(self, more: PatternMatcher) -> PatternMatcher:
    return PatternMatcher(self.patterns + more.patterns, pure=self.memo is not None and more.memo is not None)
  def _compiled(self) -> dict[Ops, list[tuple[Callable[[UOp, Any], Any], frozenset[Ops], Callable]]]:
    # the rules as compiled functions (interpreted ones where a pattern does not compile), built on first use
    made: dict[int, Callable[[UOp, Any], Any]] = {}
    def rule(p: UPat, fxn: Callable, has_ctx: bool, names: tuple[str, ...] | None) -> Callable[[UOp, Any], Any]:
      if (r := made.get(id(p))) is None:
        r = made[id(p)] = _compile_rule(p, fxn, has_ctx, names) or functools.partial(_interpreted, p, fxn, has_ctx, names)
      return r
    self._fast = {op: [(rule(*(e[0], e[1], e[3], e[4])), e[2], e[1]) for e in rules] for op, rules in self.pdict.items()}
    return self._fast

  def rewrite(self, uop: UOp, ctx: Any = None) -> UOp | None:
    """The first non-None result of a matching rule for this node, or None."""
    rules = (self._fast if self._fast is not None else self._compiled()).get(uop.op)
    if not rules: return None
    src_ops = set(map(_op_of, uop.src))
    for rule, early_reject, fxn in rules:
      if not early_reject <= src_ops: continue
      try:
        ret = rule(uop, ctx)
      except RewriteError: raise
      except Exception as e:
        raise RewriteError(f"rewrite rule at {_location(fxn)} raised {type(e).__name__}: {e}\n  on node: {uop!r}\n  expr: {_safe_render(uop)}") from e
      if ret is not None:
        if TRACER is not None: TRACER.match(fxn, uop, ret)
        return ret
    return None

def _interpreted(p: UPat, fxn: Callable, has_ctx: bool, names: tuple[str, ...] | None, uop: UOp, ctx: Any) -> Any:
  for match in p.match(uop, {}):
    kwargs = match if names is None else {k: v for k, v in match.items() if k in names}
    ret = fxn(ctx=ctx, **kwargs) if has_ctx else fxn(**kwargs)
    if ret is not None and ret is not uop: return ret
  return None

def _safe_render(u: UOp) -> str:
  try: return u.render()[:500]
  except Exception: return "<unrenderable>"

def graph_rewrite(sink: UOp, pm: PatternMatcher, ctx: Any = None, bottom_up: bool = False, name: str | None = None) -> UOp:
  """Rewrite the graph under `sink` with `pm` to a fixed point (memoised, iterative: no recursion limit).

  bottom_up=False: sources are rewritten first, then the node. bottom_up=True: the node is rewritten before its sources.
  `name` labels the pass in a VIZ record.
  """
  if TRACER is not None: return TRACER.rewrite(name, sink, lambda: _rewrite_fixed_point(sink, pm, ctx, bottom_up))
  return _rewrite_fixed_point(sink, pm, ctx, bottom_up)

def _rewrite_fixed_point(sink: UOp, pm: PatternMatcher, ctx: Any, bottom_up: bool) -> UOp:
  replace: dict[UOp, UOp] = {}
  key = pm.memo if ctx is None and not bottom_up and TRACER is None else None   # (VIZ records every rule that fires)
  # the ops with rules: a node of another op is not handed to pm.rewrite at all (most nodes of a late pass)
  ruled = pm._fast if pm._fast is not None else pm._compiled()
  rewrite, get = pm.rewrite, replace.__getitem__
  # stack entries: (original node, stage, working node)
  stack: list[tuple[UOp, int, UOp]] = [(sink, 0, sink)]
  push, pop = stack.append, stack.pop
  while stack:
    n, stage, cur = pop()
    if n in replace: continue
    if stage == 0:
      if key is not None and (m := n.__dict__.get(key)) is not None:   # rewritten by an earlier call: not even its sources
        replace[n] = n if m is _SELF else m
        continue
      if bottom_up:
        for _ in range(10000):
          r = rewrite(cur, ctx)
          if r is None: break
          cur = r
        if cur is not n and cur in replace:
          replace[n] = replace[cur]
          continue
      if cur.src:
        push((n, 1, cur))
        for s in reversed(cur.src):
          if s in replace: continue
          if key is not None and (m := s.__dict__.get(key)) is not None: replace[s] = s if m is _SELF else m   # (not pushed)
          else: push((s, 0, s))
        continue
      stage = 1   # a leaf: on to stage 1 at once (what popping its stage-1 entry next would do)
    if stage == 1:
      rebuilt = _rebuild(cur, tuple(map(get, cur.src))) if cur.src else cur
      # bottom_up already took the node to a fixed point in stage 0; only a changed node is tried again
      r = None if (bottom_up and rebuilt is cur) or rebuilt.op not in ruled else rewrite(rebuilt, ctx)
      if r is None:
        replace[n] = rebuilt
        if rebuilt not in replace: replace[rebuilt] = rebuilt
        # kept now, not only at the end: a rule that rewrites a subgraph of this one (symbolic's gates) finds it done
        if key is not None: rebuilt.__dict__[key] = _SELF
        continue
      nxt = r
      if nxt in replace:
        replace[n] = replace[nxt]
        continue
      # the result must itself be rewritten to a fixed point before it stands for n
      push((n, 2, nxt))
      push((nxt, 0, nxt))
    else:
      replace[n] = replace[cur]
  if key is not None:
    for k, v in replace.items(): k.__dict__[key] = _SELF if v is k else v
  return replace[sink]
