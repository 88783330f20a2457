"""The runtime, allocator and device against a fake `Metal` module (tests/_fake_metal.py): argument binding, launch sizes,
command buffer batching, errors. The kernels do not execute; what the runtime asks Metal to do is checked."""
import struct, pytest
import _fake_metal
from tinygrad.device import CompileError, DeviceError
from tinygrad.dtype import dtypes
from tinygrad_metal import runtime
from tinygrad_metal.renderer import MetalRenderer
from tinygrad_metal.runtime import MetalProgram, threadgroup_for
from _metal_kernels import hand_kernels

@pytest.fixture
def fake(monkeypatch):
  mod = _fake_metal.make_module([_fake_metal.FakeDevice("Fake M1"), _fake_metal.FakeDevice("Fake eGPU")])
  monkeypatch.setitem(__import__("sys").modules, "Metal", mod)
  return mod

@pytest.fixture
def dev(fake):
  from tinygrad_metal.device import MetalDevice
  return MetalDevice("METAL")

def program(dev, name="add"):
  src = MetalRenderer().render(hand_kernels()[name], name)
  return MetalProgram(dev, name, src.encode()), src

def test_open_picks_framework_pair_and_devices(fake, dev):
  assert dev.compiler_name == "METAL" and dev.compiler is None and isinstance(dev.renderer, MetalRenderer)
  assert dev.mtl.name() == "Fake M1" and len(dev.mtl.queues) == 1
  from tinygrad_metal.device import MetalDevice
  assert MetalDevice("METAL:1").mtl.name() == "Fake eGPU"
  with pytest.raises(DeviceError, match="no Metal device METAL:5"): MetalDevice("METAL:5")

def test_open_refuses_gpu_without_nonuniform_threadgroups(monkeypatch):
  monkeypatch.setitem(__import__("sys").modules, "Metal", _fake_metal.make_module([_fake_metal.FakeDevice("Old", families=(2001,))]))
  from tinygrad_metal.device import MetalDevice
  with pytest.raises(DeviceError, match="non-uniform threadgroups"): MetalDevice("METAL")

def test_tensor_cores_only_on_gpus_with_simdgroup_matrix(monkeypatch, dev):
  assert [t.dtype_in for t in dev.renderer.tensor_cores] == [dtypes.float, dtypes.half, dtypes.half]   # Mac2
  monkeypatch.setitem(__import__("sys").modules, "Metal", _fake_metal.make_module([_fake_metal.FakeDevice("A13", families=(1004,))]))
  from tinygrad_metal.device import MetalDevice
  assert MetalDevice("METAL").renderer.tensor_cores == [] and MetalRenderer.tensor_cores   # Apple4 (A11-A13) has no simdgroup_matrix

def test_allocator_shared_storage_round_trip(dev):
  a = dev.allocator.alloc(16)
  dev.allocator.copyin(a, memoryview(bytes(range(16))))
  out = bytearray(16)
  dev.allocator.copyout(memoryview(out), a)
  assert out == bytes(range(16)) and a.offset == 0 and a.buf.length() == 16
  assert dev.allocator.alloc(0).buf.length() == 1   # Metal refuses empty buffers
  dev.mtl.alloc_limit = 100
  with pytest.raises(MemoryError, match="requested 1000 bytes"): dev.allocator.alloc(1000)

def test_load_compiles_source_without_fast_math(dev):
  p, src = program(dev)
  lib = dev.mtl.libraries[-1]
  assert lib.src == src and lib.opts.fast_math is False and p.max_threads == 1024
  with pytest.raises(CompileError, match="Metal failed to compile k.*bad kernel") as e: MetalProgram(dev, "k", b"#error\n")
  assert e.value.src == "#error\n"
  with pytest.raises(RuntimeError, match="no kernel named other"): MetalProgram(dev, "other", src.encode())

def test_launch_binds_buffers_then_packed_vars(dev):
  p, src = program(dev, "two_vars")
  bufs = [dev.allocator.alloc(256) for _ in range(2)]
  bufs[1].offset = 64
  p(*bufs, global_size=(8, 1, 1), local_size=None, vals=(5, -3))
  enc = dev.mtl.queues[0].buffers[-1].encoders[-1]
  assert enc.bufs == {0: (bufs[0].buf, 0), 1: (bufs[1].buf, 64)}
  assert enc.bytes == {2: struct.pack("<i", 5), 3: struct.pack("<i", -3)}
  # the kernel reads its variables at exactly those indices (sorted by name: a then b)
  assert "constant int& var_a [[buffer(2)]]" in src and "constant int& var_b [[buffer(3)]]" in src

def test_launch_sizes(dev):
  p, _ = program(dev)
  b = [dev.allocator.alloc(64) for _ in range(3)]
  p(*b, global_size=(5000, 7, 1), local_size=None)
  assert dev.mtl.queues[0].buffers[-1].encoders[-1].dispatch == ("threads", (5000, 7, 1), (1024, 1, 1))
  p(*b, global_size=(4, 2, 1), local_size=(16, 8, 1))
  assert dev.mtl.queues[0].buffers[-1].encoders[-1].dispatch == ("groups", (4, 2, 1), (16, 8, 1))
  with pytest.raises(RuntimeError, match=r"local size \(64, 32, 1\) \(2048 threads\) exceeds this pipeline's 1024"):
    p(*b, global_size=(1, 1, 1), local_size=(64, 32, 1))

@pytest.mark.parametrize("grid", [(1, 1, 1), (3, 5, 7), (100, 100, 3), (2000, 1, 1), (1, 2000, 9), (7, 1, 4096), (33, 33, 33)])
@pytest.mark.parametrize("mx", [32, 256, 1024])
def test_threadgroup_for_fits(grid, mx):
  t = threadgroup_for(grid, mx)
  assert all(1 <= ti <= gi for ti, gi in zip(t, grid)) and t[0] * t[1] * t[2] <= mx
  assert t[0] == min(grid[0], mx)   # x is filled first: consecutive threads touch consecutive memory

def test_batching_and_synchronize(dev, monkeypatch):
  monkeypatch.setattr("tinygrad_metal.device.METAL_BATCH", 3)
  p, _ = program(dev)
  b = [dev.allocator.alloc(64) for _ in range(3)]
  q = dev.mtl.queues[0]
  for _ in range(8): p(*b, global_size=(16, 1, 1))
  # the first commits at once (idle GPU), then batches of 3 while the GPU is busy; one left open
  assert [len(cb.encoders) for cb in q.buffers] == [1, 3, 3, 1] and [cb.committed for cb in q.buffers] == [True, True, True, False]
  dev.synchronize()
  assert all(cb.committed and cb.waited for cb in q.buffers) and dev.in_flight == [] and dev.open_cb is None

def test_copies_wait_for_kernels(dev):
  p, _ = program(dev)
  b = [dev.allocator.alloc(64) for _ in range(3)]
  p(*b, global_size=(16, 1, 1))
  p(*b, global_size=(16, 1, 1))
  dev.allocator.copyout(memoryview(bytearray(64)), b[0])
  assert all(cb.waited for cb in dev.mtl.queues[0].buffers)

def test_wait_times_one_kernel_on_gpu_clock(dev):
  p, _ = program(dev)
  b = [dev.allocator.alloc(64) for _ in range(3)]
  p(*b, global_size=(16, 1, 1))
  p(*b, global_size=(16, 1, 1))   # open, behind the first
  t = p(*b, global_size=(16, 1, 1), wait=True)
  assert t == pytest.approx(0.25)
  assert [len(cb.encoders) for cb in dev.mtl.queues[0].buffers] == [1, 1, 1]   # timed alone, after the pending one

def test_failed_command_buffer_names_its_kernels(dev):
  p, _ = program(dev)
  b = [dev.allocator.alloc(64) for _ in range(3)]
  dev.mtl.fail = True
  p(*b, global_size=(16, 1, 1))
  with pytest.raises(RuntimeError, match="kernels add failed: Execution of the command buffer was aborted"): dev.synchronize()

def test_tensor_through_the_registry(fake, monkeypatch):
  """Device["METAL"] through plugin discovery: a Tensor program is scheduled, rendered, loaded and launched (not run)."""
  from tinygrad import Tensor, Device
  monkeypatch.setattr("tinygrad_metal.plugin.probe", lambda: (True, ""))
  Device.reset()
  try:
    t = (Tensor([1.0, 2.0, 3.0], device="METAL") * 2).realize()
    dev = Device["METAL"]
    encs = [e for cb in dev.mtl.queues[0].buffers for e in cb.encoders]
    assert len(encs) == 1 and encs[0].dispatch == ("threads", (3, 1, 1), (3, 1, 1))
    assert "kernel void E_3(device float* data0 [[buffer(0)]], device float* data1 [[buffer(1)]]" in dev.mtl.libraries[-1].src
    assert t.dtype == dtypes.float32
  finally: Device.reset()
