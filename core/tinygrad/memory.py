"""Device memory pooling: a TLSF-style sub-allocator over one address range, and the MemoryManager base that carves
kernels' buffers out of large device arenas with it (plus the LRU reuse and out-of-memory retry of LRUAllocator).

TLSF (two-level segregated fit): free blocks sit in size classes; the first level is the power of two of the size, the
second splits each power of two into 2**SL_BITS linear steps. Allocation rounds the request up to the next class
boundary, so any block of the first non-empty class at or above it fits: O(1), bounded waste, no list walks. Here the two
bitmaps of the classic design are one Python int (bit = class), so "first non-empty class >= c" is one lowest-set-bit
operation. Freeing merges the block with free physical neighbours at once (immediate coalescing).
"""
from __future__ import annotations
from dataclasses import dataclass
from typing import Any
from tinygrad.device import LRUAllocator

SL_BITS = 4                 # second-level classes per power of two: worst-case internal waste of a class is 1/16
_SL = 1 << SL_BITS

def _cls(n: int) -> int:
  """Size class of n units (classes are monotonic in n; sizes below 2**SL_BITS have a class each)."""
  if n < _SL: return n
  fl = n.bit_length() - 1
  return (fl - SL_BITS + 1) * _SL + ((n >> (fl - SL_BITS)) - _SL)

def _cls_up(n: int) -> int:
  """The lowest class all of whose blocks hold at least n units."""
  if n < _SL: return n
  fl = n.bit_length() - 1
  step = 1 << (fl - SL_BITS)
  return _cls((n + step - 1) // step * step)

class TLSFAllocator:
  """Offsets into a range of `size` bytes; every block starts and ends on a multiple of `granule` bytes.

  `alloc(nbytes, align)` returns an offset (a multiple of `align`, which must be a multiple of granule) or None when no
  free block fits; `free(offset)` returns the block and merges it with free neighbours.
  """
  def __init__(self, size: int, granule: int = 256):
    if granule <= 0 or granule & (granule - 1): raise ValueError(f"granule must be a power of two, got {granule}")
    self.granule, self.units = granule, size // granule
    self.size = self.units * granule
    self.blocks: dict[int, int] = {}        # start unit -> length in units, every block (free or used)
    self.ends: dict[int, int] = {}          # end unit -> start unit, to find the physical predecessor
    self.free_lists: dict[int, dict[int, None]] = {}   # class -> free block starts (insertion-ordered set)
    self.bitmap = 0                         # bit c set <=> free_lists[c] is non-empty
    self.free_of: dict[int, int] = {}       # free block start -> its class
    self.used_units = 0
    if self.units: self._add_block(0, self.units, free=True)

  # ---- block bookkeeping ----
  def _add_block(self, start: int, n: int, free: bool) -> None:
    self.blocks[start], self.ends[start + n] = n, start
    if free: self._push_free(start, n)
  def _drop_block(self, start: int) -> int:
    n = self.blocks.pop(start)
    del self.ends[start + n]
    if start in self.free_of: self._pop_free(start)
    return n
  def _push_free(self, start: int, n: int) -> None:
    c = _cls(n)
    self.free_lists.setdefault(c, {})[start] = None
    self.free_of[start] = c
    self.bitmap |= 1 << c
  def _pop_free(self, start: int) -> None:
    c = self.free_of.pop(start)
    lst = self.free_lists[c]
    del lst[start]
    if not lst: self.bitmap &= ~(1 << c)

  # ---- the API ----
  def alloc(self, nbytes: int, align: int | None = None) -> int | None:
    """Offset in bytes of a new block of at least nbytes aligned to `align` (default: granule), or None if nothing fits."""
    align = align or self.granule
    if align % self.granule: raise ValueError(f"alignment {align} is not a multiple of the granule {self.granule}")
    n = max(1, -(-nbytes // self.granule))
    au = align // self.granule
    want = n + au - 1                          # room to slide the start to an aligned unit
    avail = self.bitmap >> _cls_up(want) << _cls_up(want)
    if avail: start = next(iter(self.free_lists[(avail & -avail).bit_length() - 1]))
    else:   # the good-fit classes are empty: a block of want's own class may still be big enough (an exact-size arena)
      start = next((s for s in self.free_lists.get(_cls(want), {}) if self.blocks[s] >= want), -1)
      if start < 0: return None
    blen = self._drop_block(start)
    pad = -start % au
    if pad: self._add_block(start, pad, free=True)           # the unaligned head stays free
    if blen - pad > n: self._add_block(start + pad + n, blen - pad - n, free=True)   # the tail too
    self._add_block(start + pad, n, free=False)
    self.used_units += n
    return (start + pad) * self.granule

  def free(self, offset: int) -> None:
    """Return the block at `offset` (from alloc) and merge it with its free neighbours."""
    start = offset // self.granule
    if offset % self.granule or start not in self.blocks or start in self.free_of:
      raise ValueError(f"free of offset {offset}, which is not an allocated block")
    n = self._drop_block(start)
    self.used_units -= n
    if (nxt := start + n) in self.free_of: n += self._drop_block(nxt)
    if start in self.ends and (prv := self.ends[start]) in self.free_of:
      n += self._drop_block(prv)
      start = prv
    self._add_block(start, n, free=True)

  # ---- figures ----
  @property
  def used_bytes(self) -> int: return self.used_units * self.granule
  @property
  def free_bytes(self) -> int: return self.size - self.used_bytes
  @property
  def largest_free(self) -> int: return max((self.blocks[s] for s in self.free_of), default=0) * self.granule
  def fragmentation(self) -> float:
    """1 - largest free block / all free bytes: 0 when the free space is one block, near 1 when it is scattered."""
    free = self.free_bytes
    return 0.0 if free == 0 else 1.0 - self.largest_free / free
  def empty(self) -> bool: return self.used_units == 0
  def __repr__(self) -> str:
    return f"<TLSF {self.used_bytes}/{self.size} bytes used, {len(self.free_of)} free blocks, frag {self.fragmentation():.2f}>"

@dataclass(eq=False)
class Arena:
  """One large device allocation: `handle` is the device's own, `base` its address; `tlsf` hands out its bytes."""
  handle: Any
  base: int
  size: int
  tlsf: TLSFAllocator

@dataclass(eq=False)
class SubBuffer:
  """A buffer carved from an arena: `addr` is the device address kernels receive."""
  arena: Arena
  offset: int
  size: int
  @property
  def addr(self) -> int: return self.arena.base + self.offset
  def __repr__(self) -> str: return f"<SubBuffer {self.size} bytes at {self.addr:#x}>"

class MemoryManager(LRUAllocator):
  """Device buffers sub-allocated from arenas of `arena_size` bytes (a request too big for one gets an arena of its own).

  A device implements `_arena_alloc(size) -> (handle, base address)` (raising MemoryError when the device is full) and
  `_arena_free(handle)`, plus copyin/copyout on SubBuffers. Freed buffers go to the LRU cache first (reused by size);
  on MemoryError the cache is freed, empty arenas are released, and the allocation is retried once.
  """
  def __init__(self, device: str = "", arena_size: int = 64 << 20, align: int = 256, cache_limit: int = 1 << 30):
    super().__init__(device, cache_limit=cache_limit)
    self.arena_size, self.align = arena_size, align
    self.arenas: list[Arena] = []
  def _arena_alloc(self, size: int) -> tuple[Any, int]: raise NotImplementedError(f"{type(self).__name__} does not implement _arena_alloc")
  def _arena_free(self, handle: Any) -> None: raise NotImplementedError(f"{type(self).__name__} does not implement _arena_free")

  def _alloc(self, size: int, options: Any) -> SubBuffer:
    for a in self.arenas:
      if (off := a.tlsf.alloc(size, self.align)) is not None: return SubBuffer(a, off, size)
    asize = max(self.arena_size, -(-size // self.align) * self.align)
    handle, base = self._arena_alloc(asize)
    arena = Arena(handle, base, asize, TLSFAllocator(asize, self.align))
    self.arenas.append(arena)
    off = arena.tlsf.alloc(size, self.align)
    assert off is not None, "a fresh arena always fits its first request"
    return SubBuffer(arena, off, size)
  def _free(self, opaque: SubBuffer, size: int, options: Any) -> None:
    opaque.arena.tlsf.free(opaque.offset)
    # a dedicated (oversized) arena goes back to the device as soon as it is empty; regular ones stay for reuse
    if opaque.arena.size > self.arena_size and opaque.arena.tlsf.empty(): self._release(opaque.arena)
  def _release(self, arena: Arena) -> None:
    self.arenas.remove(arena)
    self._arena_free(arena.handle)
  def free_cache(self) -> None:
    """Free cached buffers, then give every empty arena back to the device."""
    super().free_cache()
    for a in [a for a in self.arenas if a.tlsf.empty()]: self._release(a)
  def stats(self) -> dict[str, Any]:
    """Arena count, bytes reserved from the device, bytes in use (including cached buffers) and worst fragmentation."""
    return {"arenas": len(self.arenas), "reserved": sum(a.size for a in self.arenas), "used": sum(a.tlsf.used_bytes for a in self.arenas),
            "cached": self.cache_bytes, "fragmentation": max((a.tlsf.fragmentation() for a in self.arenas), default=0.0)}
