"""ResNet-18/34/50/101/152 in public tinygrad's style (extra/models/resnet.py): torchvision's layer names, so a torchvision
state dict loads as is. Runs unmodified on our tinygrad and on public tinygrad. `width` (64 in the paper) shrinks every
stage for tiny test configs."""
from tinygrad import Tensor
import tinygrad.nn as nn

class BasicBlock:
  expansion = 1
  def __init__(self, in_planes: int, planes: int, stride: int = 1):
    self.conv1 = nn.Conv2d(in_planes, planes, kernel_size=3, stride=stride, padding=1, bias=False)
    self.bn1 = nn.BatchNorm2d(planes)
    self.conv2 = nn.Conv2d(planes, planes, kernel_size=3, stride=1, padding=1, bias=False)
    self.bn2 = nn.BatchNorm2d(planes)
    self.downsample = []
    if stride != 1 or in_planes != self.expansion * planes:
      self.downsample = [nn.Conv2d(in_planes, self.expansion * planes, kernel_size=1, stride=stride, bias=False), nn.BatchNorm2d(self.expansion * planes)]
  def __call__(self, x: Tensor) -> Tensor:
    out = self.bn1(self.conv1(x)).relu()
    out = self.bn2(self.conv2(out))
    return (out + x.sequential(self.downsample)).relu()

class Bottleneck:
  # the stride sits on the 3x3 conv (torchvision's "ResNet v1.5")
  expansion = 4
  def __init__(self, in_planes: int, planes: int, stride: int = 1):
    self.conv1 = nn.Conv2d(in_planes, planes, kernel_size=1, bias=False)
    self.bn1 = nn.BatchNorm2d(planes)
    self.conv2 = nn.Conv2d(planes, planes, kernel_size=3, padding=1, stride=stride, bias=False)
    self.bn2 = nn.BatchNorm2d(planes)
    self.conv3 = nn.Conv2d(planes, self.expansion * planes, kernel_size=1, bias=False)
    self.bn3 = nn.BatchNorm2d(self.expansion * planes)
    self.downsample = []
    if stride != 1 or in_planes != self.expansion * planes:
      self.downsample = [nn.Conv2d(in_planes, self.expansion * planes, kernel_size=1, stride=stride, bias=False), nn.BatchNorm2d(self.expansion * planes)]
  def __call__(self, x: Tensor) -> Tensor:
    out = self.bn1(self.conv1(x)).relu()
    out = self.bn2(self.conv2(out)).relu()
    out = self.bn3(self.conv3(out))
    return (out + x.sequential(self.downsample)).relu()

LAYERS = {18: (BasicBlock, [2, 2, 2, 2]), 34: (BasicBlock, [3, 4, 6, 3]), 50: (Bottleneck, [3, 4, 6, 3]),
          101: (Bottleneck, [3, 4, 23, 3]), 152: (Bottleneck, [3, 8, 36, 3])}

class ResNet:
  def __init__(self, num: int, num_classes: int = 1000, width: int = 64):
    if num not in LAYERS: raise ValueError(f"ResNet-{num}: valid depths are {sorted(LAYERS)}")
    self.block, num_blocks = LAYERS[num]
    self.in_planes = width
    self.conv1 = nn.Conv2d(3, width, kernel_size=7, stride=2, padding=3, bias=False)
    self.bn1 = nn.BatchNorm2d(width)
    self.layer1 = self._make_layer(width, num_blocks[0], stride=1)
    self.layer2 = self._make_layer(width * 2, num_blocks[1], stride=2)
    self.layer3 = self._make_layer(width * 4, num_blocks[2], stride=2)
    self.layer4 = self._make_layer(width * 8, num_blocks[3], stride=2)
    self.fc = nn.Linear(width * 8 * self.block.expansion, num_classes)
  def _make_layer(self, planes: int, num_blocks: int, stride: int) -> list:
    layers = []
    for s in [stride] + [1] * (num_blocks - 1):
      layers.append(self.block(self.in_planes, planes, s))
      self.in_planes = planes * self.block.expansion
    return layers
  def forward(self, x: Tensor) -> Tensor:
    out = self.bn1(self.conv1(x)).relu()
    out = out.pad((1, 1, 1, 1)).max_pool2d((3, 3), 2)   # max_pool2d's zero padding is safe here: the input is post-relu
    out = out.sequential(self.layer1).sequential(self.layer2).sequential(self.layer3).sequential(self.layer4)
    return self.fc(out.mean((2, 3)))
  def __call__(self, x: Tensor) -> Tensor: return self.forward(x)

def ResNet18(num_classes: int = 1000, width: int = 64) -> ResNet: return ResNet(18, num_classes, width)
def ResNet34(num_classes: int = 1000, width: int = 64) -> ResNet: return ResNet(34, num_classes, width)
def ResNet50(num_classes: int = 1000, width: int = 64) -> ResNet: return ResNet(50, num_classes, width)
