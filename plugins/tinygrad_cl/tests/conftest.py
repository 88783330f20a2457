"""The `cl` fixture: the opened CL device, or a visible skip with the reason (a failure when REQUIRE_DEVICES names CL)."""
import functools, os
import pytest

@functools.cache
def _open() -> str | None:
  try:
    from tinygrad.device import Device
    Device["CL"]
  except Exception as e: return f"CL does not open here: {type(e).__name__}: {e}"
  return None

@pytest.fixture(scope="session")
def cl() -> str:
  why = _open()
  if why is not None:
    if "CL" in [d.strip().upper() for d in os.environ.get("REQUIRE_DEVICES", "").split(",")]:
      pytest.fail(f"required device (REQUIRE_DEVICES): {why}", pytrace=False)
    pytest.skip(why)
  return "CL"
