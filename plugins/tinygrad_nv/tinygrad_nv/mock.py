"""The mock CUDA driver (NV_MOCK=1): the CUDA driver API's functions, as runtime.py calls them, on host memory.

What it models: device memory is host memory (a device pointer is a real host address, so copies are memmove and a
kernel reads its arguments' bytes in place); a stream runs work at once; launch checks the grid/block limits the real
driver enforces (and the kernel's own thread bound) and returns the same error codes; out-of-memory past NV_MOCK_MEM
bytes (default 1 GiB) returns CUDA_ERROR_OUT_OF_MEMORY.
How a kernel runs: a CUBIN cannot run here, so module load looks the binary up in `kernels` (binary -> the linearized
uops it was rendered from, filled by the NV compilers' compile_cached while the mock is active) and a launch runs those
uops with the core's PYTHON interpreter, over the launch's grid and block, reading the parameters out of the packed
kernelParams array exactly as the real driver would.
Device identity: NV_MOCK_ARCH (default sm_90) and an H100-like set of limits.
"""
from __future__ import annotations
import ctypes, os
from typing import Any
from tinygrad.plugin_api import Ops, UOp, PtrDType, prod
from tinygrad_nv.runtime import ATTR, CUDA_ERROR_OUT_OF_MEMORY

CUDA_ERROR_INVALID_VALUE, CUDA_ERROR_INVALID_IMAGE, CUDA_ERROR_INVALID_PTX, CUDA_ERROR_NOT_FOUND = 1, 200, 218, 500
CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES = 701
_NAMES = {0: "CUDA_SUCCESS", 1: "CUDA_ERROR_INVALID_VALUE", 2: "CUDA_ERROR_OUT_OF_MEMORY", 200: "CUDA_ERROR_INVALID_IMAGE",
          218: "CUDA_ERROR_INVALID_PTX", 500: "CUDA_ERROR_NOT_FOUND", 701: "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES"}

def _h(x: Any) -> int:
  """A handle or address as the driver receives it (a c_void_p, or a plain int) -> int."""
  return int(x.value or 0) if isinstance(x, ctypes.c_void_p) else int(x)

class MockFunction:
  def __init__(self, name: str, uops: list[UOp]):
    from tinygrad.runtime.python import PythonProgram, serialize
    self.name, self.prg = name, PythonProgram(name, serialize(uops).encode())
    self.globals = [(u.arg, u.dtype.size * u.dtype.base.itemsize) for u in uops if u.op is Ops.DEFINE_GLOBAL and isinstance(u.dtype, PtrDType)]
    self.nvars = sum(1 for u in uops if u.op is Ops.DEFINE_VAR)
    self.max_threads = prod(u.src[0].arg for u in uops if u.op is Ops.SPECIAL and u.arg[0] == "l")   # __launch_bounds__

class MockDriver:
  """Implements CU_PROTOS' functions by name; pointer arguments are ctypes pointer objects, as runtime.py passes them."""
  mock = True
  def __init__(self, kernels: dict[bytes, list[UOp]], arch: str | None = None, mem: int | None = None):
    self.kernels = kernels
    self.arch = arch or os.environ.get("NV_MOCK_ARCH", "sm_90")
    self.mem_total = mem or int(os.environ.get("NV_MOCK_MEM", 1 << 30))
    self.allocs: dict[int, Any] = {}
    self.modules: dict[int, list[UOp]] = {}
    self.funcs: dict[int, MockFunction] = {}
    self.launches = 0
    self.links: dict[int, bytes] = {}
    n = int("".join(c for c in self.arch if c.isdigit()))
    self.attrs = {ATTR["max_threads_per_block"]: 1024, ATTR["max_block_x"]: 1024, ATTR["max_block_y"]: 1024, ATTR["max_block_z"]: 64,
                  ATTR["max_grid_x"]: 2**31-1, ATTR["max_grid_y"]: 65535, ATTR["max_grid_z"]: 65535, ATTR["max_shared_per_block"]: 49152,
                  ATTR["cc_major"]: n // 10, ATTR["cc_minor"]: n % 10}
  def error_string(self, code: int) -> str: return f"{_NAMES.get(code, f'CUDA_ERROR_{code}')} (mock driver)"
  @staticmethod
  def _set(p: Any, v: Any) -> int:
    p.contents.value = v
    return 0

  def cuInit(self, flags: int) -> int: return 0
  def cuDriverGetVersion(self, p: Any) -> int: return self._set(p, 13000)
  def cuDeviceGetCount(self, p: Any) -> int: return self._set(p, int(os.environ.get("NV_MOCK_COUNT", 2)))
  def cuDeviceGet(self, p: Any, i: int) -> int: return self._set(p, i)
  def cuDeviceGetName(self, buf: Any, n: int, dev: int) -> int:
    ctypes.memmove(buf, f"Mock NVIDIA GPU {self.arch}".encode()[:n-1] + b"\0", min(n, 32))
    return 0
  def cuDeviceGetAttribute(self, p: Any, attr: int, dev: int) -> int: return self._set(p, self.attrs.get(attr, 0))
  def cuDevicePrimaryCtxRetain(self, p: Any, dev: int) -> int: return self._set(p, 0x1000 + getattr(dev, 'value', dev))
  def cuCtxSetCurrent(self, ctx: Any) -> int: return 0
  def cuCtxSynchronize(self) -> int: return 0
  def cuStreamCreate(self, p: Any, flags: int) -> int: return self._set(p, 0x2000)
  def cuStreamSynchronize(self, s: Any) -> int: return 0

  def cuMemAlloc_v2(self, p: Any, size: int) -> int:
    if sum(ctypes.sizeof(a) for a in self.allocs.values()) + size > self.mem_total: return CUDA_ERROR_OUT_OF_MEMORY
    buf = (ctypes.c_uint8 * size)()
    self.allocs[ctypes.addressof(buf)] = buf
    return self._set(p, ctypes.addressof(buf))
  def cuMemFree_v2(self, ptr: int) -> int: return 0 if self.allocs.pop(int(ptr), None) is not None else CUDA_ERROR_INVALID_VALUE
  def cuMemGetInfo_v2(self, free: Any, total: Any) -> int:
    self._set(total, self.mem_total)
    return self._set(free, self.mem_total - sum(ctypes.sizeof(a) for a in self.allocs.values()))
  def _copy(self, dst: int, src: int, n: int) -> int:
    ctypes.memmove(dst, src, n)
    return 0
  def cuMemcpyHtoDAsync_v2(self, dst: int, src: int, n: int, s: Any) -> int: return self._copy(dst, src, n)
  def cuMemcpyDtoHAsync_v2(self, dst: int, src: int, n: int, s: Any) -> int: return self._copy(dst, src, n)
  def cuMemcpyDtoDAsync_v2(self, dst: int, src: int, n: int, s: Any) -> int: return self._copy(dst, src, n)

  @staticmethod
  def image_bytes(addr: int) -> bytes:
    """The bytes of a module image at addr: an ELF CUBIN ends with its section header table; PTX ends at its NUL."""
    head = ctypes.string_at(addr, 64)
    if head[:4] != b"\x7fELF": return ctypes.string_at(addr) + b"\0"
    def u(off: int, n: int, base: bytes = head) -> int: return int.from_bytes(base[off:off+n], "little")
    end = max(u(0x28, 8) + u(0x3A, 2) * u(0x3C, 2), u(0x20, 8) + u(0x36, 2) * u(0x38, 2))   # section / program header tables
    for i in range(u(0x3C, 2)):   # and every section's contents
      sh = ctypes.string_at(addr + u(0x28, 8) + i * u(0x3A, 2), 64)
      if u(4, 4, sh) != 8: end = max(end, u(0x18, 8, sh) + u(0x20, 8, sh))   # 8: SHT_NOBITS occupies no file bytes
    for i in range(u(0x38, 2)):
      ph = ctypes.string_at(addr + u(0x20, 8) + i * u(0x36, 2), 56)
      end = max(end, u(0x08, 8, ph) + u(0x20, 8, ph))
    return ctypes.string_at(addr, end)
  def cuModuleLoadDataEx(self, p: Any, image: Any, nopts: int, opts: Any, vals: Any) -> int:
    uops = self.kernels.get(self.image_bytes(_h(image)))
    if uops is None: return CUDA_ERROR_INVALID_IMAGE   # not a binary the NV compilers produced in this process
    h = 0x10000 + len(self.modules)
    self.modules[h] = uops
    return self._set(p, h)
  def cuModuleGetFunction(self, p: Any, module: Any, name: bytes) -> int:
    uops = self.modules.get(_h(module))
    if uops is None: return CUDA_ERROR_INVALID_VALUE
    h = 0x20000 + len(self.funcs)
    self.funcs[h] = MockFunction(name.decode(), uops)
    return self._set(p, h)
  def cuModuleUnload(self, module: Any) -> int:
    self.modules.pop(_h(module), None)
    return 0

  def cuLaunchKernel(self, func: Any, gx: int, gy: int, gz: int, bx: int, by: int, bz: int, shared: int, stream: Any, params: Any, extra: Any) -> int:
    f = self.funcs.get(_h(func))
    if f is None: return CUDA_ERROR_INVALID_VALUE
    a = self.attrs
    if not (1 <= gx <= a[5] and 1 <= gy <= a[6] and 1 <= gz <= a[7] and 1 <= bx <= a[2] and 1 <= by <= a[3] and 1 <= bz <= a[4]): return CUDA_ERROR_INVALID_VALUE
    if bx * by * bz > min(a[1], f.max_threads): return CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES
    # unpack kernelParams: params[i] points at parameter i's value
    bufs = []
    for i, (_, nbytes) in enumerate(f.globals):
      addr = ctypes.c_uint64.from_address(params[i]).value
      bufs.append(memoryview((ctypes.c_uint8 * nbytes).from_address(addr)).cast("B") if nbytes else memoryview(b""))
    vals = tuple(ctypes.c_int32.from_address(params[len(f.globals) + j]).value for j in range(f.nvars))
    f.prg(*bufs, global_size=(gx, gy, gz), local_size=(bx, by, bz), vals=vals)
    self.launches += 1
    return 0

  # the driver's PTX JIT: the mock "CUBIN" is the NUL-terminated PTX itself, which module load then looks up by its bytes
  def cuLinkCreate_v2(self, n: int, opts: Any, vals: Any, p: Any) -> int:
    h = 0x40000 + len(self.links)
    self.links[h] = b""
    return self._set(p, h)
  def cuLinkAddData_v2(self, state: Any, kind: int, data: Any, size: int, name: bytes, n: int, opts: Any, vals: Any) -> int:
    ptx = ctypes.string_at(_h(data), size).rstrip(b"\0")
    if not (ptx.lstrip().startswith(b"//") or ptx.lstrip().startswith(b".version")) or b".entry" not in ptx: return CUDA_ERROR_INVALID_PTX
    self.links[_h(state)] = ptx + b"\0"
    return 0
  def cuLinkComplete(self, state: Any, p: Any, size: Any) -> int:
    img = self.links.get(_h(state))
    if not img: return CUDA_ERROR_INVALID_VALUE
    self._keep = ctypes.create_string_buffer(img, len(img))
    size.contents.value = len(img)
    return self._set(p, ctypes.addressof(self._keep))
  def cuLinkDestroy(self, state: Any) -> int:
    self.links.pop(_h(state), None)
    return 0

  def cuEventCreate(self, p: Any, flags: int) -> int: return self._set(p, 0x3000)
  def cuEventRecord(self, e: Any, s: Any) -> int: return 0
  def cuEventSynchronize(self, e: Any) -> int: return 0
  def cuEventElapsedTime(self, p: Any, a: Any, b: Any) -> int: return self._set(p, 0.001)
  def cuEventDestroy_v2(self, e: Any) -> int: return 0
