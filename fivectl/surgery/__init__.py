"""``fivectl surgery``: change a trained run's observations and network without losing what it learned (paper B).

- ``schemas``: which schema a surgery goes to and whether it is a superset;
- ``remap``: moving tensors (and Adam moments) into a larger network by name and index;
- ``plan``: what an operation does to one checkpoint; ``add_obs``, ``widen``, ``retire``: the operations;
- ``calibrate``: normalizer statistics of new columns from simulated games;
- ``run``: the whole run (every kept checkpoint, so the opponent pool too) into a new run directory, staged;
- ``lineage``: what the child's ``run.json`` records; ``verify``: replaying the parent's rollouts through both.
"""
