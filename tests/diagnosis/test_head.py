"""A big input's head (prefilter.HEAD lines, read whole): where every rank announces itself, so
the facts a full read takes from it survive the prefilter, and so does a failure inside it."""

import pytest

from classifier.diagnosis.diagnose import diagnose_job
from noise import healthy_lines


def _big_log(fill=6000):
    """16 ranks on two hosts announce themselves (NCCL's host-prefixed comm lines) only at the
    start; after `fill` healthy lines rank 5 runs out of GPU memory, with no host on its lines."""
    head = []
    for r in range(16):
        host = f"gpu-node-{r // 8}"
        head.append(f"{host}:{4000 + r}:{4100 + r} [{r % 8}] NCCL INFO comm 0x7f{r:04x} rank {r} nranks 16 "
                    f"cudaDev {r % 8} busId {r % 8}1000 commId 0xabc - Init START")
        head.append(f"[rank{r}]: step=0 loss=2.{r}")
    oom = ["[rank5]: Traceback (most recent call last):",
           '[rank5]:   File "train.py", line 88, in <module>',
           "[rank5]:     loss.backward()",
           "[rank5]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 5 has a "
           "total capacity of 79.15 GiB of which 1.02 GiB is free."]
    return "\n".join(head + list(healthy_lines(fill, seed=3, tricky=False)) + oom) + "\n"


@pytest.mark.parametrize("engine", ["hyperscan", "re"])
def test_the_head_still_names_the_culprits_host_and_counts_every_rank(tmp_path, engine):
    log = tmp_path / "job.log"
    log.write_text(_big_log())
    full = diagnose_job([str(log)], select=False)
    fast = diagnose_job([str(log)], select=engine)
    assert fast == full
    # Only the head's NCCL lines pair rank 5 with its host, and only they show all 16 ranks.
    assert fast["culprit"]["hosts"] == ["gpu-node-0"], fast["culprit"]
    assert fast["facts"]["ranks_summary"] == "1 of 16 ranks", fast["facts"]


def _essence(result):
    return (result["category"], result.get("rule"), result.get("confidence"),
            [(e["line"], e["text"]) for e in result.get("evidence", [])],
            [(s["category"], s.get("rule")) for s in result.get("secondary", [])],
            result.get("facts"), result.get("culprit"))


def test_a_failure_inside_the_head_is_read_as_a_full_read_does(tmp_path):
    # Corpus cases (never public-test) set inside a big log's head, read in small chunks so
    # that windows and tracebacks cross chunk ends: nothing a full read uses may be lost.
    import random

    from classifier.corpus.evaluate import find_cases, segment_of
    from conftest import ROOT
    cases = [log for log, meta in find_cases(ROOT / "corpus")
             if segment_of(meta) != "public-test" and log.suffix == ".log"]
    random.Random(11).shuffle(cases)
    noise = list(healthy_lines(3000, seed=4, tricky=False))
    checked, differ = 0, []
    for case in cases[:60]:
        lines = case.read_text(errors="replace").rstrip("\n").split("\n")
        if len(lines) > 600:
            continue
        at = random.Random(case.name).randrange(100, 1500)
        log = tmp_path / "job.log"
        log.write_text("\n".join(noise[:at] + lines + noise[at:]) + "\n")
        full = _essence(diagnose_job([str(log)], select=False))
        for chunk in (4096, 65536):
            if _essence(diagnose_job([str(log)], select="hyperscan", chunk_size=chunk)) != full:
                differ.append((case.name, chunk))
        checked += 1
    assert checked > 40 and not differ, differ


# rich's traceback box, cut above its header: only its frame's raising line says the divisor
# is the accumulation count (no line of it holds a keyword).
BOX = """\
│ /envs/x/lib/python3.8/site-packages/transformers/trainer.py:1659 in _inner_training_loop │
│                                                                                          │
│   1657 │   │   if has_length(train_dataloader):                                          │
│   1658 │   │   │   len_dataloader = len(train_dataloader)                                │
│ ❱ 1659 │   │   │   num_update_steps_per_epoch = len_dataloader // args.gradient_accumul  │
│   1660 │   │   │   num_update_steps_per_epoch = max(num_update_steps_per_epoch, 1)       │
│   1661 │   │   │   num_examples = self.num_examples(train_dataloader)                    │
│   1662 │   │   │   if args.max_steps > 0:                                                │
╰──────────────────────────────────────────────────────────────────────────────────────────╯
ZeroDivisionError: integer division or modulo by zero"""


@pytest.mark.parametrize("chunk", [4096, 65536, None])
def test_frames_far_above_the_exception_in_the_head_are_still_read(tmp_path, chunk):
    # A head read only for ranks and hosts (tried for speed) lost the box's raising line: the
    # exception's window reaches two lines back, the frame sits ten lines up.
    noise = list(healthy_lines(5000, seed=4, tricky=False))
    log = tmp_path / "job.log"
    log.write_text("\n".join(noise[:242] + BOX.split("\n") + noise[242:]) + "\n")
    fast = diagnose_job([str(log)], select="hyperscan", chunk_size=chunk)
    assert fast["category"] == "batch_size_mismatch", (fast["category"], fast.get("rule"))
    assert _essence(fast) == _essence(diagnose_job([str(log)], select=False))
