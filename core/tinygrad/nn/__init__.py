"""Neural-network layers with tinygrad's constructor arguments and initialisation (kaiming-uniform like torch).

Parameters are plain Tensors held as attributes; `nn.state.get_parameters(model)` finds them. Constant-initialised
parameters (ones/zeros) get their own buffers: a broadcast constant is hash-consed, so two layers' `Tensor.ones(n)`
would otherwise be one graph node and share one gradient.
"""
from __future__ import annotations
import math
from typing import Any
from tinygrad.tensor import Tensor, note_host_read
from tinygrad.mixin.indexing import _check_oob
from tinygrad.dtype import dtypes, DType, least_upper_dtype, OPMATH_F32, NO_NUMPY
from tinygrad.helpers import prod, make_tuple, all_int

def _full(shape: tuple[int, ...], value: float, requires_grad: bool | None = None, dtype: DType | None = None) -> Tensor:
  # a constant parameter in its own fresh buffer (see the module docstring), in the default float unless told (as public
  # tinygrad's Tensor.ones: DEFAULT_FLOAT=HALF makes a BatchNorm's statistics half, which its running-stat assign needs)
  import numpy as np
  from tinygrad.dtype import to_numpy
  dt = dtypes.default_float if dtype is None else dtype
  if dt not in NO_NUMPY: return Tensor(np.full(shape, value, dtype=to_numpy(dt)), requires_grad=requires_grad)
  ret = Tensor(np.full(shape, value, dtype=np.float32)).cast(dt)   # (numpy has no bfloat16 nor fp8)
  ret.requires_grad = requires_grad
  return ret

def _bound(fan_in: int) -> float:
  # torch's init bound, 1/sqrt(fan_in) (kaiming_uniform(a=sqrt(5)) reduces to it), and 0 for a layer with no inputs (its
  # bias is zeros, as torch's; 1/sqrt(0) was a ZeroDivisionError at construction)
  return 1 / math.sqrt(fan_in) if fan_in > 0 else 0.0
def _uniform(shape: tuple[int, ...], bound: float) -> Tensor:
  return Tensor.uniform(*shape, low=-bound, high=bound) if bound else _full(shape, 0.0)   # (uniform needs low < high)

class Linear:
  """y = x @ weight.T + bias; weight (out_features, in_features) and bias uniform in +-1/sqrt(in_features), as torch."""
  def __init__(self, in_features: int, out_features: int, bias: bool = True):
    bound = _bound(in_features)
    self.weight = _uniform((out_features, in_features), bound)
    self.bias: Tensor | None = _uniform((out_features,), bound) if bias else None
  def __call__(self, x: Tensor) -> Tensor: return x.linear(self.weight.transpose(), self.bias)

class Conv2d:
  """2-D (or n-D, by the length of kernel_size) convolution; weight (out, in/groups, *kernel_size), torch's init.

  padding: an int, a per-dim tuple, a flat torch-order tuple, or "same"/"valid".
  """
  def __init__(self, in_channels: int, out_channels: int, kernel_size: int | tuple[int, ...], stride: int | tuple[int, ...] = 1,
               padding: int | tuple[int, ...] | str = 0, dilation: int | tuple[int, ...] = 1, groups: int = 1, bias: bool = True):
    self.kernel_size = make_tuple(kernel_size, 2)
    if in_channels % groups or out_channels % groups: raise ValueError(f"channels in={in_channels}, out={out_channels} must divide by groups={groups}")
    self.stride, self.dilation, self.groups = stride, dilation, groups
    self.padding = self._padding(padding)
    bound = _bound(in_channels // groups * prod(self.kernel_size))
    self.weight = _uniform((out_channels, in_channels // groups, *self.kernel_size), bound)
    self.bias: Tensor | None = _uniform((out_channels,), bound) if bias else None
  def _padding(self, padding: int | tuple[int, ...] | str) -> int | tuple[int, ...]:
    if not isinstance(padding, str): return padding
    if padding == "valid": return 0
    if padding != "same": raise ValueError(f"padding {padding!r} must be an int, a tuple, 'same' or 'valid'")
    if any(s != 1 for s in make_tuple(self.stride, len(self.kernel_size))): raise ValueError("padding='same' needs stride 1")
    pads: list[int] = []
    for d, k in zip(reversed(make_tuple(self.dilation, len(self.kernel_size))), reversed(self.kernel_size)):
      total = d * (k - 1)
      pads += [total // 2, total - total // 2]
    return tuple(pads)
  def __call__(self, x: Tensor) -> Tensor:
    return x.conv2d(self.weight, self.bias, groups=self.groups, stride=self.stride, dilation=self.dilation, padding=self.padding)

def Conv1d(in_channels: int, out_channels: int, kernel_size: int, stride: int = 1, padding: int | str = 0, dilation: int = 1,
           groups: int = 1, bias: bool = True) -> Conv2d:
  """A 1-D convolution over (N, C, L) inputs: Conv2d with a one-element kernel size."""
  return Conv2d(in_channels, out_channels, (kernel_size,), stride, padding, dilation, groups, bias)

class ConvTranspose2d(Conv2d):
  """2-D (or n-D, by the length of kernel_size) transposed convolution; weight (in, out/groups, *kernel_size) as torch,
  and torch's init (its fan-in is out/groups * prod(kernel_size)). Arguments in public tinygrad's order (dilation before
  groups, unlike torch's)."""
  def __init__(self, in_channels: int, out_channels: int, kernel_size: int | tuple[int, ...], stride: int | tuple[int, ...] = 1,
               padding: int | tuple[int, ...] = 0, output_padding: int | tuple[int, ...] = 0, dilation: int | tuple[int, ...] = 1,
               groups: int = 1, bias: bool = True):
    if isinstance(padding, str): raise ValueError(f"ConvTranspose2d: padding {padding!r} must be an int or a tuple (no 'same'/'valid', as torch)")
    super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, groups, bias)
    bound = _bound(out_channels // groups * prod(self.kernel_size))
    self.weight = _uniform((in_channels, out_channels // groups, *self.kernel_size), bound)
    self.bias = _uniform((out_channels,), bound) if bias else None
    self.output_padding = output_padding
  def __call__(self, x: Tensor) -> Tensor:
    return x.conv_transpose2d(self.weight, self.bias, groups=self.groups, stride=self.stride, dilation=self.dilation, padding=self.padding,
                              output_padding=self.output_padding)

def ConvTranspose1d(in_channels: int, out_channels: int, kernel_size: int, stride: int = 1, padding: int = 0, output_padding: int = 0,
                    dilation: int = 1, groups: int = 1, bias: bool = True) -> ConvTranspose2d:
  """A 1-D transposed convolution over (N, C, L) inputs: ConvTranspose2d with a one-element kernel size."""
  return ConvTranspose2d(in_channels, out_channels, (kernel_size,), stride, padding, output_padding, dilation, groups, bias)

def _f32(x: Tensor) -> Tensor: return x.float() if x.dtype in OPMATH_F32 else x

class BatchNorm:
  """Batch normalisation over axis 1 (any rank): batch statistics when `Tensor.training`, else the running ones.

  The running statistics are updated with `assign` during training; the optimizer's step realizes them. momentum None is
  torch's cumulative average (each batch weighs 1/num_batches_tracked).
  """
  def __init__(self, sz: int, eps: float = 1e-5, affine: bool = True, track_running_stats: bool = True, momentum: float | None = 0.1):
    self.eps, self.track_running_stats, self.momentum, self.num_features = eps, track_running_stats, momentum, sz
    self.weight: Tensor | None = _full((sz,), 1.0) if affine else None
    self.bias: Tensor | None = _full((sz,), 0.0) if affine else None
    # a 0-d counter, as torch's and public tinygrad's (a checkpoint's () entry round-trips unchanged); int32 so every device has it
    self.num_batches_tracked = _full((), 0, requires_grad=False, dtype=dtypes.int32)
    if track_running_stats: self.running_mean, self.running_var = _full((sz,), 0.0, requires_grad=False), _full((sz,), 1.0, requires_grad=False)
  def calc_stats(self, x: Tensor) -> tuple[Tensor, Tensor]:
    """(mean, var) over every axis but 1: the batch's in training (or without running stats), else the running ones. A
    float16/bfloat16 batch's are float32, as torch's (its squares' mean overflowed float16 past |x - mean| = 256)."""
    if self.track_running_stats and not Tensor.training: return self.running_mean, self.running_var
    return self._batch_stats(x)[1:]
  def _batch_stats(self, x: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    # (x - mean, mean, var) of the batch by the corrected two-pass (Tensor._centered): a channel of 1000.1s normalised to
    # 0.95 where the answer is 0 (torch's float32: 0.80)
    dev, mean, var = _f32(x)._centered(tuple(i for i in range(x.ndim) if i != 1))
    return dev, mean.reshape(-1), var.reshape(-1)
  def __call__(self, x: Tensor) -> Tensor:
    # per-channel weights or statistics of another channel count broadcast against x's instead (BatchNorm(3) of a 1-channel
    # input gave 3 channels, BatchNorm(1) in eval applied one channel's statistics to all): torch raises
    if (self.weight is not None or self.track_running_stats) and (x.ndim < 2 or isinstance(x.shape[1], int) and x.shape[1] != self.num_features):
      raise ValueError(f"BatchNorm({self.num_features}): input shape {x.shape} needs C={self.num_features} at axis 1")
    # (a TinyJit capture bakes these in: a replay after `bn.momentum = 0.01` raises instead of updating at the old rate)
    note_host_read(self, "momentum")
    note_host_read(self, "eps")
    batch = not (self.track_running_stats and not Tensor.training)
    # torch's check: one value per channel has variance 0, the output is all zeros (the bias) and the running variance decays
    if batch and x.ndim >= 2 and all_int(x.shape) and x.shape[1] and x.numel() == x.shape[1]:   # (a symbolic batch: unchecked)
      raise ValueError(f"BatchNorm: expected more than 1 value per channel when training (batch statistics), got input size {x.shape}")
    # (the batch's deviations as computed with its statistics: x - (m0 + d) rounded the mean to its ulps again)
    xc, mean, var = self._batch_stats(x) if batch else (None, *self.calc_stats(x))
    # the dtype x, the parameters (and running statistics used) promote to; a float16/bfloat16 x is computed in float32 and
    # rounded once to it, as torch's
    out_dt = least_upper_dtype(x.dtype, *[t.dtype for t in ([] if batch else [mean, var]) + [self.weight, self.bias] if t is not None])
    if self.track_running_stats and Tensor.training:
      n = x.numel() // x.shape[1]   # (a symbolic batch: a size, and `n > 0` decided at its bound value; `if n:` raised)
      self.num_batches_tracked.assign(self.num_batches_tracked + 1)
      # (the count read after its assign: the new one)
      mom = self.momentum if self.momentum is not None else 1 / self.num_batches_tracked.float()
      # an empty batch counts but leaves the running statistics as they are, as torch (its mean and var are NaN: 0/0)
      if n > 0:
        rm, rv = self.running_mean, self.running_var
        rm.assign(((1 - mom) * rm + mom * mean.detach()).cast(rm.dtype))
        rv.assign(((1 - mom) * rv + mom * n / max(n - 1, 1) * var.detach()).cast(rv.dtype))
    shape = (1, -1, *[1] * (x.ndim - 2))
    out = (_f32(x) - mean.reshape(shape) if xc is None else xc) * (var + self.eps).rsqrt().reshape(shape)
    if self.weight is not None: out = out * self.weight.reshape(shape)
    return (out + self.bias.reshape(shape) if self.bias is not None else out).cast(out_dt)
BatchNorm2d = BatchNorm1d = BatchNorm3d = BatchNorm

class LayerNorm:
  """Normalise over the trailing `normalized_shape` dims, then scale and shift (weight ones, bias zeros)."""
  def __init__(self, normalized_shape: int | tuple[int, ...], eps: float = 1e-5, elementwise_affine: bool = True):
    self.normalized_shape = make_tuple(normalized_shape, 1)
    self.axis = tuple(-1 - i for i in range(len(self.normalized_shape)))
    self.eps, self.elementwise_affine = eps, elementwise_affine
    self.weight: Tensor | None = _full(self.normalized_shape, 1.0) if elementwise_affine else None
    self.bias: Tensor | None = _full(self.normalized_shape, 0.0) if elementwise_affine else None
  def __call__(self, x: Tensor) -> Tensor:
    if x.shape[-len(self.normalized_shape):] != self.normalized_shape:
      raise ValueError(f"LayerNorm{self.normalized_shape}: input shape {x.shape} does not end with it")
    x = x.layernorm(self.axis, self.eps)
    return x if self.weight is None or self.bias is None else x * self.weight + self.bias

class LayerNorm2d(LayerNorm):
  """LayerNorm over the channel axis of (N, C, H, W) inputs."""
  def __call__(self, x: Tensor) -> Tensor: return super().__call__(x.permute(0, 2, 3, 1)).permute(0, 3, 1, 2)

class RMSNorm:
  """x / sqrt(mean(x^2, last axis) + eps) * weight."""
  def __init__(self, dim: int, eps: float = 1e-6, elementwise_affine: bool = True):
    self.eps = eps
    self.weight: Tensor | None = _full((dim,), 1.0) if elementwise_affine else None
  def _norm(self, x: Tensor) -> Tensor: return x * (x.square().mean(-1, keepdim=True) + self.eps).rsqrt()
  def __call__(self, x: Tensor) -> Tensor:
    # (a weight of another size broadcast against the last axis: RMSNorm(4) of (3, 1) gave (3, 4)); torch raises
    if self.weight is not None and (x.ndim < 1 or isinstance(x.shape[-1], int) and x.shape[-1] != self.weight.shape[0]):
      raise ValueError(f"RMSNorm({self.weight.shape[0]}): input shape {x.shape} does not end with it")
    # in float32 at least (float16/bfloat16 rounded once, as public tinygrad); float64 stays float64 (x.float() cast it
    # down: 8e-8 relative off torch's float64 RMSNorm)
    x = self._norm(x.cast(least_upper_dtype(x.dtype, dtypes.float32))).cast(x.dtype)
    return x if self.weight is None else x * self.weight

class GroupNorm:
  """Normalise (N, C, ...) inputs over groups of C/num_groups channels, then a per-channel scale and shift. As public
  tinygrad, a group is 1/num_groups of each sample's values in order, so num_channels need not divide by num_groups (torch
  raises): GroupNorm(32, 16) of (N, 16, 8, 8) normalises each half channel."""
  def __init__(self, num_groups: int, num_channels: int, eps: float = 1e-5, affine: bool = True):
    self.num_groups, self.num_channels, self.eps = num_groups, num_channels, eps
    self.weight: Tensor | None = _full((num_channels,), 1.0) if affine else None
    self.bias: Tensor | None = _full((num_channels,), 0.0) if affine else None
  def __call__(self, x: Tensor) -> Tensor:
    # (each group's size spelled out: -1 cannot be inferred for an empty batch, which torch allows)
    # (the weight and bias of another channel count broadcast against x's: GroupNorm(1, 4) of a 1-channel input gave 4)
    if self.weight is not None and (x.ndim < 2 or isinstance(x.shape[1], int) and x.shape[1] != self.num_channels):
      raise ValueError(f"GroupNorm({self.num_groups}, {self.num_channels}): input shape {x.shape} needs C={self.num_channels} at axis 1")
    if isinstance(n := prod(x.shape[1:]), int) and n % self.num_groups:
      raise ValueError(f"GroupNorm: {n} values per sample {x.shape[1:]} do not split into {self.num_groups} groups")
    x = x.reshape(x.shape[0], self.num_groups, prod(x.shape[1:]) // self.num_groups).layernorm(-1, self.eps).reshape(x.shape)
    if self.weight is None or self.bias is None: return x
    shape = (1, -1, *[1] * (x.ndim - 2))
    return x * self.weight.reshape(shape) + self.bias.reshape(shape)

class InstanceNorm:
  """Normalise each (sample, channel) of (N, C, ...) inputs over its spatial dims, then a per-channel scale and shift
  (tinygrad's default affine=True; torch's InstanceNorm defaults to affine=False)."""
  def __init__(self, num_features: int, eps: float = 1e-5, affine: bool = True):
    self.num_features, self.eps = num_features, eps
    self.weight: Tensor | None = _full((num_features,), 1.0) if affine else None
    self.bias: Tensor | None = _full((num_features,), 0.0) if affine else None
  def __call__(self, x: Tensor) -> Tensor:
    if x.ndim < 2 or x.shape[1] != self.num_features: raise ValueError(f"InstanceNorm({self.num_features}): input shape {x.shape} needs C={self.num_features} at axis 1")
    x = x.reshape(x.shape[0], self.num_features, prod(x.shape[2:])).layernorm(-1, self.eps).reshape(x.shape)
    if self.weight is None or self.bias is None: return x
    shape = (1, -1, *[1] * (x.ndim - 2))
    return x * self.weight.reshape(shape) + self.bias.reshape(shape)

class LSTMCell:
  """One LSTM step, torch's layout: gates (i, f, g, o) = x @ weight_ih.T + bias_ih + h @ weight_hh.T + bias_hh, every weight
  uniform in +-1/sqrt(hidden_size); returns (h', c'). hc None: zero state. x (input_size,) with hc (hidden_size,) each is
  torch's unbatched form."""
  def __init__(self, input_size: int, hidden_size: int, bias: bool = True):
    bound = _bound(hidden_size)
    self.weight_ih = _uniform((hidden_size * 4, input_size), bound)
    self.weight_hh = _uniform((hidden_size * 4, hidden_size), bound)
    self.bias_ih: Tensor | None = _uniform((hidden_size * 4,), bound) if bias else None
    self.bias_hh: Tensor | None = _uniform((hidden_size * 4,), bound) if bias else None
  def __call__(self, x: Tensor, hc: tuple[Tensor, Tensor] | None = None) -> tuple[Tensor, Tensor]:
    if x.ndim == 1:   # unbatched: as a batch of one (the batched path broadcast it to an (input_size, hidden_size) state)
      h, c = self(x.unsqueeze(0), None if hc is None else (hc[0].unsqueeze(0), hc[1].unsqueeze(0)))
      return h.squeeze(0), c.squeeze(0)
    if hc is None: hc = (Tensor.zeros(x.shape[0], self.weight_hh.shape[1], dtype=x.dtype, device=x.device),) * 2
    # a state of another batch size (or width) broadcast into the gates, giving another batch's outputs: torch raises
    elif bad := [i for i, t in enumerate(hc) if all_int(t.shape + x.shape) and t.shape != (x.shape[0], self.weight_hh.shape[1])]:
      raise ValueError(f"LSTMCell: hc[{bad[0]}] has shape {hc[bad[0]].shape}, needs (batch, hidden_size) = {(x.shape[0], self.weight_hh.shape[1])}")
    gates = x.linear(self.weight_ih.transpose(), self.bias_ih) + hc[0].linear(self.weight_hh.transpose(), self.bias_hh)
    i, f, g, o = gates.chunk(4, dim=1)
    c = f.sigmoid() * hc[1] + i.sigmoid() * g.tanh()
    return (o.sigmoid() * c.tanh()).contiguous(), c.contiguous()

class Embedding:
  """A lookup table: (…) int indices -> (…, embed_size) rows of weight (glorot-uniform init, like tinygrad)."""
  def __init__(self, vocab_size: int, embed_size: int):
    self.vocab_sz, self.embed_sz = vocab_size, embed_size
    self.weight = Tensor.glorot_uniform(vocab_size, embed_size)
  def __call__(self, idx: Tensor) -> Tensor:
    # a float index would compare equal to arange only where it is whole (1.5 -> a zero row, no error): public tinygrad raises
    if not dtypes.is_int(idx.dtype): raise TypeError(f"Embedding: indices must have an integer dtype, got {idx.dtype}")
    # compare against arange and sum: a gather built from broadcasts, differentiable through WHERE
    _check_oob("Embedding", idx, self.vocab_sz, idx.ndim, False)
    big = (*idx.shape, self.vocab_sz, self.embed_sz)
    arange = Tensor.arange(self.vocab_sz, device=idx.device).reshape(*[1] * idx.ndim, self.vocab_sz, 1).expand(*big)
    hit = idx.reshape(*idx.shape, 1, 1).expand(*big) == arange
    return hit._pick(self.weight.expand(*big), -2, self.weight.dtype)   # (never split: one load per token)

class Dropout:
  """Zero each element with probability p and scale the rest by 1/(1-p), only while `Tensor.training`."""
  def __init__(self, p: float = 0.5):
    if not 0 <= p <= 1: raise ValueError(f"dropout probability must be in [0, 1], got {p}")
    self.p = p
  def __call__(self, x: Tensor) -> Tensor:
    # (a TinyJit capture bakes p in: a replay after `drop.p = 0.1` raises instead of dropping at the old rate)
    note_host_read(self, "p")
    if self.p == 0 or not Tensor.training: return x
    return x * 0 if self.p == 1 else x.dropout(self.p)

__all__ = ["Linear", "Conv2d", "Conv1d", "ConvTranspose2d", "ConvTranspose1d", "BatchNorm", "BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "LayerNorm", "LayerNorm2d", "RMSNorm",
           "GroupNorm", "InstanceNorm", "LSTMCell", "Embedding", "Dropout"]
def __getattr__(name: str) -> Any:
  if name in ("optim", "state", "datasets"):
    import importlib
    return importlib.import_module(f"tinygrad.nn.{name}")
  raise AttributeError(f"module 'tinygrad.nn' has no attribute {name!r}")
