"""Tensor cores (codegen/tc.py): the TC action on matmul kernels, run on the PYTHON device emulating NV (EMULATE=NV), whose
WMMA is computed warp by warp from the same layout functions the kernels index with."""
import os, subprocess, sys
import numpy as np, pytest
from tinygrad import Tensor, dtypes
from tinygrad.codegen.tc import LAYOUTS, NV_TENSOR_CORES, apply_tc, tensor_cores
from tinygrad.codegen.opt import Opt, OptOps, KernelOptError
from tinygrad.uop import Ops

CORE = os.path.join(os.path.dirname(__file__), "..", "..", "core")

@pytest.mark.parametrize("name", list(LAYOUTS))
def test_layout_covers_every_element_once(name):
  # each operand's 32 lanes x elements hit every (row, col) of its matrix exactly once
  lay, tc = LAYOUTS[name], NV_TENSOR_CORES[0]
  n, m, k = tc.dims
  for frag, count, shape in ((lay.a, tc.elements_per_thread[0], (m, k)), (lay.b, tc.elements_per_thread[1], (k, n)),
                             (lay.c, tc.elements_per_thread[2], (m, n))):
    got = sorted(frag(lane, i) for lane in range(tc.threads) for i in range(count))
    assert got == sorted((r, c) for r in range(shape[0]) for c in range(shape[1]))

RUN = """
import numpy as np
from tinygrad import Tensor, dtypes
from tinygrad.engine.realize import method_cache
rng = np.random.default_rng(0)
for dt in (dtypes.half, dtypes.bfloat16):
  for sa, sb in (((32, 48), (48, 16)), ((2, 16, 32), (2, 32, 24))):
    a, b = rng.standard_normal(sa).astype(np.float32), rng.standard_normal(sb).astype(np.float32)
    ta, tb = Tensor(a).cast(dt).realize(), Tensor(b).cast(dt).realize()
    bias = Tensor(np.arange(sb[-1], dtype=np.float32))
    got = ((ta @ tb).float() + bias).relu().numpy()
    mm = ta.float().numpy() @ tb.float().numpy()
    print(dt.name, sa, float(np.max(np.abs(got - np.maximum(mm + np.arange(sb[-1]), 0)) / (1 + np.abs(mm)))))
print("WMMA", sum(sum(u.op.name == "WMMA" for u in r.p.uops) for r in method_cache.values()))
"""

def _run(**env) -> str:
  e = {**os.environ, "PYTHONPATH": CORE, "DEV": "PYTHON", "CACHELEVEL": "0", **env}
  r = subprocess.run([sys.executable, "-c", RUN], capture_output=True, text=True, env=e, timeout=300)
  assert r.returncode == 0, r.stderr
  return r.stdout

def test_tc_matmul_matches_numpy_on_emulated_nv():
  out = _run(EMULATE="NV")
  lines = out.splitlines()
  for line in lines[:-1]:   # error relative to the matmul's value: rounded once to half (2^-11) or bfloat16 (2^-8)
    assert float(line.split()[-1]) < (1e-3 if line.startswith("half") else 5e-3), line
  assert int(lines[-1].split()[1]) == 4   # every matmul kernel used the tensor core
  assert _run(EMULATE="NV", USE_TC="0").splitlines()[-1] == "WMMA 0"

def _matmul_ast(m: int, n: int, k: int, dt=dtypes.half):
  return (Tensor.empty(m, k, dtype=dt, device="NULL") @ Tensor.empty(k, n, dtype=dt, device="NULL")).schedule()[-1].ast

def _simplified(ast):
  from tinygrad.uop.upat import graph_rewrite
  from tinygrad.uop.symbolic import sym
  return graph_rewrite(ast, sym)

class _GPU:
  has_local, tensor_cores = True, NV_TENSOR_CORES

def test_tc_action_validates():
  ok = _simplified(_matmul_ast(32, 16, 32))
  assert any(u.op is Ops.WMMA for u in tensor_cores(ok, _GPU(), [Opt(OptOps.TC, 0, 0)]).toposort())
  with pytest.raises(KernelOptError, match="not a multiple of 16"): apply_tc(_simplified(_matmul_ast(17, 16, 32)), NV_TENSOR_CORES[0], True)
  with pytest.raises(KernelOptError, match="not a multiple of 8"): apply_tc(_simplified(_matmul_ast(32, 12, 32)), NV_TENSOR_CORES[0], True)
  with pytest.raises(KernelOptError, match="takes half inputs"): apply_tc(_simplified(_matmul_ast(32, 16, 32, dtypes.float)), NV_TENSOR_CORES[0], True)
  with pytest.raises(KernelOptError, match="no local threads"): apply_tc(ok, NV_TENSOR_CORES[0], False)
  with pytest.raises(KernelOptError, match="has 2 tensor cores"): tensor_cores(ok, _GPU(), [Opt(OptOps.TC, 0, 5)])
  elementwise = _simplified((Tensor.empty(32, 16, dtype=dtypes.half, device="NULL") * 2).schedule()[-1].ast)
  with pytest.raises(KernelOptError, match="exactly one sum"): apply_tc(elementwise, NV_TENSOR_CORES[0], True)
  # the heuristics skip what does not fit instead of failing
  assert tensor_cores(_simplified(_matmul_ast(17, 16, 32)), _GPU(), None).toposort() is not None
