"""The regex budget (issue 16): a user pattern the backtracking lint calls ok still cannot make a
job's regex work unbounded; a spent budget skips the rest with a warning, and what matched
before still makes the diagnosis. Real logs never come near it."""

import json

import pytest

from classifier.diagnosis.budget import RegexBudget
from classifier.diagnosis.match import scan
from classifier.diagnosis.normalize import normalize
from classifier.diagnosis.read import RawLine, Warnings
from classifier.rules.load import load_rules
from conftest import run_dsdiag

# `(?:\w+-)+\w+` before a literal backtracks on a long run of `a-` from every start position;
# `dsdiag rules lint` finds no adversarial input for it (its runs are of one character).
SLOW_RULE = """\
category: disk_full
rules:
  - id: disk_full.shard_volume
    title: A shard volume is full
    keywords: ["shard volume full"]
    patterns:
      - '(?P<volume>(?:\\w+-)+\\w+)# shard volume full'
    examples:
      match:
        - 'vol-a-b# shard volume full'
        - 'scratch-x# shard volume full'
        - 'data-set-1# shard volume full'
      no_match:
        - 'vol-a-b# shard volume fine'
        - 'shard volume full soon'
"""
OOM = ("[rank1]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 1 "
       "has a total capacity of 79.15 GiB of which 1.07 GiB is free.")
NEAR_MISS = "[rank1]: " + "a-" * 4000 + " shard volume full"


@pytest.fixture(scope="module")
def slow_rules_dir(tmp_path_factory):
    directory = tmp_path_factory.mktemp("rules")
    (directory / "disk_full.yaml").write_text(SLOW_RULE)
    return directory


def _scan(texts, rules, budget, warnings):
    raw = [RawLine("job.log", i, t) for i, t in enumerate(texts, 1)]
    return [h.rule.id for h in scan(normalize(raw), rules.keyword_index(), None, warnings, budget)]


def test_the_lint_passes_the_slow_pattern(slow_rules_dir):
    proc = run_dsdiag("rules", "lint", slow_rules_dir)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_a_line_budget_caps_each_line_and_the_job_budget_stops_all_regex_work(slow_rules_dir):
    rules = load_rules([slow_rules_dir])
    warnings = Warnings()
    budget = RegexBudget(warnings, per_line=0.05, per_job=0.4)
    texts = ["vol-a# shard volume full", OOM] + [NEAR_MISS] * 40 + [OOM.replace("rank1", "rank2")]
    hits = _scan(texts, rules, budget, warnings)
    codes = [w["code"] for w in warnings.as_list()]
    # The hits before the budget ran out stay; the OOM after it is never searched.
    assert hits == ["disk_full.shard_volume", "gpu_oom.caching_allocator"]
    assert codes == ["regex_line_budget", "regex_budget"], codes
    # Without budgets: 3 s a line (six windows at REGEX_TIMEOUT), 2 minutes in all.
    assert budget.exhausted and budget.worst_line < 0.5 and budget.spent < 2


def test_a_job_within_budget_finds_everything_without_a_warning():
    rules = load_rules([])
    warnings = Warnings()
    budget = RegexBudget(warnings)
    assert _scan([OOM, OOM.replace("rank1", "rank2")], rules, budget, warnings) == \
        ["gpu_oom.caching_allocator"] * 2
    assert warnings.as_list() == [] and not budget.exhausted and budget.spent > 0


def test_a_catastrophic_user_rule_leaves_a_bounded_job_with_a_warning(tmp_path, slow_rules_dir):
    # Without the budget each of these lines costs REGEX_TIMEOUT on each of its windows:
    # 30 lines took about 100 s; the job's budget stops it after PER_JOB seconds of regex.
    log = tmp_path / "job.log"
    log.write_text("[rank0]: step 1\n" + OOM + "\n" + (NEAR_MISS + "\n") * 30)
    proc = run_dsdiag("--rules-dir", slow_rules_dir, "--format", "json", log, timeout=120)
    result = json.loads(proc.stdout)
    assert (proc.returncode, result["category"]) == (0, "gpu_oom")
    assert "regex_budget" in {w["code"] for w in result["warnings"]}


def test_a_wall_clock_stretched_by_load_changes_no_diagnosis(monkeypatch):
    # A host so loaded (or a process so long in the garbage collector) that each search seems to
    # take 2,000 times its time: the CPU clock, asked before a budget is called spent, says the
    # regex work was small, so every answer and warning stays as on an idle host.
    from classifier.diagnosis import budget as budget_module
    from classifier.diagnosis.diagnose import diagnose_job
    from conftest import LOGS

    logs = sorted(LOGS.glob("*.log")) + sorted((LOGS / "culprit").glob("*.log"))
    rules = load_rules([])

    def answers():
        return [(d["category"], d["rule"], [w["code"] for w in d["warnings"]])
                for d in (diagnose_job([str(log)], rules) for log in logs)]

    idle = answers()
    real = budget_module._monotonic
    start = real()
    monkeypatch.setattr(budget_module, "_monotonic", lambda: start + (real() - start) * 2000)
    assert answers() == idle
    assert not any(codes for _, _, codes in idle)
