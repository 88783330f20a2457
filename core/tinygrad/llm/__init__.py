"""Public tinygrad's LLM app: GGUF files (`gguf`), the transformer (`model`), the tokenizer and chat CLI (`cli`,
`python -m tinygrad.llm`) and the OpenAI-style server (`serve`)."""
