"""METAL memory: MTLBuffers in shared storage (one memory for CPU and GPU on Apple silicon), pooled by the core's LRUAllocator."""
from __future__ import annotations
from typing import Any, TYPE_CHECKING
from tinygrad.plugin_api import LRUAllocator, getenv
if TYPE_CHECKING:
  from tinygrad_metal.device import MetalDevice

class MetalBuffer:
  """A kernel argument: an MTLBuffer and the byte offset where this buffer starts in it."""
  __slots__ = ("buf", "size", "offset")
  def __init__(self, buf: Any, size: int, offset: int = 0): self.buf, self.size, self.offset = buf, size, offset
  def __repr__(self) -> str: return f"<MetalBuffer {self.size} bytes at +{self.offset}>"

class MetalAllocator(LRUAllocator):
  """Shared-storage MTLBuffers; freed ones are kept for reuse up to METAL_CACHE_BYTES (default 1 GiB). Host access waits for
  the GPU first (synchronize), so copies never race a kernel still in flight."""
  def __init__(self, dev: MetalDevice):
    super().__init__("", cache_limit=getenv("METAL_CACHE_BYTES", 1 << 30))
    self.dev = dev
  def _alloc(self, size: int, options: Any) -> MetalBuffer:
    # Metal refuses zero-length buffers: allocate one byte so empty tensors still have a handle
    buf = self.dev.mtl.newBufferWithLength_options_(max(size, 1), self.dev.api.MTLResourceStorageModeShared)
    if buf is None: raise MemoryError(f"Metal could not allocate {size} bytes")
    return MetalBuffer(buf, size)
  def _free(self, opaque: MetalBuffer, size: int, options: Any) -> None: pass   # PyObjC releases the MTLBuffer with its last reference
  def _as_buffer(self, opaque: MetalBuffer) -> memoryview:
    self.dev.synchronize()
    mv = memoryview(opaque.buf.contents().as_buffer(opaque.offset + opaque.size)).cast("B")
    return mv[opaque.offset:opaque.offset + opaque.size]
  def copyin(self, dest: MetalBuffer, src: memoryview) -> None: self._as_buffer(dest)[:] = src
  def copyout(self, dest: memoryview, src: MetalBuffer) -> None: dest[:] = self._as_buffer(src)
