"""`import tinygrad` stays cheap: it loads no network, database, ctypes or numpy module, no tqdm (each is imported where it
is used: fetch, the disk cache, a device, .numpy()), so a fresh process's first result pays for none of them."""
import json, os, subprocess, sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
# modules `import tinygrad` must not load (a prefix covers its submodules)
HEAVY = ("http", "urllib.request", "ssl", "socket", "email", "ctypes", "sqlite3", "numpy", "tqdm", "logging", "concurrent", "subprocess",
         "pluggy", "importlib.metadata", "tempfile", "gzip", "hashlib", "platform")

def loaded_by(code: str) -> list[str]:
  probe = f"import sys; before = set(sys.modules); {code}; import json; print(json.dumps(sorted(set(sys.modules) - before)))"
  env = {**os.environ, "PYTHONPATH": os.path.join(ROOT, "core")}
  for k in ("VIZ", "PROFILE", "DEBUG"): env.pop(k, None)
  r = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env, cwd=ROOT, timeout=60)
  assert r.returncode == 0, r.stderr
  return json.loads(r.stdout.strip().splitlines()[-1])

def test_import_tinygrad_loads_nothing_heavy():
  new = loaded_by("import tinygrad")
  bad = [m for m in new if any(m == h or m.startswith(h + ".") for h in HEAVY)]
  assert not bad, f"`import tinygrad` loads {bad}: import them where they are used"

def test_fetch_and_tqdm_still_work_lazily():
  new = loaded_by("import tinygrad; from tinygrad.helpers import tqdm, trange, fetch; assert fetch('/tmp').name == 'tmp'; list(trange(2, disable=True))")
  assert "urllib.request" not in new   # a local path needs no download
