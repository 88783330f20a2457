"""The CL device: one OpenCL device (CL:n is the n-th over all platforms), its context and profiling in-order queue, and
the renderer built for that device's limits."""
from __future__ import annotations
import functools
from typing import Any
from tinygrad.plugin_api import Compiled, CompilerSet, CompilerPair, DeviceError
from tinygrad_cl.renderer import OpenCLRenderer, CLLimits
from tinygrad_cl.compiler import CLCompiler
from tinygrad_cl.allocator import CLAllocator
from tinygrad_cl.runtime import CLProgram

def limits_of(d: Any) -> CLLimits:
  """The renderer's limits from an OpenCL device's info: work-group size in total and per axis, local memory, fp16/fp64."""
  total, ext = int(d.max_work_group_size), d.extensions.split()
  sizes = [min(int(s), total) for s in d.max_work_item_sizes] + [1, 1]
  return CLLimits(local_max=(sizes[0], sizes[1], sizes[2]), local_total=total, shared_max=int(d.local_mem_size),
                  fp16="cl_khr_fp16" in ext, fp64="cl_khr_fp64" in ext)

class CLDevice(Compiled):
  def __init__(self, device: str = "CL"):
    import numpy as np
    import pyopencl as cl
    self.cl, self.np = cl, np
    index = int(device.split(":")[1]) if ":" in device and device.split(":")[1].isdigit() else 0
    try: devs = [d for p in cl.get_platforms() for d in p.get_devices()]
    except cl.Error as e: raise DeviceError(f"{device}: no OpenCL platform ({e}); for a CPU driver: apt-get install pocl-opencl-icd") from e
    if index >= len(devs): raise DeviceError(f"no OpenCL device {device}: this machine has {len(devs)} ({', '.join(d.name for d in devs) or 'none'})")
    self.cl_dev, self.ndevs = devs[index], len(devs)
    self.ctx = cl.Context([self.cl_dev])
    self.queue = cl.CommandQueue(self.ctx, self.cl_dev, properties=cl.command_queue_properties.PROFILING_ENABLE)
    self.limits = limits_of(self.cl_dev)
    pairs = [CompilerPair(functools.partial(OpenCLRenderer, self.limits), functools.partial(CLCompiler, self), "CL_OPENCL", "OPENCL")]
    super().__init__(device, CLAllocator(self), CompilerSet(pairs, "CL_CC"), functools.partial(CLProgram, self))
  def synchronize(self) -> None: self.queue.finish()
  def count(self) -> int: return self.ndevs   # (CL:i is the i-th device of all platforms)
  def __repr__(self) -> str: return f"<CLDevice {self.device} on {self.cl_dev.name.strip()}>"
