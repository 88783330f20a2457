"""Host memory from the C library's malloc and free, pooled for reuse by the core's LRUAllocator."""
import ctypes
from tinygrad.plugin_api import LRUAllocator

_libc = ctypes.CDLL(None)
_libc.malloc.restype, _libc.malloc.argtypes = ctypes.c_void_p, [ctypes.c_size_t]
_libc.free.restype, _libc.free.argtypes = None, [ctypes.c_void_p]

class OMPAllocator(LRUAllocator):
  def _alloc(self, size, options):
    addr = _libc.malloc(max(size, 1))
    if not addr: raise MemoryError(f"malloc of {size} bytes failed")
    return (ctypes.c_uint8 * size).from_address(addr)
  def _free(self, opaque, size, options) -> None: _libc.free(ctypes.addressof(opaque))
  def _as_buffer(self, opaque) -> memoryview: return memoryview(opaque).cast("B")
  def copyin(self, dest, src: memoryview) -> None: memoryview(dest).cast("B")[:] = src
  def copyout(self, dest: memoryview, src) -> None: dest[:] = memoryview(src).cast("B")
