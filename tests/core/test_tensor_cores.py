"""Tensor cores (codegen/tc.py): the TC action on matmul kernels, run on the PYTHON device emulating NV (EMULATE=NV) and
AMD's RDNA3 (EMULATE=AMD), whose WMMA is computed warp by warp from the same layout functions the kernels index with."""
import json, os, subprocess, sys
from collections import Counter
import numpy as np, pytest
from tinygrad import Tensor, dtypes
from tinygrad.codegen.tc import (LAYOUTS, TCLayout, NV_TENSOR_CORES, AMD_WMMA_TENSOR_CORES, AMD_MFMA_TENSOR_CORES, METAL_TENSOR_CORES,
                                 apply_tc, tensor_cores)
from tinygrad.codegen.opt import Opt, OptOps, KernelOptError
from tinygrad.uop import Ops

CORE = os.path.join(os.path.dirname(__file__), "..", "..", "core")
TENSOR_CORES = {tc.swizzle: tc for tc in NV_TENSOR_CORES + AMD_WMMA_TENSOR_CORES + AMD_MFMA_TENSOR_CORES + METAL_TENSOR_CORES}

def layout_errors(lay: TCLayout, tc) -> list[str]:
  """Why `lay` cannot be `tc`'s layout: C/D must place each of its lanes x elements on a distinct (row, col) covering the
  matrix once; A and B must cover their matrix, each element held by the same number of lanes and always in the same
  register (RDNA3 duplicates A and B: lanes l and l+16 hold equal data)."""
  n, m, k = tc.dims
  errs = []
  for name, frag, count, shape in (("A", lay.a, tc.elements_per_thread[0], (m, k)), ("B", lay.b, tc.elements_per_thread[1], (k, n)),
                                   ("C", lay.c, tc.elements_per_thread[2], (m, n))):
    holders: dict[tuple[int, int], list[tuple[int, int]]] = {}
    for lane in range(tc.threads):
      for i in range(count): holders.setdefault(tuple(int(x) for x in frag(lane, i)), []).append((lane, i))
    want = {(r, c) for r in range(shape[0]) for c in range(shape[1])}
    if set(holders) != want: errs.append(f"{name}: covers {len(set(holders) & want)} of {len(want)} elements, {len(set(holders) - want)} outside")
    copies = Counter(len(h) for h in holders.values())
    if name == "C" and set(copies) != {1}: errs.append(f"C: elements held more than once ({dict(copies)})")
    if len(copies) > 1: errs.append(f"{name}: elements held an uneven number of times ({dict(copies)})")
    if any(len({i for _, i in h}) > 1 for h in holders.values()): errs.append(f"{name}: copies of one element sit in different registers")
  return errs

@pytest.mark.parametrize("name", list(LAYOUTS))
def test_layout_covers_every_element(name):
  assert layout_errors(LAYOUTS[name], TENSOR_CORES[name]) == []

def test_layout_check_rejects_wrong_layouts():
  w, wmma = LAYOUTS["wmma16x16x16"], TENSOR_CORES["wmma16x16x16"]
  def c_no_half(l, i): return 2 * i, l % 16                     # lanes 16..31 overwrite lanes 0..15's rows
  def a_shifted(l, i): return l % 16, (i + l // 16) % 16         # lanes l and l+16 hold row l%16 in different registers
  def a_half(l, i): return l % 16, i % 8                         # K 8..15 never loaded
  assert any("C:" in e for e in layout_errors(TCLayout(w.a, w.b, c_no_half), wmma))
  assert any("different registers" in e for e in layout_errors(TCLayout(a_shifted, w.b, w.c), wmma))
  assert any(e.startswith("A: covers") for e in layout_errors(TCLayout(a_half, w.b, w.c), wmma))
  nv = LAYOUTS["m16n8k16"]
  assert layout_errors(TCLayout(nv.b, nv.a, nv.c), TENSOR_CORES["m16n8k16"])   # A and B swapped: wrong shapes

def test_simdgroup_layout_matches_published_forms():
  # Apple does not document thread_elements(); two public forms of the same layout: MLX's steel BlockMMA/MMAFrag (bit
  # masks on qid = lane/4; A, B and C alike, element i at column + i) and tinygrad 0.14's PYTHON emulator (lane from index)
  for lane in range(32):
    qid = lane // 4
    for i in range(2):
      assert LAYOUTS["simd8x8x8"].a(lane, i) == ((qid & 4) + (lane // 2) % 4, (qid & 2) * 2 + (lane % 2) * 2 + i)
  for row in range(8):
    for col in range(8):
      lane = (col // 2) % 2 + (row % 4) * 2 + (col // 4) * 8 + (row // 4) * 16
      assert LAYOUTS["simd8x8x8"].b(lane, col % 2) == (row, col) == LAYOUTS["simd8x8x8"].c(lane, col % 2)

RUN = """
import json, sys
import numpy as np
from tinygrad import Tensor, dtypes
from tinygrad.engine.realize import method_cache
rng = np.random.default_rng(0)
for name in sys.argv[2].split(","):
  dt = getattr(dtypes, name)
  for sa, sb in json.loads(sys.argv[1]):
    a, b = rng.standard_normal(sa).astype(np.float32), rng.standard_normal(sb).astype(np.float32)
    ta, tb = Tensor(a).cast(dt).realize(), Tensor(b).cast(dt).realize()
    bias = Tensor(np.arange(sb[-1], dtype=np.float32))
    got = ((ta @ tb).float() + bias).relu().numpy()
    mm = ta.float().numpy() @ tb.float().numpy()
    print(name, sa, float(np.max(np.abs(got - np.maximum(mm + np.arange(sb[-1]), 0)) / (1 + np.abs(mm)))))
print("WMMA", sum(sum(u.op.name == "WMMA" for u in r.p.uops) for r in method_cache.values()))
"""

def _run(shapes, dts, **env) -> str:
  e = {**os.environ, "PYTHONPATH": CORE, "DEV": "PYTHON", "CACHELEVEL": "0", **env}
  r = subprocess.run([sys.executable, "-c", RUN, json.dumps(shapes), ",".join(dts)], capture_output=True, text=True, env=e, timeout=300)
  assert r.returncode == 0, r.stderr
  return r.stdout

# (A shape, B shape) per matmul, batched included, sized to the tensor core's tile (NV: M, K multiple of 16, N of 8;
# AMD: all multiples of 16)
# METAL: multiples of 8, and one not a multiple of 16 (8x8x8 tiles); its input types: float and half (no bfloat16: see tc.py)
SHAPES = {"NV": [((32, 48), (48, 16)), ((2, 16, 32), (2, 32, 24))],
          "AMD": [((32, 48), (48, 16)), ((2, 16, 32), (2, 32, 48)), ((64, 16), (16, 32))],
          "METAL": [((32, 48), (48, 16)), ((2, 16, 32), (2, 32, 24)), ((8, 40), (40, 56)), ((3, 24, 8), (3, 8, 8))]}
DTYPES = {"NV": ["half", "bfloat16"], "AMD": ["half", "bfloat16"], "METAL": ["half", "float"]}
TOL = {"half": 1e-3, "bfloat16": 5e-3, "float": 1e-5}   # relative to the matmul: inputs rounded once (2^-11, 2^-8), float exact

@pytest.mark.parametrize("emu", ["NV", "AMD", "METAL"])
def test_tc_matmul_matches_numpy_on_emulated_gpu(emu):
  lines = _run(SHAPES[emu], DTYPES[emu], EMULATE=emu).splitlines()
  assert len(lines) == len(DTYPES[emu]) * len(SHAPES[emu]) + 1
  for line in lines[:-1]: assert float(line.split()[-1]) < TOL[line.split()[0]], line
  assert int(lines[-1].split()[1]) == len(DTYPES[emu]) * len(SHAPES[emu])   # every matmul kernel used the tensor core
  assert _run(SHAPES[emu], DTYPES[emu], EMULATE=emu, USE_TC="0").splitlines()[-1] == "WMMA 0"

HALF_ACC = """
import numpy as np
from tinygrad import Tensor, Device
from tinygrad.codegen import get_program
from tinygrad.codegen.opt import Opt, OptOps
from tinygrad.engine.realize import CompiledRunner
from tinygrad.engine.buffers import buffer_of
rng = np.random.default_rng(0)
for sa, sb in (((16, 24), (24, 8)), ((2, 8, 16), (2, 16, 24))):
  a, b = rng.standard_normal(sa).astype(np.float16), rng.standard_normal(sb).astype(np.float16)
  ei = (Tensor(a).realize() @ Tensor(b).realize()).schedule()[-1]
  p = get_program(ei.ast, Device["PYTHON"].renderer, [Opt(OptOps.TC, 0, 2)])
  bufs = [buffer_of(u).allocate() for u in ei.bufs]
  CompiledRunner(p)(bufs)
  got = np.frombuffer(bufs[0].as_buffer(), np.float16).astype(np.float32).reshape(sa[:-1] + sb[-1:])
  mm = a.astype(np.float32) @ b.astype(np.float32)
  print(sum(u.op.name == "WMMA" and str(u.dtype) == "dtypes.half.vec(2)" for u in p.uops), float(np.max(np.abs(got - mm) / (1 + np.abs(mm)))))
"""

def test_metal_half_accumulator_tc_matches_numpy():
  # TC 2 on Metal: half in, half accumulated (asked for, never the heuristics' pick); sums of 16-24 products rounded to half
  e = {**os.environ, "PYTHONPATH": CORE, "DEV": "PYTHON", "CACHELEVEL": "0", "EMULATE": "METAL"}
  r = subprocess.run([sys.executable, "-c", HALF_ACC], capture_output=True, text=True, env=e, timeout=300)
  assert r.returncode == 0, r.stderr
  for line in r.stdout.splitlines():
    wmmas, err = line.split()
    assert int(wmmas) == 1 and float(err) < 4e-3, line

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

@pytest.mark.parametrize("tc", [NV_TENSOR_CORES[0], AMD_WMMA_TENSOR_CORES[0], AMD_MFMA_TENSOR_CORES[0], METAL_TENSOR_CORES[1]], ids=lambda t: t.swizzle)
def test_wmma_emulation_matches_numpy(tc):
  # two warps' lanes, each given its elements of its own A, B, C by the layout; D = A @ B + C per warp
  from tinygrad.codegen.tc import wmma_emulate, wmma_name
  rng = np.random.default_rng(1)
  lay, (n, m, k), (ea, eb, ec) = LAYOUTS[tc.swizzle], tc.dims, tc.elements_per_thread
  A, B, C = rng.standard_normal((2, m, k)), rng.standard_normal((2, k, n)), rng.standard_normal((2, m, n))
  lane = np.arange(2 * tc.threads)
  warp, wl = lane // tc.threads, lane % tc.threads
  def split(mat, frag, count): return [mat[(warp, *frag(wl, i))] for i in range(count)]
  arg = (wmma_name(tc), tc.dims, tc.threads, (ea, eb))
  d = wmma_emulate(arg, split(A, lay.a, ea), split(B, lay.b, eb), split(C, lay.c, ec), lane, tc.threads, np)
  want = (A.astype(np.float32) @ B.astype(np.float32) + C.astype(np.float32))
  for i in range(ec): np.testing.assert_allclose(d[i], want[(warp, *lay.c(wl, i))], rtol=1e-5, atol=1e-5)
  with pytest.raises(RuntimeError, match="whole"): wmma_emulate(arg, split(A, lay.a, ea), split(B, lay.b, eb), split(C, lay.c, ec), lane, tc.threads + 1, np)

def test_wmma_emulation_rejects_unequal_copies():
  # RDNA3 reads A and B from lanes l and l+16 alike: a kernel that gives them different values is wrong
  from tinygrad.codegen.tc import wmma_emulate, wmma_name
  tc = AMD_WMMA_TENSOR_CORES[0]
  lane = np.arange(32)
  a = [lane.astype(np.float32) for _ in range(16)]   # lane 16 differs from lane 0
  same = [(lane % 16).astype(np.float32) for _ in range(16)]
  c = [np.zeros(32, np.float32) for _ in range(8)]
  with pytest.raises(RuntimeError, match="same element of A"): wmma_emulate((wmma_name(tc), tc.dims, 32, (16, 16)), a, same, c, lane, 32, np)
  wmma_emulate((wmma_name(tc), tc.dims, 32, (16, 16)), same, same, c, lane, 32, np)
