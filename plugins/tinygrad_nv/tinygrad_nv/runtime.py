"""NV runtime: the CUDA driver API through ctypes on libcuda, and NVProgram (module load, argument packing, launch, timing).

Why ctypes and not NVIDIA's `cuda-bindings`: the calls we need are a couple of dozen stable C functions, ctypes needs no
extra wheel whose version must match the installed driver, and the mock driver (mock.py) stands in at exactly this
boundary: it implements the same function names with the same ctypes arguments, so everything above it (argument
packing, launch-size checks, copies, the memory manager) runs the same code with and without a GPU.
Functions are the `_v2` ABI names the CUDA headers map the plain names to (cuMemAlloc -> cuMemAlloc_v2 ...).
"""
from __future__ import annotations
import ctypes, ctypes.util, os
from typing import Any

c_int_p, c_void_pp = ctypes.POINTER(ctypes.c_int), ctypes.POINTER(ctypes.c_void_p)
CU_PROTOS: dict[str, list[Any]] = {
  "cuInit": [ctypes.c_uint], "cuDriverGetVersion": [c_int_p], "cuDeviceGetCount": [c_int_p], "cuDeviceGet": [c_int_p, ctypes.c_int],
  "cuDeviceGetName": [ctypes.c_char_p, ctypes.c_int, ctypes.c_int], "cuDeviceGetAttribute": [c_int_p, ctypes.c_int, ctypes.c_int],
  "cuDevicePrimaryCtxRetain": [c_void_pp, ctypes.c_int], "cuCtxSetCurrent": [ctypes.c_void_p], "cuCtxSynchronize": [],
  "cuStreamCreate": [c_void_pp, ctypes.c_uint], "cuStreamSynchronize": [ctypes.c_void_p],
  "cuMemAlloc_v2": [ctypes.POINTER(ctypes.c_uint64), ctypes.c_size_t], "cuMemFree_v2": [ctypes.c_uint64],
  "cuMemGetInfo_v2": [ctypes.POINTER(ctypes.c_size_t), ctypes.POINTER(ctypes.c_size_t)],
  "cuMemcpyHtoDAsync_v2": [ctypes.c_uint64, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p],
  "cuMemcpyDtoHAsync_v2": [ctypes.c_void_p, ctypes.c_uint64, ctypes.c_size_t, ctypes.c_void_p],
  "cuMemcpyDtoDAsync_v2": [ctypes.c_uint64, ctypes.c_uint64, ctypes.c_size_t, ctypes.c_void_p],
  "cuModuleLoadDataEx": [c_void_pp, ctypes.c_void_p, ctypes.c_uint, c_int_p, c_void_pp],
  "cuModuleGetFunction": [c_void_pp, ctypes.c_void_p, ctypes.c_char_p], "cuModuleUnload": [ctypes.c_void_p],
  "cuLaunchKernel": [ctypes.c_void_p, *[ctypes.c_uint]*7, ctypes.c_void_p, c_void_pp, c_void_pp],
  "cuEventCreate": [c_void_pp, ctypes.c_uint], "cuEventRecord": [ctypes.c_void_p, ctypes.c_void_p],
  "cuEventSynchronize": [ctypes.c_void_p], "cuEventElapsedTime": [ctypes.POINTER(ctypes.c_float), ctypes.c_void_p, ctypes.c_void_p],
  "cuEventDestroy_v2": [ctypes.c_void_p], "cuGetErrorString": [ctypes.c_int, ctypes.POINTER(ctypes.c_char_p)],
  "cuGetErrorName": [ctypes.c_int, ctypes.POINTER(ctypes.c_char_p)],
  "cuLinkCreate_v2": [ctypes.c_uint, c_int_p, c_void_pp, c_void_pp],
  "cuLinkAddData_v2": [ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_char_p, ctypes.c_uint, c_int_p, c_void_pp],
  "cuLinkComplete": [ctypes.c_void_p, c_void_pp, ctypes.POINTER(ctypes.c_size_t)], "cuLinkDestroy": [ctypes.c_void_p],
}
# CUdevice_attribute values (cuda.h)
ATTR = {"max_threads_per_block": 1, "max_block_x": 2, "max_block_y": 3, "max_block_z": 4, "max_grid_x": 5, "max_grid_y": 6, "max_grid_z": 7,
        "max_shared_per_block": 8, "cc_major": 75, "cc_minor": 76}
CUDA_ERROR_OUT_OF_MEMORY, CUDA_ERROR_NO_DEVICE = 2, 100
CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES, CU_JIT_INPUT_PTX = 5, 6, 1
LIBCUDA_PATHS = ["/usr/lib/x86_64-linux-gnu/libcuda.so.1", "/usr/lib64/libcuda.so.1", "/usr/lib/aarch64-linux-gnu/libcuda.so.1",
                 "/usr/lib/wsl/lib/libcuda.so.1", "/usr/local/cuda/compat/libcuda.so.1"]

def find_libcuda() -> str | None:
  """Path of the driver library, without loading it (LD_LIBRARY_PATH, the usual places, then ldconfig)."""
  # a relative (or empty) entry names whatever the current directory holds: absolute directories only
  dirs = [d for d in os.environ.get("LD_LIBRARY_PATH", "").split(":") if os.path.isabs(d)]
  for p in [os.path.join(d, "libcuda.so.1") for d in dirs] + LIBCUDA_PATHS:
    if os.path.exists(p): return p
  return ctypes.util.find_library("cuda")

class CUDAError(RuntimeError):
  def __init__(self, msg: str, code: int):
    super().__init__(msg)
    self.code = code

class CUDADriver:
  """libcuda with typed prototypes: `drv.cuMemAlloc_v2(ctypes.pointer(ptr), size) -> CUresult`."""
  mock = False
  def __getattr__(self, name: str) -> Any: raise AttributeError(f"libcuda has no {name} bound (add it to CU_PROTOS)")   # typing: cu* are set below
  def __init__(self, path: str):
    self.lib = ctypes.CDLL(path)
    for name, args in CU_PROTOS.items():
      fn = getattr(self.lib, name)
      fn.argtypes, fn.restype = args, ctypes.c_int
      setattr(self, name, fn)
  def error_string(self, code: int) -> str:
    name, desc = ctypes.c_char_p(), ctypes.c_char_p()
    getattr(self, "cuGetErrorName")(code, ctypes.pointer(name))
    getattr(self, "cuGetErrorString")(code, ctypes.pointer(desc))
    return f"{(name.value or b'CUDA_ERROR_' + str(code).encode()).decode()} ({(desc.value or b'unknown').decode()})"

def check(drv: Any, code: int, what: str) -> None:
  """Raise CUDAError (MemoryError for out-of-memory) when a driver call failed."""
  if code == 0: return
  msg = f"{what} failed: {drv.error_string(code)}"
  if code == CUDA_ERROR_OUT_OF_MEMORY: raise MemoryError(msg)
  raise CUDAError(msg, code)

def jit_link(cu: Any, ptx: str) -> bytes:
  """PTX -> CUBIN for the current context's GPU with the driver's own JIT (cuLink*); raises CompileError with its log."""
  from tinygrad.plugin_api import CompileError
  state, log = ctypes.c_void_p(), ctypes.create_string_buffer(8192)
  opts = (ctypes.c_int * 2)(CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES)
  vals = (ctypes.c_void_p * 2)(ctypes.cast(log, ctypes.c_void_p), ctypes.c_void_p(len(log)))
  check(cu, cu.cuLinkCreate_v2(2, opts, vals, ctypes.pointer(state)), "cuLinkCreate")
  try:
    data = ctypes.create_string_buffer(ptx.encode())
    code = cu.cuLinkAddData_v2(state, CU_JIT_INPUT_PTX, ctypes.cast(data, ctypes.c_void_p), len(data), b"kernel.ptx", 0, None, None)
    if code != 0: raise CompileError(f"the driver's PTX JIT failed: {cu.error_string(code)}\n{log.value.decode(errors='replace')}".strip(), ptx)
    out, size = ctypes.c_void_p(), ctypes.c_size_t()
    check(cu, cu.cuLinkComplete(state, ctypes.pointer(out), ctypes.pointer(size)), "cuLinkComplete")
    return ctypes.string_at(out.value or 0, size.value)   # owned by the link state: copied before it is destroyed
  finally: cu.cuLinkDestroy(state)

def _host_addr(mv: memoryview) -> tuple[int, Any]:
  """The address of a host buffer and an object that keeps it alive (read-only buffers are copied once)."""
  if mv.readonly: mv = memoryview(bytearray(mv))
  arr = (ctypes.c_char * mv.nbytes).from_buffer(mv)
  return ctypes.addressof(arr), arr

class NVProgram:
  """A kernel loaded into the device's context: `NVProgram(dev, name, lib)(*bufs, global_size=, local_size=, vals=, wait=)`.

  lib is a CUBIN or NUL-terminated PTX (JIT-compiled by the driver, whose log is shown on failure). Arguments are packed
  as cuLaunchKernel wants them: an array of pointers, one per kernel parameter, each to that parameter's value (u64
  device addresses for buffers, then s32 for variables), in the order the renderers declare them.
  """
  def __init__(self, dev: Any, name: str, lib: bytes):
    self.dev, self.name, self.cu = dev, name, dev.cu
    dev.make_current()
    self.module: ctypes.c_void_p | None = ctypes.c_void_p()
    self.func = ctypes.c_void_p()
    log = ctypes.create_string_buffer(8192)
    opts = (ctypes.c_int * 2)(CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES)
    vals = (ctypes.c_void_p * 2)(ctypes.cast(log, ctypes.c_void_p), ctypes.c_void_p(len(log)))
    self._lib = ctypes.create_string_buffer(lib, len(lib))   # the driver reads the image during the call only
    code = self.cu.cuModuleLoadDataEx(ctypes.pointer(self.module), ctypes.cast(self._lib, ctypes.c_void_p), 2, opts, vals)
    if code != 0:
      self.module = None
      raise CUDAError(f"cuModuleLoadDataEx of kernel {name} on {dev.device} failed: {self.cu.error_string(code)}"
                      + (f"\n{log.value.decode(errors='replace')}" if log.value else ""), code)
    check(self.cu, self.cu.cuModuleGetFunction(ctypes.pointer(self.func), self.module, name.encode()), f"cuModuleGetFunction({name})")

  def __call__(self, *bufs: Any, global_size: tuple[int, ...] = (1, 1, 1), local_size: tuple[int, ...] | None = None,
               vals: tuple[int, ...] = (), wait: bool = False) -> float | None:
    gl = (tuple(global_size) + (1, 1, 1))[:3]
    lc = (tuple(local_size) + (1, 1, 1))[:3] if local_size is not None else (1, 1, 1)
    self.dev.check_launch(self.name, gl, lc)
    args = [ctypes.c_uint64(b if isinstance(b, int) else b.addr) for b in bufs] + [ctypes.c_int32(v) for v in vals]
    params = (ctypes.c_void_p * max(1, len(args)))(*[ctypes.cast(ctypes.pointer(a), ctypes.c_void_p) for a in args])
    self.dev.make_current()
    if wait: st, en = self.dev.event(), self.dev.event()
    if wait: check(self.cu, self.cu.cuEventRecord(st, self.dev.stream), "cuEventRecord")
    check(self.cu, self.cu.cuLaunchKernel(self.func, *gl, *lc, 0, self.dev.stream, params, None),
          f"cuLaunchKernel({self.name}, grid={gl}, block={lc})")
    if not wait: return None
    check(self.cu, self.cu.cuEventRecord(en, self.dev.stream), "cuEventRecord")
    check(self.cu, self.cu.cuEventSynchronize(en), "cuEventSynchronize")
    ms = ctypes.c_float()
    check(self.cu, self.cu.cuEventElapsedTime(ctypes.pointer(ms), st, en), "cuEventElapsedTime")
    for e in (st, en): self.cu.cuEventDestroy_v2(e)
    return ms.value / 1e3

  def __del__(self) -> None:
    if getattr(self, "module", None) is not None:
      try: self.cu.cuModuleUnload(self.module)
      except Exception: pass   # interpreter shutdown
