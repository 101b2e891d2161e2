"""Experimental torch paths, off by default: they have not run on the hardware
they are for.

`captured_loop`: a compiled loop's blocks of steps on an NVIDIA GPU as replays
of one captured CUDA graph (`torch_options(cuda_graphs=True)`).
`torch_rnn_op`: a large GRU or LSTM as one operator of a compiled torch train
step, cuDNN's or oneDNN's forward and backward
(`torch_options(rnn_operator=True)`). Each is tested on the CPU against the
default path; `scripts/gpu_check.sh` measures them on a GPU, and a default
changes only on its rows.
"""
