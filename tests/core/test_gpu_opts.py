"""GPU optimization actions (codegen/gpuopt.py: LOCAL, GROUP, GROUPTOP) forced onto real kernels on the PYTHON device,
whose lanes run in lockstep with shared memory per block, checked against numpy with odd sizes (1, primes, sizes the
amount does not divide); their validation against the renderer's limits; and the GPU heuristics, on PYTHON and on the
PYTHON device emulating NV, AMD and METAL (subprocesses: EMULATE is read when the device opens)."""
import json, os, subprocess, sys
import numpy as np, pytest
from hypothesis import given, settings, strategies as st
from tinygrad import Tensor, dtypes
from tinygrad.codegen.opt import Opt, OptOps, KernelOptError, apply_opts, kernel_ranges, heuristic_opts, parse_opts
from tinygrad.codegen.gpuopt import gpu_opts, lower_groups, thread_ranges
from tinygrad.codegen import get_program
from tinygrad.engine.realize import method_cache
from tinygrad.renderer import Renderer
from tinygrad.runtime.python import PythonRenderer
from tinygrad.uop import Ops
from tinygrad.uop.ops import UOp, AxisType
from tinygrad.uop.upat import graph_rewrite
from tinygrad.uop.symbolic import sym
from tinygrad.helpers import Context

DEV = "PYTHON"
CORE = os.path.join(os.path.dirname(__file__), "..", "..", "core")

L, G, GT, U, R, P = OptOps.LOCAL, OptOps.GROUP, OptOps.GROUPTOP, OptOps.UPCAST, OptOps.UNROLL, OptOps.PADTO

# (actions, the sizes n they apply to) on a*b+c over n elements
ELEMENTWISE = [([Opt(L, 0, 4)], {16, 1000}), ([Opt(L, 0, 8), Opt(U, 0, 2)], {16}), ([Opt(U, 0, 2), Opt(L, 0, 8)], {16}),
               ([Opt(P, 0, 16), Opt(L, 0, 16)], {7, 97, 1000}), ([Opt(L, 0, 16)], {16}), ([Opt(L, 0, 97)], {97})]
@pytest.mark.parametrize("case", range(len(ELEMENTWISE)))
@pytest.mark.parametrize("n", [1, 7, 16, 97, 1000])
def test_local_elementwise(forced, case, n):
  opts, should = ELEMENTWISE[case]
  rng = np.random.default_rng(n)
  a, b, c = (rng.standard_normal(n).astype(np.float32) for _ in range(3))
  applied = forced(opts)
  got = (Tensor(a, device=DEV) * Tensor(b, device=DEV) + Tensor(c, device=DEV)).numpy()
  np.testing.assert_allclose(got, a*b+c, rtol=1e-6, atol=1e-6)
  assert bool(applied) == (n in should)

def test_two_and_three_thread_axes(forced):
  x = np.random.default_rng(0).standard_normal((6, 10, 4)).astype(np.float32)
  applied = forced([Opt(L, 2, 4), Opt(L, 1, 5), Opt(L, 0, 3)])   # lidx0 = the contiguous axis
  np.testing.assert_allclose((Tensor(x, device=DEV).exp2() + 1).numpy(), np.exp2(x) + 1, rtol=1e-6)
  assert applied

REDUCE_OPS = {"sum": (lambda t: t.sum(1), lambda x: x.sum(1)), "max": (lambda t: t.max(1), lambda x: x.max(1)),
              "min": (lambda t: t.min(1), lambda x: x.min(1)), "prod": (lambda t: t.prod(1), lambda x: x.prod(1))}
# (actions, which reduce sizes they apply to) on a row reduce over axis 1
ROW = [([Opt(G, 0, 4)], lambda c: c % 4 == 0), ([Opt(GT, 0, 16)], lambda c: c % 16 == 0),
       ([Opt(G, 0, 16), Opt(R, 0, 2)], lambda c: c % 32 == 0), ([Opt(R, 0, 2), Opt(GT, 0, 8)], lambda c: c % 16 == 0),
       ([Opt(L, 0, 2), Opt(G, 0, 8)], None), ([Opt(G, 0, 8), Opt(U, 0, 2)], None), ([Opt(GT, 0, 97)], lambda c: c == 97)]
@pytest.mark.parametrize("op", list(REDUCE_OPS))
@pytest.mark.parametrize("case", range(len(ROW)))
@pytest.mark.parametrize("shape", [(1, 1), (3, 16), (6, 64), (13, 48), (5, 97), (4, 256)])
def test_group_row_reduces(forced, op, case, shape):
  opts, should = ROW[case]
  x = np.random.default_rng(1).uniform(0.9, 1.1, shape).astype(np.float32) if op == "prod" else \
    np.random.default_rng(1).standard_normal(shape).astype(np.float32)
  applied = forced(opts)
  t, ref = REDUCE_OPS[op]
  np.testing.assert_allclose(t(Tensor(x, device=DEV)).numpy(), ref(x), rtol=1e-5, atol=1e-5)
  if should is not None and shape[1] > 1: assert bool(applied) == should(shape[1]), applied
  if shape in ((6, 64), (4, 256)) and case in (4, 5): assert applied   # rows even and the reduce a multiple of 8

@pytest.mark.parametrize("n", [1, 7, 97, 256, 1000, 4096])
@pytest.mark.parametrize("opts", [[Opt(G, 0, 8)], [Opt(GT, 0, 8), Opt(R, 0, 4)], [Opt(G, 0, 256)]], ids=str)
def test_group_full_reduce(forced, n, opts):
  x = np.random.default_rng(n).standard_normal(n).astype(np.float32)
  applied = forced(opts)
  t = Tensor(x, device=DEV)
  np.testing.assert_allclose(t.sum().numpy(), x.sum(), rtol=1e-4, atol=1e-4)
  np.testing.assert_allclose(t.max().numpy(), x.max())
  if n in (256, 4096): assert applied

@pytest.mark.parametrize("opts", [[Opt(G, 0, 16), Opt(L, 0, 2)], [Opt(L, 0, 3), Opt(GT, 0, 4)], [Opt(G, 0, 64)]], ids=str)
def test_group_column_reduce(forced, opts):
  x = np.random.default_rng(2).standard_normal((64, 6)).astype(np.float32)
  applied = forced(opts)
  np.testing.assert_allclose(Tensor(x, device=DEV).sum(0).numpy(), x.sum(0), rtol=1e-5, atol=1e-5)
  assert applied

@pytest.mark.parametrize("opts", [[Opt(G, 0, 8)], [Opt(G, 0, 4), Opt(G, 1, 4)], [Opt(GT, 0, 16), Opt(L, 0, 2)]], ids=str)
def test_several_reduces_and_elementwise_after(forced, opts):
  x = np.random.default_rng(3).standard_normal((4, 32)).astype(np.float32)
  applied = forced(opts)
  t = Tensor(x, device=DEV)
  e = np.exp(x - x.max(1, keepdims=True))
  np.testing.assert_allclose(t.softmax(1).numpy(), e / e.sum(1, keepdims=True), rtol=1e-5, atol=1e-6)
  np.testing.assert_allclose((t.sum(1, keepdim=True) * 2 + t).numpy(), x.sum(1, keepdims=True) * 2 + x, rtol=1e-5, atol=1e-5)
  np.testing.assert_allclose(t.std(1).numpy(), x.std(1, ddof=1), rtol=1e-5, atol=1e-6)
  np.testing.assert_allclose((t.max(1) + t.sum(1) * t.min(1)).numpy(), x.max(1) + x.sum(1) * x.min(1), rtol=1e-5, atol=1e-5)
  y = np.random.default_rng(4).standard_normal((4, 8, 16)).astype(np.float32)
  np.testing.assert_allclose(Tensor(y, device=DEV).sum((1, 2)).numpy(), y.sum((1, 2)), rtol=1e-5, atol=1e-5)
  assert applied

MATMUL = [[Opt(L, 1, 4), Opt(L, 0, 4), Opt(U, 1, 2), Opt(R, 0, 2)], [Opt(G, 0, 4)], [Opt(L, 1, 8), Opt(GT, 0, 4)],
          [Opt(L, 0, 2), Opt(G, 0, 4), Opt(U, 1, 2), Opt(R, 0, 2)]]
@pytest.mark.parametrize("opts", MATMUL, ids=str)
@pytest.mark.parametrize("mkn", [(1, 1, 1), (7, 13, 5), (16, 32, 16), (31, 16, 17)])
def test_matmul(forced, opts, mkn):
  m, k, n = mkn
  rng = np.random.default_rng(m*k*n)
  a, b = rng.standard_normal((m, k)).astype(np.float32), rng.standard_normal((k, n)).astype(np.float32)
  applied = forced(opts)
  np.testing.assert_allclose((Tensor(a, device=DEV) @ Tensor(b, device=DEV)).numpy(), a @ b, rtol=1e-4, atol=1e-4)
  if mkn == (16, 32, 16): assert applied

@settings(max_examples=12)
@given(rows=st.integers(1, 9), cols=st.sampled_from([1, 2, 3, 8, 12, 24, 40]), amt=st.sampled_from([2, 4, 8]),
       top=st.booleans(), local=st.sampled_from([0, 2, 3]))
def test_group_random_shapes(rows, cols, amt, top, local):
  x = np.random.default_rng(rows * cols).standard_normal((rows, cols)).astype(np.float32)
  opts = ([Opt(L, 0, local)] if local else []) + [Opt(GT if top else G, 0, amt)]
  method_cache.clear()
  with Context(OPTS=",".join(f"{o.op.name}:{o.axis}:{o.arg}" for o in opts)):
    got = Tensor(x, device=DEV).sum(1).numpy(), Tensor(x, device=DEV).max(1).numpy()
  method_cache.clear()
  np.testing.assert_allclose(got[0], x.sum(1), rtol=1e-5, atol=1e-5)
  np.testing.assert_allclose(got[1], x.max(1))

# ---- validation ----
def _ast(m, k, n):
  return graph_rewrite((Tensor.empty(m, k, device="NULL") @ Tensor.empty(k, n, device="NULL")).schedule()[-1].ast, sym)

class SmallGPU(PythonRenderer):
  local_max = (8, 8, 8)
  shared_max = 16
class NoShared(PythonRenderer):
  has_shared = False

@pytest.mark.parametrize("opts, ren, msg", [
  ([Opt(L, 0, 4)], PythonRenderer, "must be >1 and divide"), ([Opt(L, 0, 1)], PythonRenderer, "must be >1"),
  ([Opt(L, 5, 2)], PythonRenderer, "out of range"), ([Opt(G, 1, 2)], PythonRenderer, "out of range"),
  ([Opt(G, 0, 4)], PythonRenderer, "must be >1 and divide"), ([Opt(GT, 0, 13)], PythonRenderer, "shared memory"),
  ([Opt(L, 0, 7)], Renderer, "threads in a block"), ([Opt(G, 0, 13)], NoShared, "has_shared"),
  ([Opt(L, 1, 2), Opt(L, 2, 2)], PythonRenderer, "LOCAL axis 2 is a LOCAL axis")])
def test_invalid_actions_raise(opts, ren, msg):
  ast = _ast(7, 13, 6)   # globals (7, 6), reduce 13: primes where the amounts do not divide
  r = ren()
  if ren is PythonRenderer and "shared" in msg: r.shared_max = 13 * 4 - 1
  with pytest.raises(KernelOptError, match=msg): apply_opts(ast, opts, r)

def test_limits_of_the_block():
  ast = _ast(16, 16, 16)
  with pytest.raises(KernelOptError, match="local_max"): apply_opts(ast, [Opt(L, 0, 16)], SmallGPU())
  with pytest.raises(KernelOptError, match="threads per block"): apply_opts(ast, [Opt(L, 0, 4), Opt(L, 1, 4)], SmallGPU())
  with pytest.raises(KernelOptError, match="shared memory"): apply_opts(ast, [Opt(G, 0, 8)], SmallGPU())
  assert thread_ranges(apply_opts(ast, [Opt(G, 0, 4)], SmallGPU()))   # 4 floats fit in 16 bytes
  with pytest.raises(KernelOptError, match="at most 3"): apply_opts(ast, [Opt(L, 0, 2), Opt(L, 1, 2), Opt(G, 0, 2), Opt(L, 0, 2)], PythonRenderer())
  with pytest.raises(KernelOptError, match="threads in a block"): apply_opts(ast, [Opt(G, 0, 4)])   # no renderer given
  # a later UPCAST copies the grouped reduce: the lowering checks shared memory again
  grouped = apply_opts(ast, [Opt(G, 0, 4), Opt(U, 0, 4)], SmallGPU())
  with pytest.raises(KernelOptError, match="shared memory"): lower_groups(grouped, SmallGPU())

def test_invalid_action_leaves_kernel_alone():
  ast = _ast(8, 16, 8)
  before = (kernel_ranges(ast), ast.toposort())
  with pytest.raises(KernelOptError): apply_opts(ast, [Opt(L, 0, 2), Opt(G, 0, 3)], PythonRenderer())
  assert (kernel_ranges(ast), ast.toposort()) == before
  assert get_program(ast, PythonRenderer(), []).src == get_program(ast, PythonRenderer(), []).src

def test_group_inside_another_reduce_is_rejected():
  # out[i] = sum_j x[i*4+j] * max_k y[j*4+k]: the max over k runs inside the j loop
  f32 = dtypes.float32
  bufs = [UOp(Ops.DEFINE_GLOBAL, f32.ptr(16), (), i) for i in range(3)]
  i, j, k = UOp.range(4, 0, AxisType.GLOBAL), UOp.range(4, 1, AxisType.REDUCE), UOp.range(4, 2, AxisType.REDUCE)
  inner = UOp(Ops.REDUCE, f32, (bufs[2].index(j * 4 + k).load(),), Ops.MAX)
  inner = inner.replace(src=inner.src + (k,))
  outer = UOp(Ops.REDUCE, f32, (bufs[1].index(i * 4 + j).load() * inner, j), Ops.ADD)
  sink = UOp(Ops.SINK, dtypes.void, (bufs[0].index(i).store(outer),))
  with pytest.raises(KernelOptError, match="inside another reduce"): apply_opts(sink, [Opt(G, 1, 2)], PythonRenderer())
  assert thread_ranges(apply_opts(sink, [Opt(G, 0, 2)], PythonRenderer()))   # the outer one may be grouped

@pytest.mark.parametrize("amt, steps", [(8, 3), (16, 4), (3, 2), (5, 3)])
def test_lowered_group_shape(amt, steps):
  # one slot per thread in shared memory, a barrier after the partials and after each halving step, the store gated
  ast = _ast(8, 240, 8)
  sink = lower_groups(apply_opts(ast, [Opt(L, 1, 4), Opt(G, 0, amt)], PythonRenderer()), PythonRenderer())
  nodes = sink.toposort()
  smem = [u for u in nodes if u.op is Ops.DEFINE_LOCAL]
  assert len(smem) == 1 and smem[0].dtype.size == 4 * amt
  assert sum(u.op is Ops.BARRIER for u in nodes) == 1 + steps
  assert all(len(s.src[0].src) == 3 for s in nodes if s.op is Ops.STORE and s.src[0].src[0].op is Ops.DEFINE_GLOBAL)
  assert not any(u.op is Ops.RANGE and u.arg[1] is AxisType.GROUP_REDUCE for u in nodes)

def test_parse_opts():
  assert parse_opts("LOCAL:0:16, group:1:8") == [Opt(L, 0, 16), Opt(G, 1, 8)]
  with pytest.raises(ValueError, match="actions: UPCAST"): parse_opts("LOCL:0:16")

# ---- heuristics ----
def _kernels(t):
  ren = PythonRenderer()
  from tinygrad.codegen import PASSES
  out = []
  for ei in t.schedule():
    s = ei.ast
    for _, f in PASSES[:[n for n, _ in PASSES].index("optimize")]: s = f(s, ren, None)
    out.append(heuristic_opts(s, ren))
  return out

def test_heuristic_choices():
  big = Tensor.empty(1 << 20, device="NULL")
  # the split reduce's first kernel: few outputs, a long contiguous reduce (a max: a float sum's chunks are 512 long,
  # _split_reduce's accuracy rule, which a group of 256 covers in 2 trips)
  first = _kernels(big.max())[0]
  assert first == [Opt(G, 0, 256), Opt(R, 0, 4)]   # 4096 per row: 16 trips per thread
  assert _kernels(Tensor.empty(1 << 24, device="NULL").max())[0] == [Opt(G, 0, 256), Opt(R, 0, 8)]   # 256 trips: unroll 8
  assert _kernels(big.sum()) == [[Opt(G, 0, 256)], [Opt(G, 0, 256), Opt(R, 0, 4)]]
  assert _kernels(big + 1)[0] == []   # the renderer's launch rule makes the blocks
  assert [o.op for o in _kernels(Tensor.empty(1000003, device="NULL") * 2)[0]] == [P, L]
  mm = _kernels(Tensor.empty(512, 512, device="NULL") @ Tensor.empty(512, 512, device="NULL"))[0]
  assert [o.op for o in mm] == [L, L, U, U, R]
  col = _kernels(Tensor.empty(4096, 64, device="NULL").sum(0))[0]   # reduce across memory: threads over outputs first
  assert [o.op for o in col[:2]] == [L, G]
  with Context(NOOPT=1): assert _kernels(Tensor.empty(1000003, device="NULL") * 2) == [[]]

WORKLOADS = """
import json, sys
import numpy as np
from tinygrad import Tensor
rng = np.random.default_rng(0)
a, m, v = rng.standard_normal(1 << 16).astype(np.float32), rng.standard_normal((96, 64)).astype(np.float32), rng.standard_normal(4099).astype(np.float32)
T = Tensor
e = np.exp(m - m.max(1, keepdims=True))
checks = {"sum": (T(a).sum().numpy(), a.sum()), "max": (T(a).max().numpy(), a.max()), "add": ((T(a) + 1).numpy(), a + 1),
          "rowsum": (T(m).sum(1).numpy(), m.sum(1)), "colmax": (T(m).max(0).numpy(), m.max(0)),
          "softmax": (T(m).softmax(1).numpy(), e / e.sum(1, keepdims=True)), "matmul": ((T(m) @ T(m).T).numpy(), m @ m.T),
          "odd": ((T(v) * 3).numpy(), v * 3), "oddsum": (T(v).sum().numpy(), v.sum())}
print(json.dumps({k: float(np.max(np.abs(np.asarray(g) - w)) / (1 + float(np.max(np.abs(w))))) for k, (g, w) in checks.items()}))
"""

@pytest.mark.parametrize("emu", ["", "NV", "AMD", "METAL"])
def test_heuristics_match_numpy(emu):
  env = {**os.environ, "DEV": "PYTHON", "EMULATE": emu, "PYTHONPATH": CORE}
  r = subprocess.run([sys.executable, "-c", WORKLOADS], capture_output=True, text=True, env=env, timeout=600)
  assert r.returncode == 0, r.stderr
  errs = json.loads(r.stdout.splitlines()[-1])
  assert all(e < 1e-4 for e in errs.values()), errs

TC_RUN = """
import json
import numpy as np
from tinygrad import Tensor, dtypes
from tinygrad.engine.realize import method_cache
rng = np.random.default_rng(0)
a, b = rng.standard_normal((64, 64)).astype(np.float32), rng.standard_normal((64, 32)).astype(np.float32)
ta, tb = Tensor(a).cast(dtypes.half).realize(), Tensor(b).cast(dtypes.half).realize()
err = float(np.max(np.abs((ta @ tb).float().numpy() - ta.float().numpy() @ tb.float().numpy())))
p = next(r.p for r in method_cache.values() if r.p.name.startswith("r_"))
print(json.dumps({"err": err, "local": list(p.local_size), "wmma": sum(u.op is u.op.WMMA for u in p.uops),
                  "barriers": sum(u.op is u.op.BARRIER for u in p.uops)}))
"""

@pytest.mark.parametrize("opts, local, barriers", [("", [32, 1, 1], 0), ("LOCAL:0:2", [32, 2, 1], 0), ("GROUP:0:2", [32, 2, 1], 8),
                                                   ("LOCAL:0:2,GROUP:0:2", [32, 2, 2], 8), ("LOCAL:1:2,UPCAST:0:2", [32, 2, 1], 0),
                                                   ("UPCAST:2:2", [32, 1, 1], 0)])
def test_with_tensor_cores(opts, local, barriers):
  # a tensor core's lanes stay lidx0 (whole warps); LOCAL/GROUP add lidx1, lidx2; each of the WMMA's 4 outputs is grouped.
  # UPCAST of the lanes (axis 2) is refused, so the heuristics decide: it ran the WMMA on half warps (garbage on a GPU)
  env = {**os.environ, "DEV": "PYTHON", "EMULATE": "NV", "OPTS": opts, "PYTHONPATH": CORE}
  r = subprocess.run([sys.executable, "-c", TC_RUN], capture_output=True, text=True, env=env, timeout=600)
  assert r.returncode == 0, r.stderr
  out = json.loads(r.stdout.splitlines()[-1])
  assert out["err"] < 0.02 and out["local"] == local and out["barriers"] == barriers and out["wmma"] >= 1, out

def test_beam_tries_the_gpu_actions():
  from tinygrad.codegen.search import candidate_moves
  ast = _ast(16, 32, 16)
  kinds = lambda ren: {c[-1].op for c in candidate_moves(ast, [], ren)}
  assert {L, G, GT} <= kinds(PythonRenderer())
  assert not {L, G, GT} & kinds(None) and not {L, G, GT} & kinds(NoShared()) - {L}
  assert all(len(thread_ranges(apply_opts(ast, c, PythonRenderer()))) <= 3 for c in candidate_moves(ast, [Opt(L, 0, 2), Opt(L, 1, 2)], PythonRenderer()))

def test_grouped_reduce_inside_a_grouped_reduce_value():
  # out[i] = sum_j (x[i,j] - max_k x[i,k]): both reduces grouped, the max's result feeds the sum's partials
  from tinygrad.device import Buffer
  from tinygrad.engine.realize import CompiledRunner
  f32 = dtypes.float32
  out, x = UOp(Ops.DEFINE_GLOBAL, f32.ptr(4), (), 0), UOp(Ops.DEFINE_GLOBAL, f32.ptr(32), (), 1)
  i, j, k = UOp.range(4, 0, AxisType.GLOBAL), UOp.range(8, 1, AxisType.REDUCE), UOp.range(8, 2, AxisType.REDUCE)
  mx = UOp(Ops.REDUCE, f32, (x.index(i * 8 + k).load(), k), Ops.MAX)
  sink = UOp(Ops.SINK, dtypes.void, (out.index(i).store(UOp(Ops.REDUCE, f32, (x.index(i * 8 + j).load() - mx, j), Ops.ADD)),))
  xs = np.random.default_rng(5).standard_normal((4, 8)).astype(np.float32)
  prg = get_program(sink, PythonRenderer(), [Opt(G, 0, 4), Opt(G, 1, 2)])
  assert sum(u.op is Ops.DEFINE_LOCAL for u in prg.uops) == 2
  bufs = [Buffer(DEV, 4, f32).allocate(), Buffer(DEV, 32, f32).allocate().copyin(memoryview(xs.tobytes()))]
  CompiledRunner(prg, DEV)(bufs, wait=True)
  got = np.frombuffer(bytes(bufs[0].as_buffer()), dtype=np.float32)
  np.testing.assert_allclose(got, (xs - xs.max(1, keepdims=True)).sum(1), rtol=1e-5, atol=1e-5)

def _grouped_sum_program():
  # out[i] = sum_j x[i, j], the reduce shared by 8 threads: partials in shared memory, a BARRIER after each tree step
  f32 = dtypes.float32
  out, x = UOp(Ops.DEFINE_GLOBAL, f32.ptr(4), (), 0), UOp(Ops.DEFINE_GLOBAL, f32.ptr(32), (), 1)
  i, j = UOp.range(4, 0, AxisType.GLOBAL), UOp.range(8, 1, AxisType.REDUCE)
  sink = UOp(Ops.SINK, dtypes.void, (out.index(i).store(UOp(Ops.REDUCE, f32, (x.index(i * 8 + j).load(), j), Ops.ADD)),))
  return get_program(sink, PythonRenderer(), [Opt(G, 0, 8)])

def _run_src(prg, src: str) -> np.ndarray:
  from tinygrad.runtime.python import PythonProgram
  out, xs = memoryview(bytearray(16)), memoryview(bytearray(np.arange(32, dtype=np.float32).tobytes()))
  PythonProgram("k", src.encode())(out, xs, global_size=tuple(prg.global_size), local_size=tuple(prg.local_size), wait=True)
  return np.frombuffer(out, dtype=np.float32)

def test_emulator_flags_a_missing_barrier():
  # lockstep lanes read each other's partials correctly with or without the BARRIERs; a GPU does not: the oracle must say so
  prg = _grouped_sum_program()
  np.testing.assert_allclose(_run_src(prg, prg.src), np.arange(32).reshape(4, 8).sum(1))
  with pytest.raises(RuntimeError, match="no BARRIER between"): _run_src(prg, prg.src.replace(" BARRIER ", " NOOP "))

def test_emulator_shared_memory_starts_as_garbage():
  # a tree step reading slots no lane wrote (the partials' stores dropped) saw zeros, the identity of a sum: a right answer
  lines = _grouped_sum_program().src.splitlines()
  local = next(ln.split()[0] for ln in lines if " DEFINE_LOCAL " in ln)
  idx = {ln.split()[0] for ln in lines if " INDEX " in ln and ln.split()[3].strip("(,") == local}
  first = next(i for i, ln in enumerate(lines) if " STORE " in ln and ln.split()[3].strip("(,") in idx)
  lines[first] = lines[first].replace(" STORE ", " NOOP ")
  assert np.isnan(_run_src(_grouped_sum_program(), "\n".join(lines))).all()

@pytest.mark.parametrize("opts", [[Opt(G, 0, 3)], [Opt(GT, 0, 3)], [Opt(G, 0, 3), Opt(U, 0, 2)]], ids=str)
def test_grouped_sum_of_negative_zeros(forced, opts):
  # a group as wide as the reduce: each thread's partial was its one element, no +0.0 start, so -0.0 + -0.0 stayed -0.0
  # (torch: 0.0; the same sum ungrouped gave 0.0)
  applied = forced(opts)
  got = Tensor([[-0.0] * 3] * 2, device=DEV).sum(1).numpy()
  assert applied and not np.signbit(got).any(), got

@pytest.mark.parametrize("opts", [[Opt(R, 0, 3)], [Opt(U, 0, 2), Opt(R, 0, 3)]], ids=str)
def test_unrolled_whole_sum_of_negative_zeros(forced, opts):
  applied = forced(opts)
  got = Tensor([[-0.0] * 3] * 2, device=DEV).sum(1).numpy()
  assert applied and not np.signbit(got).any(), got
