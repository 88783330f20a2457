"""The Tensor class is assembled from these mixins, one per concern; tensor.py keeps construction, realization, autograd,
assign and views. Each module sees the assembled class as its `Tensor` name (bound by tensor.py once the class exists),
and its methods annotate `self: Tensor` so mypy checks them against the whole class (a self type that is a subclass of
the mixin is what mypy's `misc` check objects to: each mixin module turns that code off in its first line).

random.py      random numbers (threefry2x32-20 on the device), dropout, multinomial, randperm, initialisers
elementwise.py arithmetic, bitwise, comparisons, Python operators, unary math and activations
reduce.py      reductions, softmax/logsumexp, cumulative ops
movement.py    reshape, permute, expand, pad, shrink, flip, repeat, cat/stack/split, roll, unfold, repeat_interleave, meshgrid
indexing.py    __getitem__/__setitem__, gather, scatter/scatter_reduce, masked_select/nonzero, one_hot, triu/tril
sorting.py     sort, argsort, topk (rank counting or a bitonic network, as Tensor ops)
nn.py          dot/matmul, linear, norms, pooling/unpooling, convolution and its transpose, attention, interpolate
loss.py        losses: cross entropy (indices or probabilities), NLL, binary cross entropy (probabilities or logits)
sharding.py    shard, shard_, shard_like: multi-device tensors (lowered per device by tinygrad/multi.py)
linalg.py      einsum, diag/diagonal, qr (Householder), svd (one-sided Jacobi)
common.py      what they share: argument checks, broadcasting, host-side packing, AxisError
graphcache.py  graph templates: activations, norms, softmax, attention, conv and losses build their graph once per shape
disk.py        tensors on the DISK device (a file): read, written and bitcast through its mapping (no kernels run there)
"""
