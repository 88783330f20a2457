"""Shared benchmark helpers: timing, and running a snippet in another interpreter (numpy as users run it, public tinygrad)."""
from __future__ import annotations
import json, os, subprocess, sys, time, statistics
from typing import Any, Callable

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "core"))

def best_s(fxn: Callable[[], Any], n: int = 5, warmup: int = 1) -> float:
  """The fastest of `n` timed calls, in seconds, after `warmup` untimed ones."""
  for _ in range(warmup): fxn()
  ts = []
  for _ in range(n):
    st = time.perf_counter()
    fxn()
    ts.append(time.perf_counter() - st)
  return min(ts)

def median_s(fxn: Callable[[], Any], n: int = 5) -> float:
  ts = []
  for _ in range(n):
    st = time.perf_counter()
    fxn()
    ts.append(time.perf_counter() - st)
  return statistics.median(ts)

def user_env(numpy_side: bool = False, **extra: str) -> dict[str, str]:
  """This environment as a user's machine has it. These machines set PYTHONDONTWRITEBYTECODE, which makes every process
  recompile an editable install's sources (a pip-installed package has its .pyc), so it is unset for every side. They
  also set OPENBLAS_CORETYPE/OPENBLAS_L2_SIZE, which halve numpy's matmul: unset for numpy's side (never in tests or CI)."""
  drop = {"PYTHONDONTWRITEBYTECODE"} | ({"OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"} if numpy_side else set())
  env = {k: v for k, v in os.environ.items() if k not in drop}
  env.update(extra)
  return env

def run_json(python: str, code: str, env: dict[str, str] | None = None, timeout: float = 600) -> Any:
  """Run `code` (which prints one JSON value last) with `python`; the parsed value, or None with the error on stderr."""
  r = subprocess.run([python, "-c", code], capture_output=True, text=True, env=env, timeout=timeout, cwd="/tmp")
  if r.returncode != 0:
    print(f"  ({os.path.basename(python)} failed: {r.stderr.strip().splitlines()[-1] if r.stderr.strip() else r.returncode})", file=sys.stderr)
    return None
  return json.loads(r.stdout.strip().splitlines()[-1])

def reference_python() -> str | None:
  """Public tinygrad's interpreter, from TINYGRAD_REF_PYTHON (a separate venv with `pip install tinygrad`), if set and working."""
  py = os.environ.get("TINYGRAD_REF_PYTHON")
  if not py: return None
  ok = subprocess.run([py, "-c", "import tinygrad"], capture_output=True, cwd="/tmp").returncode == 0
  return py if ok else None

def ratio(a: float | None, b: float | None) -> str:
  return f"{a/b:6.2f}x" if a and b else "    - "

def ensure_tinygrad_venv(path: str, version: str = "0.14.0") -> str:
  """The interpreter of a venv at `path` holding public tinygrad `version`, created (python -m venv; pip install) if missing."""
  py = os.path.join(path, "bin", "python")
  check = f"import tinygrad.tensor, importlib.metadata as m; assert m.version('tinygrad') == {version!r}"
  if os.path.exists(py) and subprocess.run([py, "-c", check], capture_output=True, cwd="/tmp").returncode == 0: return py
  print(f"creating {path} with tinygrad=={version} ...", file=sys.stderr)
  subprocess.run([sys.executable, "-m", "venv", path], check=True)
  subprocess.run([py, "-m", "pip", "install", "-q", f"tinygrad=={version}", "numpy"], check=True)
  return py

def gpu_figures(device: str, pairs: tuple[str, ...], small: bool, m: int = 2048) -> None:
  """Per compiler pair of a GPU device: a+b and a sum over 16M floats (GB/s), float and half m x m matmuls (GFLOP/s; the
  half one runs on tensor cores where the renderer has them), then the sum and the float matmul again with NOOPT=1 (no
  optimizer actions: what GPUs ran before the GPU heuristics), so one run shows what the heuristics gain. Wall time of 5
  runs between synchronizes, after a warm-up. `small` (a mock driver, whose figures measure the PYTHON interpreter)
  shrinks the sizes so the script only shows it runs."""
  import contextlib
  from tinygrad import Tensor, dtypes
  from tinygrad.device import Device
  from tinygrad.helpers import Context
  n, m = (1 << 12, 32) if small else (1 << 24, m)
  for dev in (f"{device}:{p}" for p in pairs):
    try:
      a, b = Tensor.rand(n, device=dev).realize(), Tensor.rand(n, device=dev).realize()
      x, y = Tensor.rand(m, m, device=dev).realize(), Tensor.rand(m, m, device=dev).realize()
      hx, hy = x.cast(dtypes.half).realize(), y.cast(dtypes.half).realize()
      for name, fn, work in [("add", lambda: (a + b).realize(), 12 * n), ("sum", lambda: a.sum().realize(), 4 * n),
                             ("matmul", lambda: (x @ y).realize(), 2 * m**3), ("mm_half", lambda: (hx @ hy).realize(), 2 * m**3),
                             ("sum_noopt", lambda: a.sum().realize(), 4 * n), ("mm_noopt", lambda: (x @ y).realize(), 2 * m**3)]:
        noopt = name.endswith("_noopt")
        with Context(NOOPT=1) if noopt else contextlib.nullcontext():
          fn()
          Device[dev].synchronize()
          st = time.perf_counter()
          for _ in range(5): fn()
          Device[dev].synchronize()
          dt = (time.perf_counter() - st) / 5
        print(f"{dev:10s} {name:9s} {dt*1e3:9.3f} ms  {work/dt/1e9:9.2f} {'GFLOP/s' if name.startswith('m') else 'GB/s'}")
    except Exception as e: print(f"{dev}: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")
  import numpy as np
  h = np.random.rand(1024, 1024).astype(np.float32)
  st = time.perf_counter()
  h @ h
  print(f"numpy      matmul    {(time.perf_counter()-st)*1e3:9.3f} ms (host, 1024)")
