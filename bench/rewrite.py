#!/usr/bin/env python3
"""Rewrite throughput of the symbolic simplifier on index expressions like a scheduler makes, greedy vs e-graph.

Prints figures, asserts nothing: nodes rewritten per second for greedy (graph_rewrite with sym) and for the e-graph
(egraph_simplify then the greedy finish), the e-graph's extra time as a ratio, and how the results compare in cost.
Usage: PYTHONPATH=core python3 bench/rewrite.py [n_exprs] [n_egraph]
"""
import random, sys, time
from tinygrad.uop.ops import UOp
from tinygrad.uop.symbolic import sym, pm_reorder
from tinygrad.uop.upat import graph_rewrite
from tinygrad.uop.egraph import egraph_simplify, dag_cost
from tinygrad.helpers import EGRAPH_BUDGET

def corpus(n: int, seed: int = 0) -> list[UOp]:
  # flattened indices of 2-4 loops, split/merged by views: ((r0*64+r1)//8)%4, gated by a validity check
  rng = random.Random(seed)
  out = []
  for _ in range(n):
    shape = [rng.choice([2, 3, 4, 8, 16, 32, 64]) for _ in range(rng.randint(2, 4))]
    rs = [UOp.range(s, i) for i, s in enumerate(shape)]
    strides = [1]
    for s in reversed(shape[1:]): strides.insert(0, strides[0]*s)
    idx = rs[0]*strides[0]
    for r, st in zip(rs[1:], strides[1:]): idx = idx + r*st
    if rng.random() < 0.3: idx = idx + rng.randint(-3, 3)
    kind = rng.randrange(5)
    d = rng.choice([2, 4, 8, 16])
    if kind == 0: e = (idx // d) % rng.choice([2, 4, 8])
    elif kind == 1: e = (idx % (d*rng.choice([2, 4]))) // d
    elif kind == 2: e = (idx // d) * d + idx % d
    elif kind == 3: e = (rs[-1] < shape[-1] - 1).where((idx + strides[-1]) % (strides[0]*shape[0]), 0)
    else: e = ((idx // d) // rng.choice([2, 3])) * rng.choice([1, 2]) + (rs[0] * 0 + rs[-1] - rs[-1])
    out.append(e)
  return out

def nodes(es: list[UOp]) -> int: return sum(len(e.toposort()) for e in es)

def main() -> None:
  n = int(sys.argv[1]) if len(sys.argv) > 1 else 3000
  n_eg = int(sys.argv[2]) if len(sys.argv) > 2 else 100
  es = corpus(n)
  total = nodes(es)
  st = time.perf_counter()
  greedy = [graph_rewrite(e, sym) for e in es]
  t_greedy = time.perf_counter() - st
  print(f"corpus: {n} index expressions, {total} nodes, {nodes(greedy)} after greedy (cost {sum(map(dag_cost, es))} -> {sum(map(dag_cost, greedy))})")
  print(f"greedy:  {t_greedy:7.3f} s  {total/t_greedy:10.0f} nodes/s")

  sub = es[:n_eg]
  pm = sym + pm_reorder
  st = time.perf_counter()
  sat = [graph_rewrite(egraph_simplify(e, pm), sym) for e in sub]
  t_eg = time.perf_counter() - st
  sub_nodes = nodes(sub)
  t_greedy_sub = t_greedy * sub_nodes / total
  g_cost, e_cost = sum(map(dag_cost, greedy[:n_eg])), sum(map(dag_cost, sat))
  better = sum(dag_cost(a) < dag_cost(b) for a, b in zip(sat, greedy))
  worse = sum(dag_cost(a) > dag_cost(b) for a, b in zip(sat, greedy))
  print(f"e-graph: {t_eg:7.3f} s  {sub_nodes/t_eg:10.0f} nodes/s  on the first {n_eg} (budget {EGRAPH_BUDGET.value} e-nodes)")
  print(f"e-graph extra time: {t_eg/t_greedy_sub:.1f}x greedy's")
  print(f"result cost: greedy {g_cost}, e-graph+greedy {e_cost} (ratio {e_cost/g_cost:.3f}); e-graph better on {better}, worse on {worse}")

if __name__ == "__main__": main()
