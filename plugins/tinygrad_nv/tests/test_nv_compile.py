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

def test_nvrtc_is_never_loaded_from_the_current_directory(tmp_path, monkeypatch):
  # `python -m tinygrad` puts '' (the cwd) on sys.path: a library planted there must not be dlopen-ed
  import ctypes, sys
  from tinygrad_nv import compiler
  cwd, site = tmp_path / "cwd", tmp_path / "venv" / "lib" / "site-packages"
  for base in (cwd, cwd / "rel", site):
    (base / "nvidia" / "cu13" / "lib").mkdir(parents=True)
    (base / "nvidia" / "cu13" / "lib" / "libnvrtc.so.13").write_bytes(b"not a library")
  monkeypatch.chdir(cwd)
  monkeypatch.setattr(sys, "path", ["", ".", "rel", str(site)] + sys.path)
  monkeypatch.setenv("CUDA_PATH", "rel")
  loaded = []
  def fake_cdll(path, *a, **k):
    loaded.append(str(path))
    raise OSError(f"{path}: mocked")
  monkeypatch.setattr(ctypes, "CDLL", fake_cdll)
  compiler.load_nvrtc.cache_clear()
  try:
    with pytest.raises(RuntimeError, match="NVRTC not found"): compiler.load_nvrtc()
  finally: compiler.load_nvrtc.cache_clear()
  planted = [p for p in loaded if not os.path.isabs(p) or os.path.realpath(p).startswith(str(cwd))]
  assert not planted, f"tried to load from the current directory: {planted}"
  assert str(site / "nvidia" / "cu13" / "lib" / "libnvrtc.so.13") in loaded   # installed wheels are still found
  assert os.path.join("/usr/local/cuda", "lib64", "libnvrtc.so") in loaded     # a relative CUDA_PATH is ignored

def test_libcuda_search_skips_relative_library_path(tmp_path, monkeypatch):
  from tinygrad_nv.runtime import find_libcuda
  (tmp_path / "rel").mkdir()
  (tmp_path / "rel" / "libcuda.so.1").write_bytes(b"not a library")
  monkeypatch.chdir(tmp_path)
  monkeypatch.setenv("LD_LIBRARY_PATH", "rel::.")
  found = find_libcuda()
  assert found is None or os.path.realpath(found) != str(tmp_path / "rel" / "libcuda.so.1"), f"picked the cwd's {found}"
