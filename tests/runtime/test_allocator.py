"""The learner's and workers' allocator setting: the freed activations of one step are reused by the next instead
of being unmapped and page-faulted in again."""

from __future__ import annotations

import subprocess
import sys

from fivectl.runtime.allocator import keep_freed_memory

# A learner-like step (megabyte-sized activations and gradients, freed at the end of the step), repeated; prints
# the minor page faults of the repeats after a warm-up step.
TRAINING_STEPS = """
import resource, sys, torch
from fivectl.runtime.allocator import keep_freed_memory
torch.set_num_threads(1)
if sys.argv[1] == "keep":
    assert keep_freed_memory()
torch.manual_seed(0)
net = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 32), torch.nn.ReLU())
x = torch.randn(20_000, 32)
def step():
    net.zero_grad(set_to_none=True)
    net(x).square().mean().backward()
step()
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(5):
    step()
print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""


def minor_faults(mode: str) -> int:
    out = subprocess.run(
        [sys.executable, "-c", TRAINING_STEPS, mode], capture_output=True, text=True, check=True
    )
    return int(out.stdout.split()[-1])


def test_training_steps_stop_page_faulting_their_activations():
    default, kept = minor_faults("default"), minor_faults("keep")
    # By default each step faults in its ~20 MB of activations and gradients again (about 2,000 pages a step).
    # What remains comes from torch's helper-thread arenas (the quickstart's learner step: 4,730 -> 105).
    assert default > 5 * 1000, default
    assert kept < default / 2, (kept, default)


def test_applies_on_linux_with_glibc():
    # This machine's C library is glibc (the fallback elsewhere returns False and changes nothing).
    assert keep_freed_memory() is (sys.platform == "linux")
