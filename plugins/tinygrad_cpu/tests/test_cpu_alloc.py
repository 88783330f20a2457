"""The CPU allocator: buffers of 2 MiB or more are their own mappings advised to use huge pages (4 KiB pages cost a
streaming kernel a third of its bandwidth in TLB misses where transparent huge pages are in `madvise` mode), and what
lives in them is right: zero-filled, copied in and out, reduced, reused by the cache."""
import mmap, numpy as np, pytest
from tinygrad import Tensor
from tinygrad_cpu import allocator
from tinygrad_cpu.allocator import CPUAllocator, CPUBuffer, HUGE

def _vmflags(addr: int) -> list[str]:
  """The VmFlags of the mapping holding `addr` (Linux's /proc/self/smaps; 'hg': advised MADV_HUGEPAGE)."""
  cur = None
  with open("/proc/self/smaps") as f:
    for line in f:
      head = line.split()[0]
      if "-" in head and all(c in "0123456789abcdef-" for c in head):
        lo, hi = (int(x, 16) for x in head.split("-"))
        cur = lo <= addr < hi
      elif cur and line.startswith("VmFlags:"): return line.split()[1:]
  raise AssertionError(f"no mapping holds {addr:#x}")

@pytest.mark.skipif(not hasattr(mmap, "MADV_HUGEPAGE"), reason="huge pages are advised through Linux's MADV_HUGEPAGE")
def test_big_buffer_is_advised_huge_pages():
  assert allocator.CPU_HUGEPAGES
  big, small = CPUBuffer(HUGE + 4096), CPUBuffer(4096)
  assert big.addr % HUGE == 0 and small.addr % allocator.ALIGN == 0
  assert "hg" in _vmflags(big.addr), "a 2 MiB+ buffer's mapping is advised MADV_HUGEPAGE"
  assert bytes(big.view()[-8:]) == bytes(8) and bytes(small.view()[:8]) == bytes(8), "fresh buffers read zero"

@pytest.mark.parametrize("n", [HUGE // 4 - 1, HUGE // 4, 3 * HUGE // 4 + 5])
def test_values_through_big_buffers(n):
  a = np.random.default_rng(n).standard_normal(n).astype(np.float32)
  t = Tensor(a).realize()
  np.testing.assert_array_equal(t.numpy(), a)
  np.testing.assert_allclose((t * 2 + 1).numpy(), a * 2 + 1, rtol=1e-6)
  np.testing.assert_allclose(t.sum().item(), a.astype(np.float64).sum(), rtol=1e-5, atol=1e-2)

def test_freed_big_buffer_is_reused():
  alloc = CPUAllocator("CPU")
  b = alloc.alloc(HUGE)
  alloc.copyin(b, memoryview(bytearray(b"\x07" * HUGE)))
  alloc.free(b, HUGE)
  assert alloc.alloc(HUGE) is b, "the LRU cache hands the same mapping back"
  out = memoryview(bytearray(HUGE))
  alloc.copyout(out, b)
  assert bytes(out[:4]) == b"\x07" * 4

@pytest.mark.skipif(not hasattr(mmap, "MADV_HUGEPAGE"), reason="huge pages are advised through Linux's MADV_HUGEPAGE")
def test_tail_past_the_last_whole_huge_page_is_not_advised():
  # a 2.25 MiB weight must not take two huge pages (4 MiB) of memory: only its first 2 MiB are advised
  b = CPUBuffer(HUGE + HUGE // 8)
  assert "hg" in _vmflags(b.addr) and "hg" not in _vmflags(b.addr + HUGE)
