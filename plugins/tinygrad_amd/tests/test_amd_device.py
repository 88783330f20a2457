"""The AMD device on the mock driver (AMD_MOCK=1): both compiler pairs run, selection and errors, launch limits, LDS and
barriers, memory."""
import os, shutil, subprocess, sys
import numpy as np
import pytest

def run(code: str, **env) -> subprocess.CompletedProcess:
  e = {**os.environ, "AMD_MOCK": "1", **env}
  return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=e, timeout=120)

@pytest.fixture(autouse=True, scope="module")
def mock_driver():
  """This module tests the mock driver. AMD_MOCK is set only while it runs: a process-wide setting would make AMD (a
  highest-priority device) the default for every other test in the same pytest worker."""
  from tinygrad.device import Device
  from tinygrad_amd.device import open_driver
  old = os.environ.get("AMD_MOCK")
  os.environ["AMD_MOCK"] = "1"
  open_driver.cache_clear()
  Device.reset()
  yield
  if old is None: os.environ.pop("AMD_MOCK", None)
  else: os.environ["AMD_MOCK"] = old
  open_driver.cache_clear()
  Device.reset()

def _need(cc: str) -> None:
  from tinygrad_amd.compiler import find_lld
  try: find_lld()
  except RuntimeError as e: pytest.skip(str(e))
  if cc == "HIP" and shutil.which("clang") is None: pytest.skip("HIP: clang not installed (and no ROCm hiprtc): apt-get install clang")
  if cc == "LLVM": pytest.importorskip("llvmlite")

@pytest.mark.parametrize("cc", ["HIP", "LLVM"])
def test_pairs_compute(cc):
  _need(cc)
  from tinygrad import Tensor
  from tinygrad.device import Device
  a = np.random.default_rng(0).standard_normal((8, 300)).astype(np.float32)
  t = Tensor(a, device=f"AMD:{cc}")
  np.testing.assert_allclose((t.sum(1) + t.max(1)).numpy(), a.sum(1) + a.max(1), rtol=1e-5, atol=1e-4)   # float32 sums of 300 terms
  dev = Device[f"AMD:{cc}"]
  assert dev.compiler_name == cc and dev.hip.mock and dev.hip.launches >= 1 and dev.arch == "gfx90a"

def test_comgr_pair_computes():
  from tinygrad_amd.compiler import ComgrCompiler
  try: ComgrCompiler()
  except RuntimeError as e: pytest.skip(str(e))
  from tinygrad import Tensor
  from tinygrad.device import Device
  a = np.random.default_rng(1).standard_normal((8, 300)).astype(np.float32)
  t = Tensor(a, device="AMD:COMGR")
  np.testing.assert_allclose((t.sum(1) * t.max(1)).numpy(), a.sum(1) * a.max(1), rtol=1e-5, atol=1e-4)
  assert isinstance(Device["AMD:COMGR"].compiler, ComgrCompiler) and Device["AMD:COMGR"].compiler_name == "COMGR"

def test_launch_uses_workgroups_of_whole_waves():
  _need("LLVM")
  from tinygrad import Tensor
  from tinygrad.helpers import Context
  from tinygrad.engine.realize import method_cache
  def last_program(n: int):
    (Tensor(np.ones(n, np.float32), device="AMD:LLVM") * 3).realize()
    return [r.p for k, r in method_cache.items() if k[0].startswith("AMD")][-1]
  # the plugin's own launch rule (kernels the optimizer gave no threads): four waves, 4 x 64 on wave64 gfx90a
  with Context(NOOPT=1): p = last_program(2048)
  assert p.local_size is not None and p.local_size[0] == 256 and '"amdgpu-flat-work-group-size"="1,256"' in p.src
  # the core's GPU heuristics choose the block (LOCAL): still whole wavefronts
  p = last_program(1024)
  assert p.local_size is not None and p.local_size[0] % 64 == 0 and f'"amdgpu-flat-work-group-size"="1,{p.local_size[0]}"' in p.src

@pytest.mark.parametrize("cc", ["HIP", "LLVM"])
def test_lds_and_barrier_run(cc):
  _need(cc)
  from tinygrad.device import Device, Buffer
  from tinygrad.dtype import dtypes
  from _amd_kernels import lds_reverse_kernel
  dev = Device[f"AMD:{cc}"]
  uops = lds_reverse_kernel(2, 4)
  src = dev.renderer.render(uops, "lds")
  prg = dev.runtime("lds", dev.compiler.compile_cached(src))
  inp = Buffer(f"AMD:{cc}", 8, dtypes.float32, initial_value=np.arange(8, dtype=np.float32).tobytes()).allocate()
  out = Buffer(f"AMD:{cc}", 8, dtypes.float32).allocate()
  prg(out._buf, inp._buf, global_size=(2, 1, 1), local_size=(4, 1, 1))
  res = np.frombuffer(out.as_buffer(), dtype=np.float32)
  np.testing.assert_equal(res, [3, 2, 1, 0, 7, 6, 5, 4])

def test_selection_errors_and_missing_runtime():
  r = run("from tinygrad.device import Device; Device['AMD']", AMD_CC="FOO")
  assert "unknown compiler 'FOO'" in r.stderr and "HIP, LLVM" in r.stderr
  r = run("from tinygrad.device import Device; print(Device['AMD'].compiler_name)", AMD_LLVM="1")
  assert r.stdout.strip() == "LLVM", r.stderr
  r = run("from tinygrad.device import Device; Device['AMD:7']")
  assert "AMD:7 does not exist: 2 AMD GPU(s) found" in r.stderr
  r = run("from tinygrad.device import Device; Device['AMD']", AMD_ARCH="gfx1999")
  assert "unsupported gfx target 'gfx1999'; supported: gfx908" in r.stderr and r.stderr.count("\n") < 40
  r = run("from tinygrad.device import Device; Device['AMD']", AMD_MOCK="0", ROCM_PATH="/nonexistent", LD_LIBRARY_PATH="")
  if "no libamdhip64" in r.stderr or "no HIP runtime" in r.stderr: assert "not available here" in r.stderr and r.stderr.count("\n") < 40

def test_listing_shows_amd_unavailable_with_compilers():
  r = subprocess.run([sys.executable, "-m", "tinygrad"], capture_output=True, text=True, timeout=300,
                     env={**{k: v for k, v in os.environ.items() if k != "AMD_MOCK"}, "ROCM_PATH": "/nonexistent"})
  lines = r.stdout.splitlines()
  i = next(i for i, ln in enumerate(lines) if ln.strip().startswith("AMD "))
  if "unavailable" not in lines[i]: pytest.skip("this machine has a HIP runtime")
  assert "no HIP runtime" in lines[i] and "AMD_MOCK=1" in lines[i]
  assert lines[i+1].split()[1] == "HIP" and lines[i+2].split()[0] == "LLVM" and "AMD_CC=LLVM" in lines[i+2]
  assert [ln.split()[0] for ln in lines[i+3:i+6]] == ["HIPRTC", "COMGR", "CLANG"] and "AMD_CC=COMGR" in lines[i+4]   # each HIP C compiler
  assert "hiprtc not found" in lines[i+3] or "ok" in lines[i+3]

def test_launch_limits_and_oom():
  from tinygrad.device import Device
  dev = Device["AMD"]
  with pytest.raises(RuntimeError, match="exceeds the device's limits"): dev.check_launch("k", (1, 70000, 1), (1, 1, 1))
  with pytest.raises(RuntimeError, match="exceeds the device's limits"): dev.check_launch("k", (1, 1, 1), (1024, 2, 1))
  dev.allocator.free_cache()
  dev.hip.mem_total = sum(len(a) for a in dev.hip.allocs.values()) + (3 << 26)   # room for three more 64 MiB arenas
  bufs = [dev.allocator.alloc(60 << 20) for _ in range(3)]
  for b in bufs: dev.allocator.free(b, 60 << 20)   # cached: arenas still held
  big = dev.allocator.alloc(100 << 20)               # OOM -> free cache and empty arenas -> retry
  assert big.size == 100 << 20

TC_RUN = """
import numpy as np
from tinygrad import Tensor, dtypes
from tinygrad.engine.realize import method_cache
rng = np.random.default_rng(0)
for dt in (dtypes.half, dtypes.bfloat16):
  for sa, sb in (((32, 48), (48, 16)), ((2, 16, 32), (2, 32, 48))):
    a, b = rng.standard_normal(sa).astype(np.float32), rng.standard_normal(sb).astype(np.float32)
    ta, tb = Tensor(a).cast(dt).realize(), Tensor(b).cast(dt).realize()
    got = ((ta @ tb).float() + Tensor(np.arange(sb[-1], dtype=np.float32))).relu().numpy()
    mm = ta.float().numpy() @ tb.float().numpy()
    print(dt.name, float(np.max(np.abs(got - np.maximum(mm + np.arange(sb[-1]), 0)) / (1 + np.abs(mm)))))
print("WMMA", sum(sum(u.op.name == "WMMA" for u in r.p.uops) for r in method_cache.values()))
"""

@pytest.mark.parametrize("arch,cc", [("gfx1100", "LLVM"), ("gfx90a", "LLVM"), ("gfx90a", "HIP")])
def test_tensor_core_matmul_on_mock(arch, cc):
  # the kernels are compiled for real (WMMA on gfx1100, MFMA on gfx90a); the mock runs their uops, WMMA emulated by layout
  _need(cc)
  r = run(TC_RUN, AMD_MOCK_ARCH=arch, DEV=f"AMD:{cc}", CACHELEVEL="0")
  assert r.returncode == 0, r.stderr[-3000:]
  lines = r.stdout.splitlines()
  for line in lines[:-1]: assert float(line.split()[-1]) < (1e-3 if line.startswith("half") else 5e-3), line   # one rounding to half/bf16
  assert lines[-1] == "WMMA 4"   # every matmul kernel used the tensor core
  assert run(TC_RUN, AMD_MOCK_ARCH=arch, DEV=f"AMD:{cc}", CACHELEVEL="0", USE_TC="0").stdout.splitlines()[-1] == "WMMA 0"
