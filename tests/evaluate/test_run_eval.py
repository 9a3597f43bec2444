"""Spreading independent matches over worker processes (``run_eval.split_matches``) and the batch seed."""

from __future__ import annotations

from fivectl.evaluate.run_eval import group_seed, split_matches


def games_of(group) -> int:
    return sum(m[2] for *_, m in group)


def test_whole_matches_are_balanced_over_processes():
    matches = [("p", o, 200, 1) for o in ("random", "bot:easy", "bot:medium")]
    matches += [(f"p{v}", "bot:easy", 40, 2) for v in range(9)]
    groups = split_matches(matches, 2)
    assert len(groups) == 2
    assert sorted(i for g in groups for i, c, _ in g) == list(range(len(matches)))  # each match once, whole
    assert all(c == 0 for g in groups for _, c, _ in g)
    assert abs(games_of(groups[0]) - games_of(groups[1])) <= 40
    assert all(g == sorted(g) for g in groups)  # match order kept within a process


def test_a_match_larger_than_a_share_is_cut_into_seeded_chunks():
    groups = split_matches([("a", "b", 101, 7)], 2)
    pieces = sorted(piece for g in groups for piece in g)
    assert pieces == [(0, 0, ("a", "b", 51, 7000)), (0, 1, ("a", "b", 50, 7001))]


def test_group_seed():
    assert group_seed([42]) == 42  # a match alone plays with its own seed
    assert group_seed([1, 2]) == group_seed([1, 2]) != group_seed([2, 1])
