"""Public tinygrad (distribution `tinygrad`) and tinygrad-core share the import name `tinygrad`: with both installed their
files mix in one folder, so importing ours warns once, naming both distributions and the fix."""
import os, subprocess, sys, tempfile

CORE = os.path.join(os.path.dirname(__file__), "..", "..", "core")

def _import(extra_path: str) -> subprocess.CompletedProcess:
  code = "import tinygrad; from tinygrad import Tensor; print((Tensor([1,2,3])*2).tolist())"
  env = {**os.environ, "PYTHONPATH": os.pathsep.join([CORE, extra_path]), "DEV": "PYTHON", "PYTHONWARNINGS": "default"}
  return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=extra_path, timeout=120)

def test_public_tinygrad_installed_beside_warns_once_with_the_fix():
  with tempfile.TemporaryDirectory() as d:
    os.makedirs(os.path.join(d, "tinygrad-0.10.3.dist-info"))
    with open(os.path.join(d, "tinygrad-0.10.3.dist-info", "METADATA"), "w") as f: f.write("Metadata-Version: 2.1\nName: tinygrad\nVersion: 0.10.3\n")
    r = _import(d)
  assert r.stdout.strip() == "[2, 4, 6]", r.stderr
  assert r.stderr.count("two distributions provide the import name 'tinygrad'") == 1, r.stderr
  assert "tinygrad-core" in r.stderr and "tinygrad-0.10.3.dist-info" in r.stderr and "pip uninstall tinygrad" in r.stderr

def test_our_own_and_plugin_dists_do_not_warn():
  with tempfile.TemporaryDirectory() as d:
    for n in ("tinygrad_core-0.1.0.dist-info", "tinygrad_cpu-0.1.0.dist-info", "tinygrad_core.egg-info", "tinygrad-cpu-0.1.0.dist-info"): os.makedirs(os.path.join(d, n))
    r = _import(d)
  assert r.stdout.strip() == "[2, 4, 6]" and "two distributions" not in r.stderr, r.stderr
