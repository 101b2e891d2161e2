"""Decoding drivers: how a generation loop runs on each backend.

How a function is compiled (`jit`), how a decoding loop runs its steps and how
often it reads its stop condition (`loops`), a compiled CPU loop's steps as one
inductor `while_loop` on torch (`whole_loop`, on unless `TorchOptions` says
otherwise), which op picks the best token (`best_tokens`), and a scalar made on
the device (`scalars`). None of them changes a decoded token.
"""
