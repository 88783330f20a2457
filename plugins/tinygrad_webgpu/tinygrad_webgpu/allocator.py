"""WEBGPU memory: storage buffers (sizes padded to whole u32 words, as WGSL addresses them), pooled by the core's LRUAllocator.

Copies go through the device's pending command encoder, so they stay ordered with the kernels around them: copy-in writes
a staging buffer that is created mapped and copies it into place; copy-out copies into a mappable buffer, submits the
batch and maps it for reading.
"""
from __future__ import annotations
from typing import Any, TYPE_CHECKING
from tinygrad.plugin_api import LRUAllocator, getenv
if TYPE_CHECKING:
  from tinygrad_webgpu.device import WebGPUDevice

def _words(size: int) -> int: return max(4, (size + 3) // 4 * 4)

class WebGPUAllocator(LRUAllocator):
  """GPUBuffers with STORAGE|COPY_SRC|COPY_DST usage; freed buffers are kept for reuse up to WEBGPU_CACHE_BYTES (default 512 MiB)."""
  def __init__(self, dev: WebGPUDevice, name: str):
    super().__init__(name, cache_limit=getenv("WEBGPU_CACHE_BYTES", 512 << 20))
    self.dev = dev
  def _alloc(self, size: int, options: Any) -> Any:
    # a kernel binds whole buffers, so the binding limit caps a buffer as much as the buffer limit does
    wgpu, lim = self.dev.wgpu, self.dev.limits
    limit = min(lim["max-buffer-size"], lim["max-storage-buffer-binding-size"])
    if _words(size) > limit:
      raise MemoryError(f"WEBGPU buffer of {size} bytes is over this adapter's limit of {limit} bytes "
                        f"(max-buffer-size {lim['max-buffer-size']}, max-storage-buffer-binding-size {lim['max-storage-buffer-binding-size']})")
    return self.dev.gpu.create_buffer(size=_words(size), usage=wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_SRC | wgpu.BufferUsage.COPY_DST)
  def _free(self, opaque: Any, size: int, options: Any) -> None: pass   # wgpu keeps it alive while queued commands use it
  def copyin(self, dest: Any, src: memoryview) -> None:
    wgpu, n = self.dev.wgpu, _words(src.nbytes)
    staging = self.dev.gpu.create_buffer(size=n, usage=wgpu.BufferUsage.MAP_WRITE | wgpu.BufferUsage.COPY_SRC, mapped_at_creation=True)
    staging.write_mapped(bytes(src) + bytes(n - src.nbytes) if n != src.nbytes else src)
    staging.unmap()
    self.dev.encoder().copy_buffer_to_buffer(staging, 0, dest, 0, n)
    self.dev.keep(staging)
  def copyout(self, dest: memoryview, src: Any) -> None:
    wgpu, n = self.dev.wgpu, _words(dest.nbytes)
    staging = self.dev.gpu.create_buffer(size=n, usage=wgpu.BufferUsage.MAP_READ | wgpu.BufferUsage.COPY_DST)
    self.dev.encoder().copy_buffer_to_buffer(src, 0, staging, 0, n)
    self.dev.flush()
    staging.map_sync(wgpu.MapMode.READ)
    try: dest[:] = staging.read_mapped(0, n, copy=False).cast("B")[:dest.nbytes]
    finally: staging.unmap()
