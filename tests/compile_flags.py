"""The XLA flags of the suite's JAX and TensorFlow processes (no imports: conftest reads it
before Keras is imported).

Most of a JAX test's time is XLA compiling tiny programs: every new shape of
every eager op, every model's train and decoding steps. The suite's models are
tiny and run as fast without the compiler's expensive work, so its processes
compile with:

- `--xla_backend_optimization_level=0 --xla_llvm_disable_expensive_passes=true`:
  no expensive LLVM optimization (half the compile time);
- `--xla_cpu_use_fusion_emitters=false`: XLA's older elemental emitters for
  fused loops instead of the MLIR fusion emitters. An eager op compiles in
  about 20 ms instead of 35, a small model's gradient in 40 ms instead of 65;
  three of the suite's JAX files ran in 175 s instead of 310 s, one core each.
  TensorFlow's XLA (`jit_compile=True`) reads the same flags: a small
  gradient compiled in 36 ms instead of 66 with the three.

Users' programs keep XLA's defaults.
"""

TEST_XLA_FLAGS = (
    "--xla_backend_optimization_level=0 --xla_llvm_disable_expensive_passes=true "
    "--xla_cpu_use_fusion_emitters=false"
)
