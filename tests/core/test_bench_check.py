"""make bench-check (bench/run.py --check): a missed target fails the check (after two reruns of the missed rows), met
targets pass, and a busy machine skips with a message instead of failing; the measurements are stubbed (no timing here)."""
import argparse, os, pytest
from pathimport import load_file

run = load_file("bench/run.py", "bench_run_check")
TARGETS = [{"key": "sum", "workload": "sum", "unit": "GB/s", "target": ">= 1.4 numpy"},
           {"key": "softmax", "workload": "softmax", "unit": "ms", "target": "<= 0.5 numpy"}]
ARGS = argparse.Namespace(quick=False)

@pytest.fixture
def quiet(monkeypatch):
  monkeypatch.setattr(run.os, "getloadavg", lambda: (0.1, 0.1, 0.1))
  monkeypatch.setattr(run, "_cpu_seconds", lambda: None)
  monkeypatch.setattr(run, "CHECK_WAIT", 0)

def _stub(monkeypatch, ours_per_try):
  """measure() returns ours_per_try[i] on the i-th call (numpy: sum 10 GB/s, softmax 100 ms); records the keys asked."""
  asked = []
  def measure(args, keys, ref, cores):
    asked.append(list(keys))
    ours = ours_per_try[len(asked) - 1]
    return {"machine": {"fma_spread": 1.01}, "numpy": {"sum": 10.0, "softmax": 100.0}, "ours": {k: ours[k] for k in keys}}
  monkeypatch.setattr(run, "measure", measure)
  return asked

def test_met_targets_pass(quiet, monkeypatch, capsys):
  asked = _stub(monkeypatch, [{"sum": 15.0, "softmax": 40.0}])
  assert run.check(ARGS, TARGETS, ["sum", "softmax"], 2) == 0
  assert asked == [["sum", "softmax"]] and "bench-check passed" in capsys.readouterr().out

def test_missed_target_fails_after_reruns_of_that_row(quiet, monkeypatch, capsys):
  asked = _stub(monkeypatch, [{"sum": 12.0, "softmax": 40.0}, {"sum": 13.0}, {"sum": 11.0}])
  assert run.check(ARGS, TARGETS, ["sum", "softmax"], 2) == 1
  assert asked == [["sum", "softmax"], ["sum"], ["sum"]], "only the missed row is measured again"
  out = capsys.readouterr().out
  assert "bench-check FAILED: sum" in out and "1.10x numpy" in out and "FAILED: softmax" not in out

def test_missed_once_then_met_passes(quiet, monkeypatch):
  _stub(monkeypatch, [{"sum": 12.0, "softmax": 60.0}, {"sum": 15.0, "softmax": 45.0}])
  assert run.check(ARGS, TARGETS, ["sum", "softmax"], 2) == 0

def test_busy_machine_skips(monkeypatch, capsys):
  monkeypatch.setattr(run.os, "getloadavg", lambda: (6.5, 6.0, 5.0))
  monkeypatch.setattr(run, "CHECK_WAIT", 0)
  asked = _stub(monkeypatch, [{"sum": 1.0, "softmax": 900.0}])
  assert run.check(ARGS, TARGETS, ["sum", "softmax"], 2) == 0
  assert asked == [] and "bench-check SKIPPED: load average 6.5 is above the 2 cores" in capsys.readouterr().out

def test_other_processes_during_the_run_skip(quiet, monkeypatch, capsys):
  # the machine used 3 CPU-seconds per wall second while this process and its children used 1: others took half of 2 cores
  clock = iter([100.0, 110.0])
  monkeypatch.setattr(run.time, "perf_counter", lambda: next(clock))
  cpu = iter([(1000.0, 5.0), (1030.0, 15.0)])
  monkeypatch.setattr(run, "_cpu_seconds", lambda: next(cpu))
  _stub(monkeypatch, [{"sum": 1.0, "softmax": 900.0}])
  assert run.check(ARGS, TARGETS, ["sum", "softmax"], 2) == 0
  assert "SKIPPED: other processes took 100% of the 2 cores" in capsys.readouterr().out

def test_noisy_calibration_skips(quiet, monkeypatch, capsys):
  def measure(args, keys, ref, cores):
    return {"machine": {"fma_spread": 1.6}, "numpy": {"sum": 10.0, "softmax": 100.0}, "ours": {"sum": 1.0, "softmax": 900.0}}
  monkeypatch.setattr(run, "measure", measure)
  assert run.check(ARGS, TARGETS, ["sum", "softmax"], 2) == 0
  assert "SKIPPED: the calibration's FMA runs differ by 1.60x" in capsys.readouterr().out

@pytest.mark.skipif(not os.path.exists("/proc/stat"), reason="CPU accounting from Linux's /proc/stat")
def test_cpu_seconds_counts_this_process():
  a = run._cpu_seconds()
  sum(i * i for i in range(300_000))
  b = run._cpu_seconds()
  assert a is not None and b is not None and b[0] >= a[0] and b[1] > a[1]

def test_only_the_targets_table_is_read(tmp_path):
  # a four-column table in a measurement write-up further down (| row | run 1 | run 2 | run 3 |) was read as targets,
  # and bench-check failed on its "run 3" clause
  md = tmp_path / "TARGETS.md"
  md.write_text("intro\n\n| key | workload | unit | target |\n|---|---|---|---|\n| sum | sum | GB/s | >= 1.4 numpy |\n\n"
                "## measured\n\n| row | run 1 | run 2 | run 3 |\n|---|---|---|---|\n| matmul 512 | 1.2 | 0.9 | 0.9 |\n")
  assert run.read_targets(str(md)) == [{"key": "sum", "workload": "sum", "unit": "GB/s", "target": ">= 1.4 numpy"}]
  assert [t["key"] for t in run.read_targets()] == ["matmul512", "matmul1024", "matmul2048", "ew", "sum", "softmax", "matmul_odd", "cumsum", "beam_matmul1024"]
