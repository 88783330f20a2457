"""Packaging: wheels of the core and of tinygrad-cpu, installed into a fresh venv (no editable installs, no source tree on
the path: run from a temp folder), compute the one-liner and list devices; each wheel depends only on what it needs.
Dependencies come from the package index pip is configured with. Run by `make test` (and `make dist-test`)."""
import email.parser, glob, os, subprocess, sys, tempfile, zipfile
import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
pytestmark = pytest.mark.tool_policy_exempt   # a packaging failure must fail, never read as a missing tool

def _requires(whl: str) -> list[str]:
  with zipfile.ZipFile(whl) as z:
    meta = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))
    reqs = email.parser.Parser().parsestr(z.read(meta).decode()).get_all("Requires-Dist") or []
  return sorted(r.split(";")[0].replace(" ", "") for r in reqs if "extra ==" not in r)   # what `pip install` pulls, not the extras

def _build(src: str, out: str, *kinds: str) -> None:
  r = subprocess.run([sys.executable, "-m", "build", "-q", "--no-isolation", *kinds, "--outdir", out, src], capture_output=True, text=True, timeout=300)
  assert r.returncode == 0, r.stdout + r.stderr

def test_wheels_install_into_a_fresh_venv_and_compute():
  pytest.importorskip("build", reason="the 'build' package is not installed: pip install build (it is in the test extras)")
  with tempfile.TemporaryDirectory() as d:
    out = os.path.join(d, "dist")
    _build(ROOT, out)   # wheel + sdist
    _build(os.path.join(ROOT, "plugins", "tinygrad_cpu"), out, "--wheel")
    core, cpu = glob.glob(os.path.join(out, "tinygrad_core-*.whl")), glob.glob(os.path.join(out, "tinygrad_cpu-*.whl"))
    assert len(core) == 1 and len(cpu) == 1 and glob.glob(os.path.join(out, "tinygrad[-_]core-*.tar.gz")), os.listdir(out)
    assert _requires(core[0]) == ["numpy>=1.24", "pluggy>=1.3"] and _requires(cpu[0]) == ["llvmlite", "tinygrad-core"]
    with zipfile.ZipFile(core[0]) as z: assert not any(n.startswith(("tests/", "plugins/", "tinygrad_cpu/")) for n in z.namelist())
    venv = os.path.join(d, "venv")
    subprocess.run([sys.executable, "-m", "venv", venv], check=True, timeout=300)
    py = os.path.join(venv, "bin", "python")
    r = subprocess.run([py, "-m", "pip", "install", "-q", "--find-links", out, core[0], cpu[0]], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "DEV", "VIRTUAL_ENV")}
    run = lambda *a: subprocess.run([py, *a], capture_output=True, text=True, timeout=300, cwd=d, env=env)
    r = run("-c", "import tinygrad, tinygrad_cpu; from tinygrad import Tensor; print((Tensor([1,2,3])*2).tolist(), tinygrad.__file__, tinygrad_cpu.__file__)")
    assert r.returncode == 0 and r.stdout.startswith("[2, 4, 6]") and ROOT not in r.stdout and venv in r.stdout, r.stdout + r.stderr
    r = run("-m", "tinygrad")
    assert r.returncode == 0 and "tinygrad-cpu 0.1.0" in r.stdout and "* CPU" in r.stdout, r.stdout + r.stderr
