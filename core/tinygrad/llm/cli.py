"""`python -m tinygrad.llm`: chat with a GGUF model in the terminal (or serve it, --serve), as public tinygrad's. Holds the
tokenizer read from the GGUF metadata (SimpleTokenizer) and the chat template used when the file's own jinja template
cannot be (FallbackTemplate).

    python -m tinygrad.llm --model llama3.2:1b            # a named model, downloaded once
    python -m tinygrad.llm --model ./tiny.gguf --max_context 512 --benchmark 20"""
from __future__ import annotations
import argparse, codecs, functools, itertools, json, re, sys, time, unicodedata
from typing import Any, Callable
from tinygrad.nn.state import get_parameters
from tinygrad.helpers import partition, DEBUG, Timing, GlobalCounters, Context, fetch, profile_marker
from tinygrad.llm.model import Transformer

PRESETS = ("llama3", "llama-v3", "llama-bpe", "qwen2", "olmo", "kimi-k2", "tekken", "glm4")

@functools.cache
def _category_class(prefix: str) -> str:
  # a regex class body of every code point whose unicode category starts with `prefix`, as runs (a-z): listing each one
  # makes a pattern re takes seconds to match a long prompt with. 0x323b0 is past the last letter/number/separator
  cps = [cp for cp in range(0x323b0) if unicodedata.category(chr(cp)).startswith(prefix)]
  runs = [[cp for _, cp in g] for _, g in itertools.groupby(enumerate(cps), lambda e: e[1] - e[0])]
  return "".join(re.escape(chr(r[0])) + (f"-{re.escape(chr(r[-1]))}" if len(r) > 1 else "") for r in runs)

@functools.cache
def _word_regex() -> re.Pattern:
  # llama.cpp's pre-tokenizer split for llama3/qwen2 BPE: contractions, letter runs with one leading non-letter, 1-3 digits,
  # punctuation runs with trailing newlines, newline runs, then other whitespace
  ws, N, L = r"\t\n\x0b\x0c\r\x85" + _category_class("Z"), _category_class("N"), _category_class("L")
  return re.compile("(?i:'s|'t|'re|'ve|'m|'ll|'d)|" + f"[^\\r\\n{N}{L}]?[{L}]+|[{N}]{{1,3}}| ?[^{ws}{N}{L}]+[\\r\\n]*|[{ws}]*[\\r\\n]+|"
                    f"[{ws}]+(?![^{ws}])|[{ws}]+")

# GPT-2's byte-level alphabet: a token's text spells each byte as one character (printable bytes as themselves)
_SELF = [*range(33, 127), *range(161, 173), *range(174, 256)]
_CHAR_BYTE = {chr(b): b for b in _SELF} | {chr(256 + i): b for i, b in enumerate(b for b in range(256) if b not in _SELF)}

class SimpleTokenizer:
  """Byte-level BPE of a GGUF vocabulary. normal_tokens: token text (GPT-2 byte alphabet) -> id; special_tokens: control
  token text -> id, matched in the raw text before splitting it into words. A word is one token if the vocabulary has
  it, else its bytes are merged pairwise, lowest resulting id first (GGUF vocabularies are in merge order)."""
  def __init__(self, normal_tokens: dict[str, int], special_tokens: dict[str, int], preset: str = "llama3",
               bos_id: int | None = None, eos_id: int = 0, eot_id: int | None = None):
    preset = {"qwen35": "qwen2", "qwen35moe": "qwen2"}.get(preset, preset)
    if preset not in PRESETS: raise ValueError(f"Invalid tokenizer preset '{preset}'; valid: {', '.join(PRESETS)}")
    self._split_to_word = _word_regex()
    self._split_to_sentence = re.compile("|".join(map(re.escape, special_tokens)) if special_tokens else r"(?!)")
    self._normal_tokens = {bytes(_CHAR_BYTE[ch] for ch in text): tid for text, tid in normal_tokens.items()}
    self._special_tokens = special_tokens
    self._tok2bytes = {tid: b for b, tid in self._normal_tokens.items()} | {tid: text.encode() for text, tid in special_tokens.items()}
    self.preset, self.bos_id, self.eos_id, self.eot_id = preset, bos_id, eos_id, eot_id

  @staticmethod
  def from_gguf_kv(kv: dict) -> SimpleTokenizer:
    """The tokenizer of a GGUF file's metadata: tokenizer.ggml.tokens/token_type (type 1 is a normal token, the rest are
    control tokens), .pre (the preset), .bos/.eos/.eot_token_id and .add_bos_token."""
    normal, special = partition(list(enumerate(kv["tokenizer.ggml.tokens"])), lambda e: kv["tokenizer.ggml.token_type"][e[0]] == 1)
    special_tokens = {text: tid for tid, text in special}
    return SimpleTokenizer({text: tid for tid, text in normal}, special_tokens, kv["tokenizer.ggml.pre"],
                           bos_id=kv.get("tokenizer.ggml.bos_token_id") if kv.get("tokenizer.ggml.add_bos_token", True) else None,
                           eos_id=kv.get("tokenizer.ggml.eos_token_id", 0),
                           eot_id=kv.get("tokenizer.ggml.eot_token_id", special_tokens.get("<|im_end|>")))

  def _encode_word(self, word: bytes) -> list[int]:
    # a word in the vocabulary is one token even where the merges would split it differently
    if (whole := self._normal_tokens.get(word)) is not None: return [whole]
    parts = [bytes([b]) for b in word]
    while len(parts) > 1:
      rank, i = min((self._normal_tokens.get(parts[j] + parts[j + 1], sys.maxsize), j) for j in range(len(parts) - 1))
      if rank == sys.maxsize: break
      parts[i:i + 2] = [parts[i] + parts[i + 1]]
    if (missing := [p for p in parts if p not in self._normal_tokens]): raise RuntimeError(f"token not found: {missing[0]!r} in {word!r}")
    return [self._normal_tokens[p] for p in parts]

  def _encode_sentence(self, text: str) -> list[int]:
    return [tid for word in self._split_to_word.findall(text) for tid in self._encode_word(word.encode())]

  def encode(self, text: str) -> list[int]:
    """Token ids of `text`; control tokens written in it (`<|eot_id|>`) become their ids."""
    out, pos = [], 0
    for m in self._split_to_sentence.finditer(text):
      out += self._encode_sentence(text[pos:m.start()]) + [self._special_tokens[m.group()]]
      pos = m.end()
    return out + self._encode_sentence(text[pos:])

  def decode(self, ids: list[int]) -> str:
    """The text of `ids` (invalid UTF-8, a character split across tokens, as U+FFFD)."""
    return b"".join(self._tok2bytes[t] for t in ids).decode(errors="replace")

  def stream_decoder(self) -> Callable[..., str]:
    """A function: called with each token id, the text completed so far (a character split across tokens waits for its
    last byte); called with no argument at the end, whatever is left."""
    dec = codecs.getincrementaldecoder("utf-8")("replace")
    def _decode(tid: int | None = None) -> str: return dec.decode(self._tok2bytes[tid]) if tid is not None else dec.decode(b"", final=True)
    return _decode

  def is_end(self, token_id: int) -> bool: return token_id in (self.eos_id, self.eot_id)

# the models --model names (the rest of its values are paths), as 0.14's
models = {
  "llama3.2:1b": "https://huggingface.co/bartowski/Llama-3.2-1B-Instruct-GGUF/resolve/main/Llama-3.2-1B-Instruct-Q6_K.gguf",
  "llama3.2:1b-q4": "https://huggingface.co/bartowski/Llama-3.2-1B-Instruct-GGUF/resolve/main/Llama-3.2-1B-Instruct-Q4_K_M.gguf",
  "llama3.2:3b": "https://huggingface.co/bartowski/Llama-3.2-3B-Instruct-GGUF/resolve/main/Llama-3.2-3B-Instruct-Q6_K.gguf",
  "llama3.2:3b-f16": "https://huggingface.co/bartowski/Llama-3.2-3B-Instruct-GGUF/resolve/main/Llama-3.2-3B-Instruct-f16.gguf",
  "llama3.1:8b": "https://huggingface.co/bartowski/Meta-Llama-3.1-8B-Instruct-GGUF/resolve/main/Meta-Llama-3.1-8B-Instruct-Q8_0.gguf",
  "qwen3:0.6b": "https://huggingface.co/Qwen/Qwen3-0.6B-GGUF/resolve/main/Qwen3-0.6B-Q8_0.gguf",
  "qwen3:1.7b": "https://huggingface.co/unsloth/Qwen3-1.7B-GGUF/resolve/main/Qwen3-1.7B-Q4_K_M.gguf",
  "qwen3:8b": "https://huggingface.co/Qwen/Qwen3-8B-GGUF/resolve/main/Qwen3-8B-Q4_K_M.gguf",
  "qwen3:30b-a3b": "https://huggingface.co/Qwen/Qwen3-30B-A3B-GGUF/resolve/main/Qwen3-30B-A3B-Q4_K_M.gguf",
  "qwen3.5:0.8b": "https://huggingface.co/unsloth/Qwen3.5-0.8B-GGUF/resolve/main/Qwen3.5-0.8B-Q8_0.gguf",
  "qwen3.5:4b": "https://huggingface.co/unsloth/Qwen3.5-4B-GGUF/resolve/main/Qwen3.5-4B-Q4_K_M.gguf",
  "qwen3.5:9b": "https://huggingface.co/unsloth/Qwen3.5-9B-GGUF/resolve/main/Qwen3.5-9B-Q4_K_M.gguf",
  "qwen3.6:27b": "https://huggingface.co/unsloth/Qwen3.6-27B-GGUF/resolve/main/Qwen3.6-27B-Q4_K_M.gguf",
  "qwen3.6:35b-a3b": "https://huggingface.co/unsloth/Qwen3.6-35B-A3B-GGUF/resolve/main/Qwen3.6-35B-A3B-UD-Q4_K_M.gguf",
  # (a pinned revision: its plain IQ4_XS quant, as 0.14's list)
  "qwen3.8:27b": "https://huggingface.co/unsloth/Qwen3.8-27B-GGUF/resolve/b62a80264f8b0c1bb849ee1c9c487415ebeca194/Qwen3.8-27B-IQ4_XS.gguf",
  "olmoe": "https://huggingface.co/allenai/OLMoE-1B-7B-0924-Instruct-GGUF/resolve/main/olmoe-1b-7b-0924-instruct-q4_k_m.gguf",
  "moonlight": "https://huggingface.co/gabriellarson/Moonlight-16B-A3B-Instruct-GGUF/resolve/main/Moonlight-16B-A3B-Instruct-Q4_K_M.gguf",
  "glm-4.7-flash": "https://huggingface.co/unsloth/GLM-4.7-Flash-GGUF/resolve/main/GLM-4.7-Flash-Q4_K_M.gguf",
}

class FallbackTemplate:
  """A chat template per tokenizer preset, for files without one or without jinja2 installed (no tool calls)."""
  def __init__(self, tok: SimpleTokenizer): self.tok = tok
  def role(self, role: str) -> str:
    p = self.tok.preset
    if p == "olmo": return f"<|{role}|>\n"
    if p == "kimi-k2": return f"<|im_{role}|>{role}<|im_middle|>"
    if p == "qwen2": return f"<|im_start|>{role}\n"
    if p == "glm4": return f"<|{role}|>"
    if p == "tekken":
      if role not in ("user", "assistant"): raise ValueError(f"Unsupported role '{role}' for tokenizer preset 'tekken'")
      return "[INST]" if role == "user" else ""
    return f"<|start_header_id|>{role}<|end_header_id|>\n\n"
  def end_turn(self) -> str:
    p, eos = self.tok.preset, self.tok.decode([self.tok.eos_id])
    return {"olmo": "\n", "kimi-k2": eos, "qwen2": eos + "\n", "glm4": "", "tekken": "[/INST]"}.get(p, eos)
  def render(self, messages: list[dict], tools=None, add_generation_prompt: bool = True, preserve_thinking: bool = False) -> str:
    """The prompt text of `messages` ({"role", "content": a string or a list of {"type": "text", "text"}})."""
    out = ("" if self.tok.bos_id is None else self.tok.decode([self.tok.bos_id])) + ("<sop>" if self.tok.preset == "glm4" else "")
    for msg in messages:
      content = msg.get("content")
      if isinstance(content, list):
        if (bad := [c["type"] for c in content if c["type"] != "text"]): raise RuntimeError(f"unhandled type: {bad[0]}")
        content = "".join(c["text"] for c in content)
      elif content is not None and not isinstance(content, str): raise RuntimeError(f"unknown content type: {type(content)}")
      out += self.role(msg["role"]) + (content or "") + self.end_turn()
    return out + self.role("assistant") if add_generation_prompt else out

def _template(kv: dict, tok: SimpleTokenizer) -> Any:
  # the file's own jinja chat template where jinja2 is installed (model-specific formatting, tool calls)
  if (src := kv.get("tokenizer.chat_template")) is None: return FallbackTemplate(tok)
  try: import jinja2
  except ImportError:
    print("warning: jinja2 is not installed, the model's chat template is disabled")
    return FallbackTemplate(tok)
  env = jinja2.Environment()
  env.filters["tojson"] = lambda obj, **kw: json.dumps(obj, **kw)   # jinja2's own escapes <>& for HTML, which a prompt must not
  def raise_exception(msg): raise RuntimeError(msg)
  env.globals.update(raise_exception=raise_exception, strftime_now=time.strftime, eos_token=tok.decode([tok.eos_id]),
                     bos_token=tok.decode([tok.bos_id]) if tok.bos_id is not None else "")
  return env.from_string(src)

def main() -> None:
  parser = argparse.ArgumentParser(description="chat with (or serve) a GGUF language model")
  parser.add_argument("--model", "-m", default=list(models)[0], help=f"Model choice ({', '.join(models)}) or path to a local GGUF file")
  parser.add_argument("--max_context", type=int, default=4096, help="Max Context Length")
  parser.add_argument("--serve", nargs="?", type=int, const=8000, metavar="PORT", help="Run OpenAI compatible API (optional port, default 8000)")
  parser.add_argument("--warmup", action="store_true", help="warmup the JIT")
  parser.add_argument("--benchmark", nargs="?", type=int, const=20, metavar="COUNT", help="Benchmark tok/s (optional count, default 20)")
  args = parser.parse_args()

  with Context(DEBUG=max(DEBUG.value, 2 if args.serve else 0)):
    model, kv = Transformer.from_gguf(fetch(models.get(args.model, args.model)), args.max_context)
  model_name = kv.get("general.name") or kv.get("general.basename") or args.model
  params = get_parameters(model)
  print(f"using model \"{model_name}\" with {sum(p.nbytes() for p in params):,} bytes and {sum(p.numel() for p in params):,} params, "
        f"max context {args.max_context} on {params[0].device}")
  tok = SimpleTokenizer.from_gguf_kv(kv)
  template = _template(kv, tok)

  if args.warmup or args.serve:
    with Context(DEBUG=max(DEBUG.value, 1)): model.warmup()
  if args.serve:
    from tinygrad.llm.serve import LLMServer
    LLMServer(("", args.serve), model, model_name, tok, template).serve_forever()

  if args.benchmark is not None:
    gen = model.generate(toks := [tok.bos_id or 0])
    for i in range(args.benchmark):
      profile_marker(f"decode @ {i}")
      GlobalCounters.reset()
      with Timing(on_exit=lambda ns: f", {1e9/ns:6.2f} tok/s, {GlobalCounters.global_mem/ns:7.2f} GB/s, {GlobalCounters.global_mem//1000000}/"
                  f"{GlobalCounters.mem_used//1000000} MB  --  " + tok.decode(toks).replace("\n", "\\n")):
        next(gen)
    sys.exit(0)

  messages: list[dict] = []
  while True:
    try: messages.append({"role": "user", "content": input(">>> ")})
    except EOFError: break
    reply, dec = "", tok.stream_decoder()
    for next_id in model.generate(tok.encode(template.render(messages=messages, add_generation_prompt=True))):
      if tok.is_end(next_id):
        sys.stdout.write(dec() + "\n\n")
        break
      reply += (piece := dec(next_id))
      sys.stdout.write(piece)
      sys.stdout.flush()
    messages.append({"role": "assistant", "content": reply})

if __name__ == "__main__": main()
