"""The conformance `device` fixture itself: which devices run, and REQUIRE_DEVICES turning a missing one into a failure."""
import os, subprocess, sys
from tinygrad.conformance.plugin import candidate_devices, installed_devices, open_device

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")

def test_null_is_never_a_conformance_device(): assert "NULL" not in installed_devices() and "DISK" not in installed_devices()

def test_test_devices_restricts(monkeypatch):
  monkeypatch.delenv("REQUIRE_DEVICES", raising=False)
  monkeypatch.setenv("TEST_DEVICES", "python")
  assert candidate_devices() == ["PYTHON"]

def test_required_missing_device_is_listed_with_a_reason(monkeypatch):
  monkeypatch.delenv("TEST_DEVICES", raising=False)
  monkeypatch.setenv("REQUIRE_DEVICES", "NOSUCHDEV")
  assert "NOSUCHDEV" in candidate_devices()
  assert "not installed" in open_device("NOSUCHDEV")

def test_required_missing_device_fails_the_run():
  env = {**os.environ, "PYTHONPATH": os.path.join(ROOT, "core"), "TEST_DEVICES": "NOSUCHDEV", "REQUIRE_DEVICES": "NOSUCHDEV"}
  test = os.path.join(ROOT, "tests", "conformance", "test_suite.py") + "::TestKernelCount::test_matmul_is_one_kernel"
  out = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-rf", test], env=env, capture_output=True, text=True, cwd=ROOT)
  assert out.returncode == 1, out.stdout[-2000:]
  assert "required device" in out.stdout and "NOSUCHDEV" in out.stdout, out.stdout[-2000:]

def test_missing_device_without_require_is_a_visible_skip():
  env = {**os.environ, "PYTHONPATH": os.path.join(ROOT, "core"), "TEST_DEVICES": "NOSUCHDEV"}
  env.pop("REQUIRE_DEVICES", None)
  test = os.path.join(ROOT, "tests", "conformance", "test_suite.py") + "::TestKernelCount::test_matmul_is_one_kernel"
  out = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-rs", test], env=env, capture_output=True, text=True, cwd=ROOT)
  assert out.returncode == 0 and "NOSUCHDEV is not installed" in out.stdout, out.stdout[-2000:]
