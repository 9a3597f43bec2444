"""``[train]``: PPO, the actor-learner runtime and checkpoints (paper §4, appendices C and M)."""

from __future__ import annotations

from dataclasses import dataclass

from fivectl.config.fields import Schedule, param


@dataclass
class TrainConfig:
    seed: int = param(0, "Seed of the run: games, model init, sampling.", ge=0)
    device: str = param(
        "auto", "Learner device: auto (cuda when present), cpu or cuda.", choices=("auto", "cpu", "cuda")
    )
    precision: str = param(
        "float32",
        "Arithmetic of the learner's forward and backward passes. bfloat16 runs matrix products, convolutions "
        "and the LSTM in bfloat16 (torch.autocast), for CPUs with AMX or AVX512-BF16 and recent GPUs; "
        "log-probabilities, losses, the optimizer and the parameters stay float32, and rollout workers act in "
        "float32. It pays off for large LSTMs on CPUs with AMX, not for the quickstart's small network "
        "(benchmarks/RESULTS.md has the measurements).",
        choices=("float32", "bfloat16"),
    )
    learners: int = param(
        1,
        "Data-parallel learner processes on this machine (torch.distributed: NCCL, one per GPU, with device "
        "cuda; gloo, one per core, on CPU). Each takes its share of every learner batch, whose size grows with "
        "them (batch_windows is per learner); gradients are summed over them before each step. Under torchrun "
        "(learners on several machines) it is WORLD_SIZE.",
        ge=1,
    )
    workers: int = param(
        2, "Rollout worker processes; 0 runs everything in one process (serial debug mode).", ge=0
    )
    backend: str = param(
        "local",
        "Where rollout workers run: local (processes on this machine, shared memory) or ray (Ray actors on any "
        "node of a Ray cluster; needs the fivectl[ray] extra). The learner stays in this process either way.",
        choices=("local", "ray"),
    )
    acting: str = param(
        "auto",
        "Where the latest network acts for the rollout workers. worker: each worker process acts on its own CPU "
        "copy. server: one inference process runs the latest network on train.device (the learner's device, "
        "cuda or cpu) and every worker sends it its observations through shared memory, one forward pass for "
        "the requests of many workers at once (bfloat16 on cuda with precision bfloat16); past versions and "
        "scripted bots still act inside the workers. auto: server when the device resolves to cuda with the "
        "local backend and workers > 0, else worker. server needs the local backend and workers > 0.",
        choices=("auto", "worker", "server"),
    )
    acting_wait_ms: float = param(
        1.0,
        "With acting server: how long the inference server waits, after the first request, for the other "
        "workers' before a forward pass (it goes at once when every worker has asked); 0 = only what is ready.",
        ge=0,
    )
    ray_address: str = param(
        "",
        "Ray cluster to join with backend ray: host:port of its head (or auto, or ray://host:port); empty "
        "starts a Ray instance on this machine for the run.",
    )
    games_per_worker: int = param(16, "Games each rollout worker steps as one batch.", ge=1)
    game_phases: int = param(
        8,
        "Groups of a worker's games whose start times are spread evenly over one game length (at most "
        "games_per_worker). Games that all start together also end together, so every learner batch would "
        "come from one moment of the game (and all the win/loss rewards from one batch); 1 starts them all "
        "together. The spreading is done once when a worker starts, by scripted bots playing the first part "
        "of its first games.",
        ge=1,
    )
    fragment_length: int = param(64, "Steps per rollout fragment sent to the learner.", ge=1)
    bptt: int = param(16, "Truncated BPTT window in steps (paper: 16).", ge=1)
    batch_windows: int = param(
        64, "16-step windows per gradient step (batch = batch_windows * bptt samples).", ge=1
    )
    publish_every: int = param(
        4,
        "Gradient steps between published parameter versions (paper: 32). A version goes out between iterations, "
        "after the one that brings the steps since the last version to publish_every: at most one per iteration.",
        ge=1,
    )
    learning_rate: Schedule = param(factory=lambda: Schedule.constant(3e-4), doc="Adam learning rate.", ge=0)
    entropy_coef: Schedule = param(
        factory=lambda: Schedule.constant(0.01), doc="Entropy bonus (paper: 0.01).", ge=0
    )
    horizon_s: Schedule = param(
        factory=lambda: Schedule.constant(10.0),
        doc="Reward horizon in game seconds; gamma = 1 - 0.133/H (paper: 6 -> 180 s).",
        gt=0,
    )
    epochs: int = param(1, "Passes over each learner batch (paper: samples are reused about once).", ge=1)
    minibatches: int = param(
        1, "Gradient steps per pass; a learner batch holds batch_windows * minibatches windows.", ge=1
    )
    normalize_advantages: bool = param(True, "Standardize advantages within each minibatch.")
    gae_lambda: float = param(0.95, "GAE lambda (paper: 0.95).", ge=0, le=1)
    clip: float = param(0.2, "PPO clip epsilon.", gt=0)
    dual_clip: float = param(3.0, "Dual-clip bound c for negative advantages (HoK eq. 5); 0 disables.", ge=0)
    value_loss_weight: float = param(0.5, "Weight of the value loss.", ge=0)
    value_clip: float = param(0.0, "Clip of the value update around the old value; 0 disables.", ge=0)
    aux_loss_weight: float = param(1.0, "Weight of the stop-gradient auxiliary losses.", ge=0)
    aux_objective_horizon_s: float = param(
        120.0, "Discount horizon of the team-objective labels in game seconds (paper D: 2 minutes).", gt=0
    )
    adam_beta1: float = param(0.9, "Adam beta1.", ge=0, lt=1)
    adam_beta2: float = param(0.999, "Adam beta2.", ge=0, lt=1)
    adam_eps: float = param(1e-5, "Adam epsilon.", gt=0)
    grad_clip_sigmas: float = param(
        5.0, "Per-parameter gradient clip to +-k*sqrt(v) (paper: 5); 0 disables.", ge=0
    )
    average_samples: float = param(
        0.0,
        "Horizon in samples of a moving average of the network's weights kept beside the trained ones (a weight "
        "trained s samples ago counts as exp(-s/horizon)); 0 = none. It never feeds back into training, is saved "
        "with each checkpoint (section model_average) and is what evaluation plays: RUN@V plays the average when "
        "the checkpoint has one, RUN@V:trained the trained weights. A trained policy still wanders from one "
        "checkpoint to the next; its average does less (benchmarks/RESULTS.md).",
        ge=0,
    )
    obs_clip: float = param(5.0, "Normalized observations are clipped to +-obs_clip (paper: 5).", gt=0)
    scale_rewards: bool = param(True, "Divide rewards by a running std of returns.")
    warmup_versions: int = param(
        0, "Versions trained at learning rate 0 after surgery (smooth restart).", ge=0
    )
    value_warmup_samples: int = param(
        0,
        "The run's first samples in which only the value head trains: the policy, the trunk and the other heads "
        "keep their weights (and the observation normalizers still learn), so that a network started from "
        "another game (--init-from, a curriculum's first stage) fits its value to the new game's returns before "
        "the policy gradient uses them. 0 = none. 3M samples in the 5v5 curriculum's stage took seed 0 from 0.005 to "
        "0.175 against easy at 25M samples and to 74% at 42M, but seed 1 from 85% to 5% after 2 hours (5v5 runs "
        "56-58, benchmarks/RESULTS.md).",
        ge=0,
    )
    slots_per_worker: int = param(
        2,
        "Fragment slots each rollout worker fills before it waits for the learner. When the learner is the "
        "bottleneck, every slot is a fragment queued behind the others, so staleness is about workers x slots "
        "versions (paper Figure 5b: staleness slows learning); more slots only keep workers busy when they are.",
        ge=1,
    )
    max_staleness: int = param(
        8, "Fragments older than this many versions are handled by staleness_policy.", ge=0
    )
    staleness_policy: str = param(
        "drop",
        "What to do with too-stale fragments: drop them, or make workers wait.",
        choices=("drop", "wait"),
    )
    max_sample_reuse: float = param(2.0, "Upper bound on samples consumed / samples produced.", gt=0)
    max_samples: int = param(
        0, "Stop after this many agent-steps consumed by the learner; 0 = no limit.", ge=0
    )
    max_minutes: float = param(0.0, "Stop after this many wall-clock minutes; 0 = no limit.", ge=0)
    checkpoint_every: int = param(10, "Versions between checkpoints.", ge=1)
    keep_last: int = param(5, "Most recent checkpoints kept.", ge=1)
    milestone_every: int = param(
        100, "Checkpoints at multiples of this version are kept forever; 0 = none.", ge=0
    )
    slim_pool_checkpoints: bool = param(
        True,
        "Past versions kept only for the opponent pool keep only their model section (what opponents load) and "
        "their weight average (what evaluation plays), about 40% of a full checkpoint without an average; the "
        "newest keep_last and the milestones stay whole.",
    )
    rollout_save_every: int = param(50, "Keep one in this many fragments as Arrow rollouts; 0 = none.", ge=0)
    rollout_keep_gb: float = param(
        4.0, "Saved rollouts kept, in GB: the oldest files go first; 0 = keep every file.", ge=0
    )
    replay_every: int = param(
        0,
        "Keep one in this many training games (per rollout worker) as a replay in the run's replays/, with the "
        "learner's predictions (fivectl replay list RUN/replays); 0 = none.",
        ge=0,
    )
    replay_keep_gb: float = param(
        1.0, "Replays kept, in GB: the oldest files go first; 0 = keep every file.", ge=0
    )

    def validate(self) -> list[str]:
        errors = []
        if self.acting == "server" and self.backend != "local":
            errors.append(
                f"train.acting: server runs beside local worker processes, not with backend {self.backend!r} "
                "(use worker or auto)"
            )
        if self.acting == "server" and self.workers == 0:
            errors.append("train.acting: server needs workers > 0 (serial mode acts in the learner's process)")
        return errors
