"""CL runtime: load a program binary for the device and launch its kernel on the device's in-order queue.

Launch (see renderer.py): with local_size the NDRange is global_size*local_size work-items in work-groups of local_size;
without, global_size work-items and the driver picks the work-group. Buffers are the allocator's cl.Buffers in argument
order, then the int variables. `wait=True` waits and returns the kernel's time from the event's profiling counters.
"""
from __future__ import annotations
from typing import Any, TYPE_CHECKING
from tinygrad.plugin_api import prod
if TYPE_CHECKING:
  from tinygrad_cl.device import CLDevice

class CLProgram:
  """A kernel loaded on a CL device: `CLProgram(dev, name, lib)(*bufs, global_size=, local_size=, vals=, wait=)`."""
  def __init__(self, dev: CLDevice, name: str, lib: bytes):
    cl = dev.cl
    self.dev, self.name = dev, name
    try: self.prg = cl.Program(dev.ctx, [dev.cl_dev], [lib]).build()
    except (cl.RuntimeError, cl.LogicError) as e: raise RuntimeError(f"CL cannot load the binary of kernel {name}: {e}") from e
    self.kernel = getattr(self.prg, name)
    self.max_local = int(self.kernel.get_work_group_info(cl.kernel_work_group_info.WORK_GROUP_SIZE, dev.cl_dev))

  def __call__(self, *bufs: Any, global_size: tuple[int, ...] = (1, 1, 1), local_size: tuple[int, ...] | None = None,
               vals: tuple[int, ...] = (), wait: bool = False) -> float | None:
    cl, np = self.dev.cl, self.dev.np
    gs = tuple(global_size) + (1,) * (3 - len(global_size))
    if local_size is not None:
      ls = tuple(local_size) + (1,) * (3 - len(local_size))
      if prod(ls) > self.max_local:
        raise RuntimeError(f"CL kernel {self.name}: local size {ls} ({prod(ls)} work-items) exceeds this kernel's {self.max_local} on {self.dev.cl_dev.name}")
      gs = tuple(g * l for g, l in zip(gs, ls))
    if prod(gs) == 0: return 0.0 if wait else None
    self.kernel.set_args(*bufs, *(np.int32(v) for v in vals))
    ev = cl.enqueue_nd_range_kernel(self.dev.queue, self.kernel, gs, ls if local_size is not None else None)
    if not wait: return None
    ev.wait()
    return (ev.profile.end - ev.profile.start) * 1e-9
