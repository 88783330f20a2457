"""tinygrad.distributed: collectives and data-parallel training over `mpirun -n 2` (tests/core/distributed_worker.py is
the rank's program) checked against numpy and one process on the whole batch, a failing rank ending the job in bounded
time, and, in this process, the API's errors and the Backend door on a world of one."""
from __future__ import annotations
import json, os, shutil, subprocess, sys, time
import numpy as np
import pytest
from tinygrad import Tensor, TinyJit, dtypes
from tinygrad import distributed as dist
from tinygrad.device import Buffer
from pathimport import ROOT, load_file

WORKER = ROOT / "tests" / "core" / "distributed_worker.py"

def mpirun(args: list[str], timeout: float, **env: str) -> subprocess.CompletedProcess:
  """`mpirun -n 2 python WORKER args` (as root, more ranks than cores allowed); skips when OpenMPI or mpi4py is absent."""
  if shutil.which("mpirun") is None: pytest.skip("mpirun not found; install it with `apt-get install openmpi-bin`")
  pytest.importorskip("mpi4py", reason="tinygrad.distributed's MPI backend needs mpi4py: pip install mpi4py")
  cmd = ["mpirun", "-n", "2", "--allow-run-as-root", "--oversubscribe", sys.executable, str(WORKER), *args]
  # one CPU thread per rank (two ranks share this machine's cores with the test run)
  return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env={**os.environ, "CPU_COUNT": "1", **env})

@pytest.fixture(scope="module")
def ranks(tmp_path_factory) -> list[dict]:
  out = tmp_path_factory.mktemp("dist")
  r = mpirun(["collectives", str(out)], timeout=240)
  assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
  return [json.loads((out / f"rank{i}.json").read_text()) for i in range(2)]

def _worker(): return load_file("tests/core/distributed_worker.py", "distributed_worker")

@pytest.mark.parametrize("dt", ["float32", "int32"])
@pytest.mark.parametrize("n", [0, 1, 7, 1001])
def test_all_reduce_matches_numpy(ranks, dt, n):
  vals = [_worker().rank_values(r, n, dt) for r in range(2)]
  for res in ranks:
    assert (res["rank"], res["world"]) == (res["get_rank"], res["get_world_size"]) and res["world"] == 2
    np.testing.assert_array_equal(np.array(res[f"sum_{dt}_{n}"], dtype=dt).reshape(n), vals[0] + vals[1])
    np.testing.assert_array_equal(np.array(res[f"max_{dt}_{n}"], dtype=dt).reshape(n), np.maximum(*vals))
    np.testing.assert_array_equal(np.array(res[f"min_{dt}_{n}"], dtype=dt).reshape(n), np.minimum(*vals))
    np.testing.assert_array_equal(np.array(res[f"bcast_{dt}_{n}"], dtype=dt).reshape(n), vals[1])

def test_all_reduce_mean_half_and_views(ranks):
  w = _worker()
  for res in ranks:
    np.testing.assert_allclose(np.array(res["mean_float32"]).reshape(7), (w.rank_values(0, 7, "float32") + w.rank_values(1, 7, "float32")) / 2)
    np.testing.assert_array_equal(res["sum_float16"], w.rank_values(0, 5, "float16") + w.rank_values(1, 5, "float16"))
    np.testing.assert_array_equal(res["sum_lazy"], np.arange(6).reshape(2, 3).T * 3)
    assert res["dtype_ok"] == [2, 4]

@pytest.mark.parametrize("opt", ["sgd", "adam"])
def test_data_parallel_equals_one_process_on_the_full_batch(ranks, opt):
  # SGD: all_reduce_grads inside a TinyJit'd step (captured, replayed); Adam: DistributedOptimizer, ranks seeded apart
  single = _worker().train(opt)
  for res in ranks:
    for got, want in zip(res[f"{opt}_weights"], single): np.testing.assert_allclose(np.array(got), want, atol=1e-5, rtol=1e-5)
    # the four float32 gradients travel as one flat buffer: one all_reduce per step
    assert res[f"{opt}_calls"] == _worker().STEPS

def test_beautiful_mnist_example_trains_data_parallel(ranks):
  # each rank its own half of every batch (different losses), the gradients averaged: the ranks' weights stay equal
  (l0, w0), (l1, w1) = [(res["mnist_losses"], res["mnist_weights"]) for res in ranks]
  assert len(l0) == len(l1) == 3 and np.all(np.isfinite(l0 + l1)) and l0 != l1
  for a, b in zip(w0, w1): np.testing.assert_allclose(np.array(a), np.array(b), atol=1e-6)
  assert not np.allclose(np.array(w0[0]), 0)

def test_a_rank_that_raises_ends_the_job(tmp_path):
  st = time.monotonic()
  r = mpirun(["raise"], timeout=120, TINYGRAD_DIST_TIMEOUT="60")
  assert r.returncode != 0, r.stdout + r.stderr
  out = r.stdout + r.stderr
  assert "rank 1 failed on purpose" in out and "rank 1 of 2 raised RuntimeError; aborting every rank" in out, out[-3000:]
  assert "finished after a peer failed" not in out
  assert time.monotonic() - st < 60   # the excepthook's abort, not the collective timeout

def test_a_rank_that_is_killed_ends_the_job(tmp_path):
  st = time.monotonic()
  r = mpirun(["kill"], timeout=120, TINYGRAD_DIST_TIMEOUT="60")
  out = r.stdout + r.stderr
  assert r.returncode != 0 and "exited on signal 9" in out, out[-3000:]   # mpirun's own abort
  assert "finished after a peer failed" not in out
  assert time.monotonic() - st < 60

@pytest.mark.parametrize("mode", ["hang", "stop"])
def test_a_rank_that_hangs_or_is_stopped_warns_then_times_out_the_others(tmp_path, mode):
  st = time.monotonic()
  r = mpirun([mode], timeout=120, TINYGRAD_DIST_TIMEOUT="4")
  out = r.stdout + r.stderr
  assert r.returncode != 0, out
  # first a progress line naming the collective (at a tenth of the timeout, 30 s at most), then the abort
  warn = out.find("rank 0 of 2: still waiting in all_reduce_sum of 16 bytes of dtypes.float after")
  abort = out.find("rank 0 of 2: all_reduce_sum of 16 bytes of dtypes.float did not finish within TINYGRAD_DIST_TIMEOUT=4 s")
  assert 0 <= warn < abort and out.count("still waiting") == 1, out[-3000:]
  assert "finished after a peer failed" not in out
  assert time.monotonic() - st < 100   # bounded: not rank 1's 600 s sleep, nor a stopped rank's forever

MISMATCH = {"dtype": "rank 1 calls #1 all_reduce op=sum dtype=int shape=(4,)", "shape": "rank 1 calls #1 all_reduce op=sum dtype=float shape=(5,)",
            "op": "rank 1 calls #1 broadcast src=0 dtype=float shape=(4,)"}

@pytest.mark.parametrize("kind", ["dtype", "op"])
def test_ranks_that_disagree_on_a_collective_abort_naming_both(kind):
  r = mpirun(["mismatch", kind], timeout=120, TINYGRAD_DIST_TIMEOUT="60")
  out = r.stdout + r.stderr
  assert r.returncode != 0 and "finished mismatched collectives" not in out, out[-3000:]
  assert "the ranks disagree on collective #1: rank 0 calls #1 all_reduce op=sum dtype=float shape=(4,); " + MISMATCH[kind] in out, out[-3000:]

# ---- in this process: a world of one behind a test Backend (the door another engine, e.g. NCCL, comes through) ----
class LoopbackBackend(dist.Backend):
  """A world of one: the collectives copy; counts its calls."""
  name = "loopback"
  def __init__(self) -> None: self.calls: list[str] = []
  def all_reduce(self, out: Buffer, inp: Buffer, op: str) -> None:
    self.calls.append(f"all_reduce_{op}")
    out.copyin(inp.as_buffer())
  def broadcast(self, out: Buffer, inp: Buffer, src: int) -> None:
    self.calls.append("broadcast")
    out.copyin(inp.as_buffer())
  def barrier(self) -> None: self.calls.append("barrier")

@pytest.fixture
def loopback(monkeypatch) -> LoopbackBackend:
  monkeypatch.setattr(dist, "_backend", None)
  monkeypatch.setattr(dist, "_watchdog", None)
  monkeypatch.setitem(dist.BACKENDS, "loopback", LoopbackBackend)
  dist.init("loopback")
  dist.init("loopback")   # idempotent
  assert dist.is_initialized() and (dist.rank(), dist.world_size()) == (0, 1)
  assert isinstance(dist._backend, LoopbackBackend)
  return dist._backend

def test_world_of_one_collectives(loopback):
  x = Tensor([[1.5, -2.0, 3.0]])
  for op in dist.REDUCE_OPS: np.testing.assert_array_equal(dist.all_reduce(x, op).numpy(), x.numpy())
  np.testing.assert_array_equal(dist.broadcast(Tensor([4, 5], dtype=dtypes.int32)).numpy(), [4, 5])
  y = dist.all_reduce(Tensor([1.0, 2.0], dtype=dtypes.float16))
  assert y.dtype == dtypes.float16 and y.tolist() == [1.0, 2.0]
  dist.barrier()
  assert loopback.calls == [f"all_reduce_{o}" for o in ("sum", "sum", "max", "min")] + ["broadcast", "all_reduce_sum", "barrier"]

def test_collective_is_captured_and_replayed_by_tinyjit(loopback):
  @TinyJit
  def f(a: Tensor) -> Tensor: return (dist.all_reduce(a * 2) + 1).realize()
  for i in range(4): assert f(Tensor([float(i)])).tolist() == [2.0 * i + 1]
  assert loopback.calls == ["all_reduce_sum"] * 4   # replays 3 and 4 ran it too

def test_all_reduce_grads_is_one_collective_per_dtype(loopback):
  a, b, c = Tensor.ones(3, requires_grad=True), Tensor.ones(2, 2, requires_grad=True), Tensor.ones(2, requires_grad=True, dtype=dtypes.float16)
  ((a * 2).sum() + (b * 3).sum() + (c.float() * 4).sum()).backward()
  dist.all_reduce_grads([a, b, c])
  assert sorted(loopback.calls) == ["all_reduce_sum"] * 2   # float32 (a, b) and float16 (c); mean over a world of one
  assert a.grad is not None and b.grad is not None and c.grad is not None
  assert a.grad.tolist() == [2.0] * 3 and b.grad.tolist() == [[3.0, 3.0]] * 2 and c.grad.tolist() == [4.0] * 2

def test_errors_name_the_value_and_the_fix(loopback, monkeypatch):
  with pytest.raises(ValueError, match="unknown all_reduce op 'prod'; valid: sum, mean, max, min"): dist.all_reduce(Tensor([1.0]), "prod")
  with pytest.raises(TypeError, match="op='mean' of a dtypes.int tensor would truncate"): dist.all_reduce(Tensor([1]), "mean")
  with pytest.raises(TypeError, match="bool tensor is not supported; cast it first"): dist.all_reduce(Tensor([True]))
  with pytest.raises(ValueError, match=r"broadcast src=3 is not a rank; valid: 0..0"): dist.broadcast(Tensor([1.0]), src=3)
  with pytest.raises(RuntimeError, match=r"parameter\(s\) \[0\] of 1 have no .grad"): dist.all_reduce_grads([Tensor([1.0], requires_grad=True)])
  with pytest.raises(RuntimeError, match="already initialized with backend 'loopback', not 'mpi'"): dist.init("mpi")
  monkeypatch.setattr(dist, "_backend", None)
  with pytest.raises(RuntimeError, match=r"not initialized: call tinygrad.distributed.init\(\) first"): dist.rank()
  with pytest.raises(ValueError, match="unknown distributed backend 'gloo'; valid: mpi, loopback"): dist.init("gloo")
  monkeypatch.setitem(sys.modules, "mpi4py", None)   # as if mpi4py were not installed
  with pytest.raises(ImportError, match=r"pip install tinygrad-core\[mpi\].*apt-get install openmpi-bin"): dist.init("mpi")

class TwoRanks(LoopbackBackend):
  """Rank 0 of a world of two whose peer calls `peer` (its descriptor, as exchange() would bring it); abort raises."""
  world_size = 2
  peer: str | None = None
  def exchange(self, desc: bytes) -> list[bytes]:
    if self.peer is None: return [desc, desc]
    num = desc.split(b" ", 1)[0]   # "#N": the peer is at the same collective
    return [desc, (num + b" " + self.peer.encode()).ljust(len(desc), b"\0")]
  def abort(self, code: int) -> None: raise SystemExit(code)

@pytest.mark.parametrize("kind", list(MISMATCH))
def test_every_kind_of_disagreement_is_named(monkeypatch, capsys, kind):
  monkeypatch.setattr(dist, "_backend", None)
  monkeypatch.setattr(dist, "_watchdog", None)
  monkeypatch.setattr(dist, "_started", 0)
  monkeypatch.setitem(dist.BACKENDS, "tworanks", TwoRanks)
  dist.init("tworanks")
  b = dist._backend
  assert isinstance(b, TwoRanks)
  np.testing.assert_array_equal(dist.all_reduce(Tensor.ones(4)).numpy(), [1.0] * 4)   # agreeing ranks: no word
  b.peer = MISMATCH[kind].split(" ", 4)[4]
  with pytest.raises(SystemExit): dist.all_reduce(Tensor.ones(4)).numpy()
  err = capsys.readouterr().err
  assert "the ranks disagree on collective #2: rank 0 calls #2 all_reduce op=sum dtype=float shape=(4,); " + MISMATCH[kind].replace("#1", "#2") in err, err
  assert "same op, dtype and shape; aborting every rank" in err and b.calls == ["all_reduce_sum"]   # the data collective never ran

def test_launched_reads_the_launchers_variables(monkeypatch):
  for v in dist.LAUNCHER_VARS: monkeypatch.delenv(v, raising=False)
  assert not dist.launched()
  monkeypatch.setenv("OMPI_COMM_WORLD_SIZE", "2")
  assert dist.launched()
