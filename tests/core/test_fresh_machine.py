"""A fresh machine: the tests that need clang, lld or a Vulkan driver skip, with a reason naming the package, when those
are hidden (a PATH without them, VK_ICD_FILENAMES pointing at nothing); CI_STRICT=1 turns such a skip into a failure.
The policy is the repository's root conftest.py; this runs a small subset of the suite under it in a subprocess."""
import importlib.util, os, re, subprocess, sys, tempfile
import pytest
pytestmark = pytest.mark.tool_policy_exempt   # these tests' own failures quote tool-missing messages: they must fail, not skip

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
HIDDEN = re.compile(r"^(clang|clang\+\+|clang-\d+|clang\+\+-\d+|ld\.lld|ld\.lld-\d+|lld|lld-\d+)$")
# the tests that failed on a fresh machine before the policy (tools assumed), and ones that skip by themselves
SUBSET = ["tests/core/test_index64.py::test_kernel_past_int32_indexes_in_int64", "tests/core/test_index64.py::test_forced_int64_indices_compute_like_numpy[CPU:CLANG]",
          *(f"plugins/tinygrad_amd/tests/test_amd_device.py::{t}" for t in ("test_pairs_compute", "test_selection_errors_and_missing_runtime", "test_launch_limits_and_oom")),
          "plugins/tinygrad_amd/tests/test_amd_compile.py::test_compile_errors_show_tool_message_and_source", "plugins/tinygrad_webgpu/tests/test_webgpu_run.py"]

def _bin_without_tools(d: str) -> str:
  """A directory of links to every command on PATH but clang and lld (gcc, as, ld stay: CPU:GCC still works)."""
  for p in os.environ.get("PATH", "").split(os.pathsep):
    if not os.path.isdir(p) or p.startswith(ROOT): continue
    for n in os.listdir(p):
      if HIDDEN.match(n) or os.path.exists(os.path.join(d, n)): continue
      os.symlink(os.path.join(p, n), os.path.join(d, n))
  return d

def _run(args: list[str], **env: str) -> subprocess.CompletedProcess:
  with tempfile.TemporaryDirectory() as d:
    e = {k: v for k, v in os.environ.items() if k not in ("CI_STRICT", "REQUIRE_DEVICES", "PYTEST_XDIST_WORKER", "PYTEST_CURRENT_TEST")}
    e.update(PATH=_bin_without_tools(d), VK_ICD_FILENAMES=os.path.join(d, "no_icd.json"), ROCM_PATH=os.path.join(d, "no_rocm"), **env)
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-rfEs", "-p", "no:cacheprovider", "-p", "no:randomly", *args],
                          cwd=ROOT, env=e, capture_output=True, text=True, timeout=300)

def test_hidden_tools_skip_with_the_package_to_install():
  r = _run(SUBSET)
  out = r.stdout + r.stderr
  assert r.returncode == 0 and "FAILED" not in out and "ERROR" not in out, out[-4000:]
  skips = [ln for ln in out.splitlines() if ln.startswith("SKIPPED")]
  assert all(re.search(r"\.py:\d+: \S", ln) for ln in skips), "a skip without a reason:\n" + "\n".join(skips)
  for tool, pkg in (("clang", "clang"), ("lld", "lld"), ("Vulkan", "mesa-vulkan-drivers")):
    assert any(tool in ln and f"apt-get install {pkg}" in ln for ln in skips), f"no skip names {tool} and {pkg}:\n" + "\n".join(skips)

def test_ci_strict_turns_a_missing_tool_into_a_failure():
  # one test that fails on the missing tool, one that skips on it: both fail
  r = _run(["tests/core/test_index64.py::test_kernel_past_int32_indexes_in_int64[CPU:CLANG]",
            "plugins/tinygrad_amd/tests/test_amd_device.py::test_pairs_compute[LLVM]"], CI_STRICT="1")
  failed = [ln for ln in r.stdout.splitlines() if ln.startswith("FAILED")]
  assert r.returncode == 1 and len(failed) == 2 and "CI_STRICT=1: a tool the tests need is missing (lld not found" in r.stdout, r.stdout[-3000:]

def test_tool_missing_message_is_the_last_one_and_names_the_package():
  spec = importlib.util.spec_from_file_location("root_conftest", os.path.join(ROOT, "conftest.py"))
  assert spec is not None and spec.loader is not None
  spec.loader.exec_module(root := importlib.util.module_from_spec(spec))
  tb = 'raise RuntimeError(f"lld not found (tried {x}); install it: apt-get install lld")\nRuntimeError: lld not found (tried ld.lld); install it: apt-get install lld'
  assert root.tool_missing(tb) == "lld not found (tried ld.lld); install it: apt-get install lld"
  many = "hiprtc: hiprtc not found (no libhiprtc.so); install ROCm; comgr: amd_comgr not found (none); install it: apt-get install libamd-comgr2 (Debian), or ROCm"
  assert root.tool_missing(many) == "amd_comgr not found (none); install it: apt-get install libamd-comgr2"
  assert root.tool_missing("AssertionError: wrong result [2, 4, 7]") is None

def test_ci_strict_turns_a_missing_package_skip_into_a_failure():
  # a module-level importorskip of a package `make setup` installs (torch, the reference) skips on a machine without it,
  # and fails under CI_STRICT=1, so a CI run never passes with the reference tests silently skipped
  fd, t = tempfile.mkstemp(prefix="test_tmp_needs_pkg_", suffix=".py", dir=os.path.dirname(__file__))  # under the root conftest
  try:
    with os.fdopen(fd, "w") as f: f.write('import pytest\npytest.importorskip("no_such_pkg_zz", reason="the reference: pip install no_such_pkg_zz")\ndef test_x(): pass\n')
    loose, strict = _run([t]), _run([t], CI_STRICT="1")
  finally: os.unlink(t)
  assert loose.returncode in (0, 5) and "SKIPPED" in loose.stdout and "pip install no_such_pkg_zz" in loose.stdout, loose.stdout[-2000:]
  assert strict.returncode not in (0, 5) and "CI_STRICT=1: a package the tests need is missing" in strict.stdout, strict.stdout[-2000:]
