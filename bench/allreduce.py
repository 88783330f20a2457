#!/usr/bin/env python3
"""All-reduce bandwidth between two devices in one process (Tensor.shard: COPYs and combining kernels, tinygrad/multi.py),
against a numpy memcpy of the same size; with bench/allreduce_mpi.py present and mpirun on the PATH, the same sizes over
MPI between two processes (its rows in the same table).

  python bench/allreduce.py                      # CPU:0 and CPU:1, 1 KB .. 64 MB every 4x
  DEVS=NV:0,NV:1 SIZES=1024,1048576 python bench/allreduce.py
  RING=2 python bench/allreduce.py               # the ring (with two devices it moves the same bytes as the naive one)

GB/s is the algorithm bandwidth: the tensor's bytes / the best time of one all-reduce (each device starts with its own
partial of that size and ends with the sum). Every size's result is checked against numpy's sum (a mismatch exits 1).
"""
from __future__ import annotations
import json, os, shutil, subprocess, sys
import numpy as np
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import ROOT, best_s, user_env   # (also puts the repo's core on sys.path)

DEFAULT_SIZES = [1 << s for s in range(10, 27, 2)]   # 1 KB .. 64 MB, every 4x

def reps(nbytes: int) -> int: return max(3, min(50, (64 << 20) // max(nbytes, 1) // 16))

def in_process(devs: tuple[str, ...], nbytes: int) -> float:
  """Seconds of one all-reduce of `nbytes` float32 between `devs` (the schedule lowered once, its steps run again)."""
  from tinygrad import Tensor, Device
  from tinygrad.uop import Ops
  from tinygrad.engine.schedule import create_schedule, memory_plan
  from tinygrad.engine.realize import lower_schedule, run_steps
  n = nbytes // 4
  parts = np.stack([(np.arange(n, dtype=np.float32) % 1024) * (i + 1) for i in range(len(devs))])
  x = Tensor(parts).shard(devs, 0).realize()   # device i holds row i: its partial
  out = x.sum(0)
  roots = list(out.uop.src)
  sched, results = create_schedule(roots)
  keep = {r.src[0] if r.op is Ops.RESHAPE else r for r in results.values()}
  steps = lower_schedule(sched, memory_plan(sched, keep))
  def once() -> None:
    run_steps(steps)
    for d in devs: Device[d].synchronize()
  t = best_s(once, n=reps(nbytes))
  want = parts.sum(0)
  for r in roots:
    got = Tensor(results[r]).numpy()
    if not np.array_equal(got, want):
      raise SystemExit(f"all-reduce of {nbytes} bytes over {devs} is wrong on {r.device}: first mismatch at {int(np.argmax(got != want))}")
  return t

def memcpy_s(nbytes: int) -> float:
  src = np.ones(nbytes // 4, dtype=np.float32)
  dst = np.empty_like(src)
  return best_s(lambda: np.copyto(dst, src), n=reps(nbytes))

def mpi_rows(sizes: list[int]) -> dict[int, dict]:
  """bench/allreduce_mpi.py's rows under mpirun -n 2, by size; empty when it or mpirun is missing (or it failed: said on stderr)."""
  script = os.path.join(ROOT, "bench", "allreduce_mpi.py")
  if not os.path.exists(script) or shutil.which("mpirun") is None: return {}
  cmd = ["mpirun", "-n", "2", "--allow-run-as-root", "--oversubscribe", sys.executable, script]
  r = subprocess.run(cmd, capture_output=True, text=True, timeout=1200, env=user_env(SIZES=",".join(map(str, sizes))))
  if r.returncode != 0:
    print(f"  (allreduce_mpi.py failed: {(r.stderr.strip().splitlines() or [str(r.returncode)])[-1]})", file=sys.stderr)
    return {}
  rows = [json.loads(ln) for ln in r.stdout.splitlines() if ln.startswith("{")]
  return {int(row["bytes"]): row for row in rows}

def fmt_size(n: int) -> str: return f"{n >> 20} MB" if n >= 1 << 20 else f"{n >> 10} KB"

def main() -> None:
  devs = tuple(os.environ.get("DEVS", "CPU:0,CPU:1").split(","))
  sizes = [int(s) for s in os.environ["SIZES"].split(",")] if os.environ.get("SIZES") else DEFAULT_SIZES
  mpi = mpi_rows(sizes)
  print(f"all-reduce of float32 partials, {len(devs)} devices in one process ({','.join(devs)})" + (" | over MPI, 2 processes" if mpi else ""))
  print(f"{'size':>7s} {'shard GB/s':>11s} {'memcpy GB/s':>12s} {'ratio':>7s}" + (f" {'MPI GB/s':>9s} {'mpi4py GB/s':>12s} {'MPI ratio':>10s}" if mpi else ""))
  for nb in sizes:
    t, m = in_process(devs, nb), memcpy_s(nb)
    line = f"{fmt_size(nb):>7s} {nb / t / 1e9:11.3f} {nb / m / 1e9:12.3f} {m / t:6.3f}x"
    if nb in mpi:
      row = mpi[nb]
      line += f" {row['gbps']:9.3f} {row.get('mpi4py_gbps', float('nan')):12.3f} {row['gbps'] / (nb / m / 1e9):9.3f}x"
    print(line)

if __name__ == "__main__": main()
