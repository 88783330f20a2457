"""The NV device on the mock driver (NV_MOCK=1): every compiler pair runs, selection and errors, launch limits, memory."""
import os, subprocess, sys
import numpy as np
import pytest

def run(code: str, **env) -> subprocess.CompletedProcess:
  e = {**os.environ, "NV_MOCK": "1", **env}
  return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=e, timeout=120)

@pytest.fixture(autouse=True, scope="module")
def mock_driver():
  """This module tests the mock driver. NV_MOCK is set only while it runs: a process-wide setting would make NV (the
  highest-priority device) the default for every other test in the same pytest worker."""
  from tinygrad.device import Device
  from tinygrad_nv.device import open_driver
  old = os.environ.get("NV_MOCK")
  os.environ["NV_MOCK"] = "1"
  open_driver.cache_clear()
  Device.reset()
  yield
  if old is None: os.environ.pop("NV_MOCK", None)
  else: os.environ["NV_MOCK"] = old
  open_driver.cache_clear()
  Device.reset()

@pytest.mark.parametrize("cc", ["NVRTC", "NVCC", "PTX"])
def test_pairs_compute(cc):
  import shutil
  if cc != "NVRTC" and shutil.which("ptxas" if cc == "PTX" else "nvcc") is None: pytest.skip(f"{cc}: CUDA toolkit not installed")
  from tinygrad import Tensor
  from tinygrad.device import Device
  a = np.random.randn(8, 300).astype(np.float32)
  t = Tensor(a, device=f"NV:{cc}")
  np.testing.assert_allclose((t.sum(1) + t.max(1)).numpy(), a.sum(1) + a.max(1), rtol=1e-5, atol=1e-4)   # float32 sums of 300 terms: absolute error
  dev = Device[f"NV:{cc}"]
  assert dev.compiler_name == cc and dev.cu.mock and dev.cu.launches >= 1

def test_launch_uses_thread_blocks():
  from tinygrad import Tensor
  from tinygrad.device import Device
  from tinygrad.engine.realize import method_cache
  (Tensor(np.ones(1024, np.float32), device="NV") * 3).realize()
  p = [r.p for k, r in method_cache.items() if k[0] == "NV"][-1]
  assert p.local_size is not None and p.local_size[0] == 128 and "__launch_bounds__(128)" in p.src

def test_bad_compiler_name_and_missing_driver():
  r = run("from tinygrad.device import Device; Device['NV']", NV_CC="FOO")
  assert "unknown compiler 'FOO'" in r.stderr and "NVRTC, NVCC, PTX" in r.stderr
  r = run("from tinygrad.device import Device; Device['NV']", NV_MOCK="0", LD_LIBRARY_PATH="")
  if "no libcuda" in r.stderr: assert "not available here" in r.stderr and r.stderr.count("\n") < 40

def test_compile_error_shows_log_and_source():
  from tinygrad.device import CompileError
  from tinygrad_nv.compiler import NVRTCCompiler
  with pytest.raises(CompileError) as e: NVRTCCompiler("sm_90").compile('extern "C" __global__ void k() { undeclared_x = 1; }')
  assert "undeclared_x" in e.value.diagnostics and "---- source ----" in str(e.value)

def test_launch_limits_and_oom():
  from tinygrad.device import Device
  dev = Device["NV"]
  with pytest.raises(RuntimeError, match="exceeds the device's limits"): dev.check_launch("k", (1, 70000, 1), (1, 1, 1))
  dev.allocator.free_cache()
  dev.cu.mem_total = sum(len(a) for a in dev.cu.allocs.values()) + (3 << 26)   # room for three more 64 MiB arenas
  bufs = [dev.allocator.alloc(60 << 20) for _ in range(3)]
  for b in bufs: dev.allocator.free(b, 60 << 20)   # cached: arenas still held
  big = dev.allocator.alloc(100 << 20)               # OOM -> free cache and empty arenas -> retry
  assert big.size == 100 << 20

def test_ptx_driver_jit_compiles_to_cubin_and_rejects_bad_ptx():
  # NV_PTX_JIT=1: the driver's JIT (cuLink*) compiles at compile time, so a bad kernel is a CompileError there, not at load
  code = """
import numpy as np
from tinygrad import Tensor
from tinygrad.device import Device, CompileError
dev = Device['NV:PTX']
print('version', dev.compiler.version())
print((Tensor(np.arange(5, dtype=np.float32), device='NV:PTX') * 2).tolist())
try: dev.compiler.compile_cached('this is not a kernel }{')
except CompileError as e: print('CompileError', 'CUDA_ERROR_INVALID_PTX' in str(e))
"""
  r = run(code, NV_PTX_JIT="1", CACHELEVEL="0")
  assert r.returncode == 0, r.stderr
  assert "version driver-jit-13.0" in r.stdout and "[0.0, 2.0, 4.0, 6.0, 8.0]" in r.stdout and "CompileError True" in r.stdout

def test_ptx_without_ptxas_or_gpu_is_a_clear_pair_error():
  from tinygrad_nv.compiler import PTXCompiler
  os.environ["NV_PTX_JIT"] = "1"
  try:
    with pytest.raises(RuntimeError, match="needs ptxas"): PTXCompiler("sm_90")
  finally: os.environ.pop("NV_PTX_JIT")
