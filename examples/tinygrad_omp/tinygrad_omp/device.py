"""The OMP device: one compiler pair (C with OpenMP), host memory, a ctypes runtime that calls each kernel once."""
from tinygrad.plugin_api import Compiled, CompilerSet, CompilerPair
from tinygrad_omp import ENV_PREFIX
from tinygrad_omp.renderer import OMPRenderer
from tinygrad_omp.compiler import OMPCompiler
from tinygrad_omp.allocator import OMPAllocator
from tinygrad_omp.runtime import OMPProgram

class OMPDevice(Compiled):
  def __init__(self, device: str = "OMP"):
    pairs = [CompilerPair(OMPRenderer, OMPCompiler, name="C")]
    super().__init__(device, OMPAllocator(device), CompilerSet(pairs, prefix=ENV_PREFIX), OMPProgram)
