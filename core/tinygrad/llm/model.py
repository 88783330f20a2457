"""A GGUF transformer at public tinygrad's `tinygrad.llm.model`: llama-family decoders (llama, qwen2, qwen3, olmoe ...:
GQA attention with RoPE and optional QK-norm, RMSNorm, a SwiGLU feed-forward or a mixture of experts with optional shared
experts), DeepSeek-style MLA attention, and the hybrids of qwen3.5 and kimi-linear, whose gated delta-net blocks (linear
attention with a recurrent state) stand between gated-attention or MLA blocks; with a half-precision KV cache and
TinyJit'd prefill and decode steps.

    model, kv = Transformer.from_gguf("model.gguf", max_context=4096)
    for tok in model.generate([1, 2, 3]): ...      # yields sampled token ids (greedy at temperature 0) until max_context

Differences from 0.14 (docs/guide.md): no RDNA3 custom kernels (a delta-net block steps its tokens one at a time on
every device); kimi-linear's per-channel decay scales the state along the key channels, as the model does (0.14's along
the value channels); a delta-net block computes in float32 (0.14 casts its input to half, a rounding its compiler mostly
drops); caches and states are written with `assign`."""
from __future__ import annotations
import enum, functools, itertools, pathlib
from dataclasses import dataclass, replace
from tinygrad import nn
from tinygrad.dtype import dtypes
from tinygrad.engine.jit import TinyJit
from tinygrad.helpers import getenv
from tinygrad.mixin.common import AssertedArgumentError
from tinygrad.tensor import Tensor
from tinygrad.uop.ops import UOp, resolve
from tinygrad.llm.gguf import gguf_load

class ExpertGating(enum.IntEnum):
  """How router logits become expert weights (GGUF `<arch>.expert_gating_func`)."""
  SOFTMAX = 1
  SIGMOID = 2
  SOFTMAX_WEIGHT = 3   # select on the raw logits, softmax over the k selected
  SQRT_SOFTPLUS = 4

@functools.cache
def precompute_freqs_cis(dim: int, end: int, theta: float = 10000.0, device: str | None = None) -> Tensor:
  """(end, dim) table of RoPE rotations: cos of every position x frequency in the first half, sin in the second."""
  angles = Tensor.arange(end).unsqueeze(1) * (1.0 / (theta ** (Tensor.arange(0, dim, 2)[:dim // 2] / dim))).unsqueeze(0)
  return angles.cos().cat(angles.sin(), dim=-1).clone(device)

def apply_rope(x: Tensor, freqs_cis: Tensor) -> Tensor:
  """Rotate x (B, H, T, D) by freqs_cis (T, D) in the half-split layout: pairs are (x[i], x[i+D/2])."""
  if x.shape[-1] % 2: raise AssertedArgumentError(f"apply_rope: the last dimension must be even, got shape {x.shape}")   # (0.14 asserts)
  cos, sin = freqs_cis.reshape(1, 1, x.shape[2], -1).chunk(2, dim=-1)
  a, b = x.chunk(2, dim=-1)
  return (a * cos - b * sin).cat(b * cos + a * sin, dim=-1)

def pairwise_topk(x: Tensor, k: int) -> tuple[Tensor, Tensor]:
  """(values, int32 indices) of the k largest entries of x's last axis, in ascending order; a tie goes to the lower index.
  Built from pairwise comparisons, so it is one fused kernel and needs no sort."""
  n = x.shape[-1]
  idx = Tensor.arange(n)
  # beaten[..., i] = how many entries rank above x_i (bigger, or equal and earlier)
  beaten = ((x.unsqueeze(-2) > x.unsqueeze(-1)) | ((x.unsqueeze(-2) == x.unsqueeze(-1)) & (idx < idx.unsqueeze(-1)))).sum(-1)
  # slot s of the output holds the entry that k-1-s entries beat
  sel = ((beaten.unsqueeze(-1) == Tensor.arange(k - 1, -1, -1)) * idx.unsqueeze(-1)).sum(-2).cast(dtypes.int32)
  return x.gather(-1, sel), sel

class ExpertWeights:
  """Linear layers stacked over experts: weight (num_experts, out_features, in_features)."""
  def __init__(self, num_experts: int, in_features: int, out_features: int):
    self.weight = Tensor.zeros(num_experts, out_features, in_features)
  def __call__(self, sel: Tensor, x: Tensor) -> Tensor:
    """sel (B, T, k) expert ids, x (B, T, 1 or k, in) -> (B, T, k, out): each selected expert applied to its input."""
    return (self.weight[sel] * x.unsqueeze(-2)).sum(-1).contiguous()

@dataclass(frozen=True)
class SSMConfig:
  """Gated delta-net settings (GGUF `<arch>.ssm.*`): conv_kernel taps of the causal conv, state_size the key head size,
  group_count the key heads, time_step_rank the value heads, inner_size value heads x value head size; kda: kimi-linear's
  variant (a decay per key channel, low-rank gate projections, a sigmoid output gate)."""
  conv_kernel: int
  state_size: int
  group_count: int
  time_step_rank: int
  inner_size: int
  kda: bool = False

@dataclass(frozen=True)
class TransformerConfig:
  num_blocks: int
  dim: int
  hidden_dim: int
  n_heads: int
  n_kv_heads: int
  norm_eps: float
  vocab_size: int
  head_dim: int
  rope_theta: float
  rope_dim: int
  v_head_dim: int
  max_context: int = 0
  qk_norm: int = 0                  # size of the q/k RMSNorm weight: head_dim (per head, qwen3) or the whole projection
  num_experts: int = 0
  num_experts_per_tok: int = 0
  norm_topk_prob: bool = False
  expert_gating_func: ExpertGating = ExpertGating.SOFTMAX
  q_lora_rank: int = 0
  kv_lora_rank: int = 0             # > 0: MLA attention
  shared_expert_dim: int = 0
  ssm_layers: tuple[bool, ...] = ()
  attn_output_gate: bool = False
  ssm: SSMConfig | None = None
  shared_expert_gate: bool = True
  leading_dense_blocks: int = 0
  dense_hidden_dim: int = 0
  routed_scaling_factor: float = 1.0
  qkv_bias: bool = False
  expert_bias: bool = False

def _causal_mask(T, start_pos, dtype) -> Tensor | None:
  # lower-right causal: query t (at position start_pos+t) sees keys 0..start_pos+t; one query sees every cached key
  return Tensor.full((1, 1, T, start_pos + T), float("-inf"), dtype=dtype, buffer=False).triu(start_pos + 1) if resolve(T != 1) else None

class FFNBlock:
  """A pre-norm residual block: x + attention(norm(x)), then h + feed_forward(norm(h)). Subclasses give the attention."""
  def __init__(self, config: TransformerConfig):
    self.config = config
    self.attn_norm, self.ffn_norm = nn.RMSNorm(config.dim, config.norm_eps), nn.RMSNorm(config.dim, config.norm_eps)
    if config.num_experts > 0:
      self.ffn_gate_inp = nn.Linear(config.dim, config.num_experts, bias=False)   # the router
      if config.expert_bias: self.exp_probs_b = {"bias": Tensor.zeros(config.num_experts)}
      self.ffn_gate_exps = ExpertWeights(config.num_experts, config.dim, config.hidden_dim)
      self.ffn_up_exps = ExpertWeights(config.num_experts, config.dim, config.hidden_dim)
      self.ffn_down_exps = ExpertWeights(config.num_experts, config.hidden_dim, config.dim)
      if config.shared_expert_dim > 0:
        self.ffn_gate_shexp = nn.Linear(config.dim, config.shared_expert_dim, bias=False)
        self.ffn_up_shexp = nn.Linear(config.dim, config.shared_expert_dim, bias=False)
        self.ffn_down_shexp = nn.Linear(config.shared_expert_dim, config.dim, bias=False)
        if config.shared_expert_gate: self.ffn_gate_inp_shexp = {"weight": Tensor.zeros(config.dim)}
    else:
      self.ffn_gate = nn.Linear(config.dim, config.hidden_dim, bias=False)
      self.ffn_up = nn.Linear(config.dim, config.hidden_dim, bias=False)
      self.ffn_down = nn.Linear(config.hidden_dim, config.dim, bias=False)

  def _feed_forward(self, x: Tensor) -> Tensor:
    if not hasattr(self, "ffn_gate_exps"): return self.ffn_down(self.ffn_gate(x).silu() * self.ffn_up(x))
    c, logits = self.config, self.ffn_gate_inp(x)
    bias = self.exp_probs_b["bias"] if hasattr(self, "exp_probs_b") else None
    scores = {ExpertGating.SOFTMAX: logits.softmax(-1), ExpertGating.SIGMOID: logits.sigmoid(), ExpertGating.SOFTMAX_WEIGHT: logits,
              ExpertGating.SQRT_SOFTPLUS: logits.softplus().sqrt()}[c.expert_gating_func]
    # the bias (DeepSeek-V3's load balancing) moves only the choice of experts, not their weights
    _, sel = pairwise_topk(scores if bias is None else scores + bias, c.num_experts_per_tok)
    probs = scores.gather(-1, sel)
    if c.expert_gating_func == ExpertGating.SOFTMAX_WEIGHT: probs = probs.softmax(-1)
    if c.norm_topk_prob: probs = probs / probs.sum(-1, keepdim=True)
    h = x.unsqueeze(2)   # (B, T, 1, D): one input for every selected expert
    out = (self.ffn_down_exps(sel, self.ffn_gate_exps(sel, h).silu() * self.ffn_up_exps(sel, h)) * (probs * c.routed_scaling_factor).unsqueeze(-1)).sum(2)
    if hasattr(self, "ffn_gate_shexp"):
      shexp = self.ffn_down_shexp(self.ffn_gate_shexp(x).silu() * self.ffn_up_shexp(x))
      if hasattr(self, "ffn_gate_inp_shexp"): shexp = shexp * (x * self.ffn_gate_inp_shexp["weight"]).sum(-1, keepdim=True).sigmoid()
      out = out + shexp
    return out

  # how much of the cached state a new prompt sharing its first prefix_len tokens with the cached ones can keep
  def _reusable_prefix_len(self, prefix_len: int, cached_len: int) -> int: return prefix_len
  def _init_state(self, x: Tensor): raise NotImplementedError(f"{type(self).__name__} has no attention state")
  def _attention(self, x: Tensor, start_pos: int | UOp) -> Tensor: raise NotImplementedError(f"{type(self).__name__} has no attention")

  def __call__(self, x: Tensor, start_pos: int | UOp) -> Tensor:
    """x (B, T, dim) at positions start_pos.. -> (B, T, dim); writes this block's KV cache for those positions."""
    self._init_state(x)
    h = x + self._attention(self.attn_norm(x), start_pos)
    return (h + self._feed_forward(self.ffn_norm(h))).contiguous()

class TransformerBlock(FFNBlock):
  """Multi-head attention with grouped KV heads (GQA), RoPE on the first rope_dim of each head, optional QK-norm and bias."""
  def __init__(self, config: TransformerConfig):
    super().__init__(config)
    if config.v_head_dim != config.head_dim:
      raise ValueError(f"TransformerBlock needs v_head_dim == head_dim, got {config.v_head_dim} and {config.head_dim}")
    qkv_out = config.head_dim * config.n_heads * (2 if config.attn_output_gate else 1), config.head_dim * config.n_kv_heads
    self.attn_q = nn.Linear(config.dim, qkv_out[0], bias=config.qkv_bias)
    self.attn_k = nn.Linear(config.dim, qkv_out[1], bias=config.qkv_bias)
    self.attn_v = nn.Linear(config.dim, qkv_out[1], bias=config.qkv_bias)
    self.attn_output = nn.Linear(config.head_dim * config.n_heads, config.dim, bias=False)
    if config.qk_norm: self.attn_q_norm, self.attn_k_norm = nn.RMSNorm(config.qk_norm, config.norm_eps), nn.RMSNorm(config.qk_norm, config.norm_eps)

  def _attention(self, x: Tensor, start_pos: int | UOp) -> Tensor:
    c, (B, T, _) = self.config, x.shape
    q, k, v = self.attn_q(x), self.attn_k(x), self.attn_v(x)
    if c.qk_norm and c.qk_norm != c.head_dim: q, k = self.attn_q_norm(q), self.attn_k_norm(k)   # one norm over all heads
    if c.attn_output_gate:   # q and the output gate are interleaved per head
      qg = q.reshape(B, T, c.n_heads, 2, c.head_dim)
      q, gate = qg[:, :, :, 0], qg[:, :, :, 1].reshape(B, T, c.n_heads * c.head_dim)
    q = q.reshape(B, T, c.n_heads, c.head_dim).transpose(1, 2)
    k, v = (z.reshape(B, T, c.n_kv_heads, c.head_dim).transpose(1, 2) for z in (k, v))
    if c.qk_norm == c.head_dim: q, k = self.attn_q_norm(q), self.attn_k_norm(k)   # per head (qwen3)
    freqs = self.freqs_cis[start_pos:start_pos + T]
    q, k = (apply_rope(z[..., :c.rope_dim], freqs).cat(z[..., c.rope_dim:], dim=-1) for z in (q, k))
    self.cache_kv[:, :, :, start_pos:start_pos + T, :].assign(Tensor.stack(k, v).cast(self.cache_kv.dtype))
    k, v = self.cache_kv[0, :, :, 0:start_pos + T, :], self.cache_kv[1, :, :, 0:start_pos + T, :]
    attn = q.scaled_dot_product_attention(k, v, attn_mask=_causal_mask(T, start_pos, x.dtype), enable_gqa=True)
    attn = attn.transpose(1, 2).reshape(B, T, -1)
    return self.attn_output(attn * gate.sigmoid() if c.attn_output_gate else attn)

  def _init_state(self, x: Tensor):
    if hasattr(self, "cache_kv"): return
    # half, as 0.14's: the cache is the memory that grows with the context
    self.cache_kv = Tensor.zeros(2, x.shape[0], self.config.n_kv_heads, self.config.max_context, self.config.head_dim,
                                 dtype=dtypes.half, device=x.device).contiguous().realize()
    self.freqs_cis = precompute_freqs_cis(self.config.rope_dim, self.config.max_context, self.config.rope_theta, device=x.device)

class MLATransformerBlock(FFNBlock):
  """Multi-head latent attention (DeepSeek-V2/V3, Kimi, GLM-4.7-flash): keys and values come from one cached low-rank
  latent per position; the key/value up-projections are absorbed into the query and the output, so the cache holds
  kv_lora_rank + rope_dim numbers per position instead of 2 * heads * head_dim."""
  def __init__(self, config: TransformerConfig):
    super().__init__(config)
    if config.q_lora_rank > 0:
      self.attn_q_a = nn.Linear(config.dim, config.q_lora_rank, bias=False)
      self.attn_q_a_norm = nn.RMSNorm(config.q_lora_rank, config.norm_eps)
      self.attn_q_b = nn.Linear(config.q_lora_rank, config.n_heads * config.head_dim, bias=False)
    else: self.attn_q = nn.Linear(config.dim, config.n_heads * config.head_dim, bias=False)
    self.attn_kv_a_mqa = nn.Linear(config.dim, config.kv_lora_rank + config.rope_dim, bias=False)
    self.attn_kv_a_norm = nn.RMSNorm(config.kv_lora_rank, config.norm_eps)
    self.attn_k_b = {"weight": Tensor.zeros(config.n_heads, config.kv_lora_rank, config.head_dim - config.rope_dim)}
    self.attn_v_b = {"weight": Tensor.zeros(config.n_heads, config.v_head_dim, config.kv_lora_rank)}
    self.attn_output = nn.Linear(config.n_heads * config.v_head_dim, config.dim, bias=False)

  def _attention(self, x: Tensor, start_pos: int | UOp) -> Tensor:
    c, (B, T, _) = self.config, x.shape
    nope, freqs = c.head_dim - c.rope_dim, self.freqs_cis[start_pos:start_pos + T]
    # kimi-linear's MLA layers carry no positions (its delta-net layers do): their "rope" part stays unrotated, as 0.14's
    rope = (lambda z: z) if c.ssm is not None and c.ssm.kda else (lambda z: apply_rope(z, freqs))
    q = (self.attn_q_b(self.attn_q_a_norm(self.attn_q_a(x))) if c.q_lora_rank > 0 else self.attn_q(x)).reshape(B, T, c.n_heads, c.head_dim).transpose(1, 2)
    q = (q[..., :nope] @ self.attn_k_b["weight"].transpose(-1, -2)).cat(rope(q[..., nope:]), dim=-1)   # absorb W_kb into q
    kv_a = self.attn_kv_a_mqa(x)
    latent = self.attn_kv_a_norm(kv_a[..., :c.kv_lora_rank]).reshape(B, 1, T, c.kv_lora_rank)
    k_rope = rope(kv_a[..., c.kv_lora_rank:].reshape(B, T, 1, c.rope_dim).transpose(1, 2))
    self.cache_k[:, :, start_pos:start_pos + T, :].assign(latent.cat(k_rope, dim=-1).cast(self.cache_k.dtype))
    k = self.cache_k[:, :, 0:start_pos + T, :]
    attn = q @ k.transpose(-1, -2) * (1.0 / c.head_dim ** 0.5)
    if (mask := _causal_mask(T, start_pos, x.dtype)) is not None: attn = attn + mask
    # the latent is the value too: attend over it, then up-project with W_vb
    attn = (attn.softmax(-1) @ k[..., :c.kv_lora_rank]) @ self.attn_v_b["weight"].transpose(-1, -2)
    return self.attn_output(attn.transpose(1, 2).reshape(B, T, -1))

  def _init_state(self, x: Tensor):
    if hasattr(self, "cache_k"): return
    c = self.config
    self.cache_k = Tensor.zeros(x.shape[0], 1, c.max_context, c.kv_lora_rank + c.rope_dim, device=x.device).contiguous().realize()
    self.freqs_cis = precompute_freqs_cis(c.rope_dim, c.max_context, c.rope_theta, device=x.device)

class GatedDeltaNetBlock(FFNBlock):
  """A gated delta-net block in place of attention: linear attention whose memory is one (value x key) matrix S per value
  head, carried across calls. qwen3.5's gated delta rule decays S by one number per head; kimi-linear's KDA (ssm.kda) by
  one per key channel.

  The q/k/v projection goes through a causal depthwise conv (then silu) that keeps its last conv_kernel-1 inputs across
  calls; q and k are L2-normalized per key head (each serving time_step_rank/group_count value heads, tiled as GGUF's
  ggml_repeat), and token t with decay a_t = exp(softplus(alpha_t + dt_bias) * ssm_a) and beta_t = sigmoid(.) does
      S <- a_t * S;   S <- S + beta_t (v_t - S k_t) k_t^T;   out_t = S q_t / sqrt(state_size)
  then a per-head RMSNorm times the output gate (silu; kda: sigmoid). Both states restart from zero when a call starts at
  position 0. Tokens are stepped one at a time on every device (0.14's fused RDNA3 scan kernel is not here); a symbolic
  token count runs its largest count of steps, the padding ones leaving the states as they are."""
  def __init__(self, config: TransformerConfig, ssm: SSMConfig):
    super().__init__(config)
    if ssm.time_step_rank % ssm.group_count:
      raise ValueError(f"GatedDeltaNetBlock: the value heads (time_step_rank {ssm.time_step_rank}) must be a multiple of the key heads "
                       f"(group_count {ssm.group_count})")
    self.ssm, self.head_v_dim = ssm, ssm.inner_size // ssm.time_step_rank
    if ssm.kda and self.head_v_dim != ssm.state_size:
      raise ValueError(f"GatedDeltaNetBlock: kda needs value heads of the key head size {ssm.state_size}, got {self.head_v_dim} "
                       "(inner_size / time_step_rank)")
    # 0.14's names of the sizes (user code sizes weights and reads states by them)
    self.head_k_dim, self.num_k_heads, self.num_v_heads, self.ssm_conv_kernel = ssm.state_size, ssm.group_count, ssm.time_step_rank, ssm.conv_kernel
    self.q_dim = ssm.group_count * ssm.state_size
    self.conv_channels = ssm.inner_size + 2 * self.q_dim   # q, k and v side by side
    self.attn_qkv = nn.Linear(config.dim, self.conv_channels, bias=False)
    if ssm.kda:   # low-rank projections of the output gate and of the per-channel decay
      self.ssm_g_a, self.ssm_g_b = nn.Linear(config.dim, self.head_v_dim, bias=False), nn.Linear(self.head_v_dim, ssm.inner_size, bias=False)
      self.ssm_f_a, self.ssm_f_b = nn.Linear(config.dim, ssm.state_size, bias=False), nn.Linear(ssm.state_size, ssm.inner_size, bias=False)
    else:
      self.attn_gate = nn.Linear(config.dim, ssm.inner_size, bias=False)
      self.ssm_alpha = nn.Linear(config.dim, ssm.time_step_rank, bias=False)
    self.ssm_beta = nn.Linear(config.dim, ssm.time_step_rank, bias=False)
    self.ssm_conv1d = {"weight": Tensor.zeros(self.conv_channels, ssm.conv_kernel)}
    self.ssm_dt = {"bias": Tensor.zeros(ssm.inner_size if ssm.kda else ssm.time_step_rank)}
    self.ssm_a = Tensor.zeros(ssm.time_step_rank, 1) if ssm.kda else Tensor.zeros(ssm.time_step_rank)   # -exp(A_log), per head
    self.ssm_norm, self.ssm_out = nn.RMSNorm(self.head_v_dim, config.norm_eps), nn.Linear(ssm.inner_size, config.dim, bias=False)

  def _attention(self, x: Tensor, start_pos: int | UOp) -> Tensor:
    s, (B, T, _) = self.ssm, x.shape
    H, K, V = s.time_step_rank, s.state_size, self.head_v_dim
    if not isinstance(start_pos, UOp): start_pos = UOp.variable("start_pos", 0, self.config.max_context - 1).bind(start_pos)
    fresh = Tensor(start_pos).eq(0)   # a runtime flag: one jit serves every start, and resets the states at 0
    Tp = x.max_shape[1]
    if isinstance(T, UOp): x = x.pad_to(B, Tp, x.shape[2])   # zero rows: they project to zero (no biases)
    gate = (self.ssm_g_b(self.ssm_g_a(x)) if s.kda else self.attn_gate(x)).reshape(B, Tp, H, V)
    beta = self.ssm_beta(x).sigmoid()
    alpha = self.ssm_f_b(self.ssm_f_a(x)) if s.kda else self.ssm_alpha(x)
    log_decay = (alpha + self.ssm_dt["bias"]).softplus().reshape(B, Tp, H, -1) * self.ssm_a.reshape(H, -1)   # (B, Tp, H, K or 1)
    if isinstance(T, UOp):   # a padding step is a no-op: beta 0 writes nothing, decay 1 keeps the state
      valid = (Tensor.arange(Tp) < Tensor(T)).reshape(1, Tp, 1)
      beta, log_decay = valid.where(beta, 0), valid.unsqueeze(-1).where(log_decay, 0)
    # the causal conv reads the last conv_kernel-1 inputs of the earlier calls, then these; its last real ones are kept
    window = fresh.where(0, self.conv_state).cat(self.attn_qkv(x), dim=1)
    conv = functools.reduce(Tensor.add, (window[:, i:i + Tp] * self.ssm_conv1d["weight"][:, i] for i in range(s.conv_kernel))).silu()
    self.conv_state.assign(window[:, T:T + s.conv_kernel - 1])
    q, k, v = conv.split([s.group_count * K, s.group_count * K, s.inner_size], dim=-1)
    q, k = (z.reshape(B, Tp, s.group_count, K).normalize(dim=-1, eps=1e-12 if s.kda else 1e-6).repeat(1, 1, H // s.group_count, 1).transpose(1, 2)
            for z in (q, k))
    q, v, beta, decay = q * K ** -0.5, v.reshape(B, Tp, H, V).transpose(1, 2), beta.transpose(1, 2), log_decay.transpose(1, 2).exp()
    # the scan, on (B, H, V, K) states: a (B, H, 1, K or 1) decay scales the key channels (kda) or the whole head
    state, outs = fresh.where(0, self.recurrent_state), []
    for t in range(Tp):
      kt, state = k[:, :, t].unsqueeze(-2), state * decay[:, :, t].unsqueeze(-2)
      state = state + ((v[:, :, t] - (state * kt).sum(-1)) * beta[:, :, t:t + 1]).unsqueeze(-1) * kt   # the delta rule
      outs.append((state * q[:, :, t].unsqueeze(-2)).sum(-1))
    self.recurrent_state.assign(state)
    out = self.ssm_norm(Tensor.stack(*outs, dim=1)) * (gate.sigmoid() if s.kda else gate.silu())
    return self.ssm_out((out[:, :T] if isinstance(T, UOp) else out).reshape(B, T, -1))

  def _init_state(self, x: Tensor):
    if hasattr(self, "conv_state"): return
    s = self.ssm
    self.conv_state = Tensor.zeros(x.shape[0], s.conv_kernel - 1, self.conv_channels, device=x.device).contiguous().realize()
    self.recurrent_state = Tensor.zeros(x.shape[0], s.time_step_rank, self.head_v_dim, s.state_size, device=x.device).contiguous().realize()

def _load_weights(model: Transformer, state_dict: dict[str, Tensor]):
  # the model's tensors take the file's (half) tensors as they are: load_state_dict would cast them to the float32 the
  # layers were made with, doubling the memory of every weight
  model_sd = nn.state.get_state_dict(model)
  if (missing := [k for k in model_sd if k not in state_dict]): raise ValueError(f"from_gguf: the GGUF file has no tensors {missing}")
  if (bad := [f"{k}: {tuple(state_dict[k].shape)} in the file, {v.shape} in the model" for k, v in model_sd.items() if state_dict[k].shape != v.shape]):
    raise ValueError(f"from_gguf: tensor shapes differ from the metadata's: {bad}")
  for k, v in model_sd.items(): v.replace(state_dict.pop(k).to(v.device))

class Transformer:
  """The decoder: token embedding, the blocks, a final RMSNorm and the output projection, sampling the next token."""
  def __init__(self, config: TransformerConfig):
    dense = replace(config, num_experts=0, num_experts_per_tok=0, shared_expert_dim=0, hidden_dim=config.dense_hidden_dim or config.hidden_dim)
    if config.ssm is not None:
      if len(config.ssm_layers) < config.num_blocks:
        raise ValueError(f"Transformer: config.ssm needs ssm_layers (delta-net or not) for each of the {config.num_blocks} blocks, "
                         f"got {len(config.ssm_layers)}")
      config = replace(config, qk_norm=config.head_dim)   # the hybrids' attention blocks norm q and k per head (0.14's)
    attn = MLATransformerBlock if config.kv_lora_rank > 0 else TransformerBlock
    def block(i: int, c: TransformerConfig) -> FFNBlock:
      return GatedDeltaNetBlock(c, config.ssm) if config.ssm is not None and config.ssm_layers[i] else attn(c)
    self.blk: list[FFNBlock] = [block(i, dense if i < config.leading_dense_blocks else config) for i in range(config.num_blocks)]
    self.token_embd = nn.Embedding(config.vocab_size, config.dim)
    self.output_norm = nn.RMSNorm(config.dim, config.norm_eps)
    self.output = nn.Linear(config.dim, config.vocab_size, bias=False)
    self.max_context = config.max_context
    self.has_recurrent_block = any(isinstance(b, GatedDeltaNetBlock) for b in self.blk)   # get_start_pos and generate honour it
    self._cached_tokens: list[int] = []
    # one jit for prompt chunks (a symbolic token count), one for single-token decode steps
    self.prefill_jit, self.rollout_jit = TinyJit(self.forward), TinyJit(self.forward)

  def forward(self, tokens: Tensor, start_pos: int | UOp, temperature: Tensor) -> Tensor:
    """tokens (B, T) at positions start_pos.. -> (B, 1) the next token after each row, sampled at `temperature`."""
    x = self.token_embd(tokens).float()
    for block in self.blk: x = block(x, start_pos)
    logits = self.output(self.output_norm(x[:, -1:]))[:, -1, :]
    # Gumbel-max: argmax(logits/temp + Gumbel noise) samples softmax(logits/temp); temp -> 0 makes it argmax(logits)
    return (logits / temperature.maximum(1e-12) - Tensor.rand_like(logits).maximum(1e-12).log().neg().log()).argmax(-1, keepdim=True)

  def __call__(self, tokens: Tensor, start_pos: int | UOp, temperature: Tensor) -> Tensor:
    return (self.prefill_jit if resolve(tokens.shape[1] != 1) else self.rollout_jit)(tokens.contiguous(), start_pos, temperature)

  @staticmethod
  def from_gguf(gguf: Tensor | str | pathlib.Path, max_context: int | None = None,
                realize: bool = bool(getenv("REALIZE", 0))) -> tuple[Transformer, dict]:   # tinygrad.llm: 1 makes weights buffers at load
    """(model, GGUF metadata) of a GGUF file (a path or a uint8 Tensor of its bytes). max_context caps the file's
    context_length (the KV cache's size). Weights are cast to half unless HALF=0; realize=True (REALIZE=1) makes them
    contiguous buffers now rather than at the first call."""
    kv, state_dict = gguf_load(gguf)
    if getenv("HALF", 1): state_dict = {k: v.cast(dtypes.float16) for k, v in state_dict.items()}   # tinygrad.llm: 0 keeps a GGUF model's weights float32
    if "output.weight" not in state_dict: state_dict["output.weight"] = state_dict["token_embd.weight"]   # tied embeddings (llama 3.2)
    arch = kv["general.architecture"]
    def get(key: str, default=None): return kv.get(f"{arch}.{key}", default)
    max_context = min(max_context, kv[f"{arch}.context_length"]) if max_context is not None else kv[f"{arch}.context_length"]
    n_heads, n_kv_heads = kv[f"{arch}.attention.head_count"], kv[f"{arch}.attention.head_count_kv"]
    ssm: SSMConfig | None = None
    ssm_layers: tuple[bool, ...] = ()
    if arch in ("qwen35", "qwen35moe"):   # every full_attention_interval-th block attends, the others are delta-net blocks
      ssm = SSMConfig(**{k: kv[f"{arch}.ssm.{k}"] for k in ("conv_kernel", "state_size", "group_count", "time_step_rank", "inner_size")})
      ssm_layers = tuple((i + 1) % kv[f"{arch}.full_attention_interval"] != 0 for i in range(kv[f"{arch}.block_count"]))
    elif arch == "kimi-linear":   # head_count_kv is per block, 0 for a KDA block, whose q/k/v projections and convs are stored apart
      ssm_layers, n_kv_heads, hd = tuple(n == 0 for n in n_kv_heads), max(n_kv_heads), kv[f"{arch}.kda.head_dim"]
      ssm = SSMConfig(kv[f"{arch}.ssm.conv_kernel"], hd, n_heads, n_heads, n_heads * hd, kda=True)
      for blk in (f"blk.{i}." for i, is_ssm in enumerate(ssm_layers) if is_ssm):
        state_dict[blk + "attn_qkv.weight"] = Tensor.cat(*(state_dict.pop(f"{blk}attn_{n}.weight") for n in "qkv"))
        # each conv is stored (channels, 1, taps)
        state_dict[blk + "ssm_conv1d.weight"] = Tensor.cat(*(state_dict.pop(f"{blk}ssm_conv1d_{n}.weight") for n in "qkv")).squeeze(1)
        state_dict[blk + "ssm_out.weight"] = state_dict.pop(blk + "attn_output.weight")
    if arch in ("glm4moe", "qwen35", "qwen35moe"): state_dict = {k.replace("post_attention_norm", "ffn_norm"): v for k, v in state_dict.items()}
    kv_lora_rank = get("attention.kv_lora_rank", 0)
    head_dim = get("attention.key_length_mla", get("attention.key_length", kv[f"{arch}.embedding_length"] // n_heads))
    rope_dim = get("rope.dimension_count", head_dim)
    # llama's (and MLA's) GGUF q/k rows interleave each rotated pair; apply_rope wants the two halves split (kimi-linear's MLA
    # rotates nothing)
    def unpair(w: Tensor, n: int, keep: int = 0) -> Tensor:
      w = w.reshape(n, w.shape[0] // n, -1)
      return w[:, :keep].cat(w[:, keep:].rearrange("n (h two) d -> n (two h) d", two=2), dim=1).reshape(-1, w.shape[-1])
    for name in list(state_dict) if arch != "kimi-linear" else ():
      if name.endswith(("attn_q.weight", "attn_q_b.weight")) and (arch == "llama" or kv_lora_rank):
        state_dict[name] = unpair(state_dict[name], n_heads, head_dim - rope_dim)
      elif arch == "llama" and name.endswith("attn_k.weight"): state_dict[name] = unpair(state_dict[name], n_kv_heads)
      elif kv_lora_rank and name.endswith("attn_kv_a_mqa.weight"): state_dict[name] = unpair(state_dict[name], 1, kv_lora_rank)
    dense_blocks = get("leading_dense_block_count", 0)
    config = TransformerConfig(
      num_blocks=kv[f"{arch}.block_count"] - get("nextn_predict_layers", 0), dim=kv[f"{arch}.embedding_length"],
      hidden_dim=get("expert_feed_forward_length", get("feed_forward_length", 0)), n_heads=n_heads, n_kv_heads=n_kv_heads,
      norm_eps=kv[f"{arch}.attention.layer_norm_rms_epsilon"], vocab_size=len(kv["tokenizer.ggml.tokens"]), head_dim=head_dim,
      rope_theta=kv[f"{arch}.rope.freq_base"], rope_dim=rope_dim,
      v_head_dim=get("attention.value_length_mla", get("attention.value_length", head_dim)), max_context=max_context,
      qk_norm=int(state_dict["blk.0.attn_q_norm.weight"].shape[0]) if "blk.0.attn_q_norm.weight" in state_dict else 0,
      num_experts=get("expert_count", 0), num_experts_per_tok=get("expert_used_count", 0),
      norm_topk_prob=get("expert_weights_norm", arch in ("qwen3moe", "qwen35moe", "kimi-linear")),
      expert_gating_func=ExpertGating(get("expert_gating_func", ExpertGating.SOFTMAX)),
      kv_lora_rank=kv_lora_rank, q_lora_rank=get("attention.q_lora_rank", 0), leading_dense_blocks=dense_blocks,
      shared_expert_dim=get("expert_shared_feed_forward_length", get("expert_shared_count", 0) * get("expert_feed_forward_length", 0)),
      shared_expert_gate=f"blk.{dense_blocks}.ffn_gate_inp_shexp.weight" in state_dict,
      dense_hidden_dim=get("feed_forward_length", 0) if dense_blocks else 0, routed_scaling_factor=get("expert_weights_scale", 1.0),
      qkv_bias="blk.0.attn_q.bias" in state_dict, expert_bias=f"blk.{dense_blocks}.exp_probs_b.bias" in state_dict,
      attn_output_gate=arch in ("qwen35", "qwen35moe"), ssm=ssm, ssm_layers=ssm_layers)
    model = Transformer(config)
    _load_weights(model, state_dict)   # (tensors the model has no use for, rope_freqs.weight, are left)
    if realize:
      params = nn.state.get_parameters(model)
      for p in params: p.replace(p.contiguous())
      Tensor.realize(*params)
    return model, kv

  def warmup(self):
    """Run both jits through their capture (two short generations), so later calls replay."""
    for _ in range(2): list(zip(range(2), self.generate([0])))

  def get_start_pos(self, tokens: list[int]) -> int:
    """The first position generate must compute for `tokens`: the KV cache keeps the common prefix with the last call's."""
    if self.has_recurrent_block:   # a recurrent state cannot be cut back: reuse it only when tokens extend the cached ones
      n = len(self._cached_tokens)
      return n if 0 < n < len(tokens) and tokens[:n] == self._cached_tokens else 0
    prefix_len = sum(1 for _ in itertools.takewhile(lambda ab: ab[0] == ab[1], zip(tokens[:-1], self._cached_tokens)))
    return min(block._reusable_prefix_len(prefix_len, len(self._cached_tokens)) for block in self.blk)

  def generate(self, tokens: list[int], chunk_size: int = 32, temperature: float = 0.0):
    """Yield the next token ids after `tokens` (appending each to it) until max_context. The prompt runs in chunks of up
    to chunk_size tokens, then one token per step; temperature 0 is greedy."""
    if self.has_recurrent_block: chunk_size = 1   # (0.14's: a recurrent block steps one token at a time without its RDNA3 kernel)
    v_start_pos, v_toks = UOp.variable("start_pos", 0, self.max_context - 1), UOp.variable("toks", 1, chunk_size)
    temp = Tensor([temperature])
    # the prompt is copied once; each chunk is a symbolic slice of it, so one prefill jit serves every chunk
    t = Tensor(tokens + [0] * (self.max_context - len(tokens)), dtype=dtypes.int32).reshape(1, self.max_context)
    start_pos, prompt_len, out = self.get_start_pos(tokens), len(tokens), None
    while len(tokens) < self.max_context:
      n_toks = min(chunk_size, len(tokens) - start_pos)
      sp, nt = v_start_pos.bind(start_pos), v_toks.bind(n_toks)
      out = self(t[:, sp:sp + nt] if start_pos < prompt_len or out is None else out, sp, temp).realize()
      start_pos += n_toks
      if start_pos < len(tokens): continue   # more prompt chunks
      tokens.append(int(out.item()))
      self._cached_tokens = tokens[:-1]
      yield tokens[-1]
