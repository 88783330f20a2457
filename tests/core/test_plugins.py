"""Plugin discovery with real, pip-installed third-party distributions, each checked in a fresh process."""
import os, sys, json, shutil, subprocess, textwrap, importlib.util
from pathlib import Path
import pytest
from plugin_isolation import environment_plugins, hermetic_env, without_environment_plugins

CORE = str(Path(__file__).resolve().parents[2] / "core")

PYPROJECT = """\
[build-system]
requires = ["setuptools>=61"]
build-backend = "setuptools.build_meta"
[project]
name = "{dist}"
version = "{version}"
[project.entry-points."tinygrad.plugins"]
{ep} = "{pkg}.plugin"
[tool.setuptools]
packages = ["{pkg}"]
"""

HOOK_HEAD = """\
from tinygrad.plugins import hookimpl, DeviceSpec, API_VERSION
@hookimpl
def tinygrad_api_version(): return API_VERSION
"""

PACKAGES = {
  # a third-party device FOO: host-memory allocator, its own renderer/compiler, a trivial Python runtime
  "tinygrad-foo": ("foo", "tinygrad_foo", "0.3.1", {
    "plugin.py": HOOK_HEAD + """
import os
@hookimpl
def tinygrad_devices(): return [DeviceSpec("FOO", 50, "tinygrad_foo.device:FooDevice", "tinygrad_foo.plugin:probe")]
def probe(): return os.environ.get("FOO_ABSENT") != "1", "FOO_ABSENT=1: no FOO here"
""",
    "device.py": """
from tinygrad.device import Compiled, Compiler, CompilerPair, CompilerSet, LRUAllocator, Device
from tinygrad.renderer import Renderer
class FooAllocator(LRUAllocator):
  def _alloc(self, size, options): return memoryview(bytearray(size))
  def _as_buffer(self, opaque): return opaque
  def copyin(self, dest, src): dest[:] = src
  def copyout(self, dest, src): dest[:] = src
class FooRenderer(Renderer):
  device = "FOO"
  def render(self, uops): return "foo"
class FooCompiler(Compiler): pass
def foo_runtime(name, lib):
  def run(*bufs, global_size=(1, 1, 1), local_size=None, vals=(), wait=False): return 0.0 if wait else None
  return run
class FooDevice(Compiled):
  def __init__(self, device):
    pairs, runtime = [CompilerPair(FooRenderer, FooCompiler, ctrl_var="FOO_FOOC", name="FOOC")], foo_runtime
    try:   # FOO has no codegen of its own: it runs kernels with the built-in PYTHON device's renderer and runtime when present
      py = Device["PYTHON"]
      pairs.insert(0, CompilerPair(lambda: py.renderer, (lambda: py.compiler) if py.compiler is not None else None, name="PY"))
      runtime = py.runtime
    except Exception: pass
    super().__init__(device, FooAllocator(), CompilerSet(pairs, "FOO_CC"), runtime)
"""}),
  # adds a compiler pair to FOO, a device another plugin owns; its renderer module is imported only when selected
  "tinygrad-bar": ("bar", "tinygrad_bar", "1.0", {
    "plugin.py": HOOK_HEAD + """
from tinygrad.device import CompilerPair
def _renderer():
  from tinygrad_bar.renderer import BarRenderer
  return BarRenderer()
@hookimpl
def tinygrad_compilers(device): return [CompilerPair(_renderer, None, ctrl_var="FOO_BAR", name="BAR")] if device == "FOO" else []
""",
    "renderer.py": "from tinygrad.renderer import Renderer\nclass BarRenderer(Renderer): device = 'FOO'\n"}),
  "tinygrad-broken": ("broken", "tinygrad_broken", "0.1", {
    "plugin.py": "raise ImportError('tinygrad-broken needs libbroken.so, which is not installed')\n"}),
  "tinygrad-future": ("future", "tinygrad_future", "9.0", {
    "plugin.py": """
from tinygrad.plugins import hookimpl, DeviceSpec
@hookimpl
def tinygrad_api_version(): return 999
@hookimpl
def tinygrad_devices(): return [DeviceSpec("FUT", 5, "tinygrad_future.device:FutDevice")]
"""}),
}

def install_plugins(root: Path, packages: dict) -> str:
  """Write each package (pyproject + package) under root/src and pip-install them all into root/site; returns site."""
  site, src = root / "site", root / "src"
  dirs = []
  for dist, (ep, pkg, version, files) in packages.items():
    d = src / dist
    (d / pkg).mkdir(parents=True)
    (d / "pyproject.toml").write_text(PYPROJECT.format(dist=dist, version=version, ep=ep, pkg=pkg))
    (d / pkg / "__init__.py").write_text("")
    for name, text in files.items(): (d / pkg / name).write_text(textwrap.dedent(text))
    dirs.append(str(d))
  r = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation", "--no-index", "--target", str(site), *dirs],
                     capture_output=True, text=True)
  if r.returncode != 0 and "bdist_wheel" in r.stdout + r.stderr:
    # setuptools < 70.1 without the `wheel` package cannot build wheels: lay out what pip would have installed
    for dist, (ep, pkg, version, _) in packages.items():
      shutil.copytree(src / dist / pkg, site / pkg)
      info = site / f"{dist.replace('-', '_')}-{version}.dist-info"
      info.mkdir(parents=True)
      (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n")
      (info / "entry_points.txt").write_text(f"[tinygrad.plugins]\n{ep} = {pkg}.plugin\n")
      (info / "RECORD").write_text("")
  elif r.returncode != 0: raise RuntimeError(f"pip install failed:\n{r.stdout}\n{r.stderr}")
  return str(site)

@pytest.fixture(scope="module")
def site(tmp_path_factory) -> str: return install_plugins(tmp_path_factory.mktemp("plugins"), PACKAGES)

def run(site: str, code: str | None = None, args: tuple = (), **env: str) -> subprocess.CompletedProcess:
  """A cold process that sees the installed plugins and the core from this checkout."""
  e = {k: v for k, v in os.environ.items() if not k.startswith(("TINYGRAD_", "FOO_")) and k not in ("DEV", "PYTHONPATH")}
  e.update(PYTHONPATH=os.pathsep.join([site, CORE]), CACHEDB=os.path.join(site, "cache.db"), ENV_PLUGINS=",".join(environment_plugins()), **env)
  cmd = [sys.executable, "-c", textwrap.dedent(code)] if code is not None else [sys.executable, "-m", "tinygrad", *args]
  return subprocess.run(cmd, env=hermetic_env(e), capture_output=True, text=True, timeout=120)

def run_json(site: str, code: str, **env: str):
  r = run(site, code, **env)
  assert r.returncode == 0, r.stderr
  return json.loads(r.stdout.strip().splitlines()[-1])

def test_listing_shows_plugins_and_devices(site):
  r = run(site, args=("--json",))
  report = json.loads(r.stdout)
  plugins = {p["name"]: p for p in without_environment_plugins(report["plugins"])}
  assert plugins["foo"]["status"] == "ok" and plugins["foo"]["distribution"] == "tinygrad-foo" and plugins["foo"]["version"] == "0.3.1"
  assert plugins["foo"]["devices"] == ["FOO"] and plugins["bar"]["status"] == "ok"
  assert plugins["broken"]["status"] == "failed" and "libbroken.so" in plugins["broken"]["error"]
  assert plugins["future"]["status"] == "incompatible" and "999" in plugins["future"]["error"]
  assert "builtin" in plugins and plugins["builtin"]["devices"] == ["PYTHON", "NULL", "DISK"]
  devices = {d["name"]: d for d in report["devices"]}
  foo = devices["FOO"]
  assert foo["status"] == "ok" and foo["default"] and report["default_device"] == "FOO"
  names = [c["name"] for c in foo["compilers"]]
  assert names[-2:] == ["FOOC", "BAR"]   # the other plugin's pair comes after FOO's own
  bar = foo["compilers"][-1]
  assert "FOO_CC=BAR" in bar["select"] and "DEV=FOO:BAR" in bar["select"] and not bar["default"]
  assert sum(c["default"] for c in foo["compilers"]) == 1
  assert "FUT" not in devices and "tinygrad-broken" in r.stderr   # a warning names the failed plugin

def test_listing_human_readable(site):
  r = run(site, args=())
  assert "tinygrad-foo 0.3.1" in r.stdout and "FOO_CC=BAR or DEV=FOO:BAR to select" in r.stdout
  assert "incompatible" in r.stdout and "default device: FOO" in r.stdout

COMPILER_NAME = "from tinygrad.device import Device; import json; print(json.dumps(Device[Device.DEFAULT].compiler_name))"

@pytest.mark.parametrize("env", [{"FOO_CC": "BAR"}, {"FOO_CC": "bar"}, {"DEV": "FOO:bar"}, {"FOO_BAR": "1"}])
def test_other_plugins_pair_selectable(site, env):
  assert run_json(site, COMPILER_NAME, **env) == "BAR"

def test_own_pair_selectable_and_unknown_name_lists_valid(site):
  assert run_json(site, COMPILER_NAME, FOO_CC="FOOC") == "FOOC"
  r = run(site, COMPILER_NAME, FOO_CC="NOPE")
  assert r.returncode != 0 and "unknown compiler 'NOPE' for device FOO (from FOO_CC=NOPE); valid:" in r.stderr and "FOOC, BAR" in r.stderr

PYTHON_EXISTS = importlib.util.find_spec("tinygrad.runtime.python") is not None

def test_failed_plugin_isolated(site):
  out = run_json(site, """
    import json
    from tinygrad.device import Device, DeviceError
    res = {"foo": Device["FOO"].compiler_name}
    try: Device["PYTHON"]; res["python"] = "ok"
    except DeviceError as e: res["python"] = str(e)
    try: Device["BROKEN"]
    except DeviceError as e: res["broken"], res["cause"] = str(e), type(e.__cause__).__name__
    print(json.dumps(res))""")
  assert out["foo"] and "libbroken.so" in out["broken"] and out["cause"] == "ImportError"
  assert "plugin 'broken' (distribution tinygrad-broken)" in out["broken"]
  # the broken plugin never affects PYTHON: it opens, or fails only because its module is not written yet
  assert out["python"] == "ok" or (not PYTHON_EXISTS and "tinygrad.runtime.python" in out["python"])

def test_incompatible_api_refused_with_message(site):
  r = run(site, "from tinygrad.device import Device; Device['FUT']")
  assert r.returncode != 0
  assert "plugin 'future' (distribution tinygrad-future), which is incompatible: declares plugin API version 999" in r.stderr
  assert "supports API version 1" in r.stderr

STATUS = ("import json, os; from tinygrad import plugins; env = set(os.environ.get('ENV_PLUGINS', '').split(',')); "
          "print(json.dumps({p.name: p.status for p in plugins.registry().plugins if p.name not in env}))")

def test_plugins_disable(site):
  out = run_json(site, STATUS, TINYGRAD_PLUGINS_DISABLE="foo, tinygrad-bar")
  assert out["foo"] == "disabled" and out["bar"] == "disabled" and out["builtin"] == "ok" and out["broken"] == "failed"
  r = run(site, "from tinygrad.device import Device; Device['FOO']", TINYGRAD_PLUGINS_DISABLE="foo")
  assert "plugin 'foo' (distribution tinygrad-foo), which is disabled: listed in TINYGRAD_PLUGINS_DISABLE" in r.stderr

def test_autoload_off_loads_only_builtins(site):
  out = run_json(site, STATUS, TINYGRAD_PLUGIN_AUTOLOAD="0")
  assert out == {"builtin": "ok", "bar": "not loaded", "broken": "not loaded", "foo": "not loaded", "future": "not loaded"}

def test_discovery_is_lazy(site):
  out = run_json(site, """
    import sys, json
    import tinygrad
    after_import = sorted(m for m in sys.modules if m.startswith(("tinygrad_", "numpy", "tinygrad.plugins")))
    from tinygrad import plugins
    plugins.registry()
    loaded = sorted(m for m in sys.modules if m.startswith(("tinygrad_", "numpy")))
    from tinygrad.device import Device
    Device["FOO"]
    print(json.dumps([after_import, loaded, "tinygrad_foo.device" in sys.modules, "tinygrad_bar.renderer" in sys.modules]))""")
  after_import, loaded, foo_dev, bar_rend = out
  assert after_import == []                                  # import tinygrad discovers nothing
  assert "tinygrad_foo.plugin" in loaded and "tinygrad_foo.device" not in loaded and "numpy" not in loaded
  assert foo_dev and not bar_rend                            # opening FOO imports its device, not the unselected pair

def test_probe_failure_reported_and_default_falls_back(site):
  r = run(site, args=("--json", "--no-check"), FOO_ABSENT="1")
  report = json.loads(r.stdout)
  foo = next(d for d in report["devices"] if d["name"] == "FOO")
  assert foo["status"] == "unavailable" and foo["reason"] == "FOO_ABSENT=1: no FOO here" and not foo["default"]
  assert report["default_device"] != "FOO"

@pytest.mark.skipif(importlib.util.find_spec("tinygrad.tensor") is None,
                    reason="tinygrad.tensor is not written yet; enable when Tensor lands (DEV=FOO end-to-end needs Tensor)")
def test_dev_foo_end_to_end(site):
  assert run_json(site, "import json; from tinygrad import Tensor; print(json.dumps((Tensor([1,2,3])*2).tolist()))", DEV="FOO") == [2, 4, 6]
  assert run(site, args=(), DEV="FOO").returncode == 0

def test_entry_point_scan_agrees_with_importlib_metadata(site):
  # discovery reads dist-info directly (importlib.metadata is too slow to import); it must see what importlib sees
  out = run_json(site, """
    import json, importlib.metadata as md
    from tinygrad import plugins
    for group in ("tinygrad.plugins", "console_scripts"):
      ours = sorted((e.name, e.value, e.dist, e.version) for e in plugins.entry_points(group))
      theirs = sorted((e.name, e.value, e.dist.metadata["Name"], e.dist.version) for e in md.entry_points(group=group))
      assert ours == theirs, (group, ours, theirs)
    print(json.dumps(sorted(e.name for e in plugins.entry_points())))""")
  assert {"foo", "bar", "broken", "future"} <= set(out)

def test_builtin_entry_point_deduplicated(tmp_path):
  # pip-installed core: its own entry point names tinygrad.runtime.builtin; it must load once, with the dist's version
  info = tmp_path / "tinygrad_core-7.7.dist-info"
  info.mkdir()
  (info / "METADATA").write_text("Metadata-Version: 2.1\nName: tinygrad-core\nVersion: 7.7\n")
  (info / "entry_points.txt").write_text("[tinygrad.plugins]\nbuiltin = tinygrad.runtime.builtin\n")
  out = run_json(str(tmp_path), "import json, os; from tinygrad import plugins; env = set(os.environ.get('ENV_PLUGINS', '').split(',')); "
                 "print(json.dumps([(p.name, p.dist, p.version, p.status) for p in plugins.registry().plugins if p.name not in env]))")
  assert out == [["builtin", "tinygrad-core", "7.7", "ok"]]
