"""``[curriculum]``: a first stage in a smaller game, trained before the recipe's own run starts from its network.

The Honor of Kings papers grow a policy from a smaller game to the full one; in fivectl the 1v1 quickstart's
per-hero network is the 5v5 recipe's, so ``fivectl train`` can train the first stage and then start the recipe's
run from it (what ``--init-from`` does by hand), in one command with one time budget.
"""

from __future__ import annotations

from dataclasses import dataclass

from fivectl.config.fields import param


@dataclass
class CurriculumConfig:
    first: str = param(
        "",
        "The recipe of a first stage (a shipped recipe's name or a TOML path), trained in RUN/first_stage until "
        "first_samples; the run then starts from its latest version (as --init-from: same schema and [model]). "
        "The first stage's own [curriculum] is trained before it, in RUN/first_stage/first_stage (a chain such "
        "as 1v1 -> 3v3 -> 5v5). Empty: no first stage.",
    )
    first_samples: int = param(
        0, "Samples the first stage trains on before the run itself starts; with `first` only.", ge=0
    )

    def validate(self) -> list[str]:
        if self.first and self.first_samples <= 0:
            return [f"curriculum.first_samples: the first stage ({self.first}) needs a budget of samples > 0"]
        if not self.first and self.first_samples > 0:
            return ["curriculum.first_samples: set, but curriculum.first names no first stage"]
        return []
