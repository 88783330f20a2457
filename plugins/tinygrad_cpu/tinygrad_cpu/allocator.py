"""CPU memory: 64-byte aligned host buffers with zero-copy views, pooled by the core's LRUAllocator. A buffer of 2 MiB or
more is its own anonymous mapping, 2 MiB aligned and advised MADV_HUGEPAGE: with transparent huge pages in `madvise` mode
(a common default) 4 KiB pages cost a streaming kernel a third of its bandwidth in TLB misses: Tensor.sum of 64 MB took
5.7 ms of CPU on one core of an AMD EPYC where numpy, whose big arrays get huge pages the same way, took 3.1 (now 3.5)."""
from __future__ import annotations
import ctypes, mmap
from typing import Any
from tinygrad.plugin_api import LRUAllocator, getenv

ALIGN = 64   # a cache line, and the widest vector load (AVX-512)
HUGE = 2 << 20   # bytes: a huge page, and the size from which a buffer is mapped on its own and advised to use them
CPU_HUGEPAGES: int = getenv("CPU_HUGEPAGES", 1) and hasattr(mmap, "MADV_HUGEPAGE")   # 1: CPU buffers of 2 MiB or more are advised to use huge pages (where the OS has MADV_HUGEPAGE); 0: all from malloc

def _mapped(size: int) -> tuple[Any, int]:
  """An anonymous mapping holding `size` bytes from a HUGE-aligned address, its whole huge pages advised to use them
  (the mapping is zero-filled on first touch, as the ctypes array is)."""
  try: m = mmap.mmap(-1, size + HUGE, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)   # private: a shared mapping gets no THP
  except OSError as e: raise MemoryError(f"cannot map {size} bytes: {e}") from e   # the allocator frees its cache and retries
  base = ctypes.addressof(ctypes.c_char.from_buffer(m))   # the temporary export ends with this expression
  start = -base % HUGE
  # only the whole huge pages: a tail advised too would take a huge page of physical memory for what is left of the size
  try: m.madvise(mmap.MADV_HUGEPAGE, start, size // HUGE * HUGE)
  except OSError: pass   # a kernel built without transparent huge pages: 4 KiB pages, still correct
  return m, base + start

class CPUBuffer:
  """A host allocation: `addr` is what kernels receive; `mem` keeps the memory alive."""
  __slots__ = ("mem", "addr", "size")
  def __init__(self, size: int):
    if CPU_HUGEPAGES and size >= HUGE:
      self.mem, self.addr = _mapped(size)
    else:
      self.mem = (ctypes.c_uint8 * (size + ALIGN))()   # raises MemoryError when the host is out of memory
      self.addr = (ctypes.addressof(self.mem) + ALIGN - 1) // ALIGN * ALIGN
    self.size = size
  @staticmethod
  def at(of: CPUBuffer, offset: int, size: int) -> CPUBuffer:
    """The `size` bytes at `offset` of `of` (its memory kept alive by this one too)."""
    out = CPUBuffer.__new__(CPUBuffer)
    out.mem, out.addr, out.size = of.mem, of.addr + offset, size
    return out
  def view(self) -> memoryview: return memoryview((ctypes.c_uint8 * self.size).from_address(self.addr)).cast("B")
  def __repr__(self) -> str: return f"<CPUBuffer {self.size} bytes at {self.addr:#x}>"

class CPUAllocator(LRUAllocator):
  """Aligned host memory; freed buffers are kept for reuse up to CPU_CACHE_BYTES (default 1 GiB)."""
  def __init__(self, device: str = "CPU"):
    super().__init__(device, cache_limit=getenv("CPU_CACHE_BYTES", 1 << 30))
  def _alloc(self, size: int, options: Any) -> CPUBuffer: return CPUBuffer(size)
  def _free(self, opaque: CPUBuffer, size: int, options: Any) -> None: pass   # `mem` is freed (unmapped) with its last reference
  def _as_buffer(self, opaque: CPUBuffer) -> memoryview: return opaque.view()
  def _offset(self, opaque: CPUBuffer, size: int, offset: int) -> CPUBuffer: return CPUBuffer.at(opaque, offset, size)
  def copyin(self, dest: CPUBuffer, src: memoryview) -> None: dest.view()[:] = src     # memoryview slice assignment is a memcpy
  def copyout(self, dest: memoryview, src: CPUBuffer) -> None: dest[:] = src.view()
