"""An OpenAI-style HTTP server for a tinygrad.llm model (`python -m tinygrad.llm --serve [PORT]`), as public tinygrad's:
  GET  /v1/models            {"object": "list", "data": [{"id": <model name>, "object": "model"}]}
  POST /v1/chat/completions  messages (+ tools, stream, stream_options.include_usage, max_tokens/max_completion_tokens,
                             temperature) -> a chat.completion, or chat.completion.chunk server-sent events with stream=true
  GET  anything else         a one-page chat client (chat.html)
Output inside a leading <think> block is sent as `reasoning_content`; <tool_call> blocks (hermes JSON or qwen's XML
form) become `tool_calls`. A prompt that does not fit the context is a 400 with code context_length_exceeded."""
from __future__ import annotations
import json, pathlib, re, socketserver, sys, time, typing, uuid
from http.server import BaseHTTPRequestHandler
from tinygrad.helpers import DEBUG, colored
if typing.TYPE_CHECKING:
  from tinygrad.llm.cli import SimpleTokenizer
  from tinygrad.llm.model import Transformer

def stderr_log(msg: str): print(msg, end="", file=sys.stderr, flush=True)

def parse_tool_call(s: str) -> tuple[str, typing.Any] | None:
  """(name, arguments) of a tool call's text: hermes JSON {"name", "arguments"|"parameters"} or
  <function=name><parameter=key>value</parameter>...</function>; None when it is neither."""
  s = s.strip()
  if s.startswith("{"):
    try:
      call = json.loads(s)
      return call["name"], call.get("arguments", call.get("parameters", {}))
    except (json.JSONDecodeError, KeyError, TypeError): return None
  if (fm := re.match(r"<function=([^>]+)>\s*(.*?)\s*(?:</function>)?$", s, re.DOTALL)) is None: return None
  args: dict[str, typing.Any] = {}
  for pm in re.finditer(r"<parameter=([^>]+)>(.*?)</parameter>", fm.group(2), re.DOTALL):
    value = re.sub(r"^\r?\n|\r?\n\Z", "", pm.group(2))   # the newline after the tag and before its end are layout
    try: args[pm.group(1)] = json.loads(value)
    except json.JSONDecodeError: args[pm.group(1)] = value
  return fm.group(1), args

def normalize_messages(messages: list[dict]) -> None:
  """Tool-call arguments sent as JSON strings (OpenAI clients do) become dicts, which chat templates expect; in place."""
  for m in messages:
    for tc in m.get("tool_calls") or []:
      if "function" in tc and isinstance(args := tc["function"].get("arguments"), str):
        try: tc["function"]["arguments"] = json.loads(args)
        except json.JSONDecodeError: pass

class StreamRouter:
  """Splits streamed text into (field, text) deltas: a leading <think>...</think> is reasoning_content, the rest content,
  from the first <tool_call> on the text is held in .buf for the tool-call parse at the end. A tag split across pieces is
  held back until it is whole."""
  def __init__(self, reasoning: bool = False):
    self.buf, self.mode = "", "reasoning" if reasoning else "undecided"
  def split(self, tag: str, final: bool) -> tuple[str, bool]:
    # (text before tag, whether the tag was found); a tail of buf that could begin tag stays in buf unless final
    if tag in self.buf:
      before, self.buf = self.buf.split(tag, 1)
      return before, True
    hold = 0 if final else max((i for i in range(1, min(len(self.buf), len(tag)) + 1) if tag.startswith(self.buf[-i:])), default=0)
    emit, self.buf = self.buf[:len(self.buf) - hold], self.buf[len(self.buf) - hold:]
    return emit, False
  def route(self, piece: str, final: bool = False) -> typing.Iterator[tuple[str, str]]:
    self.buf += piece
    if self.mode == "undecided":
      if not final and len(self.buf) < len("<think>") and "<think>".startswith(self.buf): return
      self.mode, self.buf = ("reasoning", self.buf[len("<think>"):]) if self.buf.startswith("<think>") else ("content", self.buf)
    if self.mode == "reasoning":
      emit, done = self.split("</think>", final)
      if emit: yield "reasoning_content", emit
      if not done: return
      self.mode = "content"
    if self.mode == "tool": return
    emit, found = self.split("<tool_call>", final)
    if emit: yield "content", emit
    if found: self.mode, self.buf = "tool", "<tool_call>" + self.buf

class Handler(BaseHTTPRequestHandler):
  server: LLMServer
  def log_request(self, code="-", size="-"): pass
  def send_data(self, data: bytes, content_type: str = "application/json", status_code: int = 200):
    self.send_response(status_code)
    self.send_header("Content-Type", content_type)
    self.send_header("Content-Length", str(len(data)))
    self.end_headers()
    self.wfile.write(data)
  def stream_json(self, source: typing.Generator):
    try:
      self.send_response(200)
      self.send_header("Content-Type", "text/event-stream")
      self.send_header("Cache-Control", "no-cache")
      self.end_headers()
      for r in source:
        self.wfile.write(f"data: {json.dumps(r)}\n\n".encode())
        self.wfile.flush()
      self.wfile.write(b"data: [DONE]\n\n")
    except (BrokenPipeError, ConnectionResetError): source.close()   # the client went away: stop generating

  def do_GET(self) -> None:
    if self.path == "/v1/models": self.send_data(json.dumps({"object": "list", "data": [{"id": self.server.model_name, "object": "model"}]}).encode())
    else: self.send_data((pathlib.Path(__file__).parent / "chat.html").read_bytes(), content_type="text/html")

  def run_model(self, ids: list[int], model_name: str, include_usage=False, max_tokens: int | None = None, temperature: float = 0.0,
                reasoning: bool = False) -> typing.Generator[dict, None, None]:
    """The chat.completion.chunk dicts of the model's reply to `ids`: the role, the deltas, tool calls, the finish, usage."""
    model, tok, n_prompt = self.server.model, self.server.tok, len(ids)   # (generate appends the reply to ids)
    cached = model.get_start_pos(ids)
    stderr_log(f"in:{colored(f'{cached:5d}', 'green')} +{len(ids) - cached:5d}  ")
    head = {"id": f"chatcmpl-{uuid.uuid4().hex[:24]}", "object": "chat.completion.chunk", "created": int(time.time()), "model": model_name}
    def chunk(delta: dict, finish: str | None = None) -> dict: return {"choices": [{"index": 0, "delta": delta, "finish_reason": finish}], **head}
    out: list[int] = []
    finish, dec, router = "stop", tok.stream_decoder(), StreamRouter(reasoning)
    st = first = time.perf_counter()
    def log_stats(interrupted: bool = False):
      total = f"total:{time.perf_counter() - st:6.2f}s"
      stderr_log(f"gen:{len(out) / (time.perf_counter() - first) if len(out) > 1 else 0:4.0f} tok/s  out:{len(out):5d}  "
                 f"{colored(total, 'red') if interrupted else total}\n")
    try:
      yield chunk({"role": "assistant", "content": ""})
      for next_id in model.generate(ids, temperature=temperature):
        if not out: stderr_log(f"prefill:{(n_prompt - cached) / ((first := time.perf_counter()) - st):5.0f} tok/s  ")
        if tok.is_end(next_id): break
        out.append(next_id)
        for field, delta in router.route(dec(next_id)): yield chunk({field: delta})
        if max_tokens is not None and len(out) >= max_tokens:
          finish = "length"
          break
      for field, delta in router.route(dec(), final=True): yield chunk({field: delta})
      tool_calls: list[dict] = []
      for m in re.finditer(r"<tool_call>\s*(.*?)\s*(?:</tool_call>|$)", router.buf, re.DOTALL):
        if (parsed := parse_tool_call(m.group(1))) is None:
          stderr_log(f"failed to parse tool call: {m.group(1)[:200]}\n")
          yield chunk({"content": m.group(0)})   # text the client cannot use as a call is still output, not dropped
          continue
        name, args = parsed
        tool_calls.append({"index": len(tool_calls), "id": f"call_{uuid.uuid4().hex[:24]}", "type": "function",
                           "function": {"name": name, "arguments": args if isinstance(args, str) else json.dumps(args)}})
      if tool_calls:
        yield chunk({"tool_calls": tool_calls})
        if finish == "stop": finish = "tool_calls"
      yield chunk({}, finish)
      if include_usage:
        yield {"choices": [], "usage": {"prompt_tokens": n_prompt, "completion_tokens": len(out), "total_tokens": n_prompt + len(out)}, **head}
    except GeneratorExit:   # the client went away mid-reply: the log says so (the total in red)
      log_stats(interrupted=True)
      raise
    log_stats()

  def do_POST(self) -> None:
    body: dict[str, typing.Any] = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))).decode())
    if DEBUG >= 1: print(json.dumps(body, indent=2))
    if self.path != "/v1/chat/completions":
      return self.send_data(json.dumps({"error": {"message": f"unknown path {self.path}", "type": "invalid_request_error"}}).encode(), status_code=404)
    normalize_messages(body["messages"])
    rendered = self.server.template.render(messages=body["messages"], tools=body.get("tools"), add_generation_prompt=True, preserve_thinking=True)
    ids: list[int] = self.server.tok.encode(rendered)
    if len(ids) >= (ctx := self.server.model.max_context):
      return self.send_data(json.dumps({"error": {"message": f"prompt has {len(ids)} tokens, but the model context is {ctx}",
        "type": "invalid_request_error", "param": "messages", "code": "context_length_exceeded"}}).encode(), status_code=400)
    stream = bool(body.get("stream"))
    chunks = self.run_model(ids, body["model"], not stream or body.get("stream_options", {}).get("include_usage", False),
                            max_tokens=body.get("max_completion_tokens") or body.get("max_tokens"), temperature=float(body.get("temperature", 0.0)),
                            reasoning=rendered.rstrip().endswith("<think>"))
    if stream: return self.stream_json(chunks)
    # not streamed: the chunks folded into one message
    content, reasoning, tool_calls, finish, last = [], [], [], "stop", {}
    for last in chunks:
      if not last["choices"]: continue
      choice = last["choices"][0]
      delta = choice.get("delta", {})
      if delta.get("content"): content.append(delta["content"])
      if delta.get("reasoning_content"): reasoning.append(delta["reasoning_content"])
      tool_calls += [{k: v for k, v in tc.items() if k != "index"} for tc in delta.get("tool_calls", [])]
      finish = choice.get("finish_reason") or finish
    message: dict[str, typing.Any] = {"role": "assistant", "content": "".join(content) or None}
    if reasoning: message["reasoning_content"] = "".join(reasoning)
    if tool_calls: message["tool_calls"] = tool_calls
    self.send_data(json.dumps({**last, "object": "chat.completion", "choices": [{"index": 0, "message": message, "finish_reason": finish}]}).encode())

class LLMServer(socketserver.TCPServer):
  """One request at a time (the model and its KV cache are shared). server_address (host, port); port 0 picks a free one."""
  allow_reuse_address = True
  def __init__(self, server_address: tuple, model: Transformer, model_name: str, tok: SimpleTokenizer, template: typing.Any):
    self.model, self.model_name, self.tok, self.template = model, model_name, tok, template
    super().__init__(server_address, Handler)
    print(f"*** started server on http://127.0.0.1:{self.server_address[1]}")
