"""AMD runtime: the HIP runtime API through ctypes on libamdhip64 (loaded when a device opens), and AMDProgram (code
object load, argument packing, launch, timing).

Why ctypes and not hip-python: a couple of dozen stable C functions, no wheel whose version must match the installed
ROCm, and the mock driver (mock.py) stands in at exactly this boundary: it implements the same function names with the
same ctypes arguments, so everything above it (argument packing, launch checks, copies, the memory manager) runs the same
code with and without a GPU. Kernel arguments go in one packed buffer through `extra` (HIP_LAUNCH_PARAM_BUFFER_POINTER),
the form every ROCm version accepts: the kernarg segment's layout, u64 buffer addresses then i32 variables.
"""
from __future__ import annotations
import ctypes, ctypes.util, glob, os, re, struct
from typing import Any

c_int_p, c_void_pp = ctypes.POINTER(ctypes.c_int), ctypes.POINTER(ctypes.c_void_p)
HIP_PROTOS: dict[str, list[Any]] = {
  "hipInit": [ctypes.c_uint], "hipRuntimeGetVersion": [c_int_p], "hipGetDeviceCount": [c_int_p], "hipSetDevice": [ctypes.c_int],
  "hipDeviceGetAttribute": [c_int_p, ctypes.c_int, ctypes.c_int], "hipDeviceSynchronize": [],
  "hipStreamCreateWithFlags": [c_void_pp, ctypes.c_uint], "hipStreamSynchronize": [ctypes.c_void_p],
  "hipMalloc": [ctypes.POINTER(ctypes.c_uint64), ctypes.c_size_t], "hipFree": [ctypes.c_uint64],
  "hipMemGetInfo": [ctypes.POINTER(ctypes.c_size_t), ctypes.POINTER(ctypes.c_size_t)],
  "hipMemcpyAsync": [ctypes.c_uint64, ctypes.c_uint64, ctypes.c_size_t, ctypes.c_int, ctypes.c_void_p],
  "hipModuleLoadData": [c_void_pp, ctypes.c_void_p], "hipModuleGetFunction": [c_void_pp, ctypes.c_void_p, ctypes.c_char_p],
  "hipModuleUnload": [ctypes.c_void_p],
  "hipModuleLaunchKernel": [ctypes.c_void_p, *[ctypes.c_uint]*7, ctypes.c_void_p, c_void_pp, c_void_pp],
  "hipEventCreate": [c_void_pp], "hipEventRecord": [ctypes.c_void_p, ctypes.c_void_p], "hipEventSynchronize": [ctypes.c_void_p],
  "hipEventElapsedTime": [ctypes.POINTER(ctypes.c_float), ctypes.c_void_p, ctypes.c_void_p], "hipEventDestroy": [ctypes.c_void_p],
}
# hipDeviceAttribute_t values (ROCm 6 hip_runtime_api.h; the gpu check script prints what they read on a real GPU)
ATTR = {"max_block_x": 26, "max_block_y": 27, "max_block_z": 28, "max_grid_x": 29, "max_grid_y": 30, "max_grid_z": 31,
        "max_threads_per_block": 56, "max_shared_per_block": 74, "warp_size": 87}
HIP_MEMCPY_H2D, HIP_MEMCPY_D2H, HIP_MEMCPY_D2D = 1, 2, 3
HIP_ERROR_OUT_OF_MEMORY, HIP_ERROR_NO_DEVICE = 2, 100
HIP_LAUNCH_PARAM_BUFFER_POINTER, HIP_LAUNCH_PARAM_BUFFER_SIZE, HIP_LAUNCH_PARAM_END = 1, 2, 3
PROPS_SIZE = 8192   # bigger than any version's hipDeviceProp_t

def rocm_path() -> str:
  """$ROCM_PATH when it is an absolute path, else /opt/rocm (a relative one would load libraries from the cwd)."""
  p = os.environ.get("ROCM_PATH", "/opt/rocm")
  return p if os.path.isabs(p) else "/opt/rocm"

def find_libhip() -> str | None:
  """Path of libamdhip64, without loading it ($ROCM_PATH/lib, LD_LIBRARY_PATH, /opt/rocm*, then ldconfig)."""
  # absolute directories only: a relative (or empty) entry names whatever the current directory holds
  dirs = [os.path.join(rocm_path(), "lib")] + [d for d in os.environ.get("LD_LIBRARY_PATH", "").split(":") if os.path.isabs(d)]
  for p in [os.path.join(d, n) for d in dirs for n in ("libamdhip64.so", "libamdhip64.so.6", "libamdhip64.so.5")]:
    if os.path.exists(p): return p
  found = sorted(glob.glob("/opt/rocm*/lib/libamdhip64.so*"), reverse=True)
  return found[0] if found else ctypes.util.find_library("amdhip64")

class HIPError(RuntimeError):
  def __init__(self, msg: str, code: int):
    super().__init__(msg)
    self.code = code

class HIPRuntime:
  """libamdhip64 with typed prototypes: `hip.hipMalloc(ctypes.pointer(ptr), size) -> hipError_t`."""
  mock = False
  hipInit: Any   # every HIP_PROTOS entry is set as an attribute in __init__
  def __init__(self, path: str):
    self.lib = ctypes.CDLL(path)
    for name, args in HIP_PROTOS.items():
      fn = getattr(self.lib, name)
      fn.argtypes, fn.restype = args, ctypes.c_int
      setattr(self, name, fn)
    # ROCm 6 renamed the properties call (its struct changed); ROCm 5 has only the plain name
    self._props = getattr(self.lib, "hipGetDevicePropertiesR0600", None) or self.lib.hipGetDeviceProperties
    self._props.argtypes, self._props.restype = [ctypes.c_void_p, ctypes.c_int], ctypes.c_int
    for name in ("hipGetErrorString", "hipGetErrorName"):
      getattr(self.lib, name).argtypes, getattr(self.lib, name).restype = [ctypes.c_int], ctypes.c_char_p
  def hipGetDeviceProperties(self, buf: Any, index: int) -> int: return self._props(buf, index)
  def error_string(self, code: int) -> str:
    return f"{(self.lib.hipGetErrorName(code) or b'hipError').decode()} ({(self.lib.hipGetErrorString(code) or b'unknown').decode()})"

def check(drv: Any, code: int, what: str) -> None:
  """Raise HIPError (MemoryError for out-of-memory) when a runtime call failed."""
  if code == 0: return
  msg = f"{what} failed: {drv.error_string(code)}"
  if code == HIP_ERROR_OUT_OF_MEMORY: raise MemoryError(msg)
  raise HIPError(msg, code)

def device_arch(drv: Any, index: int) -> tuple[str, str]:
  """(name, gfx target) of device `index`, from hipGetDeviceProperties: the name is the struct's first field; the target
  (gcnArchName, "gfx90a:sramecc+:xnack-") sits at an offset that differs between ROCm versions, so it is found by pattern."""
  buf = ctypes.create_string_buffer(PROPS_SIZE)
  check(drv, drv.hipGetDeviceProperties(buf, index), "hipGetDeviceProperties")
  name = buf.raw[:256].split(b"\0")[0].decode(errors="replace")
  m = re.search(rb"(gfx[0-9a-f]{3,4})[:a-z0-9+\-]*\0", buf.raw[256:])
  return name, (m.group(1).decode() if m else "")

def _host_addr(mv: memoryview) -> tuple[int, Any]:
  """The address of a host buffer and an object that keeps it alive (read-only buffers are copied once)."""
  if mv.readonly: mv = memoryview(bytearray(mv))
  arr = (ctypes.c_char * mv.nbytes).from_buffer(mv)
  return ctypes.addressof(arr), arr

def pack_args(bufs: tuple[Any, ...], vals: tuple[int, ...]) -> bytes:
  """The kernarg bytes: each buffer's u64 address, then each variable as i32 (the order the renderers declare them)."""
  return struct.pack(f"<{len(bufs)}Q{len(vals)}i", *[b if isinstance(b, int) else b.addr for b in bufs], *vals)

class AMDProgram:
  """A kernel loaded on the device: `AMDProgram(dev, name, lib)(*bufs, global_size=, local_size=, vals=, wait=)`; lib is an
  HSACO (the ELF code object the compilers produce)."""
  def __init__(self, dev: Any, name: str, lib: bytes):
    self.dev, self.name, self.hip = dev, name, dev.hip
    dev.make_current()
    self.module: ctypes.c_void_p | None = ctypes.c_void_p()
    self.func = ctypes.c_void_p()
    self._lib = ctypes.create_string_buffer(lib, len(lib))
    code = self.hip.hipModuleLoadData(ctypes.pointer(self.module), ctypes.cast(self._lib, ctypes.c_void_p))
    if code != 0:
      self.module = None
      raise HIPError(f"hipModuleLoadData of kernel {name} on {dev.device} ({dev.arch}) failed: {self.hip.error_string(code)}", code)
    check(self.hip, self.hip.hipModuleGetFunction(ctypes.pointer(self.func), self.module, name.encode()), f"hipModuleGetFunction({name})")

  def __call__(self, *bufs: Any, global_size: tuple[int, ...] = (1, 1, 1), local_size: tuple[int, ...] | None = None,
               vals: tuple[int, ...] = (), wait: bool = False) -> float | None:
    gl = (tuple(global_size) + (1, 1, 1))[:3]
    lc = (tuple(local_size) + (1, 1, 1))[:3] if local_size is not None else (1, 1, 1)
    self.dev.check_launch(self.name, gl, lc)
    raw = pack_args(bufs, vals)
    args, size = (ctypes.c_char * max(8, len(raw))).from_buffer_copy(raw.ljust(8, b"\0")), ctypes.c_size_t(len(raw))
    extra = (ctypes.c_void_p * 5)(HIP_LAUNCH_PARAM_BUFFER_POINTER, ctypes.addressof(args), HIP_LAUNCH_PARAM_BUFFER_SIZE,
                                  ctypes.addressof(size), HIP_LAUNCH_PARAM_END)
    self.dev.make_current()
    if wait:
      st, en = self.dev.event(), self.dev.event()
      check(self.hip, self.hip.hipEventRecord(st, self.dev.stream), "hipEventRecord")
    check(self.hip, self.hip.hipModuleLaunchKernel(self.func, *gl, *lc, 0, self.dev.stream, None, extra),
          f"hipModuleLaunchKernel({self.name}, grid={gl}, block={lc})")
    if not wait: return None
    check(self.hip, self.hip.hipEventRecord(en, self.dev.stream), "hipEventRecord")
    check(self.hip, self.hip.hipEventSynchronize(en), "hipEventSynchronize")
    ms = ctypes.c_float()
    check(self.hip, self.hip.hipEventElapsedTime(ctypes.pointer(ms), st, en), "hipEventElapsedTime")
    for e in (st, en): self.hip.hipEventDestroy(e)
    return ms.value / 1e3

  def __del__(self) -> None:
    if getattr(self, "module", None) is not None:
      try: self.hip.hipModuleUnload(self.module)
      except Exception: pass   # interpreter shutdown
