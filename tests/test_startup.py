"""Fast start: importing the package and a rule-hit diagnosis never touch the heavy stack."""

import subprocess
import sys

import pytest

from conftest import DEMO, ROOT

# An import hook records every attempt, so the test fails even where the heavy packages
# are not installed at all (an attempted import is the bug, not a successful one).
PROBE = r"""
import sys
HEAVY = ("torch", "deepspeed", "sklearn", "scipy", "numpy")
attempts = []
class Recorder:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in HEAVY:
            attempts.append(name)
        return None
sys.meta_path.insert(0, Recorder())
import classifier
from classifier.diagnosis.diagnose import diagnose_job
result = diagnose_job([sys.argv[1]])
from classifier.render import render
import io
render(result, "text", io.StringIO(), color=True)
render(result, "json", io.StringIO())
assert result["source"] == "rule", result["category"]
print(",".join(attempts) or "clean")
"""


def test_rule_hit_diagnosis_imports_nothing_heavy():
    proc = subprocess.run([sys.executable, "-c", PROBE, str(DEMO)], capture_output=True,
                          text=True, cwd=ROOT, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "clean"


@pytest.mark.parametrize("big", [False, True], ids=["small log", "log past the prefilter's head"])
def test_a_common_command_line_imports_neither_argparse_nor_pathlib(tmp_path, big):
    # Each cost a small log's run a few ms (classifier/diagnosis/quickargs.py, rules/files.py;
    # the finder's cache key for a log long enough to be searched, finder.py).
    # `-S` keeps site's .pth hooks out (an editable install's finder imports pathlib itself);
    # the second run is the one measured: the first may build the caches.
    import sysconfig
    log = DEMO
    if big:
        log = tmp_path / "long.log"
        steps = "".join(f"[rank{i % 16}]: step {i} loss 1.{i % 97:02d}\n" for i in range(5000))
        log.write_text(steps + DEMO.read_text())
    env = {"PYTHONPATH": f"{ROOT}{__import__('os').pathsep}{sysconfig.get_paths()['purelib']}",
           "DSDIAG_CACHE_DIR": str(tmp_path), "PATH": "/usr/bin:/bin"}
    probe = ("import sys; from classifier.cli import main; code = main(['--format', 'json', sys.argv[1]]); "
             "sys.stderr.write(repr(sorted(m for m in ('argparse', 'pathlib') if m in sys.modules)))")
    for _ in range(2):
        proc = subprocess.run([sys.executable, "-S", "-c", probe, str(log)], capture_output=True,
                              text=True, cwd=ROOT, timeout=60, env=env)
    assert proc.stderr.strip() == "[]", proc.stderr[-2000:]
    assert '"category": "gpu_oom"' in proc.stdout


def test_a_small_logs_run_imports_neither_typing_nor_json(tmp_path):
    # Together ~3 ms of a ~65 ms run, against a 1.6x-of-`import yaml, regex` start-up bar:
    # annotations name typing only under TYPE_CHECKING, and json loads where a line needs it.
    import sysconfig
    env = {"PYTHONPATH": f"{ROOT}{__import__('os').pathsep}{sysconfig.get_paths()['purelib']}",
           "DSDIAG_CACHE_DIR": str(tmp_path), "PATH": "/usr/bin:/bin"}
    probe = ("import sys; from classifier.cli import main; code = main([sys.argv[1]]); "
             "sys.stderr.write(repr(sorted(m for m in ('typing', 'json', 'contextlib', 'importlib') "
             "if m in sys.modules)))")
    for _ in range(2):  # the second run, from warm caches, is the one users repeat
        proc = subprocess.run([sys.executable, "-S", "-c", probe, str(DEMO)], capture_output=True,
                              text=True, cwd=ROOT, timeout=60, env=env)
    assert proc.stderr.strip() == "[]", proc.stderr[-2000:]


def test_a_warm_run_parses_none_of_our_patterns(tmp_path):
    # A pattern the compiled-pattern cache does not keep (precompiled.MAX_CODE) is parsed by
    # re's Python parser on every run: one vocabulary pattern that grew past the cap cost a
    # 10 KB log ~9 ms, a sixth of its run, with every answer unchanged.
    import sysconfig
    env = {"PYTHONPATH": f"{ROOT}{__import__('os').pathsep}{sysconfig.get_paths()['purelib']}",
           "DSDIAG_CACHE_DIR": str(tmp_path), "PATH": "/usr/bin:/bin"}
    probe = ("import sys; import classifier.precompiled as p; missed = []; record = p._record\n"
             "def counted(pattern, flags):\n"
             "    missed.append(str(pattern)[:80]); return record(pattern, flags)\n"
             "p._record = counted\n"
             "from classifier.cli import main; main([sys.argv[1]]); sys.stderr.write(repr(missed))")
    for _ in range(2):  # the first run records, the second must find every pattern recorded
        proc = subprocess.run([sys.executable, "-S", "-c", probe, str(DEMO)], capture_output=True,
                              text=True, cwd=ROOT, timeout=60, env=env)
    assert proc.stderr.strip() == "[]", proc.stderr[-2000:]


def test_the_rule_set_is_frozen_out_of_the_collector_only_when_the_process_ends(tmp_path):
    # The dsdiag command freezes what it loaded (command.py: the collector skips it, at exit
    # too); a program that calls main and goes on must get every object back under the collector.
    probe = ("import gc, sys, io, contextlib\nfrom classifier.cli import main\n"
             "with contextlib.redirect_stdout(io.StringIO()):\n"
             "    code = main(['--format', 'json', sys.argv[1]])\n"
             "after_call = gc.get_freeze_count()\n"
             "sys.argv = ['dsdiag', '--format', 'json', sys.argv[1]]\n"
             "with contextlib.redirect_stdout(io.StringIO()):\n"
             "    main()\n"
             "print(code, after_call, gc.get_freeze_count() > 10000, gc.isenabled())")
    env = {**__import__("os").environ, "DSDIAG_CACHE_DIR": str(tmp_path)}
    proc = subprocess.run([sys.executable, "-c", probe, str(DEMO)], capture_output=True, text=True,
                          cwd=ROOT, timeout=60, env=env)
    assert proc.stdout.split() == ["0", "0", "True", "True"], proc.stderr[-2000:]
