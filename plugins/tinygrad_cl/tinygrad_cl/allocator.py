"""CL memory: cl.Buffers on the device's context, pooled by the core's LRUAllocator. Copies are blocking enqueues on the
device's in-order queue, so they are ordered after the kernels queued before them and the host memory is free on return."""
from __future__ import annotations
from typing import Any, TYPE_CHECKING
from tinygrad.plugin_api import LRUAllocator, getenv
if TYPE_CHECKING:
  from tinygrad_cl.device import CLDevice

class CLAllocator(LRUAllocator):
  """Zero-filled READ_WRITE buffers; freed ones are kept for reuse up to CL_CACHE_BYTES (default 1 GiB)."""
  def __init__(self, dev: CLDevice):
    super().__init__("", cache_limit=getenv("CL_CACHE_BYTES", 1 << 30))   # bytes of freed CL buffers kept for reuse
    self.dev = dev
  def _alloc(self, size: int, options: Any) -> Any:
    cl, d = self.dev.cl, self.dev.cl_dev
    if size > d.max_mem_alloc_size:
      raise MemoryError(f"CL buffer of {size} bytes is over {d.name}'s CL_DEVICE_MAX_MEM_ALLOC_SIZE of {d.max_mem_alloc_size} bytes")
    # OpenCL refuses zero-size buffers: one byte keeps a handle for empty tensors
    try: buf = cl.Buffer(self.dev.ctx, cl.mem_flags.READ_WRITE, max(size, 1))
    except cl.MemoryError as e: raise MemoryError(f"CL could not allocate {size} bytes on {d.name}: {e}") from e
    if size: cl.enqueue_fill_buffer(self.dev.queue, buf, self.dev.np.uint8(0), 0, size)
    return buf
  def _free(self, opaque: Any, size: int, options: Any) -> None: opaque.release()
  def copyin(self, dest: Any, src: memoryview) -> None:
    if src.nbytes: self.dev.cl.enqueue_copy(self.dev.queue, dest, src, is_blocking=True)
  def copyout(self, dest: memoryview, src: Any) -> None:
    if dest.nbytes: self.dev.cl.enqueue_copy(self.dev.queue, dest, src, is_blocking=True)
