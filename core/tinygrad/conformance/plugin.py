"""The `device` fixture: every installed device that opens (NULL excluded), as a parameter of each conformance test.

TEST_DEVICES=CPU,PYTHON restricts the set. REQUIRE_DEVICES=CPU,WEBGPU makes a listed device that is missing or fails to
open a test FAILURE with the reason (instead of a skip): CI sets it where a backend must run.
"""
from __future__ import annotations
import functools, os
import pytest

def _env_list(name: str) -> list[str]: return [d.strip().upper() for d in os.environ.get(name, "").split(",") if d.strip()]

@functools.cache
def installed_devices() -> tuple[str, ...]:
  """Device names offered by installed plugins, highest priority first (PYTHON when discovery itself is unavailable)."""
  try:
    from tinygrad.plugins import registry
    names = [e.spec.name.upper() for e in registry().devices()]
  except ImportError: names = ["PYTHON"]
  return tuple(n for n in names if n != "NULL")

def candidate_devices() -> list[str]:
  names = list(installed_devices())
  names += [d for d in _env_list("REQUIRE_DEVICES") if d not in names]   # a required device that is missing must show up (and fail)
  if (only := _env_list("TEST_DEVICES")): names = [d for d in names if d in only] + [d for d in only if d not in names]
  return names

@functools.cache
def open_device(name: str) -> str | None:
  """None when `name` opens, else why it does not."""
  if name not in installed_devices(): return f"device {name} is not installed (installed: {', '.join(installed_devices()) or 'none'})"
  try:
    from tinygrad.device import Device
    Device[name]
  except Exception as e: return f"device {name} failed to open: {type(e).__name__}: {e}"
  return None

def pytest_generate_tests(metafunc):
  if "device" in metafunc.fixturenames:
    metafunc.parametrize("device", candidate_devices(), indirect=True, scope="session")

@pytest.fixture(scope="session")
def device(request) -> str:
  name = request.param
  why = open_device(name)
  if why is not None:
    if name in _env_list("REQUIRE_DEVICES"): pytest.fail(f"required device (REQUIRE_DEVICES): {why}", pytrace=False)
    pytest.skip(why)
  return name
