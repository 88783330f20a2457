"""scripts/setup_system.sh, the one set-up path for system packages: each branch (all present, can install, cannot, switched
off) checked without installing anything (SETUP_DRY_RUN, a PATH without apt-get, a fake sysroot and fake tools)."""
import os, subprocess, tempfile
import pytest

SCRIPT = os.path.join(os.path.dirname(__file__), "..", "..", "scripts", "setup_system.sh")

def _run(tools: tuple[str, ...], files: tuple[str, ...] = (), **env: str) -> str:
  with tempfile.TemporaryDirectory() as d:
    os.makedirs(b := os.path.join(d, "bin"))
    for t in ("id", *tools):
      real = next((os.path.join(p, t) for p in ("/usr/bin", "/bin") if os.path.exists(os.path.join(p, t))), "/bin/true")
      os.symlink(real, os.path.join(b, t))
    for f in files:
      os.makedirs(os.path.dirname(d + f), exist_ok=True)
      open(d + f, "w").close()
    r = subprocess.run(["/bin/bash", SCRIPT], env={"PATH": b, "SETUP_SYSROOT": d, **env}, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr   # never fails the build: a missing tool only means skips
    return r.stdout

ALL = ("/usr/share/vulkan/icd.d/lvp_icd.x86_64.json", "/usr/lib/x86_64-linux-gnu/libamd_comgr.so.2", "/etc/OpenCL/vendors/pocl.icd")
MPI_VIZ = ("mpirun", "mpicc", "chromium", "chromedriver")   # commands only the multi-process and VIZ tests need

def test_nothing_runs_when_everything_is_present():
  out = _run(("clang", "ld.lld", "apt-get", *MPI_VIZ), ALL, SETUP_DRY_RUN="1")
  assert out.startswith("system setup: all present") and "install" not in out

@pytest.mark.skipif(os.getuid() != 0, reason="the install branch needs root")
def test_root_with_apt_installs_only_what_is_missing():
  out = _run(("clang", "apt-get", "mpirun", "mpicc"), ALL[:1], SETUP_DRY_RUN="1")
  assert out.strip() == "system setup: would install: lld libamd-comgr2 pocl-opencl-icd chromium chromium-driver"

def test_without_apt_it_lists_skipped_backends_and_the_command():
  out = _run(("clang", *MPI_VIZ), ALL[1:])
  assert "nothing installed" in out and "AMD:LLVM" in out and "WEBGPU" in out and "CPU:CLANG" not in out
  assert "to install them: apt-get update && apt-get install -y lld mesa-vulkan-drivers" in out

def test_switch_skips_the_step():
  assert _run((), TINYGRAD_NO_SYSTEM_SETUP="1").strip() == "system setup: skipped (TINYGRAD_NO_SYSTEM_SETUP=1)"
