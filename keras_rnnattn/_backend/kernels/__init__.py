"""Kernels: which backend op computes a layer's or a loss's numbers.

The recurrences (`rnn_kernels.run_rnn` and its fused kernels per backend: JAX's
LSTM, TensorFlow's LSTM and GRU for training, torch's fused RNNs in a compiled
train step), the dense products (`fused_dense`, `onednn_linear`), tanh in
compiled torch inference (`fast_tanh`), an additive attention's scores, the
cross-entropies and their gradients, Adam's update and clipping, and an
ensemble's log-mean-exp. Every choice here gives the same numbers (to float
rounding) as the plain `keras.ops` it replaces, which its tests check.
"""
