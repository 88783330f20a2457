"""The AMD device: compiler pairs (AMD_CC=HIP|LLVM|HIPRTC|COMGR|CLANG, AMD_LLVM=1, DEV=AMD:LLVM), the HIP runtime (or the mock), memory,
launch limits, and the gfx target (the device's, or AMD_ARCH=<gfx> for compiling without that GPU)."""
from __future__ import annotations
import ctypes, functools, os
from typing import Any
from tinygrad.plugin_api import Compiled, CompilerSet, CompilerPair, DeviceError, launch_threads_ok
from tinygrad_amd.renderer import HIPRenderer, AMDLLVMRenderer, check_arch
from tinygrad_amd.compiler import AMDLLVMCompiler, HIPCompiler, AMDCompiler, HIP_COMPILERS
from tinygrad_amd.runtime import ATTR, HIPRuntime, AMDProgram, check, device_arch, find_libhip, HIP_ERROR_NO_DEVICE
from tinygrad_amd.allocator import AMDAllocator

MOCK_KERNELS: dict[bytes, Any] = {}   # binary -> uops, shared by every mock device of the process (see mock.py)

@functools.cache
def open_driver() -> Any:
  """The process's HIP runtime: the mock when AMD_MOCK=1, else libamdhip64 (hipInit once). Raises DeviceError saying what is missing."""
  if os.environ.get("AMD_MOCK", "0") == "1":
    from tinygrad_amd.mock import MockHIP
    return MockHIP(MOCK_KERNELS)
  path = find_libhip()
  if path is None: raise DeviceError("AMD: no libamdhip64 (the HIP runtime) found; install ROCm (hip-runtime-amd), or AMD_MOCK=1 for the mock")
  try: hip = HIPRuntime(path)
  except (OSError, AttributeError) as e: raise DeviceError(f"AMD: cannot load {path}: {e}") from e
  code = hip.hipInit(0)
  if code == HIP_ERROR_NO_DEVICE: raise DeviceError(f"AMD: the HIP runtime ({path}) finds no GPU: {hip.error_string(code)}")
  if code != 0: raise DeviceError(f"AMD: hipInit failed: {hip.error_string(code)}")
  return hip

def amd_compilers(arch: str, **lim: Any) -> CompilerSet:
  """The pairs for `arch` ("gfx90a"), in order of preference; `lim` are the device's launch limits. HIP takes the first
  HIP C compiler that works here (hiprtc > comgr > clang, or AMD_HIPCC's); HIPRTC, COMGR and CLANG pin one each, so the
  listing shows every HIP C compiler's health and AMD_CC=COMGR / DEV=AMD:COMGR picks it."""
  hip = functools.partial(HIPRenderer, arch, **lim)
  return CompilerSet([
    CompilerPair(hip, functools.partial(HIPCompiler, arch), "AMD_HIP", "HIP"),
    CompilerPair(functools.partial(AMDLLVMRenderer, arch, **lim), functools.partial(AMDLLVMCompiler, arch), "AMD_LLVM", "LLVM"),
    *[CompilerPair(hip, functools.partial(make, arch), f"AMD_{name.upper()}", name.upper()) for name, make in HIP_COMPILERS.items()]], "AMD_CC")

def compile_only() -> CompilerSet:
  """The pairs without a GPU (for listing and compile-only use): the target is AMD_ARCH, default gfx90a (which every
  compiler here knows, clang 14 included)."""
  return amd_compilers(os.environ.get("AMD_ARCH", "gfx90a"))

class AMDDevice(Compiled):
  """One AMD GPU (`AMD`, `AMD:1`): one stream, an arena memory manager and the two compiler pairs for its gfx target."""
  def __init__(self, device: str = "AMD"):
    self.hip = open_driver()
    self.index = int(device.split(":")[1]) if ":" in device and device.split(":")[1].isdigit() else 0
    count = ctypes.c_int()
    check(self.hip, self.hip.hipGetDeviceCount(ctypes.pointer(count)), "hipGetDeviceCount")
    if not 0 <= self.index < count.value: raise DeviceError(f"AMD:{self.index} does not exist: {count.value} AMD GPU(s) found (AMD:0..AMD:{count.value-1})")
    self.make_current()
    self.name, dev_arch = device_arch(self.hip, self.index)
    self.arch = os.environ.get("AMD_ARCH") or dev_arch
    try: check_arch(self.arch)
    except ValueError as e: raise DeviceError(f"AMD:{self.index} ({self.name}): {e}") from e
    a = {k: self._attr(v) for k, v in ATTR.items()}
    self.block_max, self.threads_max = (a["max_block_x"], a["max_block_y"], a["max_block_z"]), a["max_threads_per_block"]
    self.grid_max = (a["max_grid_x"], a["max_grid_y"], a["max_grid_z"])
    self.stream = ctypes.c_void_p()
    check(self.hip, self.hip.hipStreamCreateWithFlags(ctypes.pointer(self.stream), 1), "hipStreamCreateWithFlags")   # 1: non-blocking
    self.device = device
    lim = {"local_max": self.block_max, "shared_max": a["max_shared_per_block"], "global_max": self.grid_max}
    super().__init__(device, AMDAllocator(self), amd_compilers(self.arch, **lim), functools.partial(AMDProgram, self))
    self.description = f"{self.name} ({self.arch}, wave{check_arch(self.arch).wave})"
    if self.hip.mock and isinstance(self.compiler, AMDCompiler):   # let the mock find the uops behind each binary
      self.renderer.record = getattr(self.renderer, "record", None) or {}   # type: ignore[attr-defined]
      self.renderer.cache_programs = False   # the record is filled by render, which a cached program skips
      self.compiler.rendered, self.compiler.kernels = self.renderer.record, MOCK_KERNELS   # type: ignore[attr-defined]

  def _attr(self, attr: int) -> int:
    v = ctypes.c_int()
    check(self.hip, self.hip.hipDeviceGetAttribute(ctypes.pointer(v), attr, self.index), "hipDeviceGetAttribute")
    return v.value
  def make_current(self) -> None: check(self.hip, self.hip.hipSetDevice(self.index), "hipSetDevice")
  def event(self) -> ctypes.c_void_p:
    e = ctypes.c_void_p()
    check(self.hip, self.hip.hipEventCreate(ctypes.pointer(e)), "hipEventCreate")
    return e
  def check_launch(self, name: str, gl: tuple[int, ...], lc: tuple[int, ...]) -> None:
    """A clear error before the runtime's terse one: grid and workgroup sizes against this device's limits."""
    if not launch_threads_ok(lc, self.block_max, self.threads_max) or not all(1 <= g <= m for g, m in zip(gl, self.grid_max)):
      raise RuntimeError(f"kernel {name} on {self.device}: launch grid={gl} block={lc} exceeds the device's limits "
                         f"(grid <= {self.grid_max}, block <= {self.block_max}, {self.threads_max} threads per block)")
  def synchronize(self) -> None:
    self.make_current()
    check(self.hip, self.hip.hipStreamSynchronize(self.stream), "hipStreamSynchronize")
