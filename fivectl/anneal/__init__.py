"""``fivectl anneal``: roll a change of the game into a running experiment (paper B).

The fraction of rollout games that run the change rises from 0 to 1 over a number of samples (``ramp``); every
few versions (``guard.guard_cadence``) the latest version is rated with TrueSkill under the new rules, and a drop beyond the guard
sends the fraction back to its last good value and halves the ramp's speed (``guard``, ``controller``). The
commands that start, stop and show an anneal work on the run directory (``run``).
"""
