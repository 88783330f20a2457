"""graph_rewrite: fixed point, bottom-up vs default order, memoisation, ctx, deep graphs, errors that name the rule."""
import collections, os
import pytest
from tinygrad.uop import Ops
from tinygrad.uop.ops import UOp
from tinygrad.uop.upat import UPat, PatternMatcher, graph_rewrite, RewriteError
from tinygrad.dtype import dtypes

def leaf(name: str) -> UOp: return UOp(Ops.NOOP, dtypes.int32, arg=name)

def rename(old: str, new: str) -> tuple[UPat, object]:
  return (UPat(Ops.NOOP, arg=old), lambda: leaf(new))

class TestFixedPoint:
  def test_chain_of_rules_reaches_the_end(self):
    pm = PatternMatcher([rename("a", "b"), rename("b", "c")])
    assert graph_rewrite(leaf("a"), pm) is leaf("c")
    assert graph_rewrite(leaf("a"), pm, bottom_up=True) is leaf("c")
  def test_rules_in_reverse_order_still_reach_the_end(self):
    pm = PatternMatcher([rename("b", "c"), rename("a", "b")])
    s = UOp.sink(leaf("a"), leaf("x"))
    assert graph_rewrite(s, pm) is UOp.sink(leaf("c"), leaf("x"))
  def test_rewritten_parent_is_rewritten_again(self):
    # x+0 -> x exposes x*1 at the parent, which then folds: needs the parent revisited after its source changed
    x = UOp.variable("x", 0, 10)
    pm = PatternMatcher([(UPat.var("y") + 0, lambda y: y), (UPat.var("y") * 1, lambda y: y)])
    assert graph_rewrite(((x + 0) * 1 + 0) * 1, pm) is x
  def test_result_of_a_rule_is_rewritten(self):
    x = UOp.variable("x", 0, 10)
    # a rule that builds a new node the other rule can simplify
    pm = PatternMatcher([(UPat(Ops.SUB, src=(UPat.var("p"), UPat.var("q"))), lambda p, q: p + (-q)),
                         (UPat(Ops.NEG, src=(UPat.cvar("c"),)), lambda c: c.const_like(-c.arg))])
    assert graph_rewrite(x - 3, pm) is x + UOp.const(dtypes.index, -3)
  def test_no_rule_returns_the_same_graph(self):
    x = UOp.variable("x", 0, 10)
    g = (x + 1) * (x + 2)
    assert graph_rewrite(g, PatternMatcher([])) is g

class TestOrder:
  def _pm(self, log):
    # SINK(NOOP a) and rules on both: which fires first shows the order
    return PatternMatcher([(UPat(Ops.SINK, name="s"), lambda s: log.append("sink")),
                           (UPat(Ops.NOOP, name="n"), lambda n: log.append(f"leaf {n.arg}"))])
  def test_default_visits_sources_first(self):
    log: list = []
    graph_rewrite(UOp.sink(leaf("a")), self._pm(log))
    assert log == ["leaf a", "sink"]
  def test_bottom_up_visits_the_node_first(self):
    log: list = []
    graph_rewrite(UOp.sink(leaf("a")), self._pm(log), bottom_up=True)
    assert log == ["sink", "leaf a"]
  def test_bottom_up_sees_the_original_sources(self):
    # parent rule matches SINK(NOOP "a"); default order renames "a" first, so only bottom_up lets the parent rule fire
    pm = PatternMatcher([(UPat(Ops.SINK, src=(UPat(Ops.NOOP, arg="a"),)), lambda: UOp.sink(leaf("parent"))), rename("a", "b")])
    assert graph_rewrite(UOp.sink(leaf("a")), pm, bottom_up=True) is UOp.sink(leaf("parent"))
    assert graph_rewrite(UOp.sink(leaf("a")), pm) is UOp.sink(leaf("b"))

class TestMemo:
  def test_callback_called_once_per_distinct_node(self):
    calls: collections.Counter = collections.Counter()
    def count(x):
      calls[x] += 1
    pm = PatternMatcher([(UPat(name="x"), count)])
    x, y = UOp.variable("x", 0, 10), UOp.variable("y", 0, 10)
    shared = x * y
    g = UOp.sink(shared + 1, shared + 2, shared * shared, (shared + 1) * 2)
    graph_rewrite(g, pm)
    assert len(calls) == len(g.toposort())
    assert max(calls.values()) == 1, {k.render() if k.op is not Ops.SINK else "sink": v for k, v in calls.items() if v > 1}
  def test_bottom_up_callback_once_per_node(self):
    calls: collections.Counter = collections.Counter()
    pm = PatternMatcher([(UPat(name="x"), lambda x: calls.update([x]))])
    x = UOp.variable("x", 0, 10)
    shared = x + 1
    g = UOp.sink(shared * 2, shared * 3)
    graph_rewrite(g, pm, bottom_up=True)
    assert len(calls) == len(g.toposort()) and max(calls.values()) == 1

class TestCtx:
  def test_ctx_reaches_callbacks(self):
    ctx = {"seen": []}
    pm = PatternMatcher([(UPat(Ops.NOOP, name="n"), lambda ctx, n: ctx["seen"].append(n.arg))])
    graph_rewrite(UOp.sink(leaf("a"), leaf("b")), pm, ctx=ctx)
    assert sorted(ctx["seen"]) == ["a", "b"]
  def test_ctx_can_drive_the_rewrite(self):
    pm = PatternMatcher([(UPat(Ops.NOOP, name="n"), lambda ctx, n: ctx.get(n))])
    g = UOp.sink(leaf("a"), leaf("b"))
    assert graph_rewrite(g, pm, ctx={leaf("a"): leaf("z")}) is UOp.sink(leaf("z"), leaf("b"))

class TestDeep:
  def _chain(self, n):
    x = leaf("deep_start")
    for _ in range(n): x = UOp(Ops.ADD, dtypes.int32, (x, UOp.const(dtypes.int32, 0)))
    return x
  def test_100k_chain_no_recursion_error(self):
    pm = PatternMatcher([(UPat.var("y") + 0, lambda y: y)])
    assert graph_rewrite(self._chain(100_000), pm) is leaf("deep_start")
  def test_100k_chain_bottom_up(self):
    pm = PatternMatcher([rename("deep_start", "deep_end")])
    out = graph_rewrite(self._chain(100_000), pm, bottom_up=True)
    assert out.op is Ops.ADD and leaf("deep_end") in out.toposort()

def _boom(x):
  raise ValueError("boom on purpose")

class TestErrors:
  def test_raising_callback_names_rule_and_node(self):
    pm = PatternMatcher([(UPat(Ops.MUL, name="x"), _boom)])
    x = UOp.variable("x", 0, 10)
    with pytest.raises(RewriteError) as ei:
      graph_rewrite((x * 3) + 1, pm)
    msg = str(ei.value)
    assert f"{os.path.basename(__file__)}:{_boom.__code__.co_firstlineno}" in msg
    assert "ValueError" in msg and "boom on purpose" in msg
    assert "Ops.MUL" in msg and "(x*3)" in msg
    assert isinstance(ei.value.__cause__, ValueError)
  def test_error_from_a_lambda_names_its_line(self):
    pm = PatternMatcher([(UPat(Ops.NOOP), lambda: 1 // 0)])  # LAMBDA-RULE
    line = next(i for i, l in enumerate(open(__file__), 1) if l.rstrip().endswith("# LAMBDA-" + "RULE"))
    with pytest.raises(RewriteError, match=rf"test_graph_rewrite.py:{line}.*ZeroDivisionError"):
      graph_rewrite(UOp.sink(leaf("a")), pm)
  def test_later_rewrites_work_after_an_error(self):
    pm = PatternMatcher([(UPat(Ops.MUL, name="x"), _boom)])
    with pytest.raises(RewriteError): graph_rewrite(UOp.variable("x", 0, 10) * 2, pm)
    assert graph_rewrite(UOp.sink(leaf("a")), PatternMatcher([rename("a", "b")])) is UOp.sink(leaf("b"))

class TestMayFire:
  # PatternMatcher.may_fire(g.toposort()) False lets a pass skip graph_rewrite(g, pm): it must be False only where the
  # rewrite returns g itself. Random graphs of mixed dtypes (vectors too: a pattern's dtype matches a vector's scalar) and
  # random tables of rules typed by op, dtype and source, some declining; every rule that fires changes the graph
  @staticmethod
  def _case(data):
    from hypothesis import strategies as st
    f4 = dtypes.float32.vec(4)
    pool = [UOp.const(dtypes.int32, 3), UOp.const(dtypes.float32, 1.5), UOp.variable("mf_v", 0, 9).cast(dtypes.int32),
            UOp(Ops.VECTORIZE, f4, (UOp.const(dtypes.float32, 2.0),) * 4)]
    for _ in range(data.draw(st.integers(1, 12))):
      a, b = data.draw(st.sampled_from(pool)), data.draw(st.sampled_from(pool))
      op = data.draw(st.sampled_from([Ops.ADD, Ops.MUL, Ops.MAX, Ops.CMPLT, Ops.CAST]))
      if op is Ops.CAST: pool.append(a.cast(data.draw(st.sampled_from([dtypes.int32, dtypes.float32, dtypes.bool]))))
      elif a.dtype == b.dtype: pool.append(UOp(op, dtypes.bool.vec(a.dtype.count) if op is Ops.CMPLT else a.dtype, (a, b)))
    g = UOp.sink(*pool[-data.draw(st.integers(1, 3)):])
    def rule(op: Ops, dt, src_op: Ops | None, decline: bool):
      pat = UPat(op, dt, src=None if src_op is None else (UPat(src_op), UPat()), name="x")
      return (pat, lambda x: None if decline and x.src[0].op is Ops.CONST else UOp(Ops.NOOP, x.dtype, arg=("fired", x.op)))
    rules = data.draw(st.lists(st.tuples(st.sampled_from([Ops.ADD, Ops.MUL, Ops.MAX, Ops.CMPLT, Ops.CAST]),
                                         st.sampled_from([None, dtypes.int32, dtypes.float32, dtypes.bool, dtypes.floats]),
                                         st.sampled_from([None, Ops.CONST, Ops.CAST]), st.booleans()), max_size=4))
    return g, PatternMatcher([rule(*r) for r in rules])

  def test_false_only_where_the_rewrite_changes_nothing(self):
    from hypothesis import given, settings, strategies as st
    @settings(max_examples=300, deadline=None)
    @given(st.data())
    def check(data):
      g, pm = self._case(data)
      assert pm.may_fire(g.toposort()) == (graph_rewrite(g, pm) is not g)
      assert pm.may_fire(g.toposort()) == (graph_rewrite(g, pm, bottom_up=True) is not g)
    check()

  def test_a_vector_matches_a_pattern_of_its_scalar(self):
    v = UOp(Ops.VECTORIZE, dtypes.float32.vec(2), (UOp.const(dtypes.float32, 1.0),) * 2)
    pm = PatternMatcher([(UPat(Ops.ADD, dtypes.float32, name="x"), lambda x: x.src[0])])
    assert pm.may_fire((v + v).toposort()) and not pm.may_fire(v.toposort())
    assert not PatternMatcher([(UPat(Ops.ADD, dtypes.int32, name="x"), lambda x: x.src[0])]).may_fire((v + v).toposort())

  def test_upat_any_matches_whatever_its_alternatives_do(self):
    # a UPatAny's own dtype is not tested by its match: may_fire must not filter on it
    x = UOp.const(dtypes.float32, 2.0)
    pm = PatternMatcher([(UPat.any(UPat(Ops.ADD, name="a"), UPat(Ops.MUL, name="a")), lambda a: a.src[0])])
    pm.patterns[0][0].dtype_set = frozenset({dtypes.int8})
    assert pm.may_fire((x * x).toposort()) and graph_rewrite(x * x, pm) is x
