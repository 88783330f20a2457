"""The compile cache on the CPU device, end to end: a damaged cached program is recompiled, never loaded."""
import os, sys, shutil, sqlite3, subprocess
import numpy as np
import pytest

RUN = "from tinygrad import Tensor; print((Tensor.arange(1000).float()*3+1).sum().item())"

def _run(db, cc):
  env = {**os.environ, "CACHEDB": str(db), "CPU_CC": cc, "DEV": "CPU", "CACHELEVEL": "1"}
  return subprocess.run([sys.executable, "-W", "always", "-c", RUN], capture_output=True, text=True, env=env, timeout=300)

@pytest.mark.parametrize("cc", ["LLVM", "GCC"])
def test_damaged_cached_program_is_recompiled(tmp_path, cc):
  if cc == "LLVM": pytest.importorskip("llvmlite", reason="llvmlite is not installed (pip install llvmlite)")
  if cc == "GCC" and shutil.which("gcc") is None: pytest.skip("gcc not found on PATH (apt-get install gcc)")
  db = tmp_path / "cache.db"
  first = _run(db, cc)
  assert first.returncode == 0, first.stderr
  conn = sqlite3.connect(db)   # flip one byte in the middle of every cached program; the database itself stays intact
  tables = [t for (t,) in conn.execute("SELECT name FROM sqlite_master WHERE type='table' AND name LIKE 'compile%'")]
  assert tables, "nothing was cached"
  for t in tables:
    for key, val in conn.execute(f'SELECT key, val FROM "{t}"').fetchall():
      conn.execute(f'UPDATE "{t}" SET val=? WHERE key=?', (val[:len(val)//2] + bytes([val[len(val)//2] ^ 0xFF]) + val[len(val)//2+1:], key))
  conn.commit()
  conn.close()
  second = _run(db, cc)
  assert second.returncode == 0, second.stderr
  want = float((np.arange(1000, dtype=np.float32) * 3 + 1).sum())
  assert float(first.stdout.split()[-1]) == float(second.stdout.split()[-1]) == want
  assert "damaged" in second.stderr and str(db) in second.stderr
