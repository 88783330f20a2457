"""Public tinygrad's import path for its LLM support; here it holds the GGUF loader (`tinygrad.llm.gguf.gguf_load`)."""
