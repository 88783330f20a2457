"""Importing a repo file that is not a package module (an example program, a bench workload) by its path, for the tests."""
import importlib.util, pathlib
from types import ModuleType

ROOT = pathlib.Path(__file__).resolve().parents[2]

def load_file(relpath: str, name: str) -> ModuleType:
  """The module at ROOT/relpath (e.g. "examples/gpt2.py"), run fresh under `name`."""
  spec = importlib.util.spec_from_file_location(name, ROOT / relpath)
  if spec is None or spec.loader is None: raise ImportError(f"cannot import {ROOT / relpath}")
  mod = importlib.util.module_from_spec(spec)
  spec.loader.exec_module(mod)
  return mod
