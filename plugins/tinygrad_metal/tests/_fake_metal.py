"""A stand-in for PyObjC's `Metal` module: the object graph MetalDevice/MetalProgram/MetalAllocator touch, recording calls.

Buffers are real host memory (contents().as_buffer), so copies round-trip; kernels do not run: a dispatch is recorded with
its bound buffers, bytes and sizes, which is what the runtime decides."""
from __future__ import annotations
import types
from typing import Any

class MTLSize(tuple):
  def __new__(cls, w: int, h: int, d: int): return super().__new__(cls, (w, h, d))

class _Contents:
  def __init__(self, mem: bytearray): self.mem = mem
  def as_buffer(self, n: int) -> memoryview: return memoryview(self.mem)[:n]

class FakeBuffer:
  def __init__(self, n: int): self.mem = bytearray(n)
  def contents(self) -> _Contents: return _Contents(self.mem)
  def length(self) -> int: return len(self.mem)

class FakeEncoder:
  def __init__(self, cb: FakeCommandBuffer): self.cb, self.bufs, self.bytes, self.pipeline, self.dispatch = cb, {}, {}, None, None
  def setComputePipelineState_(self, p: Any) -> None: self.pipeline = p
  def setBuffer_offset_atIndex_(self, b: Any, off: int, i: int) -> None: self.bufs[i] = (b, off)
  def setBytes_length_atIndex_(self, data: bytes, n: int, i: int) -> None: self.bytes[i] = bytes(data[:n])
  def dispatchThreads_threadsPerThreadgroup_(self, grid: MTLSize, tg: MTLSize) -> None: self.dispatch = ("threads", tuple(grid), tuple(tg))
  def dispatchThreadgroups_threadsPerThreadgroup_(self, groups: MTLSize, tg: MTLSize) -> None: self.dispatch = ("groups", tuple(groups), tuple(tg))
  def endEncoding(self) -> None: self.cb.ended += 1

class FakeCommandBuffer:
  def __init__(self, queue: FakeQueue):
    self.queue, self.encoders, self.ended, self.committed, self.waited, self._status = queue, [], 0, False, False, 1
  def computeCommandEncoder(self) -> FakeEncoder:
    self.encoders.append(FakeEncoder(self))
    return self.encoders[-1]
  def commit(self) -> None:
    assert self.ended == len(self.encoders), "commit with an encoder still open"
    self.committed, self._status = True, (4 if self.queue.device.instant else 2)
  def waitUntilCompleted(self) -> None:
    assert self.committed, "waiting on a command buffer that was never committed would hang"
    self.waited, self._status = True, (5 if self.queue.device.fail else 4)
  def status(self) -> int: return self._status
  def error(self) -> Any:
    return types.SimpleNamespace(localizedDescription=lambda: "Execution of the command buffer was aborted") if self._status == 5 else None
  def GPUStartTime(self) -> float: return 10.0
  def GPUEndTime(self) -> float: return 10.25

class FakeQueue:
  def __init__(self, device: FakeDevice): self.device, self.buffers = device, []
  def commandBuffer(self) -> FakeCommandBuffer:
    self.buffers.append(FakeCommandBuffer(self))
    return self.buffers[-1]

class FakePipeline:
  def __init__(self, fn: Any, max_threads: int): self.fn, self.max = fn, max_threads
  def maxTotalThreadsPerThreadgroup(self) -> int: return self.max

class FakeLibrary:
  def __init__(self, src: str, opts: Any): self.src, self.opts = src, opts
  def newFunctionWithName_(self, name: str) -> Any: return name if f"kernel void {name}(" in self.src else None

class FakeDevice:
  def __init__(self, name: str = "Fake M1", families: tuple[int, ...] = (1004, 2002)):
    self._name, self.families, self.queues, self.libraries = name, families, [], []
    self.max_threads, self.instant, self.fail, self.alloc_limit = 1024, False, False, 1 << 40
  def name(self) -> str: return self._name
  def supportsFamily_(self, f: int) -> bool: return f in self.families
  def newCommandQueue(self) -> FakeQueue:
    self.queues.append(FakeQueue(self))
    return self.queues[-1]
  def newBufferWithLength_options_(self, n: int, opts: int) -> FakeBuffer | None:
    assert opts == MTLResourceStorageModeShared
    return FakeBuffer(n) if n <= self.alloc_limit else None
  def newLibraryWithSource_options_error_(self, src: str, opts: Any, err: None) -> tuple[Any, Any]:
    if "#error" in src: return None, types.SimpleNamespace(localizedDescription=lambda: "program_source:3:2: error: bad kernel")
    self.libraries.append(FakeLibrary(src, opts))
    return self.libraries[-1], None
  def newComputePipelineStateWithFunction_error_(self, fn: Any, err: None) -> tuple[Any, Any]: return FakePipeline(fn, self.max_threads), None

class MTLCompileOptions:
  def __init__(self): self.fast_math = True   # Metal's default
  @classmethod
  def new(cls) -> MTLCompileOptions: return cls()
  def setFastMathEnabled_(self, v: bool) -> None: self.fast_math = bool(v)

MTLResourceStorageModeShared = 0
MTLGPUFamilyApple4, MTLGPUFamilyApple7, MTLGPUFamilyMac2 = 1004, 1007, 2002
MTLCommandBufferStatusCompleted, MTLCommandBufferStatusError = 4, 5

def make_module(devices: list[FakeDevice] | None = None) -> types.ModuleType:
  """A fresh fake `Metal` module whose system default device is devices[0]."""
  devs = devices or [FakeDevice()]
  mod = types.ModuleType("Metal")
  for k, v in list(globals().items()):
    if k.startswith("MTL"): setattr(mod, k, v)
  mod.MTLCreateSystemDefaultDevice = lambda: devs[0]
  mod.MTLCopyAllDevices = lambda: list(devs)
  mod.devices = devs
  return mod
