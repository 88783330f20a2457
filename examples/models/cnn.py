"""The CNN of public tinygrad's beautiful_mnist (examples/beautiful_mnist.py): two 5x5 and two 3x3 convs with batchnorm and
max-pooling, into a linear classifier, for 1x28x28 inputs; and its training step (Adam, a TinyJit step). Runs unmodified on
our tinygrad and on public tinygrad."""
from tinygrad import Tensor
from tinygrad.helpers import Context
import tinygrad.nn as nn

class Model:
  def __init__(self):
    self.layers = [nn.Conv2d(1, 32, 5), Tensor.relu, nn.Conv2d(32, 32, 5), Tensor.relu, nn.BatchNorm(32), Tensor.max_pool2d,
                   nn.Conv2d(32, 64, 3), Tensor.relu, nn.Conv2d(64, 64, 3), Tensor.relu, nn.BatchNorm(64), Tensor.max_pool2d,
                   lambda x: x.flatten(1), nn.Linear(576, 10)]
  def __call__(self, x: Tensor) -> Tensor: return x.sequential(self.layers)

def cross_entropy(logits: Tensor, y: Tensor) -> Tensor:
  # sparse_categorical_crossentropy spelled with one_hot, which both tinygrads have
  return -(logits.log_softmax(-1) * y.one_hot(logits.shape[-1])).sum(-1).mean()

def make_train_step(model: Model, opt):
  """One training step as beautiful_mnist writes it: zero_grad, backward, the loss realized with the optimizer's update in
  one schedule, in training mode (Context(TRAINING=1)); wrap it in TinyJit to capture it."""
  def step(x: Tensor, y: Tensor) -> Tensor:
    with Context(TRAINING=1):   # public tinygrad's training switch (0.14 has no Tensor.train)
      opt.zero_grad()
      loss = cross_entropy(model(x), y).backward()
      return loss.realize(*opt.schedule_step())
  return step
