"""Repository-wide test policy for tools that are absent (loaded for tests/ and every plugins/*/tests: it is at the root).

On a fresh machine (no clang, lld, comgr or Vulkan driver) a test that needs one SKIPS with the tool's own message, which
names the package (`clang not found; install it with `apt-get install clang``): the plugins raise that message when a
tool is missing, so a test that meets it, directly or in a subprocess's output, is reported as a skip with it.
With CI_STRICT=1 (.ci/run, where scripts/setup_system.sh installed them) both go the other way: a missing tool fails.
A Python package a test needs (torch, the reference; llvmlite; gguf) skips with a reason that says `pip install <package>`;
`make setup` installs them all, so under CI_STRICT=1 such a skip fails too, at collection (a module-level importorskip) or
in the test.
"""
import os, re
import pytest

# a tool-missing message: "<tool> not found|not installed ... apt-get install <package>" on one line (the plugins' wording)
# (no second "not found" in between: in a message that lists several tried tools, the one whose fix is an apt package)
TOOL_MISSING = re.compile(r"[\w.+-]+ (?:is )?not (?:found|installed)\b(?:(?!not found|not installed)[^\n])*?apt-get install [\w.+-]+(?: (?!or\b)[a-z][\w.+-]*)*")

# a missing Python package's skip reason: "... pip install <package> ..." (the tests' own wording)
PIP_MISSING = re.compile(r"pip install [\w.+-]+")

def strict() -> bool: return os.environ.get("CI_STRICT", "").strip() not in ("", "0")

def tool_missing(text: str) -> str | None:
  """The tool-missing message in `text` (an error, a subprocess's stderr), else None."""
  found = TOOL_MISSING.findall(text)   # the last: a subprocess's traceback shows the raising source line before the message
  return found[-1].strip(" :;`") if found else None

def _error_text(excinfo: pytest.ExceptionInfo) -> str:
  e: BaseException | None = excinfo.value
  parts = []
  while e is not None and len(parts) < 8: parts.append(str(e)); e = e.__cause__ or e.__context__
  return "\n".join(parts)

def pytest_configure(config: pytest.Config) -> None:
  config.addinivalue_line("markers", "tool_policy_exempt: a test of this policy itself (its errors quote tool-missing messages)")

@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
  outcome = yield
  rep = outcome.get_result()
  if item.get_closest_marker("tool_policy_exempt") is not None: return
  if rep.failed and call.excinfo is not None and not strict() and not hasattr(rep, "wasxfail"):
    if (why := tool_missing(_error_text(call.excinfo))) is not None:
      rep.outcome, rep.longrepr = "skipped", (str(item.path), (item.location[1] or 0) + 1, f"Skipped: {why}")
  elif rep.skipped and strict() and isinstance(rep.longrepr, tuple):
    if (why := tool_missing(str(rep.longrepr[2]))) is not None:
      rep.outcome, rep.longrepr = "failed", f"CI_STRICT=1: a tool the tests need is missing ({why}); run scripts/setup_system.sh as root"
    elif (pkg := PIP_MISSING.search(str(rep.longrepr[2]))) is not None:
      rep.outcome, rep.longrepr = "failed", f"CI_STRICT=1: a package the tests need is missing ({rep.longrepr[2]}); run make setup"

@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector: pytest.Collector):
  # a module that skips at import (pytest.importorskip at the top) for a missing package fails under CI_STRICT=1
  outcome = yield
  rep = outcome.get_result()
  if rep.skipped and strict() and isinstance(rep.longrepr, tuple) and PIP_MISSING.search(str(rep.longrepr[2])) is not None:
    rep.outcome, rep.longrepr = "failed", f"CI_STRICT=1: a package the tests need is missing ({rep.longrepr[2]}); run make setup"
