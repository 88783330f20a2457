"""No third-party plugin can break discovery, the default device, the compiler hooks or `python -m tinygrad`.

Each case installs a throwaway plugin: a package and a *.dist-info with a `tinygrad.plugins` entry point in a tmp dir put
on sys.path, discovered in this process exactly as an installed one is (one case runs the real CLI in a fresh process).
"""
import os, re, sys, json, textwrap, warnings, subprocess, importlib.util, itertools
from pathlib import Path
import pytest
from plugin_isolation import environment_plugins
from tinygrad import plugins
from tinygrad.plugins import hookimpl, DeviceSpec, API_VERSION, VIRTUAL_INSTANCES
from tinygrad.device import Device, DeviceError, Compiled, Compiler, CompilerPair, CompilerSet, LRUAllocator
from tinygrad.renderer import Renderer
from tinygrad.__main__ import main

CORE = str(Path(__file__).resolve().parents[2] / "core")
ENV_PLUGINS = environment_plugins()   # read before any test puts its throwaway plugin on sys.path
HAVE_CPU = importlib.util.find_spec("tinygrad_cpu") is not None
ENV = ["DEV", "TINYGRAD_PLUGIN_AUTOLOAD", "TINYGRAD_PLUGINS_DISABLE", "TINYGRAD_DEVICE_PROVIDER_GOOD", "TINYGRAD_DEVICE_PROVIDER_CPU",
       "GOOD_CC", "GOOD_A", "GOOD_B", "CPU_CC", "CPU_LLVM", "CPU_CLANG", "CPU_GCC"]

class ARenderer(Renderer): pass
class BRenderer(Renderer): pass
class NoCompiler(Compiler):
  def __init__(self): raise FileNotFoundError("goodcc: not found on PATH")

class HostAllocator(LRUAllocator):
  def _alloc(self, size, options): return memoryview(bytearray(size))
  def copyin(self, dest, src): dest[:] = src
  def copyout(self, dest, src): dest[:] = src

PAIRS: list = []   # what GoodDevice offers; tests replace it

class GoodDevice(Compiled):
  def __init__(self, device):
    super().__init__(device, HostAllocator(), CompilerSet(list(PAIRS), "GOOD_CC"), lambda name, lib: None)

class GoodPlugin:
  """The well-behaved plugin every case runs next to: GOOD at priority 90 (above PYTHON), two compiler pairs."""
  @hookimpl
  def tinygrad_api_version(self): return API_VERSION
  @hookimpl
  def tinygrad_devices(self): return [DeviceSpec("GOOD", 90, f"{__name__}:GoodDevice", instances=2)]

HEAD = "from tinygrad.plugins import hookimpl, DeviceSpec, API_VERSION\n@hookimpl\ndef tinygrad_api_version(): return API_VERSION\n"
_ids = itertools.count()

@pytest.fixture
def bad_plugin(tmp_path, monkeypatch):
  """bad_plugin(code) -> distribution name: writes a throwaway plugin (its hooks module is `code`) onto sys.path."""
  def make(code: str, head: str = HEAD) -> str:
    n = next(_ids)
    pkg, dist = f"tinygrad_bad{n}_{os.getpid()}", f"tinygrad-bad{n}"
    (tmp_path / pkg).mkdir()
    (tmp_path / pkg / "__init__.py").write_text("")
    (tmp_path / pkg / "plugin.py").write_text(head + textwrap.dedent(code))
    info = tmp_path / f"{dist.replace('-', '_')}-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[tinygrad.plugins]\nbad{n} = {pkg}.plugin\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    Device.reset()
    return dist
  return make

def discover_with(good: bool = True) -> plugins.Registry:
  """Discovery as a fresh process runs it (warnings recorded by the caller), plus the in-process GOOD plugin."""
  reg = plugins.registry()
  if good: plugins.register(GoodPlugin(), "good", "tinygrad-good")
  return reg

def status(reg: plugins.Registry, dist: str) -> plugins.PluginInfo: return next(p for p in reg.plugins if p.dist == dist)

@pytest.fixture(autouse=True)
def fresh(monkeypatch):
  for v in ENV: monkeypatch.delenv(v, raising=False)
  monkeypatch.setenv("TINYGRAD_PLUGINS_DISABLE", ",".join(ENV_PLUGINS))   # only this test's plugins
  PAIRS[:] = [CompilerPair(ARenderer, Compiler, ctrl_var="GOOD_A", name="A"), CompilerPair(BRenderer, Compiler, ctrl_var="GOOD_B", name="B")]
  Device.reset()
  yield
  Device.reset()

def listing(capsys) -> dict:
  """`python -m tinygrad --json --no-check`, in this process: it must finish and print a report."""
  main(["--json", "--no-check"])
  return json.loads(capsys.readouterr().out)

# ---- anything raised at import ----

@pytest.mark.parametrize("code,shown", [("import sys\nsys.exit(3)\n", "SystemExit: 3"), ("raise SystemExit('bye')\n", "SystemExit: bye"),
                                        ("class Boom(BaseException): pass\nraise Boom('x')\n", "Boom: x")])
def test_base_exception_at_import_is_reported_not_fatal(bad_plugin, capsys, code, shown):
  dist = bad_plugin(code, head="")
  with pytest.warns(RuntimeWarning, match=rf"distribution {dist}\).*{shown}"): reg = discover_with()
  assert status(reg, dist).status == "failed" and shown in status(reg, dist).error
  assert Device.DEFAULT == "GOOD" and Device["PYTHON"].device == "PYTHON"
  assert {p["distribution"]: p["status"] for p in listing(capsys)["plugins"]}[dist] == "failed"

def test_keyboard_interrupt_at_import_propagates(bad_plugin):
  # Ctrl-C while a plugin imports is the user stopping the program, not a plugin fault: it is never swallowed
  bad_plugin("raise KeyboardInterrupt\n", head="")
  with pytest.raises(KeyboardInterrupt): plugins.registry()

def test_cli_process_survives_exit_at_import(bad_plugin, tmp_path):
  dist = bad_plugin("import sys\nsys.exit(3)\n", head="")
  env = {k: v for k, v in os.environ.items() if not k.startswith("TINYGRAD_") and k not in ENV}
  env.update(PYTHONPATH=os.pathsep.join([str(tmp_path), CORE]), CACHEDB=str(tmp_path / "cache.db"), TINYGRAD_PLUGINS_DISABLE=",".join(ENV_PLUGINS))
  r = subprocess.run([sys.executable, "-m", "tinygrad", "--json", "--no-check"], env=env, capture_output=True, text=True, timeout=120)
  assert r.returncode == 0, r.stderr
  report = json.loads(r.stdout)
  assert {p["distribution"]: p["status"] for p in report["plugins"]}[dist] == "failed" and report["default_device"] == "PYTHON"

# ---- wrong types in DeviceSpec, garbage from tinygrad_devices ----

@pytest.mark.parametrize("ret,shown", [
  ('[DeviceSpec("BADPRIO", "high", "x:Y")]', "priority must be an int, got 'high'"),
  ('[DeviceSpec("BADPRIO", True, "x:Y")]', "priority must be an int, got True"),
  ('[DeviceSpec(42, 1, "x:Y")]', "name must be a str, got 42"),
  ('[DeviceSpec("BAD-DEV", 1, "x:Y")]', "name must be ASCII letters, digits and _"),
  ('[DeviceSpec("BAD", 1, 3)]', "import_path must be a str"),
  ('[DeviceSpec("BAD", 1, "no_colon")]', "import_path must look like 'module:Name'"),
  ('[DeviceSpec("BAD", 1, "x:Y", probe=5)]', "probe must be None, a callable or"),
  ('[DeviceSpec("BAD", 1, "x:Y", compilers=[1])]', "compilers must be None, a callable or"),
  ('[DeviceSpec("BAD", 1, "x:Y", instances=0)]', "instances must be None or an int >= 1"),
  ('[("BAD", 1, "x:Y")]', "must return DeviceSpec objects, got ('BAD', 1, 'x:Y')"),
  ('"BAD"', "tinygrad_devices() must return a list of DeviceSpec, got 'BAD'")])
def test_bad_device_spec_refuses_that_plugin_only(bad_plugin, capsys, ret, shown):
  dist = bad_plugin(f"@hookimpl\ndef tinygrad_devices(): return {ret}\n")
  with pytest.warns(RuntimeWarning, match=rf"distribution {dist}\)"): reg = discover_with()
  assert status(reg, dist).status == "failed" and shown in status(reg, dist).error, status(reg, dist).error
  assert Device.DEFAULT == "GOOD"
  report = listing(capsys)
  assert report["default_device"] == "GOOD" and {d["name"] for d in report["devices"]} == {"GOOD", "PYTHON", "NULL", "DISK"}

@pytest.mark.parametrize("ret,shown", [("'1'", "tinygrad_api_version() returned '1', not an int"),
                                       ("1/0", "tinygrad_api_version() raised ZeroDivisionError")])
def test_bad_api_version_refuses_that_plugin_only(bad_plugin, ret, shown):
  dist = bad_plugin(f"from tinygrad.plugins import hookimpl\n@hookimpl\ndef tinygrad_api_version(): return {ret}\n", head="")
  with pytest.warns(RuntimeWarning, match=rf"distribution {dist}\) {re.escape(shown)}"): reg = discover_with()
  assert status(reg, dist).status == "failed" and Device.DEFAULT == "GOOD"

def test_lower_case_device_name_is_canonical(bad_plugin, capsys):
  dist = bad_plugin(f"@hookimpl\ndef tinygrad_devices(): return [DeviceSpec('lowerdev', 5, '{__name__}:GoodDevice')]\n")
  reg = discover_with()
  assert status(reg, dist).devices == ["LOWERDEV"] and reg.candidates["LOWERDEV"][0].spec.name == "LOWERDEV"
  assert Device["lowerdev"].device == "LOWERDEV"
  assert "LOWERDEV" in {d["name"] for d in listing(capsys)["devices"]}

# ---- garbage from tinygrad_compilers ----

@pytest.mark.parametrize("ret,shown", [("[42, 'x']", "returned 42, not a CompilerPair"), ("42", "must return a list of CompilerPair, got 42"),
                                       ("raise SystemExit(2)", "raised SystemExit: 2")])
def test_compilers_hook_garbage_skipped_blaming_its_distribution(bad_plugin, ret, shown):
  body = ret if ret.startswith("raise") else f"return {ret}"
  dist = bad_plugin(f"@hookimpl\ndef tinygrad_compilers(device):\n  {body}\n")
  discover_with()
  with pytest.warns(RuntimeWarning, match=rf"distribution {dist}\).*tinygrad_compilers\('GOOD'\) {shown}.*skipped") as w:
    assert Device["GOOD"].compiler_name == "A" and Device.DEFAULT == "GOOD"   # GOOD opens for its users, and stays the default
  assert not any("tinygrad-good" in str(x.message) for x in w)

EXTRA = "from {mod} import CompilerPair, ARenderer, BRenderer, NoCompiler\n@hookimpl\ndef tinygrad_compilers(device):\n" \
        "  return [CompilerPair(BRenderer, None, name='a'), CompilerPair(ARenderer, NoCompiler, name='C')] if device == 'GOOD' else []\n"

def test_compilers_hook_pair_name_clash_skipped_once(bad_plugin, capsys):
  # a pair named like one the device has could never be selected (GOOD_CC=A picks the first) and was listed as a second default
  dist = bad_plugin(EXTRA.format(mod=__name__))
  discover_with()
  with pytest.warns(RuntimeWarning, match=rf"distribution {dist}\).*tinygrad_compilers\('GOOD'\) returned a pair named 'a', a name GOOD already has"):
    assert [p.name for p in Device["GOOD"].compiler_pairs] == ["A", "B", "C"] and type(Device["GOOD:A"].renderer) is ARenderer
  with warnings.catch_warnings():
    warnings.simplefilter("error")   # once, not again at every open of the device
    Device["GOOD:B"]
  report = listing(capsys)
  assert any("named 'a'" in w for w in report["plugin_warnings"])
  assert [c["name"] for c in next(d for d in report["devices"] if d["name"] == "GOOD")["compilers"]] == ["A", "B", "C"]

def test_compilers_hook_pair_failure_blames_its_plugin(bad_plugin):
  # a pair another plugin added fails: the error names that plugin, not the device's (which is not at fault)
  dist = bad_plugin(EXTRA.format(mod=__name__))
  discover_with()
  with pytest.warns(RuntimeWarning):
    with pytest.raises(DeviceError, match=rf"compiler C \(from plugin .*distribution {dist}\)\) for device GOOD .*goodcc") as e: Device["GOOD:C"]
  assert "tinygrad-good" not in str(e.value)

@pytest.mark.skipif(not HAVE_CPU, reason="needs the tinygrad-cpu plugin: pip install ./plugins/tinygrad_cpu")
def test_compilers_hook_garbage_leaves_cpu_working(bad_plugin, monkeypatch):
  dist = bad_plugin("@hookimpl\ndef tinygrad_compilers(device): return [42, 'x'] if device == 'CPU' else []\n")
  monkeypatch.setenv("TINYGRAD_PLUGINS_DISABLE", ",".join(x for x in ENV_PLUGINS if x != "cpu"))
  with pytest.warns(RuntimeWarning, match=rf"distribution {dist}\).*tinygrad_compilers\('CPU'\) returned 42"):
    assert Device.DEFAULT == "CPU" and Device["CPU"].compiler_name

# ---- probes, compile-only hooks, device constructors ----

@pytest.mark.parametrize("probe,shown", [("lambda: 'yes'", "probe returned 'yes'; expected (ok: bool, reason: str)"),
                                         ("lambda: None", "probe returned None"), ("_exit", "probe raised SystemExit: 4")])
def test_probe_garbage_is_unavailable(bad_plugin, capsys, probe, shown):
  bad_plugin(f"def _exit(): raise SystemExit(4)\n@hookimpl\ndef tinygrad_devices(): return [DeviceSpec('PROBED', 95, '{__name__}:GoodDevice', {probe})]\n")
  discover_with()
  with pytest.raises(DeviceError, match=rf"PROBED .* not available here: {re.escape(shown)}"): Device["PROBED"]
  assert Device.DEFAULT == "GOOD"   # an unavailable device is skipped (silently: absent hardware is normal)
  probed = next(d for d in listing(capsys)["devices"] if d["name"] == "PROBED")
  assert probed["status"] == "unavailable" and shown in probed["reason"]

def exiting_renderer(): raise SystemExit(7)

def test_compile_only_hook_garbage_is_listed_not_fatal(bad_plugin, capsys):
  bad_plugin(f"""from tinygrad.device import CompilerSet, CompilerPair
from {__name__} import exiting_renderer
@hookimpl
def tinygrad_devices(): return [DeviceSpec('OFFLINE', 5, 'x:Y', lambda: (False, 'no card'), lambda: 42),
                                DeviceSpec('OFFEXIT', 5, 'x:Y', lambda: (False, 'no card'), lambda: CompilerSet([CompilerPair(exiting_renderer, name='EX')]))]
""")
  discover_with()
  main(["--json"])   # with the compile checks
  devices = {d["name"]: d for d in json.loads(capsys.readouterr().out)["devices"]}
  assert devices["OFFLINE"]["status"] == "unavailable" and "compilers hook returned 42, not a CompilerSet" in devices["OFFLINE"]["compilers"][0]["error"]
  assert devices["OFFEXIT"]["compilers"][0]["error"] == "SystemExit: 7"

def test_device_constructor_exit_is_a_device_error(bad_plugin):
  bad_plugin("class Dev:\n  def __init__(self, device): raise SystemExit(5)\n@hookimpl\ndef tinygrad_devices(): return [DeviceSpec('EXITS', 1, __name__ + ':Dev')]\n")
  discover_with()
  with pytest.raises(DeviceError, match="device EXITS from plugin .* failed to open: SystemExit: 5"): Device["EXITS"]

class ExitingRuntimeDevice(Compiled):
  """Renders with the built-in PYTHON renderer, and its runtime exits the process when a kernel runs."""
  def __init__(self, device):
    from tinygrad.runtime.python import PythonRenderer
    def exiting(name, lib):
      def run(*bufs, **kw): raise SystemExit(6)
      return run
    super().__init__(device, HostAllocator(), CompilerSet([CompilerPair(PythonRenderer, None, name="PY")]), exiting)

def test_health_check_survives_a_runtime_that_exits(bad_plugin, capsys):
  bad_plugin(f"@hookimpl\ndef tinygrad_devices(): return [DeviceSpec('EXITRUN', 1, '{__name__}:ExitingRuntimeDevice')]\n")
  discover_with()
  main(["--json"])
  report = json.loads(capsys.readouterr().out)
  run = next(d for d in report["devices"] if d["name"] == "EXITRUN")["compilers"][0]
  assert not run["ok"] and run["error"] == "SystemExit: 6" and report["default_device"] == "GOOD"

# ---- the default device never changes silently ----

SHADOW = "class Dev:\n  def __init__(self, device): raise OSError('libshadow.so: cannot open shared object file')\n" \
         "@hookimpl\ndef tinygrad_devices(): return [DeviceSpec('{dev}', {prio}, __name__ + ':Dev')]\n"

def test_shadowing_provider_that_fails_names_both_and_the_switch(bad_plugin, monkeypatch, capsys):
  dist = bad_plugin(SHADOW.format(dev="GOOD", prio=95))
  discover_with()
  want = rf"device GOOD from plugin .*distribution {dist}\) failed to open: OSError: libshadow.so.*also provided by tinygrad-good.*TINYGRAD_DEVICE_PROVIDER_GOOD=tinygrad-good"
  with pytest.raises(DeviceError, match=want): Device["GOOD"]
  with pytest.raises(DeviceError, match=want): Device.DEFAULT   # not a silent fall to PYTHON
  main(["--json", "--no-check"])   # the listing still runs, and says why there is no default
  assert "TINYGRAD_DEVICE_PROVIDER_GOOD=tinygrad-good" in json.loads(capsys.readouterr().out)["default_error"]
  monkeypatch.setenv("TINYGRAD_DEVICE_PROVIDER_GOOD", "tinygrad-good")
  Device._opened.clear()
  assert type(Device["GOOD"]) is GoodDevice and Device.DEFAULT == "GOOD"

@pytest.mark.skipif(not HAVE_CPU, reason="needs the tinygrad-cpu plugin: pip install ./plugins/tinygrad_cpu")
def test_shadowed_cpu_error_names_tinygrad_cpu(bad_plugin, monkeypatch):
  bad_plugin(SHADOW.format(dev="CPU", prio=60))
  monkeypatch.setenv("TINYGRAD_PLUGINS_DISABLE", ",".join(x for x in ENV_PLUGINS if x != "cpu"))
  monkeypatch.setenv("DEV", "CPU")
  with pytest.raises(DeviceError, match="also provided by tinygrad-cpu .*TINYGRAD_DEVICE_PROVIDER_CPU=tinygrad-cpu"):
    Device[Device.DEFAULT]

@pytest.mark.parametrize("dev", ["PYTHON", "DISK"])
def test_builtin_device_not_shadowed_by_priority(bad_plugin, monkeypatch, capsys, dev):
  # a plugin declaring DISK (or PYTHON) at priority 100 silently replaced the core's device, and became the default device
  dist = bad_plugin(f"@hookimpl\ndef tinygrad_devices(): return [DeviceSpec('{dev}', 100, '{__name__}:GoodDevice')]\n")
  with pytest.warns(RuntimeWarning, match=rf"distribution {dist}\) declares device {dev}, a device built into tinygrad-core: .*TINYGRAD_DEVICE_PROVIDER_{dev}={dist}"):
    reg = discover_with(good=False)
  assert reg.provider(dev).plugin.dist == "tinygrad-core" and Device.DEFAULT == "PYTHON"
  if dev == "PYTHON": assert type(Device["PYTHON"]) is not GoodDevice
  assert any(f"declares device {dev}" in w for w in listing(capsys)["plugin_warnings"])
  monkeypatch.setenv(f"TINYGRAD_DEVICE_PROVIDER_{dev}", dist)   # asked for: theirs
  assert reg.provider(dev).plugin.dist == dist

def test_provider_typo_warns_once_naming_why(monkeypatch):
  monkeypatch.setenv("TINYGRAD_DEVICE_PROVIDER_GOOD", "tinygrad-goood")
  discover_with()
  with pytest.warns(RuntimeWarning, match=r"default device PYTHON: skipped GOOD.*TINYGRAD_DEVICE_PROVIDER_GOOD='tinygrad-goood' names no provider") as w:
    assert Device.DEFAULT == "PYTHON" and Device.DEFAULT == "PYTHON"
  assert len([x for x in w if "default device" in str(x.message)]) == 1

def test_device_without_usable_compiler_warns_on_fallback():
  PAIRS[:] = [CompilerPair(ARenderer, NoCompiler, name="A")]
  discover_with()
  with pytest.warns(RuntimeWarning, match=r"default device PYTHON: skipped GOOD .*no compiler for device GOOD initialises: A: FileNotFoundError: goodcc"):
    assert Device.DEFAULT == "PYTHON"

def test_device_without_usable_compiler_names_its_plugin():
  # a missing compiler binary or a malformed pair: the error named the device and the cause but not whose device it is
  PAIRS[:] = [CompilerPair(ARenderer, NoCompiler, name="A"), CompilerPair(lambda: object(), None, name="B")]
  discover_with()
  with pytest.raises(DeviceError, match=r"A: FileNotFoundError: goodcc.*B: TypeError.*not a Renderer.*from plugin 'good' \(distribution tinygrad-good\)"):
    Device["GOOD"]
  with pytest.raises(DeviceError, match=r"compiler A for device GOOD .*failed to initialise: .*goodcc.*from plugin 'good' \(distribution tinygrad-good\)"):
    Device["GOOD:A"]

def test_absent_hardware_falls_back_quietly():
  class Absent(GoodPlugin):
    @hookimpl
    def tinygrad_devices(self): return [DeviceSpec("ABSENT", 99, f"{__name__}:GoodDevice", lambda: (False, "no card"))]
  discover_with()
  plugins.register(Absent(), "absent")
  with warnings.catch_warnings():
    warnings.simplefilter("error")
    assert Device.DEFAULT == "GOOD"

# ---- switches and device strings ----

@pytest.mark.parametrize("value", ["0", "false", "False", "no", "off"])
def test_autoload_off_spellings(bad_plugin, monkeypatch, value):
  dist = bad_plugin("@hookimpl\ndef tinygrad_devices(): return []\n")
  monkeypatch.setenv("TINYGRAD_PLUGIN_AUTOLOAD", value)
  assert status(plugins.registry(), dist).status == "not loaded"

@pytest.mark.parametrize("raw", ["GOOD:²", "GOOD:١", "GOOD:1:²", "GOOD:-1", "GOOD:é"])
def test_device_index_ascii_digits_only(raw):
  with pytest.raises(ValueError, match="bad device name .*index is ASCII digits"): Device.canonicalize(raw)
  with pytest.raises(DeviceError): Device[raw]

def test_index_checked_against_instances():
  discover_with()
  assert Device["GOOD:1"].device == "GOOD:1"
  with pytest.raises(DeviceError, match=r"GOOD:2 does not exist: .*tinygrad-good\) declares 2 instances \(GOOD \.\. GOOD:1\)"): Device["GOOD:2"]

def test_host_device_instance_limit():
  assert Device[f"PYTHON:{VIRTUAL_INSTANCES-1}"].device == f"PYTHON:{VIRTUAL_INSTANCES-1}"
  with pytest.raises(DeviceError, match=rf"PYTHON:99 does not exist: .*{VIRTUAL_INSTANCES} instances"): Device["PYTHON:99"]
  with pytest.raises(DeviceError, match="NULL:64 does not exist"): Device["NULL:64"]

@pytest.mark.skipif(not HAVE_CPU, reason="needs the tinygrad-cpu plugin: pip install ./plugins/tinygrad_cpu")
def test_cpu_instance_limit(monkeypatch):
  monkeypatch.setenv("TINYGRAD_PLUGINS_DISABLE", ",".join(x for x in ENV_PLUGINS if x != "cpu"))
  with pytest.raises(DeviceError, match=rf"CPU:99999 does not exist: .*tinygrad-cpu\) declares {VIRTUAL_INSTANCES} instances"): Device["CPU:99999"]

def test_compiler_choice_conflict_warns_device_string_wins(monkeypatch):
  discover_with()
  monkeypatch.setenv("GOOD_CC", "A")
  with pytest.warns(RuntimeWarning, match=r"GOOD_CC=A conflicts with the device string GOOD:B; using B"): assert Device["GOOD:B"].compiler_name == "B"
  monkeypatch.delenv("GOOD_CC")
  monkeypatch.setenv("GOOD_A", "1")
  with pytest.warns(RuntimeWarning, match=r"GOOD_A=1 conflicts with the device string GOOD:1:B; using B"): assert Device["GOOD:1:B"].compiler_name == "B"
  monkeypatch.setenv("GOOD_CC", "B")
  with pytest.warns(RuntimeWarning, match=r"GOOD_A=1 conflicts with GOOD_CC=B; using B \(GOOD_CC wins\)"): assert Device["GOOD"].compiler_name == "B"
  with warnings.catch_warnings():
    warnings.simplefilter("error")
    monkeypatch.setenv("GOOD_CC", "a")   # agreeing choices: no warning
    monkeypatch.delenv("GOOD_A")
    Device._opened.clear()
    assert Device["GOOD:A"].compiler_name == "A"

def test_compiler_switch_conflicts_warn(monkeypatch):
  # CPU_LLVM=1 CPU_CLANG=1 silently ran LLVM, and CPU_CC=CLANG CPU_CLANG=0 silently ran CLANG
  discover_with()
  monkeypatch.setenv("GOOD_A", "1")
  monkeypatch.setenv("GOOD_B", "1")
  with pytest.warns(RuntimeWarning, match=r"GOOD_A=1 and GOOD_B=1 conflict; using A \(the first in GOOD's order; GOOD_CC picks one by name\)"):
    assert Device["GOOD"].compiler_name == "A"
  monkeypatch.delenv("GOOD_A")
  monkeypatch.setenv("GOOD_B", "0")
  monkeypatch.setenv("GOOD_CC", "B")
  with pytest.warns(RuntimeWarning, match=r"GOOD_B=0 conflicts with GOOD_CC=B; using B \(GOOD_CC wins\)"): assert Device["GOOD:1"].compiler_name == "B"

@pytest.mark.skipif(not HAVE_CPU, reason="needs the tinygrad-cpu plugin: pip install ./plugins/tinygrad_cpu")
def test_cpu_cc_conflict_with_dev_suffix(monkeypatch):
  monkeypatch.setenv("TINYGRAD_PLUGINS_DISABLE", ",".join(x for x in ENV_PLUGINS if x != "cpu"))
  monkeypatch.setenv("CPU_CC", "LLVM")
  with pytest.warns(RuntimeWarning, match=r"CPU_CC=LLVM conflicts with the device string CPU:CLANG; using CLANG"):
    try: dev = Device["CPU:CLANG"]
    except DeviceError as e: pytest.skip(f"CLANG does not initialise here: {e}")
  assert dev.compiler_name == "CLANG"
