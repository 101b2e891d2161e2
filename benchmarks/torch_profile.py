"""Where a Translator train step spends its time on the torch backend (`torch.profiler`).

Builds the Translator of `seq2seq_train.py`'s runs (`fast/big`: LSTM, Luong dot
attention, no input feeding; `feeding/small`: GRU, Bahdanau attention, input
feeding), compiles it as `seq2seq_train.py` does, runs a few warm-up
`train_on_batch` calls, then profiles `--steps` more on the CPU and prints the
operators with the most self CPU time: the share of the step each takes, how
many times it ran per step, and the whole step's time. Keras's own Python
around the ops shows as the gap between the step's wall time and the sum of
the operators' self time ("outside operators").

    KERAS_BACKEND=torch python benchmarks/torch_profile.py
    KERAS_BACKEND=torch python benchmarks/torch_profile.py --runs feeding/small --top 20
"""

import argparse
import os
import time

from _common import pin_threads
from seq2seq_train import CONFIGS, RUNS, SIZES, fake_data, keras_trainer


def profile(run, steps, top):
    from torch.profiler import ProfilerActivity
    from torch.profiler import profile as torch_profile

    config_name, size_name = run.split("/")
    config, size = CONFIGS[config_name], SIZES[size_name]
    trainer = keras_trainer(config, size, steps)
    model = trainer.model
    source, target_in, target_out = fake_data(size, 1)
    for _ in range(3):  # warm-up: builds the optimizer, the step function
        model.train_on_batch((source, target_in), target_out)
    with torch_profile(activities=[ProfilerActivity.CPU]) as prof:
        start = time.perf_counter()
        for _ in range(steps):
            model.train_on_batch((source, target_in), target_out)
        wall = (time.perf_counter() - start) / steps
    events = prof.key_averages()
    total_self = sum(e.self_cpu_time_total for e in events) / steps / 1e6  # s/step
    rows = sorted(events, key=lambda e: e.self_cpu_time_total, reverse=True)[:top]
    print(f"\n### `{run}`: {wall * 1e3:,.1f} ms per train step\n")
    print(
        f"Operators' self time {total_self * 1e3:,.1f} ms per step; outside "
        f"operators (Python: Keras, the optimizer, the trainer) "
        f"{max(0.0, wall - total_self) * 1e3:,.1f} ms "
        f"({max(0.0, wall - total_self) / wall:.0%}).\n"
    )
    print("| operator | self CPU ms per step | share of the step | calls per step |")
    print("|---|---|---|---|")
    for e in rows:
        ms = e.self_cpu_time_total / steps / 1e3
        print(
            f"| `{e.key}` | {ms:,.2f} | {ms / 1e3 / wall:.1%} | {e.count / steps:,.0f} |"
        )


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", nargs="+", default=["fast/big", "feeding/small"])
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--top", type=int, default=12)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    if os.environ.get("KERAS_BACKEND") != "torch":
        raise SystemExit("Run with KERAS_BACKEND=torch.")
    unknown = set(args.runs) - set(RUNS)
    if unknown:
        raise SystemExit(f"Unknown runs {sorted(unknown)}; choose from {RUNS}.")
    pin_threads(args.threads)
    print("## Torch train step profile (`benchmarks/torch_profile.py`)")
    print(
        f"\nCPU, {args.threads} thread(s); `torch.profiler` over {args.steps} "
        "`train_on_batch` calls after 3 warm-up calls; the operators with the "
        "most self CPU time."
    )
    for run in args.runs:
        profile(run, args.steps, args.top)


if __name__ == "__main__":
    main()
