"""The `webgpu` fixture: the opened WEBGPU device, or a visible skip with the reason (a failure when REQUIRE_DEVICES names WEBGPU)."""
import functools, os
import pytest

@functools.cache
def _open() -> str | None:
  try:
    from tinygrad.device import Device
    Device["WEBGPU"]
  except Exception as e: return f"WEBGPU does not open here: {type(e).__name__}: {e}"
  return None

@pytest.fixture(scope="session")
def webgpu() -> str:
  why = _open()
  if why is not None:
    if "WEBGPU" in [d.strip().upper() for d in os.environ.get("REQUIRE_DEVICES", "").split(",")]:
      pytest.fail(f"required device (REQUIRE_DEVICES): {why}", pytrace=False)
    pytest.skip(why)
  return "WEBGPU"
