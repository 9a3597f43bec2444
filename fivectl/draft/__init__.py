"""Hero drafting from the model's win-probability head (paper App. D.2): ``fivectl draft``.

- :mod:`.lineups` numbers every lineup of a pool; :mod:`.model` rates lineups by their first frame;
- :mod:`.table` precomputes and stores every lineup's P(team 0 wins) in Zarr (resumable);
- :mod:`.search` advises picks by minimax / expectimax over the draft order;
- :mod:`.play` measures drafting in games (``simulate``) and the win head's calibration (``calibrate``).
"""
