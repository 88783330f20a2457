"""ViT (Dosovitskiy et al.) in public tinygrad's style (extra/models/vit.py): a strided-conv patch embedding, a class token,
learned position embeddings, pre-norm transformer blocks with GELU MLPs, the class token's final norm into the head.
ViT-Ti/16 is the default (12 layers, dim 192, 3 heads). Runs unmodified on our tinygrad and on public tinygrad."""
from tinygrad import Tensor
import tinygrad.nn as nn

class TransformerBlock:
  def __init__(self, embed_dim: int, num_heads: int, ff_dim: int, eps: float = 1e-6):
    self.num_heads, self.head_size = num_heads, embed_dim // num_heads
    self.query, self.key, self.value, self.out = (nn.Linear(embed_dim, embed_dim) for _ in range(4))
    self.ff1, self.ff2 = nn.Linear(embed_dim, ff_dim), nn.Linear(ff_dim, embed_dim)
    self.ln1, self.ln2 = nn.LayerNorm(embed_dim, eps=eps), nn.LayerNorm(embed_dim, eps=eps)
  def attn(self, x: Tensor) -> Tensor:
    bs, n = x.shape[0], x.shape[1]
    q, k, v = (f(x).reshape(bs, n, self.num_heads, self.head_size).transpose(1, 2) for f in (self.query, self.key, self.value))
    att = (q @ k.transpose(2, 3) * (1.0 / self.head_size ** 0.5)).softmax(-1)   # the explicit form of scaled_dot_product_attention
    return self.out((att @ v).transpose(1, 2).reshape(bs, n, self.num_heads * self.head_size))
  def __call__(self, x: Tensor) -> Tensor:
    x = x + self.attn(self.ln1(x))
    return x + self.ff2(self.ff1(self.ln2(x)).gelu())

class ViT:
  def __init__(self, layers: int = 12, embed_dim: int = 192, num_heads: int = 3, img_size: int = 224, patch_size: int = 16,
               num_classes: int = 1000, ff_mult: int = 4):
    self.patch_size = patch_size
    self.embedding = nn.Conv2d(3, embed_dim, kernel_size=patch_size, stride=patch_size)
    self.cls = Tensor.normal(1, 1, embed_dim, std=0.02)
    self.pos_embedding = Tensor.normal(1, (img_size // patch_size) ** 2 + 1, embed_dim, std=0.02)
    self.tbs = [TransformerBlock(embed_dim, num_heads, embed_dim * ff_mult) for _ in range(layers)]
    self.encoder_norm = nn.LayerNorm(embed_dim, eps=1e-6)
    self.head = nn.Linear(embed_dim, num_classes)
  def forward(self, x: Tensor) -> Tensor:
    pe = self.embedding(x)                                        # (bs, dim, h/p, w/p)
    pe = pe.reshape(pe.shape[0], pe.shape[1], -1).transpose(1, 2)  # (bs, patches, dim)
    x = self.cls.expand(pe.shape[0], 1, pe.shape[2]).cat(pe, dim=1) + self.pos_embedding
    x = x.sequential(self.tbs)
    return self.head(self.encoder_norm(x[:, 0]))
  def __call__(self, x: Tensor) -> Tensor: return self.forward(x)
