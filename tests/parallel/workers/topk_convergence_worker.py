"""Trains the digits residual CNN under several lightcc settings in turn and prints one RESULT line per setting.

argv: optimizer (sgd, nesterov, adam, adamw), epochs, then settings: `dense` or `topk:<density>`
(LIGHT_TOPK_ALLREDUCE=1 at that density, LIGHT_TOPK_THRESHOLD from the environment, every other
top-k flag at its default). Each setting gets its own init/shutdown in this process. With
`checkpoint` as a setting, a top-k 1 % run saves mid-way and must resume bit for bit.
"""
from __future__ import annotations

import copy
import dataclasses
import json
import os
import sys

import common  # noqa: F401  (puts the repo on sys.path)
import torch

import lightcc.torch as hvd
from benchmarks.quality.digits import Recipe, Trainer, param_digest
from lightcc.common import native
from lightcc.common.topk_state import load_topk_state_dict, topk_state_dict

RECIPES = {
    "sgd": Recipe(optimizer="sgd", lr=0.05, momentum=0.9),
    "nesterov": Recipe(optimizer="nesterov", lr=0.05, momentum=0.9),
    "adam": Recipe(optimizer="adam", lr=0.003),
    "adamw": Recipe(optimizer="adamw", lr=0.003, weight_decay=0.01),
}
WIDTH = 16  # the block's convs: 2,304 weights (9 KiB) each; the stem's 144 (576 B); the linear layer's 2,560
TOPK_KEYS = ("LIGHT_TOPK_ALLREDUCE", "LIGHT_TOPK_DENSITY")


def configure(setting: str) -> None:
    for k in TOPK_KEYS:
        os.environ.pop(k, None)
    if setting.startswith("topk:"):
        os.environ.update({"LIGHT_TOPK_ALLREDUCE": "1", "LIGHT_TOPK_DENSITY": setting.split(":", 1)[1]})
    elif setting == "checkpoint":
        os.environ.update({"LIGHT_TOPK_ALLREDUCE": "1", "LIGHT_TOPK_DENSITY": "0.01"})


def digests_agree(digest: str) -> bool:
    return len(set(hvd.allgather_object(digest, name="digest"))) == 1


def train(recipe: Recipe, setting: str) -> dict:
    trainer = Trainer(recipe, hvd)
    out = trainer.run()
    compressed = sorted(k for k in topk_state_dict() if not k.startswith("velocity:"))
    velocities = sorted(k for k in topk_state_dict() if k.startswith("velocity:"))
    core = native.core()
    clipped = sum(core.topk_progress(0, n)[2] for n in compressed) if hasattr(core, "topk_progress") else None
    return {"setting": setting, "accuracy": out.accuracy, "clipped_steps": clipped, "loss": out.loss, "steps": out.steps,
            "wall_s": round(out.wall_s, 2), "identical": digests_agree(out.digest), "compressed": compressed,
            "velocities": velocities}


def resume(recipe: Recipe) -> dict:
    """Save after the warm-up, continue; restore the save, continue again: the weights must match.

    A restore without the velocities (residuals only) is the negative control: it must differ.
    """
    trainer = Trainer(recipe, hvd)
    for e in range(recipe.epochs // 2):
        trainer.epoch(e)
    saved = (copy.deepcopy(trainer.model.state_dict()), copy.deepcopy(trainer.opt.state_dict()),
             topk_state_dict(), trainer.step_count)

    def continue_from(state: dict) -> str:
        trainer.model.load_state_dict(saved[0])
        trainer.opt.load_state_dict(copy.deepcopy(saved[1]))  # torch aliases the tensors it is given
        load_topk_state_dict(state)
        trainer.step_count = saved[3]
        trainer.epoch(recipe.epochs // 2, until=saved[3] + 2 * trainer.steps_per_epoch // 3)
        return param_digest(trainer.model)

    first = continue_from(saved[2])
    again = continue_from(saved[2])
    without = continue_from({k: v for k, v in saved[2].items() if not k.startswith("velocity:")})
    return {"setting": "checkpoint", "resumes_exactly": first == again, "velocity_matters": first != without,
            "velocities": sorted(k for k in saved[2] if k.startswith("velocity:")),
            "identical": digests_agree(first)}


def main() -> None:
    torch.set_num_threads(1)
    recipe = dataclasses.replace(RECIPES[sys.argv[1]], epochs=int(sys.argv[2]), width=WIDTH)
    for setting in sys.argv[3:]:
        configure(setting)
        hvd.init()
        try:
            row = resume(recipe) if setting == "checkpoint" else train(recipe, setting)
        finally:
            hvd.shutdown()
        if int(os.environ["LIGHTCC_RANK"]) == 0:
            print("RESULT " + json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
