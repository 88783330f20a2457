"""NV memory: buffers sub-allocated from cuMemAlloc'd arenas by the core's MemoryManager (TLSF + LRU + OOM retry)."""
from __future__ import annotations
import ctypes
from typing import Any
from tinygrad.plugin_api import getenv, MemoryManager, SubBuffer
from tinygrad_nv.runtime import check, _host_addr

class NVAllocator(MemoryManager):
  """Arenas of NV_ARENA bytes (default 64 MiB) from cuMemAlloc_v2, 256-byte aligned sub-buffers (cudaMalloc's alignment, and
  enough for any vector load); copies are async on the device's stream, copyout waits for its data."""
  def __init__(self, dev: Any):
    super().__init__(dev.device, arena_size=getenv("NV_ARENA", 64 << 20), align=256, cache_limit=getenv("NV_CACHE_BYTES", 1 << 30))
    self.dev = dev
  def _arena_alloc(self, size: int) -> tuple[Any, int]:
    self.dev.make_current()
    ptr = ctypes.c_uint64()
    check(self.dev.cu, self.dev.cu.cuMemAlloc_v2(ctypes.pointer(ptr), size), f"cuMemAlloc({size}) on {self.dev.device}")
    return ptr.value, ptr.value
  def _arena_free(self, handle: int) -> None: check(self.dev.cu, self.dev.cu.cuMemFree_v2(handle), "cuMemFree")
  def copyin(self, dest: SubBuffer, src: memoryview) -> None:
    addr, keep = _host_addr(src)
    # from pageable memory the call returns once the bytes are staged, so `keep` may go right after it
    check(self.dev.cu, self.dev.cu.cuMemcpyHtoDAsync_v2(dest.addr, addr, src.nbytes, self.dev.stream), "cuMemcpyHtoDAsync")
  def copyout(self, dest: memoryview, src: SubBuffer) -> None:
    addr, keep = _host_addr(dest)
    if keep._objects is None and dest.readonly: raise ValueError("copyout into a read-only buffer")
    check(self.dev.cu, self.dev.cu.cuMemcpyDtoHAsync_v2(addr, src.addr, dest.nbytes, self.dev.stream), "cuMemcpyDtoHAsync")
    self.dev.synchronize()
  def _transfer(self, dest: SubBuffer, src: SubBuffer, nbytes: int, src_dev: Any = None, dest_dev: Any = None) -> None:
    check(self.dev.cu, self.dev.cu.cuMemcpyDtoDAsync_v2(dest.addr, src.addr, nbytes, self.dev.stream), "cuMemcpyDtoDAsync")
