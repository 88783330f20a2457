"""The NV device: compiler pairs (NV_CC=NVRTC|NVCC|PTX, NV_PTX=1, DEV=NV:PTX), the CUDA driver (or the mock), memory, launch limits."""
from __future__ import annotations
import ctypes, functools, os
from typing import Any
from tinygrad.plugin_api import Compiled, CompilerSet, CompilerPair, DeviceError, launch_threads_ok
from tinygrad_nv.renderer import CUDARenderer, PTXRenderer
from tinygrad_nv.compiler import NVRTCCompiler, NVCCCompiler, PTXCompiler, NVCompiler
from tinygrad_nv.runtime import ATTR, CUDADriver, NVProgram, check, find_libcuda, CUDA_ERROR_NO_DEVICE
from tinygrad_nv.allocator import NVAllocator

MOCK_KERNELS: dict[bytes, Any] = {}   # binary -> uops, shared by every mock device of the process (see mock.py)

@functools.cache
def open_driver() -> Any:
  """The process's driver: the mock when NV_MOCK=1, else libcuda (cuInit once). Raises DeviceError saying what is missing."""
  if os.environ.get("NV_MOCK", "0") == "1":
    from tinygrad_nv.mock import MockDriver
    return MockDriver(MOCK_KERNELS)
  path = find_libcuda()
  if path is None: raise DeviceError("NV: no libcuda / no NVIDIA driver (libcuda.so.1 not found); install the NVIDIA driver, or NV_MOCK=1 for the mock")
  try: drv = CUDADriver(path)
  except (OSError, AttributeError) as e: raise DeviceError(f"NV: cannot load {path}: {e}") from e
  code = drv.cuInit(0)
  if code == CUDA_ERROR_NO_DEVICE: raise DeviceError(f"NV: the NVIDIA driver ({path}) finds no GPU: {drv.error_string(code)}")
  if code != 0: raise DeviceError(f"NV: cuInit failed: {drv.error_string(code)}")
  return drv

def nv_compilers(arch: str, dev: Any = None, **lim: Any) -> CompilerSet:
  """The three pairs for `arch` ("sm_90"), in order of preference; `lim` are the device's launch limits, `dev` the
  NVDevice whose driver JIT-compiles PTX when ptxas is missing (None: compile-only)."""
  return CompilerSet([
    CompilerPair(functools.partial(CUDARenderer, arch, **lim), functools.partial(NVRTCCompiler, arch), "NV_NVRTC", "NVRTC"),
    CompilerPair(functools.partial(CUDARenderer, arch, **lim), functools.partial(NVCCCompiler, arch), "NV_NVCC", "NVCC"),
    CompilerPair(functools.partial(PTXRenderer, arch, **lim), functools.partial(PTXCompiler, arch, dev), "NV_PTX", "PTX")], "NV_CC")

def compile_only() -> CompilerSet:
  """The pairs without a GPU (for listing and compile-only use): the arch is NV_ARCH, default sm_80."""
  return nv_compilers(os.environ.get("NV_ARCH", "sm_80"))

class NVDevice(Compiled):
  """One CUDA device (`NV`, `NV:1`): its primary context, one stream, an arena memory manager and the three compiler pairs."""
  def __init__(self, device: str = "NV"):
    self.cu = open_driver()
    index = int(device.split(":")[1]) if ":" in device and device.split(":")[1].isdigit() else 0
    count = ctypes.c_int()
    check(self.cu, self.cu.cuDeviceGetCount(ctypes.pointer(count)), "cuDeviceGetCount")
    if not 0 <= index < count.value: raise DeviceError(f"NV:{index} does not exist: {count.value} NVIDIA GPU(s) found (NV:0..NV:{count.value-1})")
    self.cu_device = ctypes.c_int()
    check(self.cu, self.cu.cuDeviceGet(ctypes.pointer(self.cu_device), index), "cuDeviceGet")
    a = {k: self._attr(v) for k, v in ATTR.items()}
    self.arch = f"sm_{a['cc_major']}{a['cc_minor']}"
    self.block_max, self.threads_max = (a["max_block_x"], a["max_block_y"], a["max_block_z"]), a["max_threads_per_block"]
    self.grid_max = (a["max_grid_x"], a["max_grid_y"], a["max_grid_z"])
    self.ctx, self.stream = ctypes.c_void_p(), ctypes.c_void_p()
    check(self.cu, self.cu.cuDevicePrimaryCtxRetain(ctypes.pointer(self.ctx), self.cu_device), "cuDevicePrimaryCtxRetain")
    self.make_current()
    check(self.cu, self.cu.cuStreamCreate(ctypes.pointer(self.stream), 1), "cuStreamCreate")   # 1: CU_STREAM_NON_BLOCKING
    self.device = device
    lim = {"local_max": self.block_max, "shared_max": a["max_shared_per_block"], "global_max": self.grid_max}
    ver = ctypes.c_int()
    check(self.cu, self.cu.cuDriverGetVersion(ctypes.pointer(ver)), "cuDriverGetVersion")
    self.driver_version = f"{ver.value // 1000}.{ver.value % 1000 // 10}"
    super().__init__(device, NVAllocator(self), nv_compilers(self.arch, self, **lim), functools.partial(NVProgram, self))
    if self.cu.mock and isinstance(self.compiler, NVCompiler):   # let the mock find the uops behind each binary
      self.renderer.record = getattr(self.renderer, "record", None) or {}   # type: ignore[attr-defined]
      self.renderer.cache_programs = False   # the record is filled by render, which a cached program skips
      self.compiler.rendered, self.compiler.kernels = self.renderer.record, MOCK_KERNELS   # type: ignore[attr-defined]

  def _attr(self, attr: int) -> int:
    v = ctypes.c_int()
    check(self.cu, self.cu.cuDeviceGetAttribute(ctypes.pointer(v), attr, self.cu_device), "cuDeviceGetAttribute")
    return v.value
  def make_current(self) -> None: check(self.cu, self.cu.cuCtxSetCurrent(self.ctx), "cuCtxSetCurrent")
  def event(self) -> ctypes.c_void_p:
    e = ctypes.c_void_p()
    check(self.cu, self.cu.cuEventCreate(ctypes.pointer(e), 0), "cuEventCreate")
    return e
  def check_launch(self, name: str, gl: tuple[int, ...], lc: tuple[int, ...]) -> None:
    """A clear error before the driver's terse one: grid and block sizes against this device's limits."""
    if not launch_threads_ok(lc, self.block_max, self.threads_max) or not all(1 <= g <= m for g, m in zip(gl, self.grid_max)):
      raise RuntimeError(f"kernel {name} on {self.device}: launch grid={gl} block={lc} exceeds the device's limits "
                         f"(grid <= {self.grid_max}, block <= {self.block_max}, {self.threads_max} threads per block)")
  def synchronize(self) -> None: check(self.cu, self.cu.cuStreamSynchronize(self.stream), "cuStreamSynchronize")
