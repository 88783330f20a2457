"""AMD memory: buffers sub-allocated from hipMalloc'd arenas by the core's MemoryManager (TLSF + LRU + OOM retry)."""
from __future__ import annotations
import ctypes
from typing import Any
from tinygrad.plugin_api import getenv, MemoryManager, SubBuffer
from tinygrad_amd.runtime import HIP_MEMCPY_D2D, HIP_MEMCPY_D2H, HIP_MEMCPY_H2D, check, _host_addr

class AMDAllocator(MemoryManager):
  """Arenas of AMD_ARENA bytes (default 64 MiB) from hipMalloc, 256-byte aligned sub-buffers (hipMalloc's alignment, and
  enough for any vector load); copies run on the device's stream and wait for it: HIP may still read a pageable host
  buffer after hipMemcpyAsync returns, so copyin waits before the caller may reuse its memory."""
  def __init__(self, dev: Any):
    super().__init__(dev.device, arena_size=getenv("AMD_ARENA", 64 << 20), align=256, cache_limit=getenv("AMD_CACHE_BYTES", 1 << 30))
    self.dev = dev
  def _arena_alloc(self, size: int) -> tuple[Any, int]:
    self.dev.make_current()
    ptr = ctypes.c_uint64()
    check(self.dev.hip, self.dev.hip.hipMalloc(ctypes.pointer(ptr), size), f"hipMalloc({size}) on {self.dev.device}")
    return ptr.value, ptr.value
  def _arena_free(self, handle: int) -> None: check(self.dev.hip, self.dev.hip.hipFree(handle), "hipFree")
  def _copy(self, dst: int, src: int, nbytes: int, kind: int, what: str) -> None:
    self.dev.make_current()
    check(self.dev.hip, self.dev.hip.hipMemcpyAsync(dst, src, nbytes, kind, self.dev.stream), what)
    self.dev.synchronize()
  def copyin(self, dest: SubBuffer, src: memoryview) -> None:
    addr, keep = _host_addr(src)
    self._copy(dest.addr, addr, src.nbytes, HIP_MEMCPY_H2D, "hipMemcpyAsync(host to device)")
  def copyout(self, dest: memoryview, src: SubBuffer) -> None:
    addr, keep = _host_addr(dest)
    if keep._objects is None and dest.readonly: raise ValueError("copyout into a read-only buffer")
    self._copy(addr, src.addr, dest.nbytes, HIP_MEMCPY_D2H, "hipMemcpyAsync(device to host)")
  def _transfer(self, dest: SubBuffer, src: SubBuffer, nbytes: int, src_dev: Any = None, dest_dev: Any = None) -> None:
    check(self.dev.hip, self.dev.hip.hipMemcpyAsync(dest.addr, src.addr, nbytes, HIP_MEMCPY_D2D, self.dev.stream), "hipMemcpyAsync(device to device)")
