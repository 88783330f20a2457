"""docs/guide.md is tested: its python and bash blocks run (in a subprocess, from a temp folder), and its environment table
matches the code that declares the variables (scripts/gen_env_docs.py --check, which says the command to regenerate)."""
import os, re, subprocess, sys, tempfile
import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
GUIDE = os.path.join(ROOT, "docs", "guide.md")
BLOCKS = re.findall(r"^```(python|bash)\n(.*?)^```", open(GUIDE, encoding="utf-8").read(), re.S | re.M)

def test_guide_has_runnable_blocks_and_is_linked_from_the_readme():
  assert {k for k, _ in BLOCKS} == {"python", "bash"} and len(BLOCKS) >= 4
  assert "(docs/guide.md)" in open(os.path.join(ROOT, "README.md"), encoding="utf-8").read()

@pytest.mark.parametrize("kind,code", BLOCKS, ids=[f"{k}{i}" for i, (k, _) in enumerate(BLOCKS)])
def test_guide_block_runs(kind: str, code: str):
  env = {**os.environ, "PATH": os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", ""), "PYTHONPATH": os.path.join(ROOT, "core")}
  env.pop("DEV", None)
  cmd = [sys.executable, "-c", code] if kind == "python" else ["/bin/bash", "-eo", "pipefail", "-c", code]
  with tempfile.TemporaryDirectory() as d: r = subprocess.run(cmd, cwd=d, env=env, capture_output=True, text=True, timeout=300)
  assert r.returncode == 0, f"docs/guide.md block failed:\n{code}\n{r.stdout}{r.stderr}"
  for want in re.findall(r"# (\[.*?\])$", code, re.M): assert want in r.stdout   # a block's "# [2, 4, 6]" is its output

def test_env_table_is_in_sync_with_the_declarations():
  r = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "gen_env_docs.py"), "--check"], capture_output=True, text=True, timeout=60)
  assert r.returncode == 0, r.stdout + r.stderr

def test_env_table_lists_every_helpers_contextvar():
  names = re.findall(r'^\w+ = ContextVar\("(\w+)"', open(os.path.join(ROOT, "core", "tinygrad", "helpers.py"), encoding="utf-8").read(), re.M)
  table = open(GUIDE, encoding="utf-8").read().split("ENV-TABLE:BEGIN")[1]
  assert names and all(f"| `{n}` |" in table for n in names)
  assert all(f"| `{n}` |" in table for n in ("CPU_CC", "AMD_MOCK", "WEBGPU_BATCH", "TINYGRAD_NO_SYSTEM_SETUP", "CI_STRICT", "INDEX64"))
