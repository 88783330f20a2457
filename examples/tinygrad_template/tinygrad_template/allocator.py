"""Host memory: ctypes byte arrays, pooled for reuse by the core's LRUAllocator."""
import ctypes
from tinygrad.plugin_api import LRUAllocator

class TemplateAllocator(LRUAllocator):
  def _alloc(self, size, options):
    return (ctypes.c_uint8 * size)()   # zeroed; raises MemoryError when the host is out of memory
  def _as_buffer(self, opaque) -> memoryview: return memoryview(opaque).cast("B")
  def copyin(self, dest, src: memoryview) -> None: memoryview(dest).cast("B")[:] = src
  def copyout(self, dest: memoryview, src) -> None: dest[:] = memoryview(src).cast("B")
