#!/usr/bin/env python3
"""Which `tinygrad` imports in a directory of Python files do not resolve in the installed package.

  python scripts/check_imports.py DIR [DIR ...] [--quiet]

Every `import tinygrad...` and `from tinygrad... import a, b` (found by parsing, nothing in the files runs) is resolved
against the tinygrad this interpreter imports: a module must import, a name must be an attribute of its module or a
submodule. Prints each unresolved import as path:line, then how many files (with "tinygrad" in their text, all DIRs
together, recursively) get past their tinygrad imports; exits 1 if any import does not resolve."""
from __future__ import annotations
import argparse, ast, importlib, pathlib, sys
from typing import Any

def _module(name: str, cache: dict[str, Any]) -> Any:
  if name not in cache:
    try: cache[name] = importlib.import_module(name)
    except Exception as e: cache[name] = e
  return cache[name]

def check_file(path: pathlib.Path, cache: dict[str, Any]) -> list[str]:
  """The unresolved tinygrad imports of one file, as 'path:line: what (why)'."""
  try: tree = ast.parse(path.read_text(encoding="utf-8", errors="replace"), str(path))
  except SyntaxError as e: return [f"{path}:{e.lineno}: cannot parse ({e.msg})"]
  bad = []
  for node in ast.walk(tree):
    if isinstance(node, ast.Import):
      for a in node.names:
        if a.name == "tinygrad" or a.name.startswith("tinygrad."):
          if isinstance(m := _module(a.name, cache), Exception): bad.append(f"{path}:{node.lineno}: import {a.name} ({type(m).__name__}: {m})")
    elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module and (node.module == "tinygrad" or node.module.startswith("tinygrad.")):
      if isinstance(m := _module(node.module, cache), Exception):
        bad.append(f"{path}:{node.lineno}: from {node.module} import ... ({type(m).__name__}: {m})")
        continue
      for a in node.names:
        if a.name == "*" or hasattr(m, a.name): continue
        try: getattr(m, a.name)   # a module __getattr__ (lazy names) counts
        except Exception: pass
        else: continue
        if not isinstance(_module(f"{node.module}.{a.name}", cache), Exception): continue
        bad.append(f"{path}:{node.lineno}: from {node.module} import {a.name} (no such name)")
  return bad

def main(argv: list[str] | None = None) -> int:
  ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  ap.add_argument("dirs", type=pathlib.Path, nargs="+", metavar="dir")
  ap.add_argument("--quiet", action="store_true", help="only the summary line")
  args = ap.parse_args(argv)
  for d in args.dirs:
    if not d.is_dir(): ap.error(f"{d} is not a directory")
  cache: dict[str, Any] = {}
  using, ok, bad_all = 0, 0, []
  for path in sorted(p for d in args.dirs for p in d.rglob("*.py")):
    src = path.read_text(encoding="utf-8", errors="replace")
    if "tinygrad" not in src: continue
    bad = check_file(path, cache)
    using += 1
    ok += not bad
    bad_all += bad
  if not args.quiet:
    for b in bad_all: print(b)
  print(f"{ok}/{using} files that import tinygrad get past their tinygrad imports ({len(bad_all)} unresolved imports)")
  return 1 if bad_all else 0

if __name__ == "__main__": sys.exit(main())
