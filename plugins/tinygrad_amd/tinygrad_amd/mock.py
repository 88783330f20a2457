"""The mock HIP runtime (AMD_MOCK=1): the HIP runtime API's functions, as runtime.py calls them, on host memory.

What it models: device memory is host memory (a device pointer is a real host address, so copies are memmove and a
kernel reads its arguments' bytes in place); a stream runs work at once; launch checks the grid/block limits the real
runtime enforces (and the kernel's own flat workgroup bound) and returns the same error codes; out-of-memory past
AMD_MOCK_MEM bytes (default 1 GiB) returns hipErrorOutOfMemory.
How a kernel runs: an HSACO cannot run here, so module load looks the code object up in `kernels` (binary -> the
linearized uops it was rendered from, filled by the AMD compilers' compile_cached while the mock is active) and a launch
runs those uops with the core's PYTHON interpreter, over the launch's grid and block, reading the arguments out of the
packed kernarg buffer passed through `extra`, exactly as the real runtime would.
Device identity: AMD_MOCK_ARCH (default gfx90a, wave64) and MI210-like limits; AMD_MOCK_COUNT devices (default 2).
"""
from __future__ import annotations
import ctypes, os, struct
from typing import Any
from tinygrad.plugin_api import Ops, UOp, PtrDType, prod
from tinygrad_amd.runtime import ATTR, HIP_ERROR_OUT_OF_MEMORY, HIP_LAUNCH_PARAM_BUFFER_POINTER, HIP_LAUNCH_PARAM_BUFFER_SIZE

HIP_ERROR_INVALID_VALUE, HIP_ERROR_INVALID_IMAGE, HIP_ERROR_NOT_FOUND, HIP_ERROR_LAUNCH_OUT_OF_RESOURCES = 1, 200, 500, 701
_NAMES = {0: "hipSuccess", 1: "hipErrorInvalidValue", 2: "hipErrorOutOfMemory", 200: "hipErrorInvalidImage",
          500: "hipErrorNotFound", 701: "hipErrorLaunchOutOfResources"}

class MockFunction:
  def __init__(self, name: str, uops: list[UOp]):
    from tinygrad.runtime.python import PythonProgram, serialize
    self.name, self.prg = name, PythonProgram(name, serialize(uops).encode())
    self.globals = [(u.arg, u.dtype.size * u.dtype.base.itemsize) for u in uops if u.op is Ops.DEFINE_GLOBAL and isinstance(u.dtype, PtrDType)]
    self.nvars = sum(1 for u in uops if u.op is Ops.DEFINE_VAR)
    self.max_threads = prod(u.src[0].arg for u in uops if u.op is Ops.SPECIAL and u.arg[0] == "l")   # amdgpu_flat_work_group_size

def elf_size(addr: int) -> int:
  """Bytes of the ELF image at addr: up to the end of its header tables and every section's and segment's contents."""
  head = ctypes.string_at(addr, 64)
  def u(off: int, n: int, base: bytes = head) -> int: return int.from_bytes(base[off:off+n], "little")
  end = max(u(0x28, 8) + u(0x3A, 2) * u(0x3C, 2), u(0x20, 8) + u(0x36, 2) * u(0x38, 2))
  for i in range(u(0x3C, 2)):
    sh = ctypes.string_at(addr + u(0x28, 8) + i * u(0x3A, 2), 64)
    if u(4, 4, sh) != 8: end = max(end, u(0x18, 8, sh) + u(0x20, 8, sh))   # 8: SHT_NOBITS occupies no file bytes
  for i in range(u(0x38, 2)):
    ph = ctypes.string_at(addr + u(0x20, 8) + i * u(0x36, 2), 56)
    end = max(end, u(0x08, 8, ph) + u(0x20, 8, ph))
  return end

class MockHIP:
  """Implements HIP_PROTOS' functions by name; pointer arguments are ctypes pointer objects, as runtime.py passes them."""
  mock = True
  def __init__(self, kernels: dict[bytes, list[UOp]], arch: str | None = None, mem: int | None = None):
    self.kernels = kernels
    self.arch = arch or os.environ.get("AMD_MOCK_ARCH", "gfx90a")
    self.mem_total = mem or int(os.environ.get("AMD_MOCK_MEM", 1 << 30))
    self.allocs: dict[int, Any] = {}
    self.modules: dict[int, list[UOp]] = {}
    self.funcs: dict[int, MockFunction] = {}
    self.launches = 0
    self.attrs = {ATTR["max_threads_per_block"]: 1024, ATTR["max_block_x"]: 1024, ATTR["max_block_y"]: 1024, ATTR["max_block_z"]: 1024,
                  ATTR["max_grid_x"]: 2**31-1, ATTR["max_grid_y"]: 65535, ATTR["max_grid_z"]: 65535, ATTR["max_shared_per_block"]: 65536,
                  ATTR["warp_size"]: 32 if self.arch.startswith("gfx1") else 64}
  def error_string(self, code: int) -> str: return f"{_NAMES.get(code, f'hipError{code}')} (mock driver)"
  @staticmethod
  def _set(p: Any, v: Any) -> int:
    p.contents.value = v
    return 0
  @staticmethod
  def _h(x: Any) -> int: return int((x.value if isinstance(x, ctypes.c_void_p) else x) or 0)

  def hipInit(self, flags: int) -> int: return 0
  def hipRuntimeGetVersion(self, p: Any) -> int: return self._set(p, 60300000)
  def hipGetDeviceCount(self, p: Any) -> int: return self._set(p, int(os.environ.get("AMD_MOCK_COUNT", 2)))
  def hipSetDevice(self, i: int) -> int: return 0
  def hipGetDeviceProperties(self, buf: Any, index: int) -> int:
    # the name first, the target further on (runtime.device_arch finds it by pattern, as in the real struct)
    ctypes.memmove(buf, f"Mock AMD GPU {self.arch}".encode() + b"\0", len(f"Mock AMD GPU {self.arch}") + 1)
    ctypes.memmove(ctypes.addressof(buf) + 1160, f"{self.arch}:sramecc+:xnack-".encode() + b"\0", len(self.arch) + 18)
    return 0
  def hipDeviceGetAttribute(self, p: Any, attr: int, dev: int) -> int: return self._set(p, self.attrs.get(attr, 0))
  def hipDeviceSynchronize(self) -> int: return 0
  def hipStreamCreateWithFlags(self, p: Any, flags: int) -> int: return self._set(p, 0x2000)
  def hipStreamSynchronize(self, s: Any) -> int: return 0

  def hipMalloc(self, p: Any, size: int) -> int:
    if sum(ctypes.sizeof(a) for a in self.allocs.values()) + size > self.mem_total: return HIP_ERROR_OUT_OF_MEMORY
    buf = (ctypes.c_uint8 * size)()
    self.allocs[ctypes.addressof(buf)] = buf
    return self._set(p, ctypes.addressof(buf))
  def hipFree(self, ptr: int) -> int: return 0 if self.allocs.pop(int(ptr), None) is not None else HIP_ERROR_INVALID_VALUE
  def hipMemGetInfo(self, free: Any, total: Any) -> int:
    self._set(total, self.mem_total)
    return self._set(free, self.mem_total - sum(ctypes.sizeof(a) for a in self.allocs.values()))
  def hipMemcpyAsync(self, dst: int, src: int, n: int, kind: int, stream: Any) -> int:
    if kind not in (1, 2, 3): return HIP_ERROR_INVALID_VALUE
    ctypes.memmove(dst, src, n)
    return 0

  def hipModuleLoadData(self, p: Any, image: Any) -> int:
    addr = self._h(image)
    if ctypes.string_at(addr, 4) != b"\x7fELF": return HIP_ERROR_INVALID_IMAGE
    uops = self.kernels.get(ctypes.string_at(addr, elf_size(addr)))
    if uops is None: return HIP_ERROR_INVALID_IMAGE   # not a code object the AMD compilers produced in this process
    h = 0x10000 + len(self.modules)
    self.modules[h] = uops
    return self._set(p, h)
  def hipModuleGetFunction(self, p: Any, module: Any, name: bytes) -> int:
    uops = self.modules.get(self._h(module))
    if uops is None: return HIP_ERROR_INVALID_VALUE
    h = 0x20000 + len(self.funcs)
    self.funcs[h] = MockFunction(name.decode(), uops)
    return self._set(p, h)
  def hipModuleUnload(self, module: Any) -> int:
    self.modules.pop(self._h(module), None)
    return 0

  def hipModuleLaunchKernel(self, func: Any, gx: int, gy: int, gz: int, bx: int, by: int, bz: int, shared: int, stream: Any,
                            params: Any, extra: Any) -> int:
    f = self.funcs.get(self._h(func))
    if f is None or extra is None: return HIP_ERROR_INVALID_VALUE
    a = self.attrs
    grid_ok = all(1 <= g <= a[ATTR[f"max_grid_{c}"]] for g, c in zip((gx, gy, gz), "xyz"))
    if not grid_ok or not all(1 <= b <= a[ATTR[f"max_block_{c}"]] for b, c in zip((bx, by, bz), "xyz")): return HIP_ERROR_INVALID_VALUE
    if bx * by * bz > min(a[ATTR["max_threads_per_block"]], f.max_threads): return HIP_ERROR_LAUNCH_OUT_OF_RESOURCES
    # extra: [BUFFER_POINTER, &kernargs, BUFFER_SIZE, &size, END]
    if extra[0] != HIP_LAUNCH_PARAM_BUFFER_POINTER or extra[2] != HIP_LAUNCH_PARAM_BUFFER_SIZE: return HIP_ERROR_INVALID_VALUE
    size = ctypes.c_size_t.from_address(extra[3]).value
    if size < 8 * len(f.globals) + 4 * f.nvars: return HIP_ERROR_INVALID_VALUE
    kernargs = ctypes.string_at(extra[1], size)
    addrs = struct.unpack_from(f"<{len(f.globals)}Q", kernargs)
    vals = struct.unpack_from(f"<{f.nvars}i", kernargs, 8 * len(f.globals))
    bufs = [memoryview((ctypes.c_uint8 * nbytes).from_address(ad)).cast("B") if nbytes else memoryview(b"")
            for ad, (_, nbytes) in zip(addrs, f.globals)]
    f.prg(*bufs, global_size=(gx, gy, gz), local_size=(bx, by, bz), vals=vals)
    self.launches += 1
    return 0

  def hipEventCreate(self, p: Any) -> int: return self._set(p, 0x3000)
  def hipEventRecord(self, e: Any, s: Any) -> int: return 0
  def hipEventSynchronize(self, e: Any) -> int: return 0
  def hipEventElapsedTime(self, p: Any, a: Any, b: Any) -> int: return self._set(p, 0.001)
  def hipEventDestroy(self, e: Any) -> int: return 0
