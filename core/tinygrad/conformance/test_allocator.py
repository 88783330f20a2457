"""The device's allocator: the Allocator contract directly, many live buffers, memory returned, and out-of-memory."""
from __future__ import annotations
import gc
import numpy as np
import pytest
from tinygrad import Tensor
from tinygrad.device import Device, LRUAllocator

def alloc(device: str):
  return Device[device].allocator

class TestAllocator:
  capability = "allocator under pressure"
  @pytest.mark.parametrize("size", [1, 3, 64, 4097])
  def test_copyin_copyout_contract(self, device, size):
    a = alloc(device)
    buf = a.alloc(size)
    src = np.random.default_rng(size).integers(0, 256, size, dtype=np.uint8)
    a.copyin(buf, memoryview(src.tobytes()))
    out = bytearray(size)
    a.copyout(memoryview(out), buf)
    assert bytes(out) == src.tobytes(), f"{type(a).__name__}: copyout after copyin of {size} bytes differs"
    a.free(buf, size)
  def test_many_live_buffers_do_not_alias(self, device):
    ts = [(Tensor.full((37 + i % 5,), float(i), device=device) + 0).realize() for i in range(200)]
    for i, t in enumerate(ts): assert t.numpy().tolist() == [float(i)] * (37 + i % 5), f"buffer {i} was overwritten"
  def test_memory_is_returned(self, device):
    a = alloc(device)
    def work():
      ts = [(Tensor.ones(256 + i, device=device) * i).realize() for i in range(20)]
      return sum(float(t.numpy()[0]) for t in ts)
    work()
    gc.collect()
    base = a.mem_used
    for _ in range(3): work()
    gc.collect()
    assert a.mem_used <= base, f"{type(a).__name__}.mem_used grew from {base} to {a.mem_used} bytes over freed tensors"
  def test_out_of_memory_is_a_memoryerror_and_recoverable(self, device, monkeypatch):
    a = alloc(device)
    orig = a._alloc
    def full(size, options):
      if size >= 1 << 16: raise MemoryError(f"simulated: device full ({size} bytes asked)")
      return orig(size, options)
    monkeypatch.setattr(a, "_alloc", full)
    if isinstance(a, LRUAllocator): a.free_cache()   # else a cached buffer of the size would be handed out
    with pytest.raises(MemoryError) as ei: (Tensor.ones(1 << 15, device=device) + 1).realize()
    if isinstance(a, LRUAllocator): assert device.split(":")[0] in str(ei.value), f"out-of-memory message does not name the device: {ei.value}"
    monkeypatch.setattr(a, "_alloc", orig)
    assert (Tensor.ones(1 << 15, device=device) + 1).numpy().sum() == 2 << 15
  def test_out_of_memory_frees_cache_and_retries(self, device, monkeypatch):
    a = alloc(device)
    if not isinstance(a, LRUAllocator): pytest.skip(f"{type(a).__name__} keeps no cache of freed buffers (not an LRUAllocator)")
    for i in range(8): (Tensor.ones(1000 + i, device=device) * 2).realize()
    gc.collect()
    if a.cache_bytes == 0: pytest.skip(f"{type(a).__name__} cached nothing (cache_limit={a.cache_limit})")
    orig, refused = a._alloc, []
    def full_while_cached(size, options):
      if a.cache_bytes > 0:
        refused.append(size)
        raise MemoryError("simulated: device full of cached buffers")
      return orig(size, options)
    monkeypatch.setattr(a, "_alloc", full_while_cached)
    # succeeds only if the allocator, refused, frees its cache and retries
    assert (Tensor.ones(777, device=device) * 3).numpy().sum() == 3 * 777
    assert refused, "the new buffer never reached _alloc (served from the cache?)"

class TestAllocatorContract:
  """What docs/plugins.md promises about an allocator, checked directly: size 0, flat byte views, copy semantics, no zeroing."""
  capability = "allocator contract"
  def test_size_zero_buffer(self, device):
    from tinygrad.device import Buffer
    from tinygrad.dtype import dtypes
    b = Buffer(device, 0, dtypes.float32).allocate()   # alloc(0) must succeed: empty tensors and views have such buffers
    b.copyin(memoryview(bytearray(0)))
    assert bytes(b.copyout(memoryview(bytearray(0)))) == b""
    b.deallocate()
  def test_copyin_takes_flat_bytes_and_owns_them(self, device, monkeypatch):
    a = alloc(device)
    seen: list[tuple[str, int, int]] = []
    orig = a.copyin
    def spy(dest, src):
      seen.append((src.format, src.ndim, src.nbytes))
      return orig(dest, src)
    monkeypatch.setattr(a, "copyin", spy)
    host = np.arange(6, dtype=np.float32).reshape(2, 3)
    t = Tensor(host, device=device).realize()
    assert seen and all(s == ("B", 1, s[2]) for s in seen), f"{type(a).__name__}.copyin got {seen}: the core passes flat 'B' views"
    host[:] = -1   # the caller's memory may change once copyin returned: the device holds its own copy
    assert t.numpy().tolist() == [[0, 1, 2], [3, 4, 5]], f"{type(a).__name__}.copyin kept a reference to the host memory"
  def test_copyout_waits_for_queued_kernels(self, device):
    # copyout is the only synchronization the core does: a read right after a chain of launches sees their results
    x = Tensor.ones(1 << 16, device=device).contiguous().realize()
    for _ in range(4): x = (x * 2 + 1).realize()
    assert float(x.numpy()[-1]) == 31.0, f"copyout returned before the device's queued kernels finished ({float(x.numpy()[-1])})"
  def test_reused_memory_is_not_assumed_zero(self, device):
    # new buffers are not zeroed (an LRU cache hands back old bytes): Tensor.zeros writes its zeros with a kernel
    for _ in range(3): (Tensor.full((4097,), 7.0, device=device) + 0).realize()
    gc.collect()
    assert (Tensor.zeros(4097, device=device).contiguous() + 0).numpy().max() == 0.0
