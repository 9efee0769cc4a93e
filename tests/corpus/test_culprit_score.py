"""`dsdiag eval` scores the culprit: right category and host (and rank where known); a wrong host is a miss."""

from classifier.corpus.evaluate import culprit_score, score

META = {"label": "nccl_timeout", "culprit": {"ranks": [5], "hosts": ["gpu-a"]}}


def _d(category, ranks, hosts):
    culprit = {"ranks": ranks, "hosts": hosts, "reason": "r", "confidence": 0.8} if hosts or ranks else None
    return {"category": category, "culprit": culprit}


def test_right_category_host_and_rank_is_a_hit():
    assert culprit_score(META, _d("nccl_timeout", [5], ["gpu-a"]))["culprit_hit"]


def test_a_wrong_host_is_a_miss_and_counted_apart_from_naming_none():
    wrong = culprit_score(META, _d("nccl_timeout", [5], ["gpu-b"]))
    none = culprit_score(META, _d("nccl_timeout", [], []))
    assert not wrong["culprit_hit"] and wrong["culprit_wrong_host"]
    assert not none["culprit_hit"] and not none["culprit_wrong_host"]


def test_a_wrong_rank_or_category_is_a_miss_and_no_listed_rank_asks_only_the_host():
    assert not culprit_score(META, _d("nccl_timeout", [4], ["gpu-a"]))["culprit_hit"]
    assert not culprit_score(META, _d("unknown", [5], ["gpu-a"]))["culprit_hit"]
    host_only = {"label": "host_oom", "culprit": {"ranks": [], "hosts": ["w-2"]}}
    assert culprit_score(host_only, _d("host_oom", [], ["w-2"]))["culprit_hit"]
    assert culprit_score({"label": "none"}, _d("none", [], [])) == {}


def test_score_reports_culprit_accuracy_and_wrong_hosts():
    rows = [{"label": "nccl_timeout", "predicted": "nccl_timeout", "evidence_hit": None, "segment": "real-run",
             **culprit_score(META, _d("nccl_timeout", [5], hosts))} for hosts in (["gpu-a"], ["gpu-b"])]
    s = score(rows)
    assert (s["culprit_cases"], s["culprit_accuracy"], s["culprit_wrong_host"]) == (2, 0.5, 1)
    assert len(s["culprit_misses"]) == 1
