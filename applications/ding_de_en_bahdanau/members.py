"""The ensemble's members: each trained by this recipe in its own process on one CPU."""

import json
import os
import subprocess
import sys
import tempfile
import time

from keras_rnnattn.models import Translator, TranslatorEnsemble
from keras_rnnattn.training import round_to_float16
from keras_rnnattn.training.processes import available_cpus, cpu_affinity, thread_env

TRAIN_SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "train.py")


def member_argv(args, argv, index):
    """The command line of member `index` (0-based): this run's own options but
    the members', output's and training run's, one translator, its seed and
    folders (its run folder in the member's folder)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    own = {
        "--members": 1,
        "--members-dir": 1,
        "--out": 1,
        "--seed": 1,
        "--run-dir": 1,
        "--resume": 1,
    }
    kept, skip = [], 0
    for item in argv:
        if skip:
            skip -= 1
            continue
        name = item.split("=")[0]
        if name in own:
            skip = 0 if "=" in item else own[name]
            continue
        kept.append(item)
    folder = os.path.join(args.members_dir, f"member_{index + 1}")
    # A member goes on alone: train.py --resume <members-dir>/member_<k>/run
    run = ["--run-dir", os.path.join(folder, "run")]
    seed = ["--seed", str(args.seed + index)]
    return kept + ["--members", "1", *seed, *run, "--out", folder]


def member_env(members_dir):
    """Environment of a member process: every library on one thread, and one
    JAX compilation cache in `members_dir` for all members (a batch shape one
    member has compiled, another loads in a second or two instead of compiling
    it again: about 12 s a shape on one core). `JAX_COMPILATION_CACHE_DIR`, if
    set, is kept (a cache shared by several runs)."""
    env = dict(os.environ)
    env.setdefault(
        "JAX_COMPILATION_CACHE_DIR", os.path.join(members_dir, "compilation_cache")
    )
    env.update(thread_env(1))
    env["PYTHONUNBUFFERED"] = "1"
    return env


def train_members(args, argv):
    """Trains `args.members` translators side by side, one process and one CPU
    each (each seeded `args.seed + i`), and returns them as one
    `TranslatorEnsemble` with its training metrics, data and licence.

    A member whose folder in `--members-dir` already holds a preset is reused.
    Without `--members-dir`, the members go to a new temporary folder, made
    here (parsing the options makes none).
    """
    if args.members_dir is None:
        args.members_dir = tempfile.mkdtemp(prefix=os.path.basename(args.out) + "_")
    os.makedirs(args.members_dir, exist_ok=True)
    cpus = available_cpus()
    waiting = list(range(args.members))
    running = {}
    start = time.time()
    while waiting or running:
        while waiting and len(running) < max(1, len(cpus)):
            index = waiting.pop(0)
            command = member_argv(args, argv, index)
            folder = command[-1]
            if os.path.isfile(os.path.join(folder, "metadata.json")):
                print(f"member {index + 1}: reusing the preset in {folder}", flush=True)
                continue
            busy = {cpu for _, _, cpu in running.values()}
            cpu = next((c for c in cpus if c not in busy), None)
            log = open(os.path.join(args.members_dir, f"member_{index + 1}.log"), "w")
            process = subprocess.Popen(
                [sys.executable, TRAIN_SCRIPT, *command],
                stdout=log,
                stderr=subprocess.STDOUT,
                env=member_env(args.members_dir),
                # Thread settings alone do not keep XLA to one core: pin it.
                preexec_fn=cpu_affinity(None if cpu is None else [cpu]),
            )
            print(
                f"member {index + 1}: training on CPU {cpu}, log {log.name}",
                flush=True,
            )
            running[index] = (process, log, cpu)
        time.sleep(1 if args.quick else 30)
        for index, (process, log, _) in list(running.items()):
            if process.poll() is None:
                continue
            log.close()
            del running[index]
            if process.returncode != 0:
                with open(log.name) as f:
                    tail = f.read()[-2000:]
                raise RuntimeError(
                    f"member {index + 1} failed (exit {process.returncode}); the "
                    f"end of {log.name}:\n{tail}"
                )
            print(
                f"member {index + 1}: done after {(time.time() - start) / 60:.1f} min",
                flush=True,
            )

    members, member_metadata = [], []
    for index in range(args.members):
        folder = member_argv(args, argv, index)[-1]
        members.append(Translator.from_preset(folder))
        with open(os.path.join(folder, "metadata.json"), encoding="utf-8") as f:
            member_metadata.append(json.load(f))
    model = TranslatorEnsemble(members)
    # The preset stores float16 weights (two translators fit the size limit):
    # round them now, so every score below is of the weights shipped.
    round_to_float16(model)
    runs = [m["metrics"] for m in member_metadata]
    metrics = {
        "epochs_run": [r["epochs_run"] for r in runs],
        "best_val_loss": [r["best_val_loss"] for r in runs],
        # Side by side: the slowest member's training time.
        "train_seconds": max(r["train_seconds"] for r in runs),
        "stopped_by_time_budget": any(r["stopped_by_time_budget"] for r in runs),
        "members": [
            {
                "command": m["command"],
                "seed": m["seed"],
                **{
                    key: m["metrics"][key]
                    for key in m["metrics"]
                    if key.startswith("test_")
                    and not key.endswith(("by_source_length", "per_second"))
                },
                "search": m["search"],
            }
            for m in member_metadata
        ],
    }
    first = member_metadata[0]
    return model, metrics, first["data"], first["data_license"]
