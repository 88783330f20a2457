"""Per-device abilities: a renderer is constructed for a device (its work-group limits, local memory, vector widths, dtypes);
the class attributes stay the defaults, the optimizer reads the instance, and the compile-cache key includes them, so two
devices with different limits never share a cached binary. Fake devices run kernels with the PYTHON interpreter."""
import pickle
import numpy as np
import pytest
from tinygrad import Tensor, Device
from tinygrad import plugins
from tinygrad.uop import Ops
from tinygrad.helpers import Context, prod
from tinygrad.device import Compiled, CompilerSet, CompilerPair, Compiler
from tinygrad.plugins import hookimpl, DeviceSpec, API_VERSION
from tinygrad.runtime.python import PythonRenderer, PythonAllocator, PythonProgram
from tinygrad.plugin_api import render
from plugin_isolation import environment_plugins

COMPILES: list[str] = []
class CountingCompiler(Compiler):
  def __init__(self) -> None: super().__init__(cachekey="test_device_abilities")
  def compile(self, src: str) -> bytes:
    COMPILES.append(src)
    return src.encode()

LIMITS = {"SMALLGPU": {"local_max": (16, 16, 16), "local_total_max": 32, "shared_max": 1024},
          "SMALLTWIN": {"local_max": (16, 16, 16), "local_total_max": 32, "shared_max": 1024},
          "BIGGPU": {}, "EXPGPU": {"exp_via_exp2": True}}

class LimitedDevice(Compiled):
  """A GPU-like device whose limits are known only when it opens (here: from LIMITS, as a driver query would give them)."""
  def __init__(self, device: str):
    pairs = [CompilerPair(PythonRenderer, CountingCompiler, name="PY")]
    super().__init__(device, PythonAllocator(), CompilerSet(pairs), PythonProgram, abilities=LIMITS[device.split(":")[0]])

class LimitsPlugin:
  @hookimpl
  def tinygrad_api_version(self): return API_VERSION
  @hookimpl
  def tinygrad_devices(self): return [DeviceSpec(n, -1, f"{__name__}:LimitedDevice") for n in LIMITS]

@pytest.fixture(autouse=True)
def limited_devices(monkeypatch, tmp_path):
  monkeypatch.setenv("TINYGRAD_PLUGINS_DISABLE", ",".join(environment_plugins()))
  monkeypatch.setenv("CACHEDB", str(tmp_path / "cache.db"))
  monkeypatch.delenv("EMULATE", raising=False)
  COMPILES.clear()
  Device.reset()
  plugins.register(LimitsPlugin(), "limits", "tinygrad-limits")
  yield
  Device.reset()
  plugins.reset()

def test_renderer_abilities_are_per_instance():
  r = PythonRenderer(local_max=(8, 8, 8), local_total_max=8, shared_max=512)
  assert (r.local_max, r.threads_max, r.shared_max) == ((8, 8, 8), 8, 512)
  assert PythonRenderer.local_max == PythonRenderer().local_max == (1024, 1024, 64), "the class attributes stay the defaults"
  assert PythonRenderer().threads_max == 1024
  assert pickle.loads(pickle.dumps(r)).local_total_max == 8, "a pickled renderer (process pools) keeps its device's limits"
  assert r.ability_key() != PythonRenderer().ability_key()
  with pytest.raises(TypeError, match="unknown abilities.*local_maxx.*valid: has_local"): PythonRenderer(local_maxx=(1,))

def test_device_abilities_reach_the_selected_renderer():
  small, big = Device["SMALLGPU"].renderer, Device["BIGGPU"].renderer
  assert (small.local_max, small.local_total_max, small.shared_max) == ((16, 16, 16), 32, 1024)
  assert (big.local_max, big.local_total_max) == (PythonRenderer.local_max, None)

@pytest.mark.parametrize("build", [lambda d: Tensor.empty(4096, device=d).sum(),                    # GROUP: threads share a reduce
                                   lambda d: Tensor.empty(256, 64, device=d) @ Tensor.empty(64, 256, device=d)],   # the LOCAL tile
                         ids=["reduce", "matmul"])
def test_heuristics_fit_the_device_limits(build):
  threads = {}
  for dev in ("SMALLGPU", "BIGGPU"):
    p = render(build(dev), Device[dev].renderer)   # opts=None: the heuristics this device would run
    threads[dev] = prod(p.local_size) if p.local_size is not None else 1
  assert threads["SMALLGPU"] <= 32 < threads["BIGGPU"], f"threads per work-group {threads}: the heuristics ignored SMALLGPU's limit"
  assert threads["SMALLGPU"] > 1, "the heuristics should still use the threads SMALLGPU has"

def test_kernels_on_a_limited_device_are_correct():
  rng = np.random.default_rng(0)
  a, b = rng.standard_normal((64, 48)).astype(np.float32), rng.standard_normal((48, 40)).astype(np.float32)
  out = (Tensor(a, device="SMALLGPU") @ Tensor(b, device="SMALLGPU")).numpy()
  np.testing.assert_allclose(out, a @ b, rtol=1e-5, atol=1e-5)
  np.testing.assert_allclose(Tensor(a, device="SMALLGPU").sum(1).numpy(), a.sum(1), rtol=1e-5, atol=1e-5)

def test_devices_with_different_limits_never_share_a_cached_binary():
  src = "the same source text"
  with Context(CACHELEVEL=2):
    Device["SMALLGPU"].compiler.compile_cached(src)
    Device["BIGGPU"].compiler.compile_cached(src)
    assert len(COMPILES) == 2, "BIGGPU reused the binary compiled for SMALLGPU's limits"
    Device["SMALLTWIN"].compiler.compile_cached(src)
    assert len(COMPILES) == 2, "a device with the same limits should hit the cache"

def test_exp_can_use_the_renderers_exp2():
  torch = pytest.importorskip("torch", reason="torch is the test reference: pip install torch")
  x = np.concatenate([np.linspace(-100, 88, 4001), [0.0, 1e-8, -1e-8, np.inf, -np.inf, np.nan]]).astype(np.float32)
  def uses_exp2(dev: str) -> bool:
    return any(u.op is Ops.EXP2 for u in render(Tensor.empty(16, device=dev).exp(), Device[dev].renderer, opts=[]).uops or [])
  assert uses_exp2("EXPGPU") and not uses_exp2("BIGGPU"), "exp_via_exp2 should switch exp from the polynomial to EXP2"
  got, want = Tensor(x, device="EXPGPU").exp().numpy(), torch.exp(torch.tensor(x)).numpy()
  np.testing.assert_allclose(got, want, rtol=2e-6, atol=0)
