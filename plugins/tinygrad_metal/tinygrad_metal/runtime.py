"""METAL runtime through PyObjC: load a kernel (MSL source, or a .metallib from the offline compiler) into a compute pipeline
and launch it on the device's command queue.

Launch: buffers bind at [[buffer(0..n-1)]] and int variables (4-byte setBytes) after them, as MetalRenderer declares.
local_size None (the kernel has no lidx): dispatchThreads over the global size, the threadgroup picked here from the
pipeline's limits; else dispatchThreadgroups(global_size groups of local_size threads).
Batching: kernels are encoded into an open command buffer that is committed when it holds METAL_BATCH kernels, when the GPU
is idle (so it starts at once), or when the host needs results (synchronize, copies, wait=True). `wait=True` runs the
kernel alone in its own command buffer and returns its GPU time (GPUEndTime - GPUStartTime), in seconds.
"""
from __future__ import annotations
import os, struct, tempfile
from typing import Any, TYPE_CHECKING
from tinygrad.plugin_api import CompileError, getenv
if TYPE_CHECKING:
  from tinygrad_metal.device import MetalDevice

METAL_BATCH: int = getenv("METAL_BATCH", 32)   # kernels per command buffer before it is committed
MTLB = b"MTLB"                                # the first bytes of a .metallib

def metal_api() -> Any:
  """PyObjC's Metal module, imported on first use (tests put a stand-in into sys.modules["Metal"])."""
  import Metal
  return Metal

def threadgroup_for(global_size: tuple[int, ...], max_total: int) -> tuple[int, int, int]:
  """A threadgroup for dispatchThreads: x first, then y, then z, each at most its grid size, product at most max_total."""
  gx, gy, gz = (tuple(global_size) + (1, 1, 1))[:3]
  tx = max(1, min(gx, max_total))
  ty = max(1, min(gy, max_total // tx))
  tz = max(1, min(gz, max_total // (tx * ty)))
  return tx, ty, tz

def _describe(err: Any) -> str:
  if err is None: return "unknown error"
  try: return str(err.localizedDescription())
  except Exception: return str(err)

class MetalProgram:
  """A kernel loaded on a METAL device: `MetalProgram(dev, name, lib)(*bufs, global_size=, local_size=, vals=, wait=)`."""
  def __init__(self, dev: MetalDevice, name: str, lib: bytes):
    self.dev, self.name = dev, name
    Metal = dev.api
    if lib[:4] == MTLB: library, err = self._load_metallib(lib)
    else:
      src = lib.decode()
      opts = Metal.MTLCompileOptions.new()
      opts.setFastMathEnabled_(False)   # IEEE division, sqrt and denormals: results match the other devices
      library, err = dev.mtl.newLibraryWithSource_options_error_(src, opts, None)
      if library is None: raise CompileError(f"Metal failed to compile {name}: {_describe(err)}", src)
    if library is None: raise RuntimeError(f"Metal cannot load the metallib of {name}: {_describe(err)}")
    fn = library.newFunctionWithName_(name)
    if fn is None: raise RuntimeError(f"Metal library has no kernel named {name}")
    self.pipeline, err = dev.mtl.newComputePipelineStateWithFunction_error_(fn, None)
    if self.pipeline is None: raise RuntimeError(f"Metal cannot make a compute pipeline for {name}: {_describe(err)}")
    self.max_threads = int(self.pipeline.maxTotalThreadsPerThreadgroup())

  def _load_metallib(self, lib: bytes) -> tuple[Any, Any]:
    from Foundation import NSURL
    with tempfile.TemporaryDirectory(prefix="tinygrad_metal_") as tmp:
      path = os.path.join(tmp, f"{self.name}.metallib")
      with open(path, "wb") as f: f.write(lib)
      return self.dev.mtl.newLibraryWithURL_error_(NSURL.fileURLWithPath_(path), None)

  def __call__(self, *bufs: Any, global_size: tuple[int, ...] = (1, 1, 1), local_size: tuple[int, ...] | None = None,
               vals: tuple[int, ...] = (), wait: bool = False) -> float | None:
    if local_size is not None and (n := local_size[0] * local_size[1] * local_size[2]) > self.max_threads:
      raise RuntimeError(f"kernel {self.name}: local size {local_size} ({n} threads) exceeds this pipeline's {self.max_threads}")
    Metal, dev = self.dev.api, self.dev
    if wait: dev.flush()
    cb = dev.command_buffer()
    enc = cb.computeCommandEncoder()
    enc.setComputePipelineState_(self.pipeline)
    for i, b in enumerate(bufs): enc.setBuffer_offset_atIndex_(b.buf, b.offset, i)
    for j, v in enumerate(vals): enc.setBytes_length_atIndex_(struct.pack("<i", v), 4, len(bufs) + j)
    gs = Metal.MTLSize(*(tuple(global_size) + (1, 1, 1))[:3])
    if local_size is None: enc.dispatchThreads_threadsPerThreadgroup_(gs, Metal.MTLSize(*threadgroup_for(global_size, self.max_threads)))
    else: enc.dispatchThreadgroups_threadsPerThreadgroup_(gs, Metal.MTLSize(*local_size))
    enc.endEncoding()
    dev.encoded(self.name)
    if not wait: return None
    dev.flush()
    dev.synchronize()
    return float(cb.GPUEndTime() - cb.GPUStartTime())
