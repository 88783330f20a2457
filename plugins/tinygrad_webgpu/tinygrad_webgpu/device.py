"""The WEBGPU device: one wgpu adapter and device, the WGSL renderer tuned to its limits, and a batching command queue.

Kernels and copies are recorded into one pending command encoder and submitted together when results are read
(copy-out), when a caller waits (timing, `synchronize`), or after WEBGPU_BATCH (default 64) kernels.
"""
from __future__ import annotations
import functools, sys
from typing import Any
from tinygrad.plugin_api import Compiled, CompilerSet, CompilerPair, DeviceError, getenv, DEBUG
from tinygrad.helpers import CapturedStderr
from tinygrad_webgpu.renderer import WGSLRenderer
from tinygrad_webgpu.allocator import WebGPUAllocator
from tinygrad_webgpu.runtime import WebGPUProgram

WEBGPU_BATCH: int = getenv("WEBGPU_BATCH", 64)
# limits requested at the adapter's own values (a device gets WebGPU's small defaults unless asked)
_LIMITS = ("max-storage-buffers-per-shader-stage", "max-storage-buffer-binding-size", "max-buffer-size", "max-compute-invocations-per-workgroup",
           "max-compute-workgroup-size-x", "max-compute-workgroup-size-y", "max-compute-workgroup-size-z",
           "max-compute-workgroups-per-dimension", "max-compute-workgroup-storage-size")
_FEATURES = ("shader-f16", "timestamp-query", "shader-int64")   # shader-int64: a wgpu-native extension (i64/u64 in WGSL)
# llvmpipe ends every loop once an invocation has taken 65535 loop back-edges in total (Mesa gallivm's loop limiter); the
# renderer unrolls to stay under half that (measured: nested loops lose a few hundred trips more than a plain count says)
_LLVMPIPE_LOOP_BUDGET = 32768

class WebGPUDevice(Compiled):
  def __init__(self, device: str = "WEBGPU"):
    index = int(device.split(":")[1]) if ":" in device else 0
    # the Vulkan loader and drivers print to fd 2 while adapters are found (twice "XDG_RUNTIME_DIR is invalid" when it is
    # unset): kept out of the user's terminal, shown with DEBUG>=1 or in the error when no adapter comes of it
    with CapturedStderr() as noise:
      import wgpu
      if index == 0: adapter = wgpu.gpu.request_adapter_sync(power_preference="high-performance")
      else: adapters = wgpu.gpu.enumerate_adapters_sync()
    self.wgpu = wgpu
    if DEBUG >= 1 and noise.text: print(noise.text, end="", file=sys.stderr)
    said = f" (the driver said: {'; '.join(noise.lines()[:3])})" if noise.lines() else ""
    if index != 0:
      if index >= len(adapters): raise DeviceError(f"{device}: only {len(adapters)} WebGPU adapter(s) here{said}")
      adapter = adapters[index]
    if adapter is None: raise DeviceError(f"{device}: wgpu found no adapter (is a Vulkan/Metal/D3D12 driver installed?){said}")
    self.adapter = adapter
    info = adapter.info
    self.description = f"{info['device']} ({info['backend_type']}, {info['adapter_type']})"
    self.features = frozenset(f for f in _FEATURES if f in adapter.features)
    self.gpu = adapter.request_device_sync(required_features=sorted(self.features),
                                              required_limits={k: adapter.limits[k] for k in _LIMITS if k in adapter.limits})
    self.limits = dict(self.gpu.limits)
    self.pipelines: dict[str, Any] = {}    # WGSL source -> (pipeline, bind group layout, [(binding, is the launch uniform)])
    self.uniforms: dict[bytes, Any] = {}   # launch uniform contents -> buffer (kernels mostly relaunch with the same sizes)
    self._enc: Any = None
    self._kept: list[Any] = []
    self._pending = 0
    self._fence: Any = None
    super().__init__(device, WebGPUAllocator(self, device), CompilerSet([CompilerPair(WGSLRenderer, None, "WEBGPU_WGSL", "WGSL")], "WEBGPU_CC"),
                     functools.partial(WebGPUProgram, self))
    wg = min(256, self.limits["max-compute-invocations-per-workgroup"], self.limits["max-compute-workgroup-size-x"])
    if isinstance(self.renderer, WGSLRenderer):
      self.renderer.set_abilities(wg, self.limits["max-compute-workgroups-per-dimension"], self.limits["max-storage-buffers-per-shader-stage"],
                                  "shader-f16" in self.features, _LLVMPIPE_LOOP_BUDGET if "llvmpipe" in info["device"].lower() else None,
                                  "shader-int64" in self.features, self._local_max(), self.limits.get("max-compute-workgroup-storage-size"))
      # a CPU adapter (llvmpipe) runs work-groups on CPU threads, each a SIMD batch of invocations: the core's CPU-style
      # heuristics (register blocking, unrolled reduces) fit it. Measured on llvmpipe: matmul 512 6.6 s -> 1.4 s
      self.renderer.has_threads = info["adapter_type"] == "CPU"

  def _local_max(self) -> tuple[int, ...]:
    """Threads per workgroup on x, y, z; none larger than the invocations a workgroup may have (the renderer's total)."""
    inv = self.limits["max-compute-invocations-per-workgroup"]
    return tuple(min(inv, self.limits.get(f"max-compute-workgroup-size-{a}", inv)) for a in "xyz")

  # ---- the pending batch ----
  def encoder(self) -> Any:
    """The command encoder recording the current batch."""
    if self._enc is None: self._enc = self.gpu.create_command_encoder()
    return self._enc
  def keep(self, obj: Any) -> None: self._kept.append(obj)   # staging buffers live until their batch is submitted
  def kernel_added(self) -> None:
    self._pending += 1
    if self._pending >= WEBGPU_BATCH: self.flush()
  def flush(self) -> None:
    """Submit the pending batch (no wait)."""
    if self._enc is not None:
      self.gpu.queue.submit([self._enc.finish()])
      self._enc, self._kept, self._pending = None, [], 0
  def synchronize(self) -> None:
    # a copy into a mappable buffer as the last command: mapping it waits for everything submitted before
    # (queue.on_submitted_work_done_sync is broken in some wgpu-py/wgpu-native pairs)
    wgpu = self.wgpu
    if self._fence is None:
      self._fence = (self.gpu.create_buffer(size=4, usage=wgpu.BufferUsage.COPY_SRC), self.gpu.create_buffer(size=4, usage=wgpu.BufferUsage.MAP_READ | wgpu.BufferUsage.COPY_DST))
    self.encoder().copy_buffer_to_buffer(self._fence[0], 0, self._fence[1], 0, 4)
    self.flush()
    self._fence[1].map_sync(wgpu.MapMode.READ)
    self._fence[1].unmap()
  def __repr__(self) -> str: return f"<WebGPUDevice {self.device} on {self.description}>"
