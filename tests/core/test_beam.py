"""BEAM=n (codegen/search.py): the searched kernel is correct, the result is cached on disk per (kernel, device, compiler),
and a second search of the same kernel is a cache hit (no candidate is compiled)."""
import os, subprocess, sys
import pytest

CORE = os.path.join(os.path.dirname(__file__), "..", "..", "core")
RUN = """
import numpy as np, time
import tinygrad.codegen.search as search
from tinygrad import Tensor
calls = []
orig = search._compile
search._compile = lambda *a: calls.append(1) or orig(*a)
a, b = np.random.default_rng(0).standard_normal((24, 40)).astype(np.float32), np.random.default_rng(1).standard_normal((40, 20)).astype(np.float32)
got = (Tensor(a) @ Tensor(b)).numpy()
assert np.allclose(got, a @ b, rtol=1e-4, atol=1e-4), "BEAM result is wrong"
print("compiled", len(calls))
"""

def _run(tmp_path, device: str) -> int:
  env = {**os.environ, "PYTHONPATH": CORE, "DEV": device, "BEAM": "2", "BEAM_TIMEOUT": "20", "CACHEDB": str(tmp_path / "cache.db")}
  r = subprocess.run([sys.executable, "-c", RUN], capture_output=True, text=True, env=env, timeout=300)
  if r.returncode != 0 and "unavailable" in r.stderr: pytest.skip(r.stderr.strip().splitlines()[-1])
  assert r.returncode == 0, r.stderr
  return int(r.stdout.split()[-1])

@pytest.mark.parametrize("device", ["CPU", "PYTHON"])
def test_beam_searches_then_hits_the_cache(tmp_path, device):
  assert _run(tmp_path, device) > 2     # searched: the start points and at least one step of moves were compiled
  assert _run(tmp_path, device) == 0    # second process: the disk cache answers, nothing is compiled
