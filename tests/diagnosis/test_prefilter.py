"""The big-input prefilter: Hyperscan and pure Python pick the same lines, and a diagnosis
through the prefilter equals the line-by-line one, across chunk boundaries."""

import random
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from classifier.diagnosis.diagnose import diagnose_job
from classifier.diagnosis.prefilter import select_lines
from classifier.diagnosis.read import Warnings, read_lines
from classifier.rules.load import default_rules
from conftest import DEMO, LOGS, ROOT
from noise import healthy_lines

RULES = default_rules()
LITERALS = {k for r in RULES.rules for k in r.keywords}
hyperscan = pytest.importorskip("hyperscan", reason="installed with dsdiag on Linux x86_64")


def _both():
    return RULES.finder("hyperscan"), RULES.finder("re")


WORDS = st.sampled_from(sorted(LITERALS)[:200] + ["noise", "NCCL INFO", "\n", "\n", " ", "ÄÖ", "\r"])


@settings(max_examples=200, derandomize=True, deadline=None)
@given(parts=st.lists(st.one_of(WORDS, st.text(max_size=20)), max_size=40),
       upper=st.booleans())
def test_hyperscan_and_pure_python_select_the_same_lines(parts, upper):
    text = "".join(parts)
    data = (text.upper() if upper else text).encode("utf-8") + b"\n"
    fast, pure = _both()
    assert fast.line_starts(data) == pure.line_starts(data)


def _noisy_job(tmp_path, failure_at, total=30000):
    lines = list(healthy_lines(total, seed=3))
    demo = DEMO.read_text().splitlines()
    lines[failure_at:failure_at] = demo
    path = tmp_path / "big.log"
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.parametrize("failure_at", [0, 15000, 29990])
@pytest.mark.parametrize("engine", ["hyperscan", "re"])
def test_prefiltered_diagnosis_equals_the_full_one(tmp_path, failure_at, engine):
    path = _noisy_job(tmp_path, failure_at)
    full = diagnose_job([str(path)], select=False)
    fast = diagnose_job([str(path)], select=engine)
    assert fast == full
    assert full["category"] == "gpu_oom"


@pytest.mark.parametrize("chunk_bytes", [700, 4096, 65536])
def test_chunk_boundaries_never_lose_or_repeat_a_selected_line(tmp_path, chunk_bytes):
    path = _noisy_job(tmp_path, 12000, total=16000)
    finder = RULES.finder("re")
    w = Warnings()
    chunks = (path.read_bytes()[i:i + 333] for i in range(0, path.stat().st_size, 333))
    picked = [(r.lineno, r.text) for r in select_lines(chunks, "x", w, finder, chunk_bytes)]
    numbers = [n for n, _ in picked]
    assert numbers == sorted(set(numbers))  # in order, each once
    everything = {r.lineno: r.text for r in read_lines(str(path), Warnings())}
    assert all(everything[n] == text for n, text in picked)  # true numbers, true text
    flagged = {n for n, text in everything.items()
               if any(k in text.lower() for k in LITERALS | {"error", "traceback", "exits"})}
    assert {n for n in flagged if 12000 < n < 12300} <= set(numbers)  # the failure's lines
    assert max(numbers) == max(everything)  # the tail


def test_realistic_logs_through_the_prefilter(tmp_path):
    for log in sorted(LOGS.glob("*.log")):
        assert diagnose_job([str(log)], select="hyperscan") == diagnose_job([str(log)], select=False)


def test_without_the_wheel_the_pure_python_finder_is_used():
    probe = ("import sys\nclass Block:\n    def find_spec(self, name, path=None, target=None):\n"
             "        if name == 'hyperscan': raise ImportError('blocked')\n"
             "sys.meta_path.insert(0, Block())\n"
             "from classifier.rules.load import default_rules\n"
             "print(default_rules().finder().name)\n")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert out.stdout.strip() == "re", out.stderr


@pytest.mark.parametrize("form", ["file", "gzip", "pipe"])
def test_every_input_takes_the_prefilter_whatever_its_size(tmp_path, monkeypatch, form):
    # No size threshold: a 3,000-line file, its .gz and the same bytes through a pipe all
    # take the byte-speed selection (issue 15: a 20x cliff at 32 MB).
    import gzip
    import io
    from classifier.rules.model import RuleSet
    path = _noisy_job(tmp_path, 100, total=3000)
    if form == "gzip":
        path = tmp_path / "big.log.gz"
        path.write_bytes(gzip.compress(_noisy_job(tmp_path, 100, total=3000).read_bytes()))
    calls = []
    real = RuleSet.finder
    monkeypatch.setattr(RuleSet, "finder", lambda *a: calls.append(a) or real(*a))
    if form == "pipe":
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(open(path, "rb")))
        paths = ["-"]
    else:
        paths = [str(path)]
    assert diagnose_job(paths)["category"] == "gpu_oom" and calls


def test_a_storm_of_selected_lines_is_walked_once_and_cut_at_the_budget():
    # 34 M lines of `exit` held 7.2 GB (now `exit code 1`: a bare `exit` no longer selects): every selected line listed its whole window of spans.
    # Now the lines are walked once, and past SELECT_BUDGET only the tail goes on.
    import tracemalloc
    from classifier.diagnosis import prefilter
    from classifier.diagnosis.read import Warnings
    from classifier.rules.load import default_rules
    finder = default_rules().finder("re")
    # Each line its own shape (letters, not digits), so none is a copy of another (storms.py).
    words = (bytes(97 + (i // 26 ** k) % 26 for k in range(4)) for i in range(prefilter.SELECT_BUDGET + 100_000))
    data = b"".join(b"exit code 1 at " + word + b"\n" for word in words)
    warnings = Warnings()
    tracemalloc.start()
    try:
        linenos = [line.lineno for line in prefilter.select_lines(
            [data[i:i + (1 << 20)] for i in range(0, len(data), 1 << 20)], "storm", warnings,
            finder, chunk_bytes=1 << 20)]
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert linenos == sorted(set(linenos))            # in order, each once
    assert linenos[:3] == [1, 2, 3] and linenos[-1] == data.count(b"\n")
    assert len(linenos) < prefilter.SELECT_BUDGET + prefilter.TAIL + 2 * prefilter.BEFORE
    assert [w["code"] for w in warnings.as_list()] == ["select_budget"]
    assert peak < 200 << 20, peak  # the old span lists took gigabytes here


# Every prefix form the normaliser strips (classifier/diagnosis/normalize.py), as a job writes it.
PREFIXES = ("", "[rank{r}]:", "[default{r}]:", "[:{r}]:", "[worker{r}]: ", "[trainer{r}]: ", "[local_rank{r}]: ",
            "[1,{r}]<stderr>:", "{r}: ", "  {r}: [rank{r}]: ", "worker-{r}: ", "10.0.0.{r}: ",
            "localhost: ", "(RayTrainWorker pid=1234{r}, ip=10.0.0.{r}) ", "[pod/trainer-{r}/pytorch] ",
            "trainer-{r}  | ", "2024-10-02T14:00:00.123456789Z stderr F ", "[2024-10-02 14:00:00,123] ",
            "Oct  2 14:00:00 node{r} kernel: ", "[  123.456789] ", "[Wed Oct  2 14:00:00 2024] ",
            "E   ", "INFO 10-02 14:00:00 worker_base.py:157] ", "(EngineCore_0 pid=1234{r}) INFO 10-02 14:00:00 [core.py:588] ")


@pytest.mark.parametrize("prefix", PREFIXES)
@pytest.mark.parametrize("engine", ["hyperscan", "re"])
def test_a_healthy_log_selects_at_most_one_percent_of_its_lines_whatever_its_prefix(
        monkeypatch, prefix, engine):
    # `[defaultN]:` holds `fault` and selected every line of a torchrun --tee log (issue 15).
    from classifier.diagnosis import prefilter
    monkeypatch.setattr(prefilter, "HEAD", 0)
    monkeypatch.setattr(prefilter, "TAIL", 0)
    lines = list(healthy_lines(20000, seed=5, tricky=False))
    data = "".join(prefix.format(r=i % 8) + line + "\n" for i, line in enumerate(lines)).encode()
    picked = sum(1 for _ in select_lines([data], "job.log", Warnings(), RULES.finder(engine)))
    assert picked <= len(lines) // 100, picked


@pytest.mark.parametrize("engine", ["hyperscan", "re"])
def test_an_exception_repr_in_healthy_chatter_is_not_a_glued_name(monkeypatch, engine):
    # `UnidentifiedImageError(...)` in a handled-error line (urllib3's `NewConnectionError(`
    # alike) is a call, not names that ranks writing at once glued together: a log where one
    # line in ten holds one selects at most 1% of its lines; glued names are still selected.
    from classifier.diagnosis import prefilter
    monkeypatch.setattr(prefilter, "HEAD", 0)
    monkeypatch.setattr(prefilter, "TAIL", 0)
    lines = [f"[rank{i % 8}]: skipped sample {i}: UnidentifiedImageError(cannot identify image "
             f"file /data/{i}.jpg)" if i % 10 == 0 else line
             for i, line in enumerate(healthy_lines(20000, seed=5, tricky=False))]
    data = "".join(line + "\n" for line in lines).encode()
    picked = sum(1 for _ in select_lines([data], "job.log", Warnings(), RULES.finder(engine)))
    assert picked <= len(lines) // 100, picked
    for glued in ("AttributeErrorAttributeError: 'NoneType' object has no attribute 'x'",
                  "[rank1]: ...ds_summary()AssertionError", "ValueError      raise ValueError"):
        data = "".join(line + "\n" for line in lines[:3000] + [glued] + lines[3000:6000]).encode()
        texts = [line.text for line in select_lines([data], "job.log", Warnings(), RULES.finder(engine))]
        assert any(glued.split("]: ")[-1] in text for text in texts), glued


# Failure words in harmless places, as a big healthy job prints them (benchmarks/biglogs.py's
# keyword-dense log): none of these lines is a failure, and none may be selected.
HARMLESS = (
    "[rank{r}]: NCCL_ASYNC_ERROR_HANDLING=1 TORCH_NCCL_ASYNC_ERROR_HANDLING=1 NCCL_TIMEOUT=1800",
    "TORCH_NCCL_ASYNC_ERROR_HANDLING=3 CUDA_DEVICE_MAX_CONNECTIONS=1 NCCL_DEBUG=WARN",
    "/usr/lib/python3/dist-packages/torch/utils/checkpoint.py:460: UserWarning: torch.utils.checkpoint: "
    "the use_reentrant parameter should be passed explicitly; an error will be raised in a future release",
    "{{'eval_loss': 1.{r}, 'eval_failed': 0, 'timeouts': 0, 'errors': 0, 'step': {r}}}",
    "[rank{r}]: metrics: failed=0 skipped=0 exceptions=0 timeout_s=1800 error_rate=0.000",
    "[rank{r}]: dataloader worker {r}: handled exception in prefetch (recovered), error count 0",
    "wandb: WARNING Network error (ReadTimeout), entering retry loop.",
    "[rank{r}]: NCCL WARN NET/Plugin: Could not find: libnccl-net.so. Using internal network plugin.",
    '{{"step": {r}, "level": "info", "error_count": 0, "msg": "checkpoint saved"}}',
    # DeepSpeed's progress report, every steps_per_print steps of a healthy run (a keyword
    # `skipped=` once selected every one of them: the 30 MB benchmark log took twice as long)
    "[2024-10-02 14:00:00,215] [INFO] [logging.py:96:log_dist] [Rank 0] step={r}00, skipped=0, "
    "lr=[1.9e-05], mom=[(0.9, 0.95)]",
)


@pytest.mark.parametrize("engine", ["hyperscan", "re"])
def test_failure_words_in_harmless_places_select_nothing(monkeypatch, engine):
    # A marker term whose gate was a bare `ERROR` selected every env echo of
    # *_ASYNC_ERROR_HANDLING: the keyword-dense 1 GB log took 1.5x longer.
    from classifier.diagnosis import prefilter
    monkeypatch.setattr(prefilter, "HEAD", 0)
    monkeypatch.setattr(prefilter, "TAIL", 0)
    data = "".join(HARMLESS[i % len(HARMLESS)].format(r=i % 64) + "\n" for i in range(5000)).encode()
    picked = [line.text for line in select_lines([data], "job.log", Warnings(), RULES.finder(engine))]
    assert not picked, picked[:3]


def _essence(result):
    """What a diagnosis decides: the cause, its rule and evidence, and what else was found."""
    return (result["category"], result.get("rule"), result.get("confidence"),
            [(e["line"], e["text"]) for e in result.get("evidence", [])],
            [(s["category"], s.get("rule")) for s in result.get("secondary", [])])


def test_the_prefilter_decides_every_corpus_case_as_the_full_read_does(monkeypatch):
    # The property behind "one path for every size": with no head kept and a short tail, only
    # the selected lines and their reach are read, and every corpus case gets the same cause,
    # rule and evidence as when every line is read. (Facts that count ranks or read each
    # rank's last step come from the head a big log keeps: HEAD lines.)
    from classifier.corpus.evaluate import find_cases
    from classifier.diagnosis import prefilter
    monkeypatch.setattr(prefilter, "HEAD", 0)
    monkeypatch.setattr(prefilter, "TAIL", 20)
    logs = [log for log, _ in find_cases(ROOT / "corpus")] + sorted(LOGS.glob("*.log"))
    checked, differ = 0, []
    for log in logs:
        full = diagnose_job([str(log)], select=False)
        fast = diagnose_job([str(log)], select="hyperscan")
        checked += 1
        if _essence(full) != _essence(fast):
            differ.append((log.name, _essence(full)[:2], _essence(fast)[:2]))
    assert checked > 800 and not differ, differ[:5]


@pytest.mark.parametrize("warn_after", [5, 45, 80])
def test_a_retry_storm_and_its_warn_are_read_as_a_full_read_does(tmp_path, warn_after):
    # connect_retry_storm selects on its retries and reads 51 lines on: the WARN that ends a
    # storm is there; healthy NCCL WARN lines elsewhere are not selected, and need not be.
    retry = "node1:2011:2011 [0] NCCL INFO Call to connect returned Connection refused, retrying"
    warn = "node1:2011:2011 [0] misc/socket.cc:538 NCCL WARN Net : Connect to 10.1.2.3<41291> failed"
    healthy = list(healthy_lines(8000, seed=9, tricky=False))
    lines = healthy[:3000] + [warn] + healthy[3000:5000] + [retry] * 6 + healthy[5000:5000 + warn_after]
    lines += [warn] + healthy[5000 + warn_after:]
    log = tmp_path / "job.log"
    log.write_text("\n".join(lines) + "\n")
    full = diagnose_job([str(log)], select=False)
    assert diagnose_job([str(log)], select="hyperscan") == full
    assert diagnose_job([str(log)], select="re") == full
    assert (full["category"] == "nccl_network") is (warn_after <= 50), full["category"]


def test_newlines_counted_with_numpy_select_the_same_lines(tmp_path, monkeypatch):
    """Past NUMPY_AFTER chunks the scanners count newlines with numpy: same lines, same numbers."""
    from classifier.diagnosis import chunking, prefilter
    pytest.importorskip("numpy")
    path = _noisy_job(tmp_path, 12000, total=16000)
    data = path.read_bytes()

    def picked():
        return [(r.lineno, r.text) for r in select_lines(
            (data[i:i + 4096] for i in range(0, len(data), 4096)), "x", Warnings(),
            RULES.finder("hyperscan"), 4096, scanners=2)]
    monkeypatch.setattr(chunking, "_numpy", False)  # bytes.count throughout
    plain = picked()
    monkeypatch.setattr(chunking, "_numpy", None)
    monkeypatch.setattr(prefilter, "NUMPY_AFTER", 5)
    assert picked() == plain and chunking._numpy
    for chunk in (b"", b"\n", b"a\nb\n\n", data[:5000]):
        assert chunking.newlines(chunk) == chunk.count(b"\n")
