"""`python -m tinygrad`: the listing, health checks, default marking, --json, doctor, exit status."""
import os, sys, json, types, platform, subprocess, importlib.util
from pathlib import Path
import pytest
from plugin_isolation import environment_plugins
from tinygrad import plugins
from tinygrad.plugins import hookimpl, DeviceSpec, API_VERSION
from tinygrad.device import Device, Compiled, Compiler, CompilerPair, CompilerSet, LRUAllocator
from tinygrad.renderer import Renderer
from tinygrad.__main__ import main

CORE = str(Path(__file__).resolve().parents[2] / "core")

class GoodRenderer(Renderer): pass
class WrongRenderer(Renderer): pass
class MissingCompiler(Compiler):
  def __init__(self): raise FileNotFoundError("fakecc: not found on PATH")

class HostAllocator(LRUAllocator):
  def _alloc(self, size, options): return memoryview(bytearray(size))
  def copyin(self, dest, src): dest[:] = src
  def copyout(self, dest, src): dest[:] = src

class CliDevice(Compiled):
  def __init__(self, device):
    pairs = [CompilerPair(GoodRenderer, Compiler, ctrl_var="CLI_GOOD"), CompilerPair(WrongRenderer, ctrl_var="CLI_WRONG"),
             CompilerPair(GoodRenderer, MissingCompiler, name="GONE")]
    super().__init__(device, HostAllocator(), CompilerSet(pairs, "CLI_CC"), lambda name, lib: None)

class CliPlugin:
  @hookimpl
  def tinygrad_api_version(self): return API_VERSION
  @hookimpl
  def tinygrad_devices(self): return [DeviceSpec("CLI", 10, f"{__name__}:CliDevice")]

class FakeTensor:
  """Stands in for tinygrad.tensor.Tensor: the 'result' depends on which pair the device selected."""
  def __init__(self, data, device=None):
    self.data, self.dev = list(data), Device[device or Device.DEFAULT]
  def __mul__(self, k):
    if isinstance(self.dev.renderer, WrongRenderer) or self.dev.device.startswith("NULL"): return FakeTensor([0]*len(self.data), self.dev.device)
    return FakeTensor([x*k for x in self.data], self.dev.device)
  def tolist(self): return self.data

@pytest.fixture(autouse=True)
def fresh(monkeypatch, tmp_path):
  for v in ("DEV", "CLI_CC", "CLI_GOOD", "CLI_WRONG", "OFF_CC"): monkeypatch.delenv(v, raising=False)
  monkeypatch.setenv("TINYGRAD_PLUGINS_DISABLE", ",".join(environment_plugins()))   # only this test's plugins
  monkeypatch.setenv("CACHEDB", str(tmp_path / "cache.db"))
  monkeypatch.setitem(sys.modules, "tinygrad.tensor", types.SimpleNamespace(Tensor=FakeTensor))
  Device.reset()
  plugins.register(CliPlugin(), "cli", "tinygrad-cli")
  yield
  Device.reset()

def report(capsys, *args):
  rc = main(["--json", *args])
  return rc, json.loads(capsys.readouterr().out)

def test_json_marks_defaults_and_checks_every_pair(capsys):
  rc, rep = report(capsys)
  assert rc == 0 and rep["default_device"] == "CLI" and rep["default_ok"]
  dev = next(d for d in rep["devices"] if d["name"] == "CLI")
  assert dev["default"] and dev["status"] == "ok" and dev["distribution"] == "tinygrad-cli"
  pairs = {c["name"]: c for c in dev["compilers"]}
  assert list(pairs) == ["GOOD", "WRONG", "GONE"]
  assert pairs["GOOD"]["default"] and pairs["GOOD"]["ok"] and pairs["GOOD"]["result"] == [2, 4, 6]
  assert not pairs["WRONG"]["ok"] and pairs["WRONG"]["error"] == "wrong result: expected [2, 4, 6], got [0, 0, 0]"
  assert not pairs["GONE"]["ok"] and "fakecc: not found" in pairs["GONE"]["error"]
  assert pairs["WRONG"]["select"] == ["CLI_CC=WRONG", "DEV=CLI:WRONG"] and pairs["WRONG"]["ctrl_var"] == "CLI_WRONG"
  assert sum(d["default"] for d in rep["devices"]) == 1

def test_default_pair_follows_control_variable(capsys, monkeypatch):
  monkeypatch.setenv("CLI_CC", "WRONG")
  rc, rep = report(capsys)
  pairs = {c["name"]: c for c in rep["devices"][0]["compilers"]}
  assert pairs["WRONG"]["default"] and not pairs["GOOD"]["default"]
  assert rc == 1 and not rep["default_ok"]          # the default device does not work: non-zero exit

def test_default_pair_from_dev_string(capsys, monkeypatch):
  monkeypatch.setenv("DEV", "cli:wrong")
  rc, rep = report(capsys)
  assert rep["default_device"] == "CLI:WRONG" and rc == 1
  pairs = {c["name"]: c for c in rep["devices"][0]["compilers"]}
  assert pairs["WRONG"]["default"] and pairs["GOOD"]["ok"]

def test_missing_tensor_reported(capsys, monkeypatch):
  monkeypatch.setitem(sys.modules, "tinygrad.tensor", None)   # import fails as if the module were absent
  rc, rep = report(capsys)
  assert rc == 1
  good = rep["devices"][0]["compilers"][0]
  assert not good["ok"] and good["error"].startswith(("ImportError", "ModuleNotFoundError"))

def test_unknown_dev_reported(capsys, monkeypatch):
  monkeypatch.setenv("DEV", "CLII")
  rc, rep = report(capsys)
  assert rc == 1 and rep["default_device"] is None and "unknown device 'CLII'" in rep["default_error"] and "did you mean 'CLI'" in rep["default_error"]

def test_no_check_runs_nothing(capsys, monkeypatch):
  monkeypatch.setitem(sys.modules, "tinygrad.tensor", None)
  rc, rep = report(capsys, "--no-check")
  assert rc == 0 and all(c["result"] is None for d in rep["devices"] for c in d["compilers"])
  assert rep["default_ok"] is None   # not checked: neither works nor fails
  assert main(["--no-check"]) == 0
  out = capsys.readouterr().out
  assert "default device: CLI (not checked (--no-check))" in out and "FAILS" not in out

def test_default_that_fails_says_why(capsys, monkeypatch):
  # DEV=NV on a machine without one printed 'default device: NV (FAILS its health check)' with no reason, and with
  # --no-check 'NV (not checked)' and exit 0, as did DEV=CPU:BOGUS: the reason is shown, and --no-check exits 1
  monkeypatch.setenv("DEV", "CLI:BOGUS")
  assert main([]) == 1
  assert "default device: CLI:BOGUS (FAILS its health check: unknown compiler 'BOGUS' for device CLI" in capsys.readouterr().out
  assert main(["--no-check"]) == 1
  assert "default device: CLI:BOGUS (FAILS to open: CompilerChoiceError: unknown compiler 'BOGUS'" in capsys.readouterr().out
  rc, rep = report(capsys, "--no-check")
  assert rc == 1 and rep["default_ok"] is False and "unknown compiler 'BOGUS'" in rep["default_check_error"]

class OfflinePlugin:
  @hookimpl
  def tinygrad_api_version(self): return API_VERSION
  @hookimpl
  def tinygrad_devices(self):
    pairs = [CompilerPair(GoodRenderer, Compiler, name="FIRST"), CompilerPair(WrongRenderer, Compiler, name="SECOND")]
    return [DeviceSpec("OFF", 5, f"{__name__}:CliDevice", lambda: (False, "no card"), compilers=lambda: CompilerSet(pairs, "OFF_CC"))]

@pytest.mark.parametrize("env", [{"DEV": "OFF:second"}, {"OFF_CC": "second"}])
def test_unavailable_device_marks_the_chosen_pair_default(capsys, monkeypatch, env):
  # DEV=NV:PTX on a machine without NVIDIA listed NVRTC (the first pair) as NV's default
  for k, v in env.items(): monkeypatch.setenv(k, v)
  plugins.register(OfflinePlugin(), "off", "tinygrad-off")
  _, rep = report(capsys, "--no-check")
  pairs = {c["name"]: c["default"] for c in next(d for d in rep["devices"] if d["name"] == "OFF")["compilers"]}
  assert pairs == {"FIRST": False, "SECOND": True}

def test_human_output(capsys):
  assert main([]) == 0
  out = capsys.readouterr().out
  assert "* CLI" in out and "tinygrad-cli" in out and "CLI_CC=WRONG or DEV=CLI:WRONG to select" in out
  assert "FAIL: wrong result" in out and "failed to initialise: FileNotFoundError: fakecc" in out and "default device: CLI (works)" in out

def test_doctor(capsys, tmp_path):
  rc, rep = report(capsys, "doctor")
  doc = rep["doctor"]
  assert set(doc["versions"]) >= {"tinygrad-core", "numpy", "pluggy"} and platform.python_version() in doc["python"]
  assert doc["api"]["cli"] == {"declared": API_VERSION, "compatible": True}
  assert doc["cache"]["path"] == str(tmp_path / "cache.db")
  assert rep["default_reason"] == ["CLI: highest priority device that opens"]
  main(["doctor"])
  out = capsys.readouterr().out
  assert "why this default: CLI: highest priority device that opens" in out and f"cache: {tmp_path / 'cache.db'}" in out

@pytest.mark.skipif(importlib.util.find_spec("tinygrad.tensor") is None, reason="tinygrad.tensor is not written yet: the real health check needs Tensor")
def test_real_process_builtin_only(tmp_path):
  env = {k: v for k, v in os.environ.items() if k not in ("DEV", "PYTHONPATH") and not k.startswith("TINYGRAD_")}
  env.update(PYTHONPATH=CORE, CACHEDB=str(tmp_path / "c.db"), TINYGRAD_PLUGIN_AUTOLOAD="0")   # built-ins only, whatever is installed
  r = subprocess.run([sys.executable, "-m", "tinygrad", "--json"], env=env, capture_output=True, text=True, timeout=120)
  rep = json.loads(r.stdout)
  assert r.returncode == 0, r.stderr
  assert rep["default_device"] == "PYTHON" and rep["default_ok"]
  assert not os.path.exists(tmp_path / "c.db")   # health checks run with CACHELEVEL=0

def test_listing_keeps_library_stderr_noise_out():
  # the Vulkan loader prints "error: XDG_RUNTIME_DIR is invalid or not set in the environment." (twice) when WEBGPU is
  # probed and opened without XDG_RUNTIME_DIR; a C library's fd-2 chatter during a probe never reaches the listing's stderr
  import subprocess, sys, os
  env = {k: v for k, v in os.environ.items() if k != "XDG_RUNTIME_DIR"}
  r = subprocess.run([sys.executable, "-m", "tinygrad"], capture_output=True, text=True, env=env, timeout=300)
  assert r.returncode == 0 and "XDG_RUNTIME_DIR" not in r.stderr and "error:" not in r.stderr, r.stderr

def test_captured_stderr_holds_fd2_writes_and_restores():
  import os
  from tinygrad.helpers import CapturedStderr
  with CapturedStderr() as c: os.write(2, b"error: from C\nerror: from C\nsecond\n")
  assert c.text == "error: from C\nerror: from C\nsecond\n" and c.lines() == ["error: from C", "second"]
  with CapturedStderr() as c2: pass
  assert c2.text == "" and os.fstat(2)   # fd 2 is back and usable

def test_listing_into_a_closed_pipe_is_quiet():
  # `python -m tinygrad | head -1`: the reader goes away before the listing is printed; no BrokenPipeError traceback
  p = subprocess.Popen([sys.executable, "-m", "tinygrad", "--no-check"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
  assert p.stdout is not None and p.stderr is not None
  p.stdout.close()   # before the child writes anything
  err = p.stderr.read().decode()
  assert p.wait(timeout=120) == 1 and "Traceback" not in err and "BrokenPipe" not in err, err
