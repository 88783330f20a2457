"""The METAL device: its compiler pairs (METAL_CC=METAL|XCRUN), the MTLDevice and command queue, and command buffer batching."""
from __future__ import annotations
import functools
from typing import Any
from tinygrad.plugin_api import Compiled, CompilerSet, CompilerPair, DeviceError
from tinygrad_metal.renderer import MetalRenderer
from tinygrad_metal.compiler import MetalXcrunCompiler
from tinygrad_metal.allocator import MetalAllocator
from tinygrad_metal.runtime import MetalProgram, metal_api, METAL_BATCH

# METAL: the framework compiles the source at load (needs nothing but macOS); XCRUN: offline, when Xcode is installed
METAL_PAIRS = [CompilerPair(MetalRenderer, None, "METAL_FRAMEWORK", "METAL"),
               CompilerPair(MetalRenderer, MetalXcrunCompiler, "METAL_XCRUN", "XCRUN")]

class MetalDevice(Compiled):
  """One Metal GPU: METAL is the system default device, METAL:n the n-th of MTLCopyAllDevices()."""
  def __init__(self, device: str = "METAL"):
    self.api = Metal = metal_api()
    index = int(device.split(":")[1]) if ":" in device else 0
    devs = [Metal.MTLCreateSystemDefaultDevice()] if index == 0 else list(Metal.MTLCopyAllDevices() or [])
    if index >= len(devs) or devs[index] is None:
      raise DeviceError(f"no Metal device {device}: this Mac has {len(list(Metal.MTLCopyAllDevices() or []))} Metal device(s)")
    self.mtl: Any = devs[index]
    # kernels without a local size are dispatched with dispatchThreads, which needs non-uniform threadgroups
    if not any(self.mtl.supportsFamily_(f) for f in (Metal.MTLGPUFamilyApple4, Metal.MTLGPUFamilyMac2)):
      raise DeviceError(f"Metal device {self.mtl.name()} lacks non-uniform threadgroups (needs GPU family Apple4+ or Mac2)")
    self.queue = self.mtl.newCommandQueue()
    self.open_cb: Any = None          # the command buffer kernels are being encoded into
    self.open_kernels: list[str] = []
    self.in_flight: list[tuple[Any, list[str]]] = []   # committed command buffers (and their kernels), not yet waited for
    super().__init__(device, MetalAllocator(self), CompilerSet(METAL_PAIRS, "METAL_CC"), functools.partial(MetalProgram, self))
    # simdgroup_matrix (the tensor cores) exists on Apple7+ (A14/M1 on) and Mac2 GPUs only
    if not any(self.mtl.supportsFamily_(f) for f in (Metal.MTLGPUFamilyApple7, Metal.MTLGPUFamilyMac2)): self.renderer.tensor_cores = []

  def command_buffer(self) -> Any:
    """The open command buffer new kernels are encoded into."""
    if self.open_cb is None: self.open_cb = self.queue.commandBuffer()
    return self.open_cb
  def encoded(self, name: str) -> None:
    """A kernel was encoded: commit when the batch is full or the GPU has nothing else to do."""
    self.open_kernels.append(name)
    done = self.api.MTLCommandBufferStatusCompleted
    self.in_flight = [(cb, names) for cb, names in self.in_flight if cb.status() != done]
    if len(self.open_kernels) >= METAL_BATCH or not self.in_flight: self.flush()
  def flush(self) -> None:
    """Commit the open command buffer (the GPU starts it); does not wait."""
    if self.open_cb is None: return
    self.open_cb.commit()
    self.in_flight.append((self.open_cb, self.open_kernels))
    self.open_cb, self.open_kernels = None, []
  def synchronize(self) -> None:
    """Commit what is open and wait for every command buffer; a failed one raises with the kernels it held."""
    self.flush()
    pending, self.in_flight = self.in_flight, []
    for cb, names in pending:
      cb.waitUntilCompleted()
      if cb.error() is not None or cb.status() == self.api.MTLCommandBufferStatusError:
        err = cb.error()
        raise RuntimeError(f"Metal command buffer with kernels {', '.join(names)} failed: {err.localizedDescription() if err is not None else 'status error'}")
