"""scripts/check_imports.py: reports the tinygrad imports of a corpus that do not resolve in the installed package."""
import os, subprocess, sys
SCRIPT = os.path.join(os.path.dirname(__file__), "..", "..", "scripts", "check_imports.py")

def run(d):
  return subprocess.run([sys.executable, SCRIPT, str(d)], capture_output=True, text=True, timeout=120)

def test_reports_unresolved_names_and_modules(tmp_path):
  (tmp_path / "sub").mkdir()
  (tmp_path / "good.py").write_text("from tinygrad import Tensor, GlobalCounters, nn\nfrom tinygrad.uop.ops import UPat\nimport tinygrad.nn.state as s\n"
                                    "from tinygrad.nn import optim\nfrom tinygrad.helpers import *\n")
  (tmp_path / "bad.py").write_text("import os\nfrom tinygrad.helpers import fetch, no_such_helper\n")
  (tmp_path / "sub" / "worse.py").write_text("def f():\n  import tinygrad.no_such_module\n")
  (tmp_path / "other.py").write_text("import json\n")
  (tmp_path / "broken.py").write_text("from tinygrad import (\n")
  r = run(tmp_path)
  assert r.returncode == 1, r.stderr
  lines = r.stdout.splitlines()
  assert f"{tmp_path / 'bad.py'}:2: from tinygrad.helpers import no_such_helper (no such name)" in lines
  assert any(ln.startswith(f"{tmp_path / 'sub' / 'worse.py'}:2: import tinygrad.no_such_module (ModuleNotFoundError") for ln in lines)
  assert any(ln.startswith(f"{tmp_path / 'broken.py'}:") and "cannot parse" in ln for ln in lines)
  assert not any("good.py" in ln for ln in lines)
  assert lines[-1].startswith("1/4 files that import tinygrad get past their tinygrad imports (3 unresolved")

def test_clean_corpus_exits_zero(tmp_path):
  (tmp_path / "ok.py").write_text("from tinygrad import Tensor, Device, TinyJit, Context, dtypes, UOp\n")
  r = run(tmp_path)
  assert r.returncode == 0 and r.stdout.strip() == "1/1 files that import tinygrad get past their tinygrad imports (0 unresolved imports)"

def test_several_directories_are_counted_together(tmp_path):
  for d, src in (("a", "from tinygrad import Tensor\n"), ("b", "from tinygrad.helpers import no_such_helper\n")):
    (tmp_path / d).mkdir()
    (tmp_path / d / "x.py").write_text(src)
  r = subprocess.run([sys.executable, SCRIPT, str(tmp_path / "a"), str(tmp_path / "b")], capture_output=True, text=True, timeout=120)
  assert r.returncode == 1 and r.stdout.splitlines()[-1].startswith("1/2 files that import tinygrad get past")
