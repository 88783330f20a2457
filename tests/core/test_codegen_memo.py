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

def _packed_linear_asts() -> list[UOp]:
  """A Linear whose weight Tensor.dot packs into panels (a merged lane axis the heuristics simplify), on 197 rows (PADTO,
  gated stores), register- and cache-blocked (SWAP)."""
  lin = nn.Linear(64, 256)
  out = lin(Tensor(np.random.default_rng(1).standard_normal((1, 197, 64), dtype=np.float32)))
  return [si.ast for si in out.schedule() if si.ast.op is Ops.SINK]

def test_memoised_codegen_renders_what_the_uncached_one_does(monkeypatch):
  ren = Device["CPU"].renderer
  asts = _block_asts() + _packed_linear_asts()
  assert len(asts) >= 7
  first = [get_program(a, ren, compile=False).src for a in asts]
  again = [get_program(a, ren, compile=False).src for a in asts]   # every memo hit now
  # the reference: the simplifier without its memo, the optimizer's caches emptied, UPCAST/UNROLL as they were written
  # before one walk did every lane (a store, a reduce at a time)
  monkeypatch.setattr(symbolic.sym, "memo", None)
  monkeypatch.setattr(symbolic, "_affine", lambda x: False)   # every gated address rewritten over its narrowed variables
  monkeypatch.setattr(opt, "_moved_ranges", lambda old, new, moved: new)   # every kernel's ranges found by a walk
  for f in (opt._apply_cpu_opt, index64._narrow): f.cache_clear()
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
          if not rest and u.arg is Ops.ADD and dtypes.is_float(acc.dtype.scalar()): acc = acc + acc.const_like(0.0)   # (the +0.0 start)
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

def test_ranges_an_action_hands_on_are_those_of_a_walk():
  # UPCAST, PADTO and SWAP set the ranges of the kernel they build from their input's: each is checked against a walk
  from tinygrad.uop.symbolic import sym
  ren = Device["CPU"].renderer
  fresh = lambda k: opt._sorted_ranges([u for u in k.toposort() if u.op is Ops.RANGE])
  seen = set()
  for ast in _packed_linear_asts():
    k = graph_rewrite(ast, sym)
    for o in opt.heuristic_opts(k, ren):
      k = opt.apply_opt(k, o)
      seen.add(o.op)
      assert opt._kernel_ranges(k) == fresh(k), o
  assert {opt.OptOps.UPCAST, opt.OptOps.PADTO, opt.OptOps.SWAP} <= seen

def test_a_swap_left_unapplied_keeps_what_the_heuristics_read_after_it():
  # hand_coded_opts does not build the kernel a SWAP renumbers unless an action follows: what it reads instead (the global
  # ranges from _swapped; the reduce ranges, the load strides along them and _vector_reduce from the kernel before) must
  # be what the renumbered kernel gives
  from tinygrad.uop.symbolic import sym
  ren = Device["CPU"].renderer
  k = graph_rewrite(_packed_linear_asts()[-1], sym)
  chosen = opt.heuristic_opts(k, ren)
  i = next(i for i, o in enumerate(chosen) if o.op is opt.OptOps.SWAP)
  before = opt.apply_opts(graph_rewrite(opt.apply_opt(k, chosen[0]), sym), chosen[1:i])
  after = opt.apply_opt(before, chosen[i])
  assert opt._swapped(opt.kernel_ranges(before)[0], chosen[i]) == opt.kernel_ranges(after)[0] != opt.kernel_ranges(before)[0]
  assert opt.kernel_ranges(before)[1] == opt.kernel_ranges(after)[1]
  for r in opt.kernel_ranges(after)[1]:
    assert [opt.stride(x, r) for x in opt._accesses(before)[1]] == [opt.stride(x, r) for x in opt._accesses(after)[1]]
    assert opt._vector_reduce(before, r) == opt._vector_reduce(after, r)

def test_kernels_differing_in_one_constant_get_their_own_programs():
  # every memo is keyed by the node itself (hash-consed: equal is identical), so a kernel that differs in one constant (a
  # scale, a slice's start: its gated addresses) is rendered for itself and computes its own values
  x = np.arange(40, dtype=np.float32)
  srcs = set()
  for c, start in ((3.0, 1), (5.0, 1), (3.0, 2)):
    t = lambda: (Tensor(x).pad(((0, 7),))[start:start + 40] * c + 1).contiguous()
    srcs |= {get_program(si.ast, Device["CPU"].renderer, compile=False).src for si in t().schedule() if si.ast.op is Ops.SINK}
    np.testing.assert_allclose(t().numpy(), np.pad(x, (0, 7))[start:start + 40] * c + 1)
  assert len(srcs) >= 3

def test_gated_sums_of_variables_fold_as_over_the_narrowed_ones(monkeypatch):
  # _under_gate answers an ADD/MUL expression of variables with its own fixed point: narrowing a variable that keeps two
  # values or more changes no rule there. Checked against the rewrite over the narrowed variables it skips, on random
  # expressions (simplified or not) under gates that narrow one or two variables, or pin one to a single value
  import random
  rnd = random.Random(0)
  r0, r1, v = UOp.range(24, 0), UOp.range(7, 1), UOp.variable("gate_v", 1, 9)
  def expr(d: int) -> UOp:
    if d == 0: return rnd.choice([r0, r1, v, UOp.const(dtypes.index, rnd.randint(-5, 30))])
    return expr(d - 1) + expr(d - 1) if rnd.random() < 0.6 else expr(d - 1) * UOp.const(dtypes.index, rnd.randint(-3, 17))
  gates = [r0 < 20, (r0 < 1).logical_not(), (r1 < 6) & (r0 < 23), r0 < 1, (v < 4) & (r1 < 2), r1 < 7]
  exprs = [expr(rnd.randint(1, 4)) for _ in range(150)]
  exprs += [graph_rewrite(e, symbolic.sym) for e in exprs]
  fast = [symbolic._under_gate(e, g, val) for e in exprs for g in gates for val in (True, False)]
  monkeypatch.setattr(symbolic, "_affine", lambda x: False)
  slow = [symbolic._under_gate(e, g, val) for e in exprs for g in gates for val in (True, False)]
  assert fast == slow and any(x is not None for x in slow)

def _late_pass_asts() -> list[UOp]:
  """Kernels each of the late passes rewrites: fp8 (a cast to fp8, float64 to half), numerics (a shift by a tensor, float
  to int, bool sum and bitcast), decompositions (exp, log, pow), keep_bits (a half copy and select); and the transformer
  block, where none of them rewrites anything."""
  f = Tensor(np.linspace(-3, 3, 24, dtype=np.float32))
  i = Tensor(np.arange(24, dtype=np.int32))
  h = Tensor(np.linspace(-2, 2, 24, dtype=np.float16))
  outs = [f.cast(dtypes.fp8e4m3), Tensor(np.linspace(-3, 3, 24)).cast(dtypes.float16), i << (i % 40), i >> (i % 33), f.cast(dtypes.int32),
          (f > 0).sum(), (f > 0).bitcast(dtypes.uint8), (f > 0) + (f < 1), f.exp(), f.abs().log(), f.abs() ** f, h[::-1], (f > 0).where(h, h * 2)]
  return list(dict.fromkeys(si.ast for o in outs for si in o.contiguous().schedule() if si.ast.op is Ops.SINK)) + _block_asts()

def test_late_passes_are_skipped_only_where_they_rewrite_nothing(monkeypatch):
  # the fp8, numerics, decompositions, keep_bits and renderer-matcher passes read one toposort of the kernel (kept while
  # they return it unchanged) and skip their rewrite where PatternMatcher.may_fire finds no node a rule rewrites: each
  # kernel renders as with a fresh toposort per pass and every rewrite run; and each pass does rewrite some kernel here
  import tinygrad.codegen as cg
  asts = _late_pass_asts()
  changed: set[tuple[str, str]] = set()
  def watch(name, fxn):
    def run(s, r, o):
      out = fxn(s, r, o)
      if out is not s: changed.add((name, r.device))
      return out
    return name, run
  monkeypatch.setattr(cg, "PASSES", [watch(n, f) for n, f in cg.PASSES])
  rens = [Device[d].renderer for d in ("CPU", "PYTHON")]
  fast = [get_program(a, r, compile=False).src for r in rens for a in asts]
  monkeypatch.setattr(PatternMatcher, "may_fire", lambda self, nodes, ctx=None: True)
  monkeypatch.setattr(cg, "_nodes", lambda s: s.toposort())
  assert fast == [get_program(a, r, compile=False).src for r in rens for a in asts]
  for name in ("fp8", "numerics", "keep_bits"): assert {(name, "CPU"), (name, "PYTHON")} <= changed, name
  assert ("decompositions", "CPU") in changed
