"""TorchState.commit(): with copies (in the background, async_commit) a rollback always gets exactly the
committed values, whether the copy had finished or not, and writes outside optimizer.step() are caught;
live commits (live_commit) copy nothing big, and a collective between a step and a commit turns them off."""
from __future__ import annotations

import pytest
import torch

import lightcc.torch as hvd
from lightcc.torch.elastic import live_commit
from lightcc.torch.elastic import state as state_mod
from lightcc.torch.elastic.state import TorchState, wait_for_commit


@pytest.fixture(autouse=True)
def engine():
    hvd.init()
    yield
    wait_for_commit()
    hvd.shutdown()


def _copying(*args, **kwargs) -> TorchState:
    """A state that always copies (these tests roll back after a step, which a live commit does not hold)."""
    state = TorchState(*args, **kwargs)
    state.live_commit = False
    return state


def _setup(optimizer: str = "sgd"):
    torch.manual_seed(0)
    # ~4 M parameters: big enough that the copy is usually still running when the test goes on.
    model = torch.nn.Sequential(torch.nn.Linear(512, 4096), torch.nn.BatchNorm1d(4096), torch.nn.ReLU(),
                                torch.nn.Linear(4096, 512))
    if optimizer == "adam":
        opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    else:
        opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    return model, opt


def _step(model, opt) -> None:
    opt.zero_grad()
    model(torch.randn(16, 512)).square().mean().backward()  # BatchNorm's running stats change in forward
    opt.step()


def _values(model, opt):
    """Everything a rollback must bring back, as independent copies."""
    params = {k: v.detach().clone() for k, v in model.state_dict().items()}
    state = {i: {k: v.clone() if torch.is_tensor(v) else v for k, v in s.items()}
             for i, s in opt.state_dict()["state"].items()}
    return params, state, [dict((k, v) for k, v in g.items() if k != "params") for g in opt.param_groups]


def _equal(a, b) -> bool:
    (pa, sa, ga), (pb, sb, gb) = a, b
    return pa.keys() == pb.keys() and all(torch.equal(pa[k], pb[k]) for k in pa) and sa.keys() == sb.keys() and \
        all(sa[i].keys() == sb[i].keys() and all(torch.equal(torch.as_tensor(sa[i][k]), torch.as_tensor(sb[i][k]))
                                                 for k in sa[i]) for i in sa) and ga == gb


@pytest.mark.parametrize("optimizer", ["sgd", "adam"])
@pytest.mark.parametrize("background", [True, False])
def test_commit_then_step_then_restore_gives_the_committed_values(optimizer, background):
    model, opt = _setup(optimizer)
    _step(model, opt)
    state = _copying(model, opt, epoch=0)
    state.async_commit = background
    _step(model, opt)
    state.epoch = 1
    state.commit()
    committed = _values(model, opt)
    _step(model, opt)  # the pre-hook waits for the copy before the optimizer writes
    if background:
        assert all(job.done.is_set() for job in (state._handlers["model"]._copy, state._handlers["optimizer"]._copy))
    for group in opt.param_groups:
        group["lr"] = 0.5  # what a scheduler does after the commit
    _step(model, opt)
    state.epoch = 2
    assert not _equal(_values(model, opt), committed)
    state.restore()
    assert _equal(_values(model, opt), committed) and state.epoch == 1
    _step(model, opt)  # and training goes on from there
    state.restore()
    assert _equal(_values(model, opt), committed)


def test_restore_right_after_commit_waits_for_the_copy():
    model, opt = _setup()
    state = _copying(model, opt)
    for _ in range(3):
        _step(model, opt)
        state.commit()
        committed = _values(model, opt)
        state.restore()  # the copy may still be running
        assert _equal(_values(model, opt), committed)
    _step(model, opt)
    state.restore()
    assert _equal(_values(model, opt), committed)


def test_two_commits_in_a_row():
    model, opt = _setup()
    state = _copying(model, opt)
    _step(model, opt)
    state.commit()
    state.commit()  # waits for the first copy, then copies into the same tensors again
    committed = _values(model, opt)
    _step(model, opt)
    state.commit()
    state.commit()
    second = _values(model, opt)
    assert not _equal(second, committed)
    _step(model, opt)
    state.restore()
    assert _equal(_values(model, opt), second)
    saved = state._handlers["model"]._saved_model_state
    state.commit()  # no allocation: the previous commit's tensors are reused
    assert all(a is b for a, b in zip(saved.values(), state._handlers["model"]._saved_model_state.values()))


def test_a_write_outside_the_optimizer_step_is_caught_not_kept():
    model, opt = _setup()
    state = _copying(model, opt)
    _step(model, opt)
    state.commit()
    with torch.no_grad():
        model[0].weight.add_(1.0)  # not through optimizer.step(): it may race with the copy
    with pytest.raises(RuntimeError, match="written in place while commit"):
        _step(model, opt)
    with pytest.raises(RuntimeError, match="written in place while commit"):
        state.restore()  # the commit may be torn: no silent rollback to it
    # Copying in commit() itself has no such restriction.
    state.async_commit = False
    state.commit()
    committed = _values(model, opt)
    with torch.no_grad():
        model[0].weight.add_(1.0)
    _step(model, opt)
    state.restore()
    assert _equal(_values(model, opt), committed)


def test_snapshot_defers_only_cpu_tensors_and_keeps_plain_values():
    deferred = []
    current = {"state": {0: {"step": torch.tensor(3.0), "momentum_buffer": torch.ones(4)}},
               "param_groups": [{"lr": 0.1, "params": [0]}]}
    out = state_mod.snapshot(None, current, deferred)
    assert len(deferred) == 2 and out["param_groups"] == current["param_groups"]
    assert out["state"][0]["momentum_buffer"] is not current["state"][0]["momentum_buffer"]
    for dst, src in deferred:
        dst.copy_(src)
    again = []
    assert state_mod.snapshot(out, current, again)["state"][0]["momentum_buffer"] is out["state"][0]["momentum_buffer"]


def _forward_backward(model) -> None:
    """The part of a step before the optimizer's: where a failed collective (DDP's allreduce) raises."""
    model(torch.randn(16, 512)).square().mean().backward()


@pytest.mark.parametrize("optimizer", ["sgd", "adam"])
def test_live_commits_copy_nothing_and_roll_back_exactly(optimizer):
    model, opt = _setup(optimizer)
    state = TorchState(model, opt, epoch=0)
    for epoch in range(1, 1 + live_commit.WARMUP):  # the first commits copy
        _step(model, opt)
        state.epoch = epoch
        state.commit()
        assert state._handlers["optimizer"]._copy is not None
    for epoch in range(10, 13):
        _step(model, opt)
        state.epoch = epoch
        state.commit()
        model_h, opt_h = state._handlers["model"], state._handlers["optimizer"]
        assert model_h._copy is None and opt_h._copy is None  # nothing big copied
        assert set(model_h._saved_model_state) == {"1.running_mean", "1.running_var", "1.num_batches_tracked"}
        committed = _values(model, opt)
        opt.zero_grad()
        _forward_backward(model)  # BatchNorm's running statistics move; a collective here fails
        for group in opt.param_groups:
            group["lr"] = 0.5  # a scheduler stepped after the commit
        state.epoch = 99
        assert not state._live.ahead()
        state.restore()
        assert _equal(_values(model, opt), committed) and state.epoch == epoch
    _step(model, opt)
    assert state._live.ahead()  # a step past the live commit: only another rank can give the commit back
    state.commit()
    assert not state._live.ahead()


def test_a_collective_between_step_and_commit_turns_live_commits_off(capfd):
    model, opt = _setup()
    state = TorchState(model, opt)
    for _ in range(live_commit.WARMUP + 1):
        _step(model, opt)
        state.commit()
    assert state._live.live and state._handlers["optimizer"]._copy is None
    hvd.allreduce(torch.ones(2), name="before.the.step")  # before the step: fine
    _step(model, opt)
    state.commit()
    assert state._live.live
    _step(model, opt)
    hvd.allreduce(torch.ones(2), name="loss.for.the.log")  # after the step, before the commit
    assert not state._live.live and "commits copy the model and optimizer state from now on" in capfd.readouterr().err
    state.commit()
    assert state._handlers["optimizer"]._copy is not None  # copies again
    committed = _values(model, opt)
    _step(model, opt)
    state.restore()
    assert _equal(_values(model, opt), committed)


def test_the_state_comes_from_a_rank_that_holds_its_commit():
    assert live_commit.choose_source([False, False]) == (0, None)
    assert live_commit.choose_source([True, False, False]) == (1, None)
    root, warning = live_commit.choose_source([True, True])
    assert root == 0 and "one optimizer step past the commit" in warning
