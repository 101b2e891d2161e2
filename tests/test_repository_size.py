"""The tracked tree fits the 57 MiB a GPU run copies (its cap is 64 MiB)."""

import os
import subprocess

import pytest

from tests.backends import on_one_backend

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# scripts/gpu_check.sh and scripts/train_on_device.sh run on a copy of the
# working tree capped at 64 MiB; the tracked files keep 7 MiB of room under it
# for what they carry: the wheels of `train_on_device.sh --download` (Keras,
# namex, optree and misaki's wheel), 6.2 MiB, and a run folder's checkpoint.
TRACKED_TREE_MIB = 57


def _tracked_files():
    try:
        done = subprocess.run(
            ["git", "ls-files", "-z"],
            cwd=REPO,
            capture_output=True,
            check=True,
            timeout=60,
        )
    except (OSError, subprocess.CalledProcessError) as error:
        pytest.skip(f"not a git checkout ({error})")
    return [name for name in done.stdout.decode().split("\0") if name]


@on_one_backend
def test_the_tracked_tree_stays_under_the_device_copy_cap():
    files = _tracked_files()
    sizes = {
        name: os.path.getsize(os.path.join(REPO, name))
        for name in files
        if os.path.isfile(os.path.join(REPO, name))
    }
    total = sum(sizes.values())
    largest = sorted(sizes, key=sizes.get, reverse=True)[:3]
    assert total < TRACKED_TREE_MIB * 2**20, (
        f"The tracked tree is {total / 2**20:.1f} MiB, over {TRACKED_TREE_MIB} MiB "
        f"(largest: {', '.join(largest)}): store the new preset's weights as float16 "
        "(save_to_preset(weights_dtype='float16')) or publish it on a hub."
    )
    assert sizes, "git ls-files listed no file"
