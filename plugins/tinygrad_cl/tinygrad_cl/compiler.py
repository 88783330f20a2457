"""OpenCL C -> the driver's program binary, built by the device's own OpenCL compiler (clBuildProgram through pyopencl)."""
from __future__ import annotations
import functools, warnings
from typing import TYPE_CHECKING
from tinygrad.plugin_api import Compiler, CompileError
if TYPE_CHECKING:
  from tinygrad_cl.device import CLDevice

# IEEE division and sqrt (OpenCL allows 2.5 ulp without it): results match numpy; no -cl-fast-relaxed-math
BUILD_OPTIONS = ("-cl-fp32-correctly-rounded-divide-sqrt",)

class CLCompiler(Compiler):
  """Builds for one device; the binary is valid for that device and driver only, so both are in the cache key."""
  def __init__(self, dev: CLDevice):
    self.dev = dev
    super().__init__(cachekey=f"compile_cl_{dev.cl_dev.name}_{' '.join(BUILD_OPTIONS)}")
  @functools.cache
  def version(self) -> str: return f"{self.dev.cl_dev.platform.version} {self.dev.cl_dev.driver_version}"
  def compile(self, src: str) -> bytes:
    cl = self.dev.cl
    prg = cl.Program(self.dev.ctx, src)
    try:
      with warnings.catch_warnings():   # pyopencl warns with the build log of every kernel that built with remarks
        warnings.simplefilter("ignore", cl.CompilerWarning)
        prg.build(options=list(BUILD_OPTIONS), devices=[self.dev.cl_dev], cache_dir=False)  # type: ignore[arg-type]  # False: no pyopencl cache
    except (cl.RuntimeError, cl.LogicError) as e:
      raise CompileError(f"OpenCL build failed on {self.dev.cl_dev.name}:\n{e}", src) from e
    return prg.get_info(cl.program_info.BINARIES)[0]
