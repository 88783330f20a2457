"""Shared test settings: hypothesis profiles and markers. Run the core tests with `PYTHONPATH=core python3 -m pytest tests`."""
import os
from hypothesis import settings, HealthCheck, Phase

# tests pick their own max_examples; the profile only removes per-example deadlines (slow devices, CI machines with 2 cores)
# differing_executors: the conformance classes are parametrized by device, so each device gets its own (stateless) instance
settings.register_profile("tinygrad", deadline=None,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.differing_executors])
# triage: no shrinking, for a quick first look at many failures (HYPOTHESIS_PROFILE=triage)
settings.register_profile("triage", parent=settings.get_profile("tinygrad"), phases=[Phase.explicit, Phase.reuse, Phase.generate])
# ci: the same examples on every run (.ci/run sets it): a red CI names a bug in the change, never a new random draw. The
# random search runs wherever the profile is not set (make test, a developer's pytest), and what it finds is kept as
# an @example
settings.register_profile("ci", parent=settings.get_profile("tinygrad"), derandomize=True, database=None)
# long: a fuzz campaign, every hypothesis test at HYPOTHESIS_SCALE (default 30) times its own max_examples, random draws
# (the tests pick their own max_examples, which a profile cannot raise: pytest_collection_modifyitems scales them)
settings.register_profile("long", parent=settings.get_profile("tinygrad"))
PROFILE = os.environ.get("HYPOTHESIS_PROFILE", "tinygrad")
# every walk over the live lazy tensors checks its index against all live tensors (a tensor it missed would keep a stale
# value through an update): set before tinygrad is imported, and inherited by the subprocesses tests start
os.environ.setdefault("CHECK_LAZY_INDEX", "1")
settings.load_profile(PROFILE)

def pytest_configure(config):
  config.addinivalue_line("markers", "slow: long-running extras (deselect with -m 'not slow')")


def pytest_collection_modifyitems(config, items):
  if PROFILE != "long": return
  scale = int(os.environ.get("HYPOTHESIS_SCALE", "30"))
  for fn in {getattr(item.obj, "__func__", item.obj) for item in items if hasattr(item, "obj")}:
    if (s := getattr(fn, "_hypothesis_internal_use_settings", None)) is not None:
      fn._hypothesis_internal_use_settings = settings(s, max_examples=s.max_examples * scale)
