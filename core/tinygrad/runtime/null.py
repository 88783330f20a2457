"""The NULL device: schedules, renders and "launches" kernels without running them, to measure the compiler itself."""
from __future__ import annotations
from typing import Any
from tinygrad.device import Allocator, Compiled, CompilerSet, CompilerPair
from tinygrad.runtime.python import PythonRenderer

class NullRenderer(PythonRenderer):
  device = "NULL"

class NullProgram:
  def __init__(self, name: str, lib: bytes): self.name = name
  def __call__(self, *bufs: Any, global_size: tuple[int, ...] = (1, 1, 1), local_size: tuple[int, ...] | None = None,
               vals: tuple[int, ...] = (), wait: bool = False) -> float | None:
    return 0.0 if wait else None

class NullAllocator(Allocator):
  """Hands out sizes, not memory: data copied in is dropped and reads give zeros."""
  def _alloc(self, size: int, options: Any) -> int: return size
  def copyin(self, dest: int, src: memoryview) -> None: pass
  def copyout(self, dest: memoryview, src: int) -> None: dest[:] = bytes(len(dest))
  def _offset(self, opaque: int, size: int, offset: int) -> int: return size

class NullDevice(Compiled):
  computes = False
  def __init__(self, device: str):
    super().__init__(device, NullAllocator(), CompilerSet([CompilerPair(NullRenderer, None, name="NULL")]), NullProgram)
