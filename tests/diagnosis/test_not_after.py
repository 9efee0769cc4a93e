"""`not_after`: a line before a hit that makes it an echo vetoes it (a restarted attempt after
torchelastic reported the first one's failure); the same line after the hit does not, in a short
paste and behind 20,000 healthy lines (where the prefilter picks the lines the rule reads)."""

from noise import diagnose_behind_noise as _diagnose

AGENT = ('E1205 15:02:42.779000 7656 torch/distributed/elastic/multiprocessing/api.py:1002] '
         'failed (exitcode: 1) local_rank: 1 (pid: 7771) of binary: /usr/bin/python3')
CONNECT = ('RuntimeError: Gloo connectFullMesh failed with [/__w/pytorch/pytorch/third_party/gloo/'
           'gloo/transport/tcp/pair.cc:152] timed out connecting: SO_ERROR: Connection refused, '
           'remote=[127.0.0.1]:6057')


def test_agent_report_after_the_connect_failure_keeps_it(tmp_path):
    for noise in (0, 20000):
        d = _diagnose(tmp_path, [CONNECT, AGENT], noise)
        assert d["category"] == "connection_failure", noise


def test_agent_report_before_the_connect_failure_vetoes_it(tmp_path):
    for noise in (0, 20000):
        d = _diagnose(tmp_path, [AGENT, CONNECT], noise)
        assert d["category"] != "connection_failure", noise
