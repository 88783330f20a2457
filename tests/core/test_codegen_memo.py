"""The codegen's memos (a pure matcher's fixed point kept on the node, UOp.range_set, the optimizer's caches, one walk for all
lanes of an upcast) change the time of a cold first call, never the code: each is checked against the computation it skips."""
import functools, gc, weakref
import numpy as np
from tinygrad import Tensor, Device, nn
from tinygrad.uop import Ops, GroupOp
from tinygrad.uop.ops import UOp, AxisType
from tinygrad.uop.upat import UPat, PatternMatcher, graph_rewrite
from tinygrad.uop import symbolic
from tinygrad.dtype import dtypes
from tinygrad.codegen import get_program, opt, index64

def _block_asts() -> list[UOp]:
  """The distinct kernels of a small transformer block (attention, softmax, layernorm, gelu MLP, a padded odd length)."""
  rng = np.random.default_rng(0)
  x = Tensor(rng.standard_normal((1, 13, 32), dtype=np.float32))
  ln, qkv, proj, fc1, fc2 = nn.LayerNorm(32), nn.Linear(32, 96), nn.Linear(32, 32), nn.Linear(32, 128), nn.Linear(128, 32)
  q, k, v = [t.reshape(1, 13, 2, 16).transpose(1, 2) for t in qkv(ln(x)).chunk(3, -1)]
  h = x + proj(((q @ k.transpose(-1, -2)) / 4).softmax(-1).matmul(v).transpose(1, 2).reshape(1, 13, 32))
  out = h + fc2(fc1(ln(h)).gelu())
  return list(dict.fromkeys(si.ast for si in out.schedule() if si.ast.op is Ops.SINK))

def test_memoised_codegen_renders_what_the_uncached_one_does(monkeypatch):
  ren = Device["CPU"].renderer
  asts = _block_asts()
  assert len(asts) >= 5
  first = [get_program(a, ren, compile=False).src for a in asts]
  again = [get_program(a, ren, compile=False).src for a in asts]   # every memo hit now
  # the reference: the simplifier without its memo, the optimizer's caches emptied, UPCAST/UNROLL as they were written
  # before one walk did every lane (a store, a reduce at a time)
  monkeypatch.setattr(symbolic.sym, "memo", None)
  for f in (opt._apply_cpu_opt, opt._kernel_ranges, index64._narrow): f.cache_clear()
  real = opt._apply_cpu_opt
  def one_at_a_time(sink, o):
    glob, red = opt.kernel_ranges(sink)
    if o.op is opt.OptOps.UPCAST:
      r = opt.nth_axis(glob, o.axis, "UPCAST")
      lanes = opt._split(r, o.arg)[1]
      return UOp(Ops.SINK, dtypes.void, tuple(s2 for s in sink.src for s2 in dict.fromkeys(s.substitute_each(r, lanes))), sink.arg)
    if o.op is opt.OptOps.UNROLL:
      r = opt.nth_axis(red, o.axis, "UNROLL", "reduce")
      outer, lanes = opt._split(r, o.arg)
      sub = {}
      for u in sink.toposort():
        if u.op is Ops.REDUCE and r in u.src[1:]:
          vals = u.src[0].substitute_each(r, lanes)
          acc = functools.reduce(lambda a, b: UOp(u.arg, a.dtype, (a, b)), vals)
          rest = tuple(outer if x is r else x for x in u.src[1:] if not (x is r and outer is r))
          sub[u] = UOp(Ops.REDUCE, u.dtype, (acc,) + rest, u.arg) if rest else acc
      return sink.substitute(sub)
    return real(sink, o)
  monkeypatch.setattr(opt, "_apply_cpu_opt", one_at_a_time)
  ref = [get_program(a, ren, compile=False).src for a in asts]
  assert first == again == ref

def test_pure_matcher_memo():
  calls = []
  def fold(x: UOp, c: UOp) -> UOp | None:
    calls.append(x)
    return x.const_like(x.arg + c.arg) if x.op is Ops.CONST else None
  rules = [(UPat(Ops.ADD, src=(UPat.var("x"), UPat.cvar("c"))), fold)]
  pure, plain = PatternMatcher(rules, pure=True), PatternMatcher(rules)
  v = UOp.variable("memo_v", 0, 10)
  e = (v + 1) * 2 + (UOp.const(dtypes.index, 3) + 4)
  want = graph_rewrite(e, plain)
  assert graph_rewrite(e, pure) is want and calls
  calls.clear()
  assert graph_rewrite(e, pure) is want and not calls, "the second rewrite of the same graph reads the memo, no rule runs"
  assert graph_rewrite(want.sink(v * 3), pure) is graph_rewrite(want.sink(v * 3), plain)
  calls.clear()
  graph_rewrite(e, pure, ctx=object())   # a ctx may change what a rule returns: no memo
  assert calls
  assert (PatternMatcher(rules, pure=True) + plain).memo is None and (pure + PatternMatcher(rules, pure=True)).memo is not None

def test_memo_keeps_no_cycle():
  # a node that is its own fixed point is not stored on itself: it is freed by reference counting, with no collector run
  pm = PatternMatcher([(UPat(Ops.MUL, name="m"), lambda m: None)], pure=True)
  gc.disable()
  try:
    u = UOp.variable("memo_cycle", 0, 5) * 7
    assert graph_rewrite(u, pm) is u
    ref = weakref.ref(u)
    del u
    assert ref() is None
  finally: gc.enable()

def test_each_source_pattern_is_compiled_and_matches_as_interpreted():
  pat = UPat(GroupOp.ALU, src=UPat(Ops.CONST, src=()), name="a")
  pm = PatternMatcher([(pat, lambda a: a.const_like(7))])
  rule = pm._compiled()[Ops.ADD][0][0]
  assert not isinstance(rule, functools.partial), "compiled, not interpreted"
  c, v = UOp.const(dtypes.int32, 2), UOp.variable("each_v", 0, 3).cast(dtypes.int32)
  for node in (c + c, c + v, v + c, UOp(Ops.WHERE, dtypes.int32, (UOp.const(dtypes.bool, True), c, c)), -c, -v):
    interpreted = bool(pat.match(node, {}))
    assert (pm.rewrite(node) is not None) == interpreted, node

def test_range_set_is_the_ranges_of_the_toposort():
  r0, r1 = UOp.range(8, 0, AxisType.GLOBAL), UOp.range(4, 1, AxisType.REDUCE)
  v = UOp.variable("rs_v", 1, 9)
  e = ((r0 * 4 + r1) % v + r1 * 2).sink(v + 1, r0 // 2)
  for n in e.toposort():
    assert n.range_set == {u for u in n.toposort() if u.op is Ops.RANGE}, n
  assert v.range_set == frozenset() and (v + 1).range_set is v.range_set
