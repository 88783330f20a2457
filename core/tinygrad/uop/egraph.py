"""Equality saturation over a PatternMatcher: union-find e-classes, hash-consed e-nodes, rebuild, budgeted e-matching,
and extraction of the cheapest term.

An e-node is (op, dtype, arg, tag, child e-class ids). Rules are the PatternMatcher's own UPats, matched against
e-classes: a pattern with an op walks every e-node of the class, a bare variable binds the whole class. A callback
receives UOps built from the matched e-nodes over each class's current cheapest term (its representative); what it
returns is added to the e-graph and unioned with the matched class, never applied destructively. Callbacks may read
bounds (vmin/vmax) of a representative: every term of a class has the same value, so any term's bounds hold for all.
"""
from __future__ import annotations
from typing import Any, Sequence
from tinygrad.uop import Ops
from tinygrad.uop.ops import UOp, _argkey
from tinygrad.uop.upat import UPat, UPatAny, PatternMatcher, RewriteError, _location
from tinygrad.dtype import DType
from tinygrad.helpers import EGRAPH_BUDGET

ENode = tuple[Ops, DType, Any, Any, tuple[int, ...]]  # (op, dtype, arg, tag, child class ids)
Binding = tuple[int, "ENode | None"]                   # (class, the matched e-node or None for the whole class)

# cost model: node count, ALU ops weighted by how expensive they are on a device
OP_COST: dict[Ops, int] = {Ops.CONST: 1, Ops.DEFINE_VAR: 1, Ops.RANGE: 1, Ops.SPECIAL: 1, Ops.MUL: 3, Ops.WHERE: 3,
                           Ops.IDIV: 8, Ops.MOD: 8, Ops.FDIV: 8, Ops.RECIPROCAL: 4, Ops.SQRT: 4, Ops.EXP2: 4, Ops.LOG2: 4, Ops.SIN: 4}
def op_cost(op: Ops) -> int: return OP_COST.get(op, 2)
def dag_cost(u: UOp) -> int:
  """The cost of a graph: the weights of its distinct nodes."""
  return sum(op_cost(n.op) for n in u.toposort())

MAX_ITERS = 30      # saturation rounds; each round matches every rule against every e-node once
WORK_PER_NODE = 20  # match attempts allowed per e-node of budget: AC rules make matching, not nodes, the cost

class EGraph:
  def __init__(self) -> None:
    self.parent: list[int] = []
    self.classes: dict[int, list[ENode]] = {}   # canonical class id -> its e-nodes
    self.dtype: list[DType] = []
    self.hashcons: dict[tuple, int] = {}
    self.memo: dict[UOp, int] = {}              # UOps already added -> their class (find() before use)
    self.best: dict[int, tuple[int, ENode]] = {}
    self.rep: dict[int, UOp] = {}
    self.dirty = False
    self.dt_memo: dict[tuple[int, int], bool] = {}
    self.work = 0  # e-node match attempts so far: bounds the time, as the node budget bounds the memory

  def find(self, a: int) -> int:
    p = self.parent
    while p[a] != a:
      p[a] = p[p[a]]  # path halving
      a = p[a]
    return a
  def _canon(self, en: ENode) -> ENode: return (en[0], en[1], en[2], en[3], tuple(self.find(k) for k in en[4]))
  @staticmethod
  def _key(en: ENode) -> tuple: return (en[0], en[1], _argkey(en[0], en[2]), en[3], en[4])
  @property
  def size(self) -> int: return len(self.hashcons)

  def add_node(self, en: ENode) -> int:
    en = self._canon(en)
    k = self._key(en)
    cid = self.hashcons.get(k)
    if cid is not None: return self.find(cid)
    cid = len(self.parent)
    self.parent.append(cid)
    self.dtype.append(en[1])
    self.classes[cid] = [en]
    self.hashcons[k] = cid
    return cid
  def add(self, u: UOp) -> int:
    """The class of term `u`, adding the nodes the e-graph lacks."""
    for n in u.toposort(gate=lambda x: x not in self.memo):
      if n not in self.memo: self.memo[n] = self.add_node((n.op, n.dtype, n.arg, n.tag, tuple(self.memo[s] for s in n.src)))
    return self.find(self.memo[u])
  def union(self, a: int, b: int) -> bool:
    a, b = self.find(a), self.find(b)
    if a == b: return False
    if len(self.classes[a]) < len(self.classes[b]): a, b = b, a
    self.parent[b] = a
    self.classes[a].extend(self.classes.pop(b))
    self.dirty = True
    return True
  def rebuild(self) -> None:
    """Restore the invariants after unions: canonical children, one class per e-node (congruence closure)."""
    while self.dirty:
      self.dirty = False
      hc: dict[tuple, int] = {}
      todo: list[tuple[int, int]] = []
      for cid, ens in self.classes.items():
        canon = {self._key(c): c for c in (self._canon(en) for en in ens)}
        for k in canon:
          other = hc.setdefault(k, cid)
          if other != cid: todo.append((other, cid))
        # a class holding a leaf (a constant, a variable) is that leaf: the cheapest term there is, and matching its
        # other forms (x*1, x+0, 0*4 ...) only feeds combinatorial work. They stay hash-consed, so they are not re-added
        leaf = [en for en in canon.values() if not en[4]]
        self.classes[cid] = leaf[:1] if leaf else list(canon.values())
      self.hashcons = hc
      for a, b in todo: self.union(a, b)

  # ---- extraction ----
  def extract(self) -> None:
    """Cheapest e-node per class (tree cost, iterated to a fixed point: the e-graph may have cycles), and its term."""
    best: dict[int, tuple[int, ENode]] = {}
    for _ in range(100):
      changed = False
      for cid, ens in self.classes.items():
        cur = best.get(cid)
        for en in ens:
          cost = op_cost(en[0])
          for k in en[4]:
            b = best.get(k)
            if b is None: break
            cost += b[0]
          else:
            if cur is None or cost < cur[0]:
              cur = (cost, en)
              changed = True
        if cur is not None: best[cid] = cur
      if not changed: break
    self.best, self.rep = best, {}
  def term(self, cid: int) -> UOp:
    """The cheapest term of a class (a best e-node's children cost less than it, so this ends)."""
    stack = [self.find(cid)]
    while stack:
      c = stack[-1]
      if c in self.rep:
        stack.pop()
        continue
      en = self.best[c][1]
      missing = [k for k in en[4] if k not in self.rep]
      if missing:
        stack.extend(missing)
        continue
      self.rep[c] = u = UOp(en[0], en[1], tuple(self.rep[k] for k in en[4]), en[2], en[3])
      self.memo.setdefault(u, c)
      stack.pop()
    return self.rep[self.find(cid)]
  def _build(self, b: Binding) -> UOp:
    cid, en = b
    if en is None: return self.term(cid)
    return UOp(en[0], en[1], tuple(self.term(k) for k in en[4]), en[2], en[3])

  # ---- e-matching: UPat against classes ----
  def _dt_ok(self, pdt: tuple[DType, ...] | None, dt: DType) -> bool:
    if pdt is None: return True
    key = (id(pdt), id(dt))  # DType equality is slow and both live as long as the e-graph
    ret = self.dt_memo.get(key)
    if ret is None: ret = self.dt_memo[key] = dt in pdt or dt.scalar() in pdt
    return ret
  @staticmethod
  def _bind(name: str | None, b: Binding, store: dict[str, Binding]) -> list[dict[str, Binding]]:
    if name is None: return [store]
    prev = store.get(name)
    if prev is not None: return [store] if prev[0] == b[0] else []
    return [{**store, name: b}]
  def match_class(self, p: UPat, cid: int, store: dict[str, Binding]) -> list[dict[str, Binding]]:
    if isinstance(p, UPatAny):
      assert isinstance(p.src, list)
      res = [r for alt in p.src[0] for r in self.match_class(alt, cid, store)]
      return res if p.name is None else [r2 for r in res for r2 in self._bind(p.name, (cid, None), r)]
    if p.op is None and p.src is None and p.arg is None:  # a variable: binds the class, whatever its e-nodes
      return self._bind(p.name, (cid, None), store) if self._dt_ok(p.dtype, self.dtype[cid]) else []
    return [r for en in self.classes[cid] for r in self.match_node(p, cid, en, store)]
  def match_node(self, p: UPat, cid: int, en: ENode, store: dict[str, Binding]) -> list[dict[str, Binding]]:
    self.work += 1
    op, dt, arg, _, kids = en
    if (p.op is not None and op not in p.op) or not self._dt_ok(p.dtype, dt) or (p.arg is not None and p.arg != arg): return []
    stores = self._bind(p.name, (cid, en), store)
    if not stores or p.src is None: return stores
    if isinstance(p.src, UPat):
      for k in kids: stores = [r for st in stores for r in self.match_class(p.src, k, st)]
      return stores
    res: list[dict[str, Binding]] = []
    for vp in p.src:
      if len(kids) != len(vp) and not (p.allow_any_len and len(kids) >= len(vp)): continue
      ss = stores
      for sp, k in zip(vp, kids):
        ss = [r for st in ss for r in self.match_class(sp, k, st)]
        if not ss: break
      res.extend(ss)
    return res

  def search(self, pm: PatternMatcher, seen: set, limit: int, work_limit: int) -> list[tuple[int, UOp]]:
    """(class, equal term) for every rule firing not seen before, at most `limit` of them and `work_limit` match attempts."""
    ops_in = {cid: {en[0] for en in ens} for cid, ens in self.classes.items()}
    found: list[tuple[int, UOp]] = []
    for cid, ens in list(self.classes.items()):
      for en in ens:
        rules = pm.pdict.get(en[0])
        if not rules: continue
        kid_ops = set().union(*(ops_in[k] for k in en[4])) if en[4] else set()
        for p, fxn, early_reject, has_ctx, names in rules:
          if not early_reject <= kid_ops: continue
          for store in self.match_node(p, cid, en, {}):
            kwargs = {k: self._build(v) for k, v in store.items() if names is None or k in names}
            key = (fxn, tuple(kwargs.items()))
            if key in seen: continue
            seen.add(key)
            try:
              ret = fxn(ctx=None, **kwargs) if has_ctx else fxn(**kwargs)
            except Exception as e:
              raise RewriteError(f"rewrite rule at {_location(fxn)} raised {type(e).__name__}: {e} (in the e-graph)") from e
            if isinstance(ret, UOp): found.append((cid, ret))
          if len(found) >= limit or self.work >= work_limit: return found
    return found

def egraph_simplify(u: UOp, pm: PatternMatcher, budget: int | None = None, equal: Sequence[UOp] = ()) -> UOp:
  """The cheapest term equal to `u` found by saturating the e-graph of `u` with `pm`'s rules.

  budget: the most e-nodes (default EGRAPH_BUDGET); saturation stops when it is reached, after WORK_PER_NODE*budget
  match attempts, or after MAX_ITERS rounds, whichever comes first.
  equal: terms already known to equal `u` (a greedy result, say), unioned with it before saturating.
  """
  budget = int(EGRAPH_BUDGET.value) if budget is None else budget
  g = EGraph()
  root = g.add(u)
  for e in equal: g.union(root, g.add(e))
  g.rebuild()
  seen: set = set()
  for _ in range(MAX_ITERS):
    if g.size >= budget or g.work >= WORK_PER_NODE*budget: break
    g.extract()
    changed = False
    for cid, ret in g.search(pm, seen, limit=4*budget, work_limit=WORK_PER_NODE*budget):
      if g.size >= budget: break
      changed |= g.union(cid, g.add(ret))
    g.rebuild()
    if not changed: break
  g.extract()
  return g.term(root)
