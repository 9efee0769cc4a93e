"""A big input's head: the lines no selected line's window reaches are read only for who took
part (ranks, hosts, steps), and that reading gives the same diagnosis as reading them whole."""

import pytest

from classifier.diagnosis import prefilter
from classifier.diagnosis.diagnose import diagnose_job
from classifier.diagnosis.read import HeadLine, Warnings
from classifier.rules.load import default_rules
from noise import healthy_lines

RULES = default_rules()


def _big_log(fill=6000, head_warning=False):
    """16 ranks on two hosts announce themselves (NCCL's host-prefixed comm lines) only at the
    start; after `fill` healthy lines rank 5 runs out of GPU memory, with no host on its lines."""
    head = []
    for r in range(16):
        host = f"gpu-node-{r // 8}"
        head.append(f"{host}:{4000 + r}:{4100 + r} [{r % 8}] NCCL INFO comm 0x7f{r:04x} rank {r} nranks 16 "
                    f"cudaDev {r % 8} busId {r % 8}1000 commId 0xabc - Init START")
        head.append(f"[rank{r}]: step=0 loss=2.{r}")
    if head_warning:  # a keyword line in the head: it and its window are read whole
        head.insert(20, "gpu-node-1:4010:4110 [2] NCCL WARN Cuda failure 'out of memory'")
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


@pytest.mark.parametrize("engine", ["hyperscan", "re"])
def test_head_lines_outside_every_window_take_the_light_path(engine):
    data = _big_log(head_warning=True).encode()
    lines = list(prefilter.select_lines([data], "job.log", Warnings(), RULES.finder(engine)))
    light = {line.lineno for line in lines if isinstance(line, HeadLine)}
    whole = {line.lineno for line in lines if not isinstance(line, HeadLine)}
    assert len(light) > prefilter.HEAD * 0.9, len(light)
    assert max(light) <= prefilter.HEAD  # past the head nothing is read only for who took part
    assert 21 in whole and 20 in whole and 22 in whole, sorted(whole)[:10]  # the keyword and its window
    assert whole.isdisjoint(light) and len(whole | light) == len(lines)


def test_a_small_input_has_no_head_lines(tmp_path):
    data = _big_log(fill=100).encode()
    lines = list(prefilter.select_lines([data], "job.log", Warnings(), RULES.finder("hyperscan")))
    assert lines and not any(isinstance(line, HeadLine) for line in lines)


def _essence(result):
    return (result["category"], result.get("rule"), result.get("confidence"),
            [(e["line"], e["text"]) for e in result.get("evidence", [])],
            [(s["category"], s.get("rule")) for s in result.get("secondary", [])],
            result.get("facts"), result.get("culprit"))


def test_a_failure_inside_the_head_is_read_as_a_full_read_does(tmp_path):
    # Corpus cases (never public-test) set inside a big log's head, read in small chunks so
    # that windows and tracebacks cross chunk ends: the light head must not lose a frame or
    # a window (a rich box's raising line, a rank's step) that a full read uses.
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
