"""Device registry, compiler-pair selection, Buffer and allocators, with fake devices registered by an in-process plugin."""
import gc
import pytest
from plugin_isolation import environment_plugins
from tinygrad import plugins
from tinygrad.plugins import hookimpl, DeviceSpec, API_VERSION
from tinygrad.device import (Device, DeviceError, Compiled, Compiler, CompileError, CompilerPair, CompilerSet, Allocator,
                             LRUAllocator, Buffer, select_compiler)
from tinygrad.renderer import Renderer
from tinygrad.dtype import dtypes

ENV = ["DEV", "FAKE_CC", "FAKE_A", "FAKE_B", "FAKE_C", "TINYGRAD_DEVICE_PROVIDER_FAKE", "TINYGRAD_PLUGIN_AUTOLOAD", "TINYGRAD_PLUGINS_DISABLE"]

class ARenderer(Renderer): pass
class BRenderer(Renderer): pass
class CRenderer(Renderer): pass
class GoodCompiler(Compiler): pass
class MissingCompiler(Compiler):
  def __init__(self): raise FileNotFoundError("fakecc: not found on PATH")

class HostAllocator(LRUAllocator):
  def _alloc(self, size, options): return memoryview(bytearray(size))
  def copyin(self, dest, src): dest[:] = src
  def copyout(self, dest, src): dest[:] = src
  def _as_buffer(self, opaque): return opaque

# what FakeDevice offers; tests replace it
PAIRS: list = []
OPENED: list = []

class FakeDevice(Compiled):
  def __init__(self, device: str):
    OPENED.append(device)
    super().__init__(device, HostAllocator(), CompilerSet(list(PAIRS), "FAKE_CC"), lambda name, lib: None)

class NotADevice:
  def __init__(self, device): pass

class FakePlugin:
  def __init__(self, devices, compilers=None, api=API_VERSION): self.devices, self.compilers, self.api = devices, compilers or {}, api
  @hookimpl
  def tinygrad_api_version(self): return self.api
  @hookimpl
  def tinygrad_devices(self): return self.devices
  @hookimpl
  def tinygrad_compilers(self, device): return self.compilers.get(device, [])

def fake_spec(name="FAKE", priority=10, probe=None, cls="FakeDevice"): return DeviceSpec(name, priority, f"{__name__}:{cls}", probe)
def probe_no(): return False, "no fake hardware in this machine"

@pytest.fixture(autouse=True)
def fresh(monkeypatch):
  for v in ENV: monkeypatch.delenv(v, raising=False)
  monkeypatch.setenv("TINYGRAD_PLUGINS_DISABLE", ",".join(environment_plugins()))   # only this test's plugins
  PAIRS[:] = [CompilerPair(ARenderer, GoodCompiler, ctrl_var="FAKE_A"), CompilerPair(BRenderer, GoodCompiler, ctrl_var="FAKE_B")]
  OPENED.clear()
  Device.reset()
  plugins.register(FakePlugin([fake_spec()]), "fake", "tinygrad-fake")
  yield
  Device.reset()

# ---- compiler-pair selection ----
def test_pair_names_derived_from_renderer():
  assert [p.name for p in PAIRS] == ["A", "B"]
  assert CompilerPair(lambda: ARenderer(), name="X").name == "X"

def test_first_pair_that_initialises():
  dev = Device["FAKE"]
  assert (dev.compiler_name, type(dev.renderer), type(dev.compiler)) == ("A", ARenderer, GoodCompiler)
  assert dev.renderer.compiler is dev.compiler

def test_failing_pair_skipped_with_reason():
  PAIRS.insert(0, CompilerPair(CRenderer, MissingCompiler))
  dev = Device["FAKE"]
  assert dev.compiler_name == "A"
  assert "fakecc: not found" in dev.compiler_errors["C"]

def test_set_ctrl_var_forces_by_name(monkeypatch):
  monkeypatch.setenv("FAKE_CC", "b")   # case-insensitive
  assert Device["FAKE"].compiler_name == "B"

def test_device_string_forces_pair():
  dev = Device["fake:b"]
  assert dev.compiler_name == "B" and dev.device == "FAKE:B"
  assert OPENED == ["FAKE"]            # the device class never sees the compiler part
  assert Device["FAKE"] is not dev and Device["FAKE"].compiler_name == "A"
  assert Device["FAKE:B"] is dev       # opened once per canonical name

def test_index_and_compiler_reach_the_device():
  dev = Device["FAKE:1:B"]
  assert OPENED == ["FAKE:1"] and dev.device == "FAKE:1:B" and dev.compiler_name == "B"

def test_unknown_compiler_name_lists_valid(monkeypatch):
  monkeypatch.setenv("FAKE_CC", "ZZZ")
  with pytest.raises(DeviceError, match=r"unknown compiler 'ZZZ' for device FAKE \(from FAKE_CC=ZZZ\); valid: A, B"): Device["FAKE"]
  monkeypatch.delenv("FAKE_CC")
  with pytest.raises(DeviceError, match=r"unknown compiler 'QQ'.*valid: A, B"): Device["FAKE:QQ"]

def test_pair_ctrl_var_one_forces(monkeypatch):
  monkeypatch.setenv("FAKE_B", "1")
  assert Device["FAKE"].compiler_name == "B"

def test_pair_ctrl_var_zero_skips(monkeypatch):
  monkeypatch.setenv("FAKE_A", "0")
  dev = Device["FAKE"]
  assert dev.compiler_name == "B" and "FAKE_A=0" in dev.compiler_errors["A"]

def test_set_ctrl_var_beats_pair_ctrl_var(monkeypatch):
  monkeypatch.setenv("FAKE_B", "1")
  monkeypatch.setenv("FAKE_CC", "A")
  assert Device["FAKE"].compiler_name == "A"

def test_forced_pair_that_fails_is_an_error(monkeypatch):
  PAIRS.append(CompilerPair(CRenderer, MissingCompiler, ctrl_var="FAKE_C"))
  monkeypatch.setenv("FAKE_C", "1")
  with pytest.raises(DeviceError, match=r"compiler C for device FAKE \(selected by FAKE_C=1\) failed to initialise: FileNotFoundError: fakecc"):
    Device["FAKE"]

def test_no_pair_initialises_names_all():
  PAIRS[:] = [CompilerPair(ARenderer, MissingCompiler), CompilerPair(BRenderer, MissingCompiler)]
  with pytest.raises(DeviceError, match=r"no compiler for device FAKE initialises: A: FileNotFoundError: fakecc.*; B: FileNotFoundError"):
    Device["FAKE"]

def test_renderer_factory_must_return_renderer():
  with pytest.raises(DeviceError, match="compiler O for device X .* TypeError: renderer factory returned object, not a Renderer"):
    select_compiler("X", [CompilerPair(lambda: object(), name="O")], None, "O")

def test_extra_pairs_from_other_plugin_appended_and_selectable(monkeypatch):
  plugins.register(FakePlugin([], {"FAKE": [CompilerPair(CRenderer, GoodCompiler, name="EXTRA")]}), "extra", "tinygrad-extra")
  dev = Device["FAKE"]
  assert [p.name for p in dev.compiler_pairs] == ["A", "B", "EXTRA"] and dev.compiler_name == "A"
  monkeypatch.setenv("FAKE_CC", "extra")
  Device.reset()
  plugins.register(FakePlugin([fake_spec()]), "fake", "tinygrad-fake")
  plugins.register(FakePlugin([], {"FAKE": [CompilerPair(CRenderer, GoodCompiler, name="EXTRA")]}), "extra", "tinygrad-extra")
  assert Device["FAKE"].compiler_name == "EXTRA" and isinstance(Device["FAKE"].renderer, CRenderer)

def test_raising_compilers_hook_is_skipped():
  class Bad(FakePlugin):
    @hookimpl
    def tinygrad_compilers(self, device): raise RuntimeError("boom")
  plugins.register(Bad([]), "bad")
  with pytest.warns(RuntimeWarning, match="boom"): assert Device["FAKE"].compiler_name == "A"

# ---- device names, errors, default ----
@pytest.mark.parametrize("raw,canon", [("cpu", "CPU"), ("NV:0", "NV"), ("nv:1", "NV:1"), ("nv:1:ptx", "NV:1:PTX"), ("CPU:llvm", "CPU:LLVM"),
                                       ("nv:0:ptx", "NV:PTX"), (" Fake ", "FAKE")])
def test_canonicalize(raw, canon): assert Device.canonicalize(raw) == canon

@pytest.mark.parametrize("bad", ["", ":1", "NV:1:PTX:X", "NV::", "N-V"])
def test_bad_device_string(bad):
  with pytest.raises(DeviceError, match="bad device name"): Device.canonicalize(bad)

def test_unknown_device_message():
  with pytest.raises(DeviceError) as e: Device["FAK"]
  msg = str(e.value)
  assert "unknown device 'FAK'" in msg and "installed: FAKE, PYTHON, NULL" in msg and "did you mean 'FAKE'" in msg
  # the install hint for a first-party device whose plugin this environment lacks
  from tinygrad.device import FIRST_PARTY
  absent = [n for n, dist in FIRST_PARTY.items() if n.lower() not in environment_plugins()]
  if not absent: pytest.skip("every first-party plugin is installed here: no device to show the install hint for")
  name = absent[0]
  with pytest.raises(DeviceError, match=rf"unknown device '{name}'.*for {name}: pip install {FIRST_PARTY[name]}"): Device[f"{name.lower()}:1"]

def test_not_a_compiled_subclass():
  plugins.register(FakePlugin([fake_spec("ODD", cls="NotADevice")]), "odd")
  with pytest.raises(DeviceError, match="not a tinygrad.device.Compiled subclass"): Device["ODD"]

def test_import_error_of_device_class_names_plugin():
  plugins.register(FakePlugin([DeviceSpec("GONE", 1, "no_such_module_xyz:Dev")]), "gone", "tinygrad-gone")
  with pytest.raises(DeviceError, match=r"device GONE from plugin 'gone' \(distribution tinygrad-gone\): cannot import no_such_module_xyz:Dev"):
    Device["GONE"]

def test_probe_string_and_failure():
  plugins.register(FakePlugin([fake_spec("PROBED", probe=f"{__name__}:probe_no")]), "probed")
  with pytest.raises(DeviceError, match="device PROBED .* is not available here: no fake hardware"): Device["PROBED"]
  plugins.register(FakePlugin([fake_spec("RAISES", probe=lambda: 1/0)]), "raises")
  with pytest.raises(DeviceError, match="probe raised ZeroDivisionError"): Device["RAISES"]

def test_default_env(monkeypatch):
  monkeypatch.setenv("DEV", "fake:b")
  assert Device.DEFAULT == "FAKE:B" and Device[Device.DEFAULT].compiler_name == "B"
  Device.reset()
  monkeypatch.setenv("DEV", "NVV")
  with pytest.raises(DeviceError, match="unknown device 'NVV'"): Device.DEFAULT

def test_default_by_priority_skips_unavailable():
  plugins.register(FakePlugin([fake_spec("TOP", 100, probe=probe_no), fake_spec("MID", 50), fake_spec("NEVER", -1)]), "more")
  assert Device.DEFAULT == "MID"
  assert "TOP: not available (no fake hardware in this machine)" in Device.default_reason
  assert Device.get_available_devices()[:2] == ["MID", "FAKE"] and "NEVER" not in Device.get_available_devices()

def test_default_explicit_compiler_failure_is_fatal(monkeypatch):
  monkeypatch.setenv("FAKE_CC", "ZZZ")   # the user asked for FAKE's compiler ZZZ: no silent fallback to another device
  with pytest.raises(DeviceError, match="unknown compiler 'ZZZ' for device FAKE"): Device.DEFAULT
  assert "FAKE" not in Device.get_available_devices()

def test_default_settable():
  Device.DEFAULT = "fake:1"
  assert Device.DEFAULT == "FAKE:1"
  assert Device.default is Device["FAKE:1"]   # public tinygrad's Device.default: the default device itself

def test_negative_priority_never_default():
  Device.reset()
  plugins.register(FakePlugin([fake_spec("NEVER", -1)]), "never")
  # PYTHON may not be importable yet in this tree; either way NEVER must not be chosen
  try: assert Device.DEFAULT != "NEVER"
  except DeviceError as e: assert "NEVER" not in str(e)

def test_duplicate_device_priority_and_provider_env(monkeypatch):
  class Other(FakeDevice): pass
  globals()["OtherDevice"] = Other
  plugins.register(FakePlugin([fake_spec("FAKE", 20, cls="OtherDevice")]), "fake2", "tinygrad-fake2")
  assert type(Device["FAKE"]) is Other   # priority 20 beats 10
  Device._opened.clear()
  monkeypatch.setenv("TINYGRAD_DEVICE_PROVIDER_FAKE", "tinygrad_fake")
  assert type(Device["FAKE"]) is FakeDevice
  Device._opened.clear()
  monkeypatch.setenv("TINYGRAD_DEVICE_PROVIDER_FAKE", "nobody")
  with pytest.raises(DeviceError, match=r"TINYGRAD_DEVICE_PROVIDER_FAKE='nobody' names no provider of FAKE; providers: tinygrad-fake, tinygrad-fake2"):
    Device["FAKE"]

def test_failed_plugin_fatal_only_when_asked():
  def boom(): raise ImportError("libfoo.so: cannot open shared object file")
  with pytest.warns(RuntimeWarning, match="libfoo.so"):
    info = plugins.registry().add(plugins.PluginInfo("foo", "tinygrad_foo.plugin", "tinygrad-foo", "1.0"), boom)
  assert info.status == "failed" and "libfoo.so" in info.error
  assert Device["FAKE"].compiler_name == "A"   # other devices unaffected
  with pytest.raises(DeviceError, match=r"device FOO is provided by plugin 'foo' \(distribution tinygrad-foo\), which is failed: .*libfoo.so") as e:
    Device["FOO"]
  assert isinstance(e.value.__cause__, ImportError)

def test_incompatible_api_refused():
  with pytest.warns(RuntimeWarning, match="declares plugin API version 99"):
    info = plugins.register(FakePlugin([fake_spec("NEW")], api=99), "new", "tinygrad-new")
  assert info.status == "incompatible" and info.devices == ["NEW"]
  with pytest.raises(DeviceError, match="declares plugin API version 99, but this tinygrad-core supports API version 1"): Device["NEW"]

def test_missing_api_version_refused():
  class NoApi:
    @hookimpl
    def tinygrad_devices(self): return [fake_spec("NOAPI")]
  with pytest.warns(RuntimeWarning, match="does not implement tinygrad_api_version"): info = plugins.register(NoApi(), "noapi")
  assert info.status == "incompatible"

def test_misspelt_hook_refused():
  class Typo(FakePlugin):
    @hookimpl
    def tinygrad_device(self): return []
  with pytest.warns(RuntimeWarning, match="tinygrad_device"): info = plugins.register(Typo([]), "typo")
  assert info.status == "failed" and "FAKE" in plugins.registry().candidates

# ---- Buffer and allocators ----
def test_buffer_roundtrip_and_accounting():
  alloc = Device["FAKE"].allocator
  b = Buffer("FAKE", 4, dtypes.int32, initial_value=bytes(range(16)))
  assert b.is_allocated() and b.nbytes == 16 and b.allocator is alloc and alloc.mem_used == 16
  out = memoryview(bytearray(16))
  assert bytes(b.copyout(out)) == bytes(range(16))
  assert b.as_buffer().obj is b._buf.obj     # zero-copy host view
  with pytest.raises(ValueError, match="copyin of 3 bytes"): b.copyin(memoryview(b"abc"))
  b.deallocate()
  assert not b.is_allocated() and alloc.mem_used == 0 and alloc.cache_bytes == 16

def test_buffer_freed_after_reset_does_not_reopen():
  b = Buffer("FAKE", 4, dtypes.uint8).allocate()
  alloc = b.allocator
  Device.reset()
  b.deallocate()
  assert alloc.cache_bytes == 4 and OPENED == ["FAKE"]

def test_buffer_external_opaque_not_freed():
  alloc = Device["FAKE"].allocator
  mine = memoryview(bytearray(8))
  b = Buffer("FAKE", 2, dtypes.float32, opaque=mine)
  assert b._buf is mine
  b.deallocate()
  assert alloc.cache_bytes == 0

def test_buffer_freed_in_a_reference_cycle_caches_a_live_handle():
  # a handle with a finalizer of its own (wgpu's GPUBuffer releases itself in __del__): a Buffer freed by the cyclic GC (a
  # traceback's frame holding a tensor) took its handle into the cycle, the GC ran both finalizers, and the cache handed
  # the released handle to the next buffer of that size (WEBGPU aborted in create_bind_group)
  class Handle:
    alive = True
    def __del__(self): self.alive = False
  class HandleAllocator(LRUAllocator):
    def _alloc(self, size, options): return Handle()
    def _free(self, opaque, size, options): pass
  Device["FAKE"].allocator = alloc = HandleAllocator("FAKE")
  cycle: list = [Buffer("FAKE", 4, dtypes.float32).allocate()]
  cycle.append(cycle)
  del cycle
  gc.collect()
  assert alloc.cache_bytes == 16 and alloc.mem_used == 0
  assert Buffer("FAKE", 4, dtypes.float32).allocate()._buf.alive, "the cache handed out a handle its finalizer had released"

def test_buffer_memory_freed_once():
  # a Buffer's memory goes back to its allocator (and GlobalCounters) exactly once: when it dies, or at deallocate() and
  # never again when it then dies; a Buffer holding a caller's handle frees nothing
  from tinygrad.helpers import GlobalCounters
  alloc = Device["FAKE"].allocator
  used, cached = GlobalCounters.mem_used, alloc.cache_bytes
  b = Buffer("FAKE", 4, dtypes.float32).allocate()
  assert GlobalCounters.mem_used == used + 16 and alloc.mem_used >= 16
  del b
  assert GlobalCounters.mem_used == used and alloc.cache_bytes == cached + 16
  b = Buffer("FAKE", 4, dtypes.float32).allocate()   # (the cached handle)
  b.deallocate()
  assert not b.is_allocated() and GlobalCounters.mem_used == used and alloc.cache_bytes == cached + 16
  del b
  assert GlobalCounters.mem_used == used and alloc.cache_bytes == cached + 16, "a deallocated Buffer freed its memory again when it died"
  b = Buffer("FAKE", 4, dtypes.float32, opaque=memoryview(bytearray(16)))
  del b
  assert GlobalCounters.mem_used == used and alloc.cache_bytes == cached + 16

def test_as_buffer_copies_without_host_view():
  class CopyOnly(Allocator):
    def _alloc(self, size, options): return bytearray(size)
    def copyin(self, dest, src): dest[:] = src
    def copyout(self, dest, src): dest[:] = src
  dev = Device["FAKE"]
  dev.allocator = CopyOnly()
  b = Buffer("FAKE", 3, dtypes.uint8, initial_value=b"xyz")
  assert bytes(b.as_buffer()) == b"xyz" and b.as_buffer().obj is not b._buf

class CountingAllocator(LRUAllocator):
  def __init__(self, capacity, cache_limit=1 << 30):
    super().__init__("TEST", cache_limit)
    self.capacity, self.live, self.allocs, self.frees = capacity, 0, 0, 0
  def _alloc(self, size, options):
    if self.live + size > self.capacity: raise MemoryError("device full")
    self.live += size
    self.allocs += 1
    return bytearray(size)
  def _free(self, opaque, size, options):
    self.live -= size
    self.frees += 1

def test_lru_reuse_by_size_and_options():
  a = CountingAllocator(1000)
  x = a.alloc(100)
  a.free(x, 100)
  assert a.alloc(100) is x and a.allocs == 1
  y = a.alloc(100, options="host")
  assert y is not x and a.allocs == 2   # different options: not the cached one
  a.free(y, 100, options="host")
  assert a.cache_bytes == 100 and a.mem_used == 100

def test_lru_free_cache_and_limit():
  a = CountingAllocator(1000, cache_limit=150)
  bufs = [a.alloc(100) for _ in range(3)]
  for b in bufs: a.free(b, 100)
  assert a.cache_bytes == 100 and a.frees == 2    # limit 150: two evicted
  a.free_cache()
  assert a.cache_bytes == 0 and a.live == 0 and a.frees == 3

def test_lru_oom_frees_cache_and_retries_once():
  a = CountingAllocator(300)
  x, y = a.alloc(100), a.alloc(100)
  a.free(x, 100)
  a.free(y, 100)
  z = a.alloc(250)      # fails while 200 are cached, succeeds after free_cache
  assert a.cache_bytes == 0 and a.live == 250 and z is not None

def test_lru_oom_clear_error():
  a = CountingAllocator(300)
  a.alloc(200)
  with pytest.raises(MemoryError, match=r"out of memory on TEST: requested 200 bytes, 200 bytes in use") as e: a.alloc(200)
  assert "device full" in str(e.value.__cause__)

def test_compiled_fills_allocator_device():
  assert Device["FAKE:1"].allocator.device == "FAKE:1"

def test_compile_error_message():
  e = CompileError("error: expected ';'", "int main() {\n  return 0\n}")
  assert "expected ';'" in str(e) and "   2 |   return 0" in str(e) and e.src.startswith("int main")

def test_python_device_out_of_memory_says_what_was_asked_and_what_the_host_has():
  from tinygrad import Tensor, dtypes
  with pytest.raises(MemoryError, match=r"out of memory on PYTHON: requested 1125899906842624 bytes \(1048576.0 GiB\), the host has .* free"):
    Tensor.empty(2**50, dtype=dtypes.uint8, device="PYTHON").realize()

def test_count_defaults_to_one_device():
  # public tinygrad's Device[d].count() (its test helpers call it): a device that does not override it has one
  from tinygrad import Device
  assert Device["PYTHON"].count() == 1
