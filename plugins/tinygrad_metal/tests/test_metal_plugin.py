"""Discovery and selection off macOS: the device reports itself unavailable with the reason; the XCRUN pair explains its absence
or, given an xcrun on PATH (a fake one here), runs the documented two-step toolchain."""
import json, os, stat, subprocess, sys, pytest
from tinygrad.device import CompileError
from tinygrad_metal.plugin import probe
from tinygrad_metal.compiler import MetalXcrunCompiler

@pytest.mark.skipif(sys.platform == "darwin", reason="checks the non-macOS message")
def test_probe_says_why_off_macos():
  ok, why = probe()
  assert not ok and why == f"Metal needs macOS (this machine runs {sys.platform})"

@pytest.mark.skipif(sys.platform == "darwin", reason="checks the non-macOS listing")
def test_cli_lists_metal_unavailable_with_reason():
  r = subprocess.run([sys.executable, "-m", "tinygrad", "--no-check", "--json"], capture_output=True, text=True, timeout=60)
  metal = [d for d in json.loads(r.stdout)["devices"] if d["name"] == "METAL"]
  assert metal and metal[0]["status"] == "unavailable" and "Metal needs macOS" in metal[0]["reason"]
  assert metal[0]["distribution"] == "tinygrad-metal"

def test_open_off_macos_is_a_clear_error():
  if sys.platform == "darwin": pytest.skip("a Mac may open it")
  from tinygrad import Device
  from tinygrad.device import DeviceError
  Device.reset()
  with pytest.raises(DeviceError, match="device METAL from plugin 'metal' .* is not available here: Metal needs macOS"): Device["METAL"]

def test_xcrun_missing(monkeypatch):
  monkeypatch.setenv("PATH", "/nonexistent")
  with pytest.raises(RuntimeError, match=r"xcrun not found: .*xcode-select --install"): MetalXcrunCompiler()

FAKE_XCRUN = """#!/bin/sh
# records its arguments; plays `xcrun -sdk macosx (--find metal | metal ... -o X | metallib ... -o X)`
echo "$@" >> "$XCRUN_LOG"
shift 2
case "$1" in
  --find) echo /fake/metal ;;
  metal) grep -q BROKEN "$4" && { echo "kernel.metal:3:1: error: broken" >&2; exit 1; }; printf AIR > "$6" ;;
  metallib) printf 'MTLB' > "$4"; cat "$2" >> "$4" ;;
esac
"""

def test_xcrun_two_step_compile(tmp_path, monkeypatch):
  x = tmp_path / "xcrun"
  x.write_text(FAKE_XCRUN)
  x.chmod(x.stat().st_mode | stat.S_IEXEC)
  monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
  monkeypatch.setenv("XCRUN_LOG", str(tmp_path / "log"))
  c = MetalXcrunCompiler()
  assert c.compile("kernel void k() {}") == b"MTLBAIR"
  log = (tmp_path / "log").read_text().splitlines()
  assert log[0] == "-sdk macosx --find metal"
  assert log[1].startswith("-sdk macosx metal -fno-fast-math -c ") and log[1].endswith("kernel.air")
  assert log[2].startswith("-sdk macosx metallib ") and log[2].endswith("kernel.metallib")
  with pytest.raises(CompileError, match="xcrun metal failed \\(exit 1\\):\nkernel.metal:3:1: error: broken"): c.compile("BROKEN")
