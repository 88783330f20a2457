"""GGUF files at public tinygrad's import path (examples/gpt2.py, llama3.py): `gguf_load` and `ggml_data_to_tensor` are
tinygrad.nn.state's."""
from tinygrad.nn.state import gguf_load, ggml_data_to_tensor

__all__ = ["gguf_load", "ggml_data_to_tensor"]
