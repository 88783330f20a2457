"""Graph runners (engine/graph.py): a capture's runs of kernels replay through the device's runner, a plugin's own runner is
used when it supplies one, a runner that declines or fails leaves the kernels to replay one by one, JIT=2 turns graphs
off, and launch sizes are evaluated by compiled expressions (sym_infer walks an expression once, not per call)."""
import numpy as np, pytest
from hypothesis import given, settings, strategies as st
from tinygrad import Tensor, TinyJit, Variable, Device
from tinygrad.device import Compiled
from tinygrad.dtype import dtypes
from tinygrad.engine.graph import GraphRunner, GraphError
from tinygrad.helpers import Context, GlobalCounters
from tinygrad.uop import Ops
from tinygrad.uop.ops import UOp, sym_infer, exec_alu

def _step(a, b, n): return ((a[:n] * b[:n]).sum(0) + 1).exp2(), (a[:n] - 1).max()

def _run(device, k, jit=1):
  """Six calls of a jitted two-output function with new inputs and a new bound value each call; outputs and the jit."""
  rng = np.random.default_rng(0)
  with Context(JIT=jit):
    f, out = TinyJit(_step), []
    for i in range(6):
      a, b = [rng.standard_normal((8, 3)).astype(np.float32) for _ in range(2)]
      n = 1 + (i * 3) % 8
      r = f(Tensor(a, device=device), Tensor(b, device=device), Variable("n", 1, 8).bind(n))
      out.append(([x.numpy() for x in r], (np.exp2((a[:n] * b[:n]).sum(0) + 1), (a[:n] - 1).max())))
  return out, f

class Recording(GraphRunner):
  made: list = []
  def __init__(self, *args):
    super().__init__(*args)
    Recording.made.append(self)
    self.runs = 0
  def run(self, inputs, var_vals):
    self.runs += 1
    super().run(inputs, var_vals)

@pytest.fixture
def python_graph(monkeypatch):
  """Set the PYTHON device's graph runner for one test."""
  dev = Device["PYTHON"]
  def use(cls): monkeypatch.setattr(dev, "graph", cls)
  return use

def test_default_graph_replays_the_capture_with_new_inputs_and_values():
  assert Device["PYTHON"].graph is None   # the core's default
  out, f = _run("PYTHON", 0)
  assert [type(r) for _, _, r in f.replay.items] == [GraphRunner]
  for got, want in out:
    for g, w in zip(got, want): np.testing.assert_allclose(g, w, rtol=1e-5)

def test_a_plugins_own_graph_runner_is_used(python_graph):
  python_graph(Recording)
  Recording.made.clear()
  out, f = _run("PYTHON", 0)
  assert len(Recording.made) == 1 and Recording.made[0].runs == 6 - 2   # call 1 runs, call 2 captures, 3..6 replay
  for got, want in out:
    for g, w in zip(got, want): np.testing.assert_allclose(g, w, rtol=1e-5)

def test_graph_replay_is_bit_identical_and_counts_the_same_kernels():
  GlobalCounters.reset()
  graph, _ = _run("PYTHON", 0)
  counted = (GlobalCounters.kernel_count, GlobalCounters.global_ops, GlobalCounters.global_mem)
  GlobalCounters.reset()
  each, f = _run("PYTHON", 0, jit=2)
  assert all(r is None for _, _, r in f.replay.items)
  assert counted == (GlobalCounters.kernel_count, GlobalCounters.global_ops, GlobalCounters.global_mem)
  for (g, _), (e, _) in zip(graph, each):
    assert all(x.tobytes() == y.tobytes() for x, y in zip(g, e))

def _lone(jit):
  # a kernel on PYTHON, a copy to CPU, a kernel there with a bound Variable, a copy back: two lone kernels between copies
  rng = np.random.default_rng(1)
  with Context(JIT=jit):
    f, out = TinyJit(lambda a, n: ((a + 1).to("CPU")[:n] * 2).sum().to("PYTHON")), []
    for i in range(5):
      a, n = rng.standard_normal(6).astype(np.float32), 1 + i
      out.append((f(Tensor(a, device="PYTHON").realize(), Variable("n", 1, 6).bind(n)).numpy(), ((a + 1)[:n] * 2).sum()))
  return out, f

def test_lone_kernels_replay_through_the_default_runner():
  GlobalCounters.reset()
  graph, f = _lone(1)
  counted = (GlobalCounters.kernel_count, GlobalCounters.global_ops, GlobalCounters.global_mem)
  kinds = [(end - start, type(r)) for start, end, r in f.replay.items]
  assert (1, GraphRunner) in kinds and kinds.count((1, type(None))) >= 2, kinds   # the kernels graphed, the copies one by one
  GlobalCounters.reset()
  each, fe = _lone(2)
  assert all(r is None for _, _, r in fe.replay.items)
  assert counted == (GlobalCounters.kernel_count, GlobalCounters.global_ops, GlobalCounters.global_mem)
  for (g, want), (e, _) in zip(graph, each):
    assert g.tobytes() == e.tobytes()
    np.testing.assert_allclose(g, want, rtol=1e-5)

class Declines(GraphRunner):
  def __init__(self, *args): raise GraphError("not this one")

class Breaks(GraphRunner):
  def __init__(self, *args): raise ZeroDivisionError("a bug in the runner")

def test_a_runner_that_declines_or_fails_leaves_kernels_one_by_one(python_graph):
  python_graph(Declines)
  out, f = _run("PYTHON", 0)
  assert all(r is None for _, _, r in f.replay.items)
  python_graph(Breaks)
  with pytest.warns(RuntimeWarning, match="graph runner failed.*ZeroDivisionError: a bug in the runner"): out2, _ = _run("PYTHON", 0)
  for (g, w), (g2, _) in zip(out, out2):
    for x, y, z in zip(g, g2, w):
      np.testing.assert_allclose(x, z, rtol=1e-5)
      np.testing.assert_array_equal(x, y)

def test_debug_2_replays_kernel_by_kernel(python_graph, capsys):
  python_graph(Recording)
  Recording.made.clear()
  with Context(DEBUG=2): _run("PYTHON", 0)
  assert Recording.made and Recording.made[0].runs == 0   # every kernel printed its own line instead
  assert capsys.readouterr().out.count("(jit)") >= 4 * 2

def test_compiled_graph_is_part_of_the_contract():
  import inspect
  assert "graph" in inspect.signature(Compiled.__init__).parameters

# ---- sym_infer: compiled once per expression ----

def test_sym_infer_walks_an_expression_once(count_calls):
  v, w = Variable("a", 1, 100), Variable("b", 1, 100)
  e = (v * 3 + w) // 2 + (v % 7) * (w - 1)
  want = lambda x: (x * 3 + x // 2 + 1) // 2 + (x % 7) * (x // 2)
  assert sym_infer(e, {v: 1, w: 1}) == want(1)   # compiles it (walking the graph)
  walks = count_calls(UOp, "toposort")
  for x in range(1, 30): assert sym_infer(e, {v: x, w: x // 2 + 1}) == want(x)
  assert walks["n"] == 0

def _reference(expr, vals):
  # the definition: each node through exec_alu, sources first
  out = {}
  for n in expr.toposort(gate=lambda x: x.op is not Ops.BIND):
    if n.op is Ops.CONST: out[n] = n.arg
    elif n.op is Ops.DEFINE_VAR: out[n] = vals[n]
    elif n.op is Ops.BIND: out[n] = vals.get(n.src[0], n.src[1].arg)
    elif n.op is Ops.CAST: out[n] = dtypes.as_const(out[n.src[0]], n.dtype)
    else: out[n] = exec_alu(n.op, n.dtype, [out[s] for s in n.src])
  return out[expr]

_OPS = [Ops.ADD, Ops.SUB, Ops.MUL, Ops.IDIV, Ops.MOD, Ops.MAX, Ops.CMPLT, Ops.CMPNE, Ops.WHERE, Ops.CAST]

@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(_OPS), st.integers(0, 50), st.integers(0, 50), st.integers(-9, 2**31 - 1)), min_size=1, max_size=10),
       st.sampled_from([dtypes.int32, dtypes.int64, dtypes.uint32, dtypes.int8]), st.integers(-2**31, 2**31 - 1), st.integers(-300, 300))
def test_sym_infer_compiled_matches_the_definition(prog, dt, x, y):
  # each variable's range within its dtype, and its value within its range (as a bound Variable's always is)
  lo, hi = int(dtypes.min(dt)), int(dtypes.max(dt))
  v, w = UOp.variable("x", lo, hi, dt), UOp.variable("y", max(lo, -300), min(hi, 300), dt)
  nodes = [v, w, UOp.const(dt, 3)]
  for op, i, j, c in prog:
    a, b = nodes[i % len(nodes)], nodes[j % len(nodes)]
    if op is Ops.CAST: nodes.append(a.cast(dtypes.int64 if dt != dtypes.int64 else dtypes.int32).cast(dt))
    elif op is Ops.WHERE: nodes.append(UOp(Ops.WHERE, dt, ((a < b), UOp.const(dt, c % 100), b)))
    elif op in (Ops.CMPLT, Ops.CMPNE): nodes.append(UOp(Ops.WHERE, dt, (UOp(op, dtypes.bool, (a, b)), a, UOp.const(dt, c % 100))))
    else: nodes.append(UOp(op, dt, (a, UOp.const(dt, c) if c % 3 == 0 else b)))
  e = nodes[-1]
  vals = {v: dtypes.as_const(x, dt), w: min(max(y, max(lo, -300)), min(hi, 300))}
  assert sym_infer(e, vals) == _reference(e, vals)
  assert sym_infer(e, {"x": vals[v], "y": vals[w]}) == _reference(e, vals)   # variables by name
