"""The conformance suite's pytest plugin: the `device` fixture, the command-line options and the capability report.

Loaded by the `pytest11` entry point named like this module (when tinygrad-core is pip-installed), by `-p tinygrad.conformance.plugin`,
or by tests/conformance/conftest.py in this repository. It only acts on the suite's own tests (modules under
`tinygrad.conformance`), so having it loaded in every pytest run of an environment is harmless.

Which devices run:
  --tinygrad-device=FOO[,BAR]   exactly these devices, each required: one that is missing or fails to open FAILS
  TEST_DEVICES=CPU,PYTHON       (without the option) restrict the installed devices to these
  REQUIRE_DEVICES=CPU,WEBGPU    (without the option) a listed device that is missing or fails to open FAILS, not skips
Without either, every installed device that opens runs (NULL and DISK excluded). `--tinygrad-quick` (or
TINYGRAD_CONFORMANCE_QUICK=1) draws far fewer hypothesis examples, for a first look or a CI smoke run.
"""
from __future__ import annotations
import functools, os
from collections import defaultdict
from typing import Any
import pytest

SUITE_PACKAGE = "tinygrad.conformance"
_state: dict[str, Any] = {"devices": None, "quick": None}

def _env_list(name: str) -> list[str]: return [d.strip().upper() for d in os.environ.get(name, "").split(",") if d.strip()]

def quick() -> bool:
  """True when the suite runs with reduced example counts (--tinygrad-quick or TINYGRAD_CONFORMANCE_QUICK=1)."""
  if _state["quick"] is not None: return bool(_state["quick"])
  return os.environ.get("TINYGRAD_CONFORMANCE_QUICK", "").strip() not in ("", "0")

def examples(n: int) -> Any:
  """Hypothesis settings for a test that draws `n` examples in a full run (2 in a quick run, derandomized)."""
  from hypothesis import settings, HealthCheck
  hc = [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much, HealthCheck.differing_executors]
  if quick(): return settings(max_examples=min(n, 2), deadline=None, suppress_health_check=hc, derandomize=True, database=None)
  return settings(max_examples=n, deadline=None, suppress_health_check=hc)

@functools.cache
def installed_devices() -> tuple[str, ...]:
  """Device names offered by installed plugins, highest priority first (PYTHON when discovery itself is unavailable)."""
  try:
    from tinygrad.plugins import registry
    names = [e.spec.name.upper() for e in registry().devices()]
  except ImportError: names = ["PYTHON"]
  return tuple(n for n in names if n not in ("NULL", "DISK"))   # (NULL runs nothing; DISK is a file: it computes nothing)

def required_devices() -> list[str]:
  """Devices that must run: those named by --tinygrad-device, else REQUIRE_DEVICES."""
  return list(_state["devices"]) if _state["devices"] else _env_list("REQUIRE_DEVICES")

def candidate_devices() -> list[str]:
  """The devices each suite test is parametrized over."""
  if _state["devices"]: return list(_state["devices"])
  names = list(installed_devices())
  names += [d for d in _env_list("REQUIRE_DEVICES") if d not in names]   # a required device that is missing must show up (and fail)
  if (only := _env_list("TEST_DEVICES")): names = [d for d in names if d in only] + [d for d in only if d not in names]
  return names

@functools.cache
def open_device(name: str) -> str | None:
  """None when `name` opens, else why it does not."""
  if name.split(":")[0] not in installed_devices():
    return f"device {name} is not installed (installed: {', '.join(installed_devices()) or 'none'})"
  try:
    from tinygrad.device import Device
    Device[name]
  except Exception as e: return f"device {name} failed to open: {type(e).__name__}: {e}"
  return None

def compiler_pair(name: str) -> str:
  """The compiler pair device `name` ran with, as "NAME (RendererClass -> CompilerClass)"; "" when it did not open."""
  if open_device(name) is not None: return ""
  from tinygrad.device import Device
  d = Device[name]
  return f"{d.compiler_name or '(none)'} ({type(d.renderer).__name__} -> {type(d.compiler).__name__ if d.compiler else 'no compiler: the source is the binary'})"

def _in_suite(obj: Any) -> bool: return getattr(obj, "__module__", "").startswith(SUITE_PACKAGE + ".")

# ---- pytest hooks ----

def pytest_addoption(parser: pytest.Parser) -> None:
  group = parser.getgroup("tinygrad", "tinygrad conformance suite")
  group.addoption("--tinygrad-device", default=None, help="run the conformance suite on these devices (comma separated); each must open")
  group.addoption("--tinygrad-quick", action="store_true", default=False, help="draw far fewer hypothesis examples (smoke run)")

def pytest_configure(config: pytest.Config) -> None:
  devs = config.getoption("tinygrad_device", default=None)
  if devs: _state["devices"] = tuple(d.strip().upper() for d in devs.split(",") if d.strip())
  if config.getoption("tinygrad_quick", default=False): _state["quick"] = True
  config.addinivalue_line("markers", "capability(name): the device capability a conformance test checks (shown in the report)")

def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
  if "device" in metafunc.fixturenames and _in_suite(metafunc.cls or metafunc.function):
    metafunc.parametrize("device", candidate_devices(), indirect=True, scope="session")

@pytest.fixture(scope="session")
def device(request: pytest.FixtureRequest) -> str:
  """The device under test: a name `Device[...]` opens. Skips (or fails, when required) if it does not open."""
  name = request.param
  why = open_device(name)
  if why is not None:
    if name in required_devices(): pytest.fail(f"required device: {why}", pytrace=False)
    pytest.skip(why)
  return name

# ---- the capability report ----

_DTYPE_WORDS = ("float64", "float32", "float16", "bfloat16", "int64", "int32", "int16", "int8", "uint64", "uint32", "uint16", "uint8", "bool")

def capability(item: pytest.Item) -> tuple[str, str, str]:
  """(capability, op, dtype) a suite test checks: the class's `capability` (or its name), the `name`/`op` parameter, and the
  dtype from a `dtype` parameter or the test's name (test_int32 -> int32); empty strings where a test has none."""
  cls = getattr(item, "cls", None)
  cap = getattr(cls, "capability", None) or (cls.__name__ if cls else item.module.__name__.rsplit(".", 1)[-1] if hasattr(item, "module") else "")
  params = getattr(getattr(item, "callspec", None), "params", {})
  op = str(params.get("name", params.get("op", "")))
  dtype = str(params.get("dtype", ""))   # suite tests parametrize dtypes by their `dtypes` attribute name ("int8")
  if not dtype:
    fn = getattr(item, "originalname", item.name)
    dtype = next((w for w in _DTYPE_WORDS if fn.endswith("_" + w) or f"_{w}_" in fn), "")
  return str(cap), op, dtype

class _Report:
  def __init__(self) -> None:
    self.items: dict[str, tuple[str, str, str, str]] = {}   # nodeid -> (device, capability, op, dtype)
    self.results: dict[str, dict[tuple[str, str], list]] = defaultdict(lambda: defaultdict(lambda: [0, 0, 0, []]))

_report = _Report()

@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
  for it in items:
    if not _in_suite(getattr(it, "cls", None) or getattr(it, "function", None)): continue
    dev = getattr(getattr(it, "callspec", None), "params", {}).get("device", "?")
    _report.items[it.nodeid] = (dev, *capability(it))

def pytest_runtest_logreport(report: pytest.TestReport) -> None:
  info = _report.items.get(report.nodeid)
  if info is None or (report.when != "call" and not (report.failed or report.skipped)): return
  dev, cap, op, dtype = info
  row = _report.results[dev][(cap, "")]
  if report.passed: row[0] += 1
  elif report.skipped: row[2] += 1
  else:
    row[1] += 1
    msg = str(getattr(report.longrepr, "reprcrash", None) and report.longrepr.reprcrash.message or report.longrepr)  # type: ignore[union-attr]
    row[3].append((op, dtype, msg.strip().splitlines()[0][:200] if msg.strip() else "", report.nodeid))

def pytest_terminal_summary(terminalreporter: Any) -> None:
  if not _report.results: return
  tr = terminalreporter
  for dev, caps in _report.results.items():
    failed = sum(r[1] for r in caps.values())
    tr.write_sep("=", f"tinygrad conformance: {dev}: " + (f"{failed} FAILED" if failed else "all capabilities pass"))
    if (pair := compiler_pair(dev)): tr.write_line(f"  compiler pair: {pair}")
    for (cap, _), (ok, bad, skip, fails) in sorted(caps.items()):
      tr.write_line(f"  {'FAIL' if bad else 'ok  '} {cap}: {ok} passed, {bad} failed, {skip} skipped")
      for op, dtype, msg, nodeid in fails:
        what = " ".join(x for x in (f"op={op}" if op else "", f"dtype={dtype}" if dtype else "") if x) or nodeid.rsplit("::", 1)[-1]
        tr.write_line(f"       {what}: {msg}")
