#!/usr/bin/env python3
"""All-reduce bandwidth between processes over MPI (tinygrad.distributed), against a numpy memcpy of the same size.

  mpirun -n 2 python bench/allreduce_mpi.py            # as root: mpirun --allow-run-as-root -n 2 ...
  SIZES=1024,65536 mpirun -n 2 python bench/allreduce_mpi.py

Rank 0 prints one JSON line per size on stdout: {"bytes": n, "gbps": x, "mpi4py_gbps": m, "numpy_memcpy_gbps": y}, where
gbps is n bytes / the best time of tinygrad.distributed.all_reduce of a float32 tensor on the default device, mpi4py_gbps
the same for mpi4py's Allreduce on numpy arrays (the transport alone: tinygrad's overhead is the gap), numpy_memcpy_gbps
n / np.copyto's time. Every size's result is checked against the expected sum on every rank (a mismatch exits 1).
"""
from __future__ import annotations
import json, os, sys
import numpy as np
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import best_s   # (also puts the repo's core on sys.path)

DEFAULT_SIZES = [1 << s for s in range(10, 27, 2)]   # 1 KB .. 64 MB, every 4x

def reps(nbytes: int) -> int: return max(3, min(50, (64 << 20) // max(nbytes, 1) // 16))

def main() -> None:
  from tinygrad import Tensor
  from tinygrad import distributed as dist
  dist.init()
  r, w = dist.rank(), dist.world_size()
  b = dist.backend()
  if not isinstance(b, dist.MPIBackend): raise SystemExit(f"this benchmark needs the MPI backend, not {b.name!r}")
  comm, MPI = b.comm, b.MPI
  sizes = [int(s) for s in os.environ["SIZES"].split(",")] if os.environ.get("SIZES") else DEFAULT_SIZES
  for nbytes in sizes:
    n = nbytes // 4
    host = (np.arange(n, dtype=np.float32) % 1024) * (r + 1)
    x = Tensor(host).realize()
    want = (np.arange(n, dtype=np.float32) % 1024) * (w * (w + 1) // 2)
    got = dist.all_reduce(x).numpy()
    if not np.array_equal(got, want):
      print(f"rank {r}: all_reduce of {nbytes} bytes is wrong: first mismatch at {int(np.argmax(got != want))}", file=sys.stderr)
      comm.Abort(1)
    def tiny() -> None:
      comm.Barrier()
      dist.all_reduce(x).realize()
    def raw(out: np.ndarray = np.empty_like(host)) -> None:
      comm.Barrier()
      comm.Allreduce(host, out, op=MPI.SUM)
    k = reps(nbytes)
    # the barrier's own time is taken out: what is left is the collective
    bar = best_s(comm.Barrier, n=k)
    t_tiny, t_raw = max(best_s(tiny, n=k) - bar, 1e-9), max(best_s(raw, n=k) - bar, 1e-9)
    dst = np.empty_like(host)
    t_copy = max(best_s(lambda: np.copyto(dst, host), n=k), 1e-9)
    if r == 0:
      print(json.dumps({"bytes": nbytes, "gbps": round(nbytes / t_tiny / 1e9, 4), "mpi4py_gbps": round(nbytes / t_raw / 1e9, 4),
                        "numpy_memcpy_gbps": round(nbytes / t_copy / 1e9, 4)}), flush=True)

if __name__ == "__main__": main()
