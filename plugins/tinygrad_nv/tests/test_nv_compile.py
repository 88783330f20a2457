"""Every conformance kernel (tests/data/conformance_kernels.pkl, made by tinygrad.conformance.collect) renders, and compiles for sm_80 and
sm_90: CUDA C with NVRTC and with nvcc (all kernels in one .cu per arch), our PTX with ptxas (one module per arch).
Every kernel by default (about a minute of CPU for the three tools); NV_COMPILE_EVERY=n takes every n-th for a quick
local run. Each tool sees one batched file per arch."""
import functools, os, pickle, re, shutil, subprocess, sys, tempfile
import pytest
from tinygrad.codegen import get_program
from tinygrad_nv.renderer import CUDARenderer, PTXRenderer

ARCHS = ["sm_80", "sm_90"]

@functools.cache
def kernels() -> list:
  sys.setrecursionlimit(max(sys.getrecursionlimit(), 200000))
  with open(os.path.join(os.path.dirname(__file__), "data", "conformance_kernels.pkl"), "rb") as f: asts = pickle.load(f)
  return asts[::max(1, int(os.environ.get("NV_COMPILE_EVERY", "1")))]

def _split(src: str, marker: str) -> tuple[str, str]:
  i = src.index(marker)
  return src[:i], src[i:]

@functools.cache
def cuda_module() -> str:
  """One translation unit: each distinct helper block once, then every kernel renamed k<i>."""
  helpers: dict[str, None] = {}
  bodies = []
  for i, ast in enumerate(kernels()):
    src = get_program(ast, CUDARenderer("sm_80")).src
    pre, body = _split(src, 'extern "C"')
    for block in re.split(r"\n(?=__device__|struct )", pre.strip()):
      if block: helpers[block] = None
    bodies.append(re.sub(r"\) (\w+)\(", f") k{i}(", body, count=1))
  return "\n".join(list(helpers) + bodies)

@functools.cache
def ptx_module(arch: str) -> str:
  out = []
  for i, ast in enumerate(kernels()):
    src = get_program(ast, PTXRenderer(arch)).src
    head, body = _split(src, ".visible .entry ")
    if not out: out.append(head)
    out.append(re.sub(r"^\.visible \.entry \w+\(", f".visible .entry k{i}(", body))
  return "\n".join(out)

def test_corpus_is_there(): assert len(kernels()) > 100

@pytest.mark.parametrize("arch", ARCHS)
def test_nvrtc_compiles_every_kernel(arch):
  from tinygrad_nv.compiler import NVRTCCompiler
  try: cc = NVRTCCompiler(arch)
  except RuntimeError as e: pytest.skip(str(e))
  assert cc.compile(cuda_module())[:4] == b"\x7fELF"

@pytest.mark.parametrize("arch", ARCHS)
def test_nvcc_compiles_every_kernel(arch):
  if shutil.which("nvcc") is None: pytest.skip("nvcc not found (CUDA toolkit not installed)")
  from tinygrad_nv.compiler import NVCCCompiler
  assert NVCCCompiler(arch).compile(cuda_module())[:4] == b"\x7fELF"

@pytest.mark.parametrize("arch", ARCHS)
def test_ptxas_assembles_every_kernel(arch):
  if shutil.which("ptxas") is None: pytest.skip("ptxas not found (CUDA toolkit not installed)")
  with tempfile.TemporaryDirectory() as tmp:
    p = os.path.join(tmp, "all.ptx")
    with open(p, "w") as f: f.write(ptx_module(arch))
    r = subprocess.run(["ptxas", f"-arch={arch}", p, "-o", os.path.join(tmp, "all.cubin")], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[:3000]

def _tc_programs(arch: str) -> list:
  # half and bfloat16 matmuls, which the heuristics put on mma.m16n8k16 for sm_80+
  from tinygrad import Tensor, dtypes
  asts = [(Tensor.empty(64, 32, dtype=dt, device="NULL") @ Tensor.empty(32, 24, dtype=dt, device="NULL")).schedule()[-1].ast
          for dt in (dtypes.half, dtypes.bfloat16)]
  return [get_program(ast, ren) for ast in asts for ren in (CUDARenderer(arch), PTXRenderer(arch))]

@pytest.mark.parametrize("arch", ARCHS)
def test_tensor_core_kernels_render_and_compile(arch):
  progs = _tc_programs(arch)
  for p, ty in zip(progs, ["f16", "f16", "bf16", "bf16"]):
    assert f"mma.sync.aligned.m16n8k16.row.col.f32.{ty}.{ty}.f32" in p.src and p.local_size == [32, 1, 1], p.src
    assert p.global_size == [3, 4, 1]   # N/8 x M/16 warps, one per block
  assert not any("mma" in p.src for p in _tc_programs("sm_75"))   # no mma.m16n8k16 before sm_80
  from tinygrad_nv.compiler import NVRTCCompiler
  try: assert all(NVRTCCompiler(arch).compile(p.src)[:4] == b"\x7fELF" for p in progs[0::2])
  except RuntimeError as e: pytest.skip(str(e))
  if shutil.which("ptxas") is not None:
    from tinygrad_nv.compiler import PTXCompiler
    assert all(PTXCompiler(arch).compile(p.src)[:4] == b"\x7fELF" for p in progs[1::2])
