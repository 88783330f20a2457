"""WEBGPU runtime: a WGSL kernel becomes a compute pipeline (cached per source on the device) and is launched into the
device's pending command encoder.

Launch (see renderer.py): `global_size` threads in total, in workgroups of the shader's `@workgroup_size`, dispatched as
(x, y) groups with x <= the adapter's max-compute-workgroups-per-dimension; with a `local_size` (lidx threads) one
workgroup per block, `global_size` blocks. The launch uniform holds
(total, gx, gy, gz) and the variable values. With `wait=True` the kernel's time comes from timestamp queries when the
adapter has `timestamp-query`, else from the host clock around submit-and-wait.
"""
from __future__ import annotations
import re, struct, time
from typing import Any, TYPE_CHECKING
from tinygrad.plugin_api import prod
from tinygrad_webgpu.compiler import create_shader, create_pipeline
if TYPE_CHECKING:
  from tinygrad_webgpu.device import WebGPUDevice

_BINDING = re.compile(r"@binding\((\d+)\) var<(storage, read_write|storage, read|uniform)>")
_WG = re.compile(r"@workgroup_size\((\d+)\)")
_UNIFORM_CACHE = 4096   # distinct launch uniforms kept per device

def _build(dev: WebGPUDevice, name: str, src: str) -> tuple[Any, Any, list[tuple[int, bool]]]:
  wgpu = dev.wgpu
  kinds = {"storage, read_write": wgpu.BufferBindingType.storage, "storage, read": wgpu.BufferBindingType.read_only_storage,
           "uniform": wgpu.BufferBindingType.uniform}
  binds = [(int(b), kinds[k]) for b, k in _BINDING.findall(src)]
  module = create_shader(dev.gpu, src, name)
  bgl = dev.gpu.create_bind_group_layout(entries=[{"binding": b, "visibility": wgpu.ShaderStage.COMPUTE, "buffer": {"type": t}} for b, t in binds])
  layout = dev.gpu.create_pipeline_layout(bind_group_layouts=[bgl])
  # (binding, is the launch uniform): buffer i of the kernel is binding i
  return create_pipeline(dev.gpu, module, layout, src, name), bgl, [(b, t == kinds["uniform"]) for b, t in binds]

class WebGPUProgram:
  """A loaded WGSL kernel: `WebGPUProgram(dev, name, lib)(*bufs, global_size=, local_size=None, vals=(), wait=False)`."""
  def __init__(self, dev: WebGPUDevice, name: str, lib: bytes):
    self.dev, self.name, src = dev, name, lib.decode()
    m = _WG.search(src)
    self.wg = int(m.group(1)) if m else 1
    self.fname = re.sub(r"\W", "_", name)
    if (cached := dev.pipelines.get(src)) is None: dev.pipelines[src] = cached = _build(dev, self.fname, src)
    self.binds: list[tuple[int, bool]]
    self.pipeline, self.bgl, self.binds = cached

  def _uniform(self, data: bytes) -> Any:
    cache = self.dev.uniforms
    if (buf := cache.get(data)) is None:
      wgpu = self.dev.wgpu
      if len(cache) >= _UNIFORM_CACHE: cache.clear()
      buf = self.dev.gpu.create_buffer(size=len(data), usage=wgpu.BufferUsage.UNIFORM | wgpu.BufferUsage.COPY_DST, mapped_at_creation=True)
      buf.write_mapped(data)
      buf.unmap()
      cache[data] = buf
    return buf

  def __call__(self, *bufs: Any, global_size: tuple[int, ...] = (1, 1, 1), local_size: tuple[int, ...] | None = None,
               vals: tuple[int, ...] = (), wait: bool = False) -> float | None:
    dev, wgpu = self.dev, self.dev.wgpu
    gs = tuple(global_size) + (1,) * (3 - len(global_size))
    total = prod(gs)
    if any(b >= len(bufs) for b, uniform in self.binds if not uniform):
      raise RuntimeError(f"WEBGPU kernel {self.name} binds buffer {max(b for b, u in self.binds if not u)}, got {len(bufs)} buffers")
    if total == 0: return 0.0 if wait else None
    # a kernel with lidx threads is one workgroup per block (global_size counts blocks), else global_size counts threads
    groups = total if local_size is not None else (total + self.wg - 1) // self.wg
    maxd = dev.limits["max-compute-workgroups-per-dimension"]
    x = min(groups, maxd)
    y = (groups + x - 1) // x
    if y > maxd: raise RuntimeError(f"WEBGPU kernel {self.name}: {total} threads exceed this adapter's dispatch limit ({maxd}^2 workgroups of {self.wg})")
    words = [total, *gs, *(v & 0xffffffff for v in vals)]
    words += [0] * (-len(words) % 4)
    ubuf = self._uniform(struct.pack(f"<{len(words)}I", *words))
    entries = []
    for b, uniform in self.binds:
      buf = ubuf if uniform else bufs[b]
      # wgpu-native aborts the interpreter on a released buffer (its handle None): say which instead
      if getattr(buf, "_internal", True) is None: raise RuntimeError(f"WEBGPU kernel {self.name}: buffer {b} was released before the launch")
      entries.append({"binding": b, "resource": {"buffer": buf, "offset": 0, "size": buf.size}})
    bind = dev.gpu.create_bind_group(layout=self.bgl, entries=entries)
    ts = wait and "timestamp-query" in dev.features
    if wait: dev.flush()   # time this kernel alone
    enc = dev.encoder()
    if ts:
      qs = dev.gpu.create_query_set(type=wgpu.QueryType.timestamp, count=2)
      cpass = enc.begin_compute_pass(timestamp_writes={"query_set": qs, "beginning_of_pass_write_index": 0, "end_of_pass_write_index": 1})
    else: cpass = enc.begin_compute_pass()
    cpass.set_pipeline(self.pipeline)
    cpass.set_bind_group(0, bind)
    cpass.dispatch_workgroups(x, y, 1)
    cpass.end()
    if not wait:
      dev.kernel_added()
      return None
    st = time.perf_counter()
    if not ts:
      dev.synchronize()
      return time.perf_counter() - st
    res = dev.gpu.create_buffer(size=16, usage=wgpu.BufferUsage.QUERY_RESOLVE | wgpu.BufferUsage.COPY_SRC)
    enc.resolve_query_set(qs, 0, 2, res, 0)
    dev.synchronize()
    t0, t1 = struct.unpack("<2Q", dev.gpu.queue.read_buffer(res).tobytes())
    return (t1 - t0) * 1e-9
