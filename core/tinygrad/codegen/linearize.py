"""Linearize a kernel graph: REDUCEs become register accumulators, then every uop gets a place in a loop nest.

Each uop's scope is the set of RANGEs it must run inside (what it depends on, plus the loops those ranges are nested
in). Uops are emitted at the shallowest loop their scope allows, so loop-invariant work is hoisted.
"""
from __future__ import annotations
import heapq
from tinygrad.uop import Ops
from tinygrad.uop.ops import UOp, AxisType, reduce_identity
from tinygrad.dtype import dtypes, AddrSpace

def _accumulate(op: Ops, cur: UOp, val: UOp, mulacc: bool) -> UOp:
  """cur op val. An unrolled sum (x0+x1+...) is added into the accumulator term by term, and products become MULACC
  where the renderer has it (an FMA: a matmul's inner loop is one instruction per term)."""
  if op is not Ops.ADD: return UOp(op, val.dtype, (cur, val))
  terms, todo = [], [val]
  while todo:
    u = todo.pop()
    if u.op is Ops.ADD: todo.extend(reversed(u.src))
    else: terms.append(u)
  for t in terms: cur = UOp(Ops.MULACC, val.dtype, (t.src[0], t.src[1], cur)) if mulacc and t.op is Ops.MUL else UOp(Ops.ADD, val.dtype, (cur, t))
  return cur

def lower_reduces(sink: UOp, mulacc: bool = False) -> tuple[UOp, dict[UOp, frozenset[UOp]], dict[UOp, frozenset[UOp]]]:
  """Replace each REDUCE by an accumulator. Returns the new sink, the loops each range nests in, and the ranges each
  after-loop read closes."""
  parents: dict[UOp, frozenset[UOp]] = {}
  closes: dict[UOp, frozenset[UOp]] = {}
  topo = sink.toposort()   # (one walk for the three uses: an upcast kernel has tens of thousands of nodes)
  globals_ = sorted([u for u in topo if u.op is Ops.RANGE and u.arg[1] is not AxisType.REDUCE], key=lambda r: r.arg[0])
  for i, g in enumerate(globals_): parents[g] = frozenset(globals_[:i])
  _end_nesting(topo, parents, closes)
  replace: dict[UOp, UOp] = {}
  inits: dict[UOp, tuple[UOp, ...]] = {}   # an accumulator's init STORE -> the ranges it is reset before
  results: dict[UOp, tuple[tuple[UOp, ...], set[UOp]]] = {}   # a reduce's value -> (its ranges, the loops its operand reads)
  nacc = 0
  for u in topo:
    new = u.replace(src=tuple(replace.get(s, s) for s in u.src)) if any(s in replace for s in u.src) else u
    if new.op is Ops.REDUCE:
      val, ranges = new.src[0], sorted(new.src[1:], key=lambda r: r.arg[0])
      outer = _scope_of(val, parents, closes) - set(ranges)
      # reduces can share a range (an upcast's lanes): it nests inside every loop any of them needs
      for i, r in enumerate(ranges): parents[r] = parents.get(r, frozenset()) | outer | set(ranges[:i])
      acc = UOp(Ops.DEFINE_REG, val.dtype.ptr(1, AddrSpace.REG), (), nacc)
      nacc += 1
      ptr = acc.index(UOp.const(dtypes.index, 0))
      outer_ranges = tuple(sorted((r for r in outer if r.op is Ops.RANGE), key=lambda r: r.arg[0]))
      init = UOp(Ops.STORE, dtypes.void, (ptr, val.const_like(reduce_identity(new.arg, val.dtype))) + outer_ranges)
      inits[init] = tuple(ranges)
      cur = UOp(Ops.LOAD, val.dtype, (ptr, init) + tuple(ranges))
      upd = UOp(Ops.STORE, dtypes.void, (ptr, _accumulate(new.arg, cur, val, mulacc)))
      res = UOp(Ops.LOAD, val.dtype, (ptr, upd))
      closes[res] = frozenset(ranges)
      results[res] = (tuple(ranges), _scope_of(val, {}, closes))
      new = res
    if new is not u:
      replace[u] = new
      if u in closes: closes.setdefault(new, closes[u])   # an END over a reduce's value, rebuilt over its accumulator
  # the reset runs inside every loop its ranges ended up nested in: a later reduce sharing a range can nest that range
  # deeper than this reduce's own operands reach, and a reset outside that loop would carry the sum across its iterations
  for init, rs in inits.items(): parents[init] = frozenset().union(*(parents[r] for r in rs)) - set(rs)
  # so its value is also read after the reduce loops its ranges were nested in and it does not read: the reset restarts
  # the sum at each of their iterations, so the last one's is the value (an upcast's lanes stored as one vector read it
  # beside a lane that closes those loops: a cycle)
  for res, (rs, own) in results.items():
    closes[res] = closes[res] | frozenset(p for r in rs for p in parents[r] if p.op is Ops.RANGE and p.arg[1] is AxisType.REDUCE and p not in own)
  return replace.get(sink, sink), parents, closes

def _end_nesting(topo: dict[UOp, None], parents: dict[UOp, frozenset[UOp]], closes: dict[UOp, frozenset[UOp]]) -> None:
  """A hand-written kernel (engine/schedule.py lower_custom) says where its loops end: END(body, *ranges), whose users run
  after those loops. A loop runs inside the loops its body depends on (an earlier loop of the same END outside a later
  one), not inside those of the END's users: a loop read after it by another loop runs once, before that loop."""
  if not any(u.op is Ops.END and len(u.src) > 1 for u in topo): return
  scope: dict[UOp, frozenset[UOp]] = {}
  for n in topo:
    if n.op is Ops.REDUCE: closes[n] = frozenset(n.src[1:])   # (not lowered yet) its value is read after its loops
    if n.op is Ops.END and len(n.src) > 1:
      closes[n] = rs = frozenset(n.src[1:])
      for r in rs: parents[r] = parents.get(r, frozenset()) | (scope[n.src[0]] - rs) | {q for q in rs if q.arg[0] < r.arg[0]}
    scope[n] = _one_scope(n, scope, parents, closes)

def _scope_of(u: UOp, parents: dict[UOp, frozenset[UOp]], closes: dict[UOp, frozenset[UOp]]) -> set[UOp]:
  scope: dict[UOp, frozenset[UOp]] = {}
  for n in u.toposort(): scope[n] = _one_scope(n, scope, parents, closes)
  return set(scope[u])

def _one_scope(n: UOp, scope: dict[UOp, frozenset[UOp]], parents: dict[UOp, frozenset[UOp]], closes: dict[UOp, frozenset[UOp]]) -> frozenset[UOp]:
  s: set[UOp] = set()
  for x in n.src: s |= scope[x]
  if n.op is Ops.RANGE: s |= {n} | parents.get(n, frozenset())
  elif n.op is Ops.STORE and n in parents: s |= parents[n]   # an accumulator's reset (lower_reduces)
  if n in closes: s -= closes[n]
  # nest inside every loop that an included range nests in (to a fixed point)
  todo = list(s)
  while todo:
    for p in parents.get(todo.pop(), frozenset()):
      if p not in s:
        s.add(p)
        todo.append(p)
  return frozenset(s)

def linearize(sink: UOp, mulacc: bool = False) -> list[UOp]:
  """The execution order of a kernel: RANGE opens a loop, END closes it (see docs/ir.md). `mulacc`: sums of products
  accumulate with MULACC."""
  sink, parents, closes = lower_reduces(sink, mulacc)
  topo = list(sink.toposort())
  order = {u: i for i, u in enumerate(topo)}
  scope: dict[UOp, frozenset[UOp]] = {}
  for n in topo: scope[n] = _one_scope(n, scope, parents, closes)
  # a uop's loops from the outermost in: by axis number, but each after the loops it nests in (a hand-written kernel may
  # number a reduce's range below the loops around it)
  nests: dict[frozenset[UOp], tuple[UOp, ...]] = {}
  def nest(s: frozenset[UOp]) -> tuple[UOp, ...]:
    if (ret := nests.get(s)) is None:
      todo, out_ = sorted(s, key=lambda r: r.arg[0]), []
      while todo:
        r = next((r for r in todo if not (scope.get(r, frozenset()) - {r}) & set(todo)), todo[0])
        todo.remove(r)
        out_.append(r)
      ret = nests[s] = tuple(out_)
    return ret
  path = {n: nest(scope[n]) for n in topo if n.op is not Ops.SINK}
  out: list[UOp] = []
  # explicit stack of (prefix, nodes) blocks so the nesting depth never recurses deeply
  _emit((), [n for n in topo if n.op is not Ops.SINK], path, order, out)
  # kernel arguments first, in the order the runtime passes them (buffers by slot, then variables by name): renderers
  # declare parameters in uop order
  args = sorted([u for u in out if u.op is Ops.DEFINE_GLOBAL], key=lambda u: u.arg) + sorted([u for u in out if u.op is Ops.DEFINE_VAR], key=lambda u: u.arg)
  out = args + [u for u in out if u.op not in (Ops.DEFINE_GLOBAL, Ops.DEFINE_VAR)]
  # a hand-written kernel's END(body, *ranges) (and a group, a SINK) only placed its users after the loops, which the loops'
  # own ENDs close: they leave the list and the sources of what used them (the order keeps what they ordered)
  if not any(u.op is Ops.END and len(u.src) > 1 for u in out): return out
  new: dict[UOp, UOp] = {}
  for u in out: new[u] = u.replace(src=tuple(new.get(x, x) for x in u.src if not (x.op is Ops.SINK or x.op is Ops.END and len(x.src) > 1)))
  return [new[u] for u in out if not (u.op is Ops.END and len(u.src) > 1)]

def _emit(prefix: tuple[UOp, ...], nodes: list[UOp], path: dict[UOp, tuple[UOp, ...]], order: dict[UOp, int], out: list[UOp]) -> None:
  depth = len(prefix)
  inside = set(nodes)
  # an item at this level is a node (key: the node) or a child loop (key: its RANGE)
  def item(n: UOp) -> UOp: return n if len(path[n]) == depth else path[n][depth]
  items: dict[UOp, list[UOp]] = {}
  for n in nodes:
    if depth and n is prefix[-1]: continue
    items.setdefault(item(n), []).append(n)
  deps: dict[UOp, set[UOp]] = {k: set() for k in items}
  users: dict[UOp, set[UOp]] = {k: set() for k in items}
  for k, members in items.items():
    for n in members:
      for s in n.src:
        if s in inside and not (depth and s is prefix[-1]):
          ks = item(s)
          if ks is not k and ks in items:
            deps[k].add(ks)
            users[ks].add(k)
  prio = {k: min(order[n] for n in m) for k, m in items.items()}
  ready = [(prio[k], order[k], k) for k, d in deps.items() if not d]
  heapq.heapify(ready)
  while ready:
    _, _, k = heapq.heappop(ready)
    members = items[k]
    if len(members) == 1 and members[0] is k and (len(path[k]) == depth): out.append(k)
    else:
      out.append(k)  # the RANGE opens its loop
      _emit(prefix + (k,), members, path, order, out)
      out.append(UOp(Ops.END, dtypes.void, (k,)))
    for u in users[k]:
      deps[u].discard(k)
      if not deps[u]: heapq.heappush(ready, (prio[u], order[u], u))
  emitted = sum(1 for _ in items)
  if any(deps[k] for k in items): raise RuntimeError(f"linearize: cyclic dependency among {emitted} items at depth {depth}")
