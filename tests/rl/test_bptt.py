import pytest
import torch

from fivectl.errors import BadInput
from fivectl.rl.bptt import (
    first_from_dones,
    join_windows,
    map_tensors,
    select_columns,
    split_windows,
    team_minibatches,
    window_states,
)


def test_split_windows_layout_and_inverse():
    steps, columns = 48, 3
    # value = 100 * t + b, with a trailing feature dim
    x = (torch.arange(steps).unsqueeze(1) * 100 + torch.arange(columns)).unsqueeze(-1).repeat(1, 1, 2)
    windows = split_windows(x, 16)
    assert windows.shape == (16, 9, 2)
    for w in range(3):
        for b in range(columns):
            assert windows[:, w * columns + b, 0].tolist() == [
                100 * t + b for t in range(16 * w, 16 * w + 16)
            ]
    assert torch.equal(join_windows(windows, columns), x)
    with pytest.raises(BadInput):
        split_windows(torch.zeros(20, 2), 16)


def test_window_states_follow_the_window_column_order():
    windows, layers, columns, hidden = 3, 1, 4, 2
    # state of window w, column b holds 10 * w + b
    h = (torch.arange(windows).view(-1, 1, 1, 1) * 10 + torch.arange(columns).view(1, 1, -1, 1)).float()
    h = h.expand(windows, layers, columns, hidden)
    merged_h, merged_c = window_states((h, h + 0.5))
    assert merged_h.shape == (layers, windows * columns, hidden)
    assert merged_h[0, :, 0].tolist() == [10 * w + b for w in range(windows) for b in range(columns)]
    assert torch.equal(merged_c, merged_h + 0.5)


def test_first_flags_come_from_the_previous_step_done():
    dones = torch.tensor([[False, True], [True, False], [False, False]])
    first = first_from_dones(dones, torch.tensor([True, False]))
    assert first.tolist() == [[True, False], [False, True], [True, False]]


def test_team_minibatches_partition_columns_and_keep_teams_contiguous():
    generator = torch.Generator().manual_seed(0)
    minibatches = team_minibatches(24, team_size=3, num_minibatches=3, generator=generator)
    assert sorted(torch.cat(minibatches).tolist()) == list(range(24))
    for columns in minibatches:
        teams = columns.view(-1, 3)
        assert (teams[:, 0] % 3 == 0).all()
        assert (teams - teams[:, :1] == torch.arange(3)).all()
    with pytest.raises(BadInput):
        team_minibatches(10, team_size=3, num_minibatches=1)
    with pytest.raises(BadInput):
        team_minibatches(6, team_size=3, num_minibatches=3)


def test_select_and_map_over_observation_trees():
    tree = {"units": torch.arange(12).view(2, 6), "nested": [torch.arange(6).view(1, 6)], "name": "keep"}
    picked = select_columns(tree, torch.tensor([4, 1]))
    assert picked["units"].tolist() == [[4, 1], [10, 7]]
    assert picked["nested"][0].tolist() == [[4, 1]] and picked["name"] == "keep"
    doubled = map_tensors(lambda t: t * 2, tree)
    assert doubled["units"][1, 5].item() == 22
