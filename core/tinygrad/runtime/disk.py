"""The DISK device: a file as a tensor's memory ("disk:/path", public tinygrad's spelling), mapped with mmap.

It runs no kernels. A tensor on it (`Tensor.empty(n, dtype=..., device="disk:/path")`, `Tensor(pathlib.Path(p))`) and any
view of it are read by copying to a computing device (`.to("CPU")`, `.numpy()`) and written by assigning into them
(`t.assign(x)`, `t[2:5] = x`) or by `x.to("disk:/path")`, at once, through the mapping (tinygrad/mixin/disk.py, which
Tensor.to, assign, setitem, bitcast and the data readers call; docs/guide.md "Files as tensors")."""
from __future__ import annotations
import mmap, os, pathlib
from typing import Any
from tinygrad.device import Allocator, Compiled

class DiskBuffer:
  """`size` bytes at `offset` of a DiskDevice's file."""
  __slots__ = ("dev", "offset", "size", "base")
  def __init__(self, dev: DiskDevice, offset: int, size: int, base: Any = None):
    # base: the Buffer this one is a range of (kept alive with it: freeing it would close the mapping)
    self.dev, self.offset, self.size, self.base = dev, offset, size, base
  def view(self) -> memoryview:
    if self.dev.mem is None: raise RuntimeError(f"{self.dev.device}: the file is not open (its buffers were freed)")
    return memoryview(self.dev.mem)[self.offset:self.offset + self.size]
  def __repr__(self) -> str: return f"<DiskBuffer {self.dev.path} [{self.offset}:{self.offset + self.size}]>"

class DiskAllocator(Allocator):
  """Buffers are byte ranges of the device's one mapping of the file: the first allocation creates the file or extends it
  to the size needed (a file is never cut); the mapping closes when the last buffer is freed."""
  def __init__(self, dev: DiskDevice):
    super().__init__()
    self.dev = dev
  def _alloc(self, size: int, options: Any) -> DiskBuffer:
    self.dev.open(size)
    return DiskBuffer(self.dev, 0, size)
  def _free(self, opaque: DiskBuffer, size: int, options: Any) -> None: self.dev.close()
  def copyin(self, dest: DiskBuffer, src: memoryview) -> None: dest.view()[:] = src.cast("B")
  def copyout(self, dest: memoryview, src: DiskBuffer) -> None: dest.cast("B")[:] = src.view()

class DiskDevice(Compiled):
  computes = False
  def __init__(self, device: str):
    self.path = device[len("DISK:"):]
    self.mem: mmap.mmap | bytearray | None = None
    self.size, self.users = 0, 0
    super().__init__(device, DiskAllocator(self), None, None)
  def open(self, size: int) -> None:
    if not self.path:
      from tinygrad.device import DeviceError
      raise DeviceError("the DISK device is a file: name it, device='disk:/path/to/file'")
    self.users += 1
    if self.mem is not None and size <= self.size: return
    if isinstance(self.mem, mmap.mmap):   # a bigger range than mapped: map the file again (a view someone holds pins the old mapping)
      try: self.mem.close()
      except BufferError:
        self.users -= 1
        raise RuntimeError(f"{self.device}: cannot map {size} bytes while a view of the first {self.size} is held") from None
    fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
      if not pathlib.Path(self.path).is_block_device() and os.fstat(fd).st_size < size: os.ftruncate(fd, size)
      self.mem = mmap.mmap(fd, size) if size > 0 else bytearray()
    except BaseException:
      self.users -= 1
      raise
    finally: os.close(fd)
    self.size = size
  def close(self) -> None:
    self.users -= 1
    if self.users == 0 and self.mem is not None:
      if isinstance(self.mem, mmap.mmap):
        try: self.mem.close()
        except BufferError: return   # a view is still held: it stays mapped until the process ends
      self.mem, self.size = None, 0
