"""The e-graph: congruence closure, same values as greedy, at least greedy's result, budget, a case saturation wins."""
import random
from hypothesis import given, settings, strategies as st, HealthCheck
from tinygrad.uop import Ops
from tinygrad.uop.ops import UOp
from tinygrad.uop.symbolic import sym, pm_reorder, simplify
from tinygrad.uop.egraph import EGraph, egraph_simplify, dag_cost
from tinygrad.uop.upat import graph_rewrite
from tinygrad.dtype import dtypes
from tinygrad.helpers import Context
from test_symbolic import exprs, _check_same_values

a, b, c = UOp.variable("a", 0, 10), UOp.variable("b", 0, 3), UOp.variable("c", -5, 5)

def index_corpus(n: int, seed: int = 1) -> list[UOp]:
  rng = random.Random(seed)
  out = []
  for _ in range(n):
    shape = [rng.choice([2, 4, 8, 16, 64]) for _ in range(rng.randint(2, 3))]
    rs = [UOp.range(s, i) for i, s in enumerate(shape)]
    idx = rs[0]
    for r, s in zip(rs[1:], shape[1:]): idx = idx * s + r
    d = rng.choice([2, 4, 8])
    out.append(rng.choice([(idx // d) % rng.choice([2, 4]), (idx % (d*4)) // d, (idx // d) * d + idx % d, idx + rs[0] * 3 - rs[0] * 3]))
  return out

def test_congruence_closure():
  g = EGraph()
  fa, fb = g.add(a * 3 + 1), g.add(b * 3 + 1)
  assert g.find(fa) != g.find(fb)
  g.union(g.add(a), g.add(b))
  g.rebuild()
  assert g.find(fa) == g.find(fb)  # a == b implies a*3+1 == b*3+1

def test_extracts_cheapest():
  g = EGraph()
  root = g.add((a * 4 + b) // 4)
  g.union(root, g.add(a))
  g.rebuild()
  g.extract()
  assert g.term(root) is a

@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(exprs(), st.integers(0, 2**31))
def test_same_values_as_greedy(e, seed):
  out = graph_rewrite(egraph_simplify(e, sym + pm_reorder, budget=300), sym)
  _check_same_values(e, out, seed)

def test_at_least_greedy_on_corpus():
  for e in index_corpus(40):
    greedy = graph_rewrite(e, sym)
    assert dag_cost(graph_rewrite(egraph_simplify(e, sym, budget=500), sym)) <= dag_cost(greedy), e.render()
    with Context(EGRAPH=1, EGRAPH_BUDGET=500):
      assert dag_cost(simplify(e)) <= dag_cost(greedy), e.render()

def test_budget():
  e = ((a * 3 + b) + c) + a * 4
  for budget in (1, 5, 20):
    out = egraph_simplify(e, sym + pm_reorder, budget=budget)
    _check_same_values(e, out, budget)
    assert dag_cost(out) <= dag_cost(e)
  # a budget of one e-node stops before any rule: the extraction is the input itself
  assert egraph_simplify(e, sym + pm_reorder, budget=1) is e

def test_saturation_beats_greedy():
  # like terms that greedy's local rules cannot bring together: a*3 and a*4 sit three additions apart
  e = ((a * 3 + b) + c) + a * 4
  greedy = graph_rewrite(e, sym)
  assert greedy.render() == "((((a*3)+b)+c)+(a*4))"
  with Context(EGRAPH=1, EGRAPH_BUDGET=500):
    out = simplify(e)
  assert dag_cost(out) < dag_cost(greedy)
  assert sum(1 for n in out.toposort() if n.op is Ops.MUL) == 1, out.render()
  _check_same_values(e, out, 0)

def test_deep_input_over_budget():
  e = a
  for i in range(3000): e = e + 1
  assert egraph_simplify(e, sym).op is Ops.ADD  # too big to saturate: returned whole, no recursion
  with Context(EGRAPH=1): assert simplify(e).render() == "(a+3000)"

def test_floats_untouched_by_int_rules():
  f = UOp.variable("f", 0, 10).cast(dtypes.float)
  assert egraph_simplify(f * 0.0, sym).render() == "(float(f)*0.0)"
