"""CPU memory: 64-byte aligned host buffers with zero-copy views, pooled by the core's LRUAllocator."""
from __future__ import annotations
import ctypes
from typing import Any
from tinygrad.plugin_api import LRUAllocator, getenv

ALIGN = 64   # a cache line, and the widest vector load (AVX-512)

class CPUBuffer:
  """A host allocation: `addr` is what kernels receive; `mem` keeps the memory alive."""
  __slots__ = ("mem", "addr", "size")
  def __init__(self, size: int):
    self.mem = (ctypes.c_uint8 * (size + ALIGN))()   # raises MemoryError when the host is out of memory
    base = ctypes.addressof(self.mem)
    self.addr, self.size = (base + ALIGN - 1) // ALIGN * ALIGN, size
  def view(self) -> memoryview: return memoryview((ctypes.c_uint8 * self.size).from_address(self.addr)).cast("B")
  def __repr__(self) -> str: return f"<CPUBuffer {self.size} bytes at {self.addr:#x}>"

class CPUAllocator(LRUAllocator):
  """Aligned host memory; freed buffers are kept for reuse up to CPU_CACHE_BYTES (default 1 GiB)."""
  def __init__(self, device: str = "CPU"):
    super().__init__(device, cache_limit=getenv("CPU_CACHE_BYTES", 1 << 30))
  def _alloc(self, size: int, options: Any) -> CPUBuffer: return CPUBuffer(size)
  def _free(self, opaque: CPUBuffer, size: int, options: Any) -> None: pass   # ctypes frees `mem` with its last reference
  def _as_buffer(self, opaque: CPUBuffer) -> memoryview: return opaque.view()
  def copyin(self, dest: CPUBuffer, src: memoryview) -> None: dest.view()[:] = src     # memoryview slice assignment is a memcpy
  def copyout(self, dest: memoryview, src: CPUBuffer) -> None: dest[:] = src.view()
