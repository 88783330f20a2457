"""GGUF files at public tinygrad's import path (examples/gpt2.py, llama3.py): `gguf_load` is tinygrad.nn.state's."""
from tinygrad.nn.state import gguf_load

__all__ = ["gguf_load"]
