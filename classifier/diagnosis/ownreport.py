"""dsdiag's own `--tee` report inside a log: fenced when written, skipped when read.

`deepspeed ... 2>&1 | dsdiag --tee` in a Slurm batch script sends stdout and stderr to the
same slurm-%j.out, so the report lands at the end of the very log the epilog
(`dsdiag slurm-annotate`) diagnoses next. Its evidence lines repeat the failure (a second hit
raises the confidence and points the evidence at the report), and a `none` report would be
read back as log text. So a report written into a regular file is wrapped in two marker lines,
and the reader drops everything between them, whatever prefix (`srun -l`, timestamps) the
lines picked up on the way.
"""

from collections.abc import Iterable, Iterator

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing: ~2 ms of every start
if TYPE_CHECKING:
    from classifier.diagnosis.normalize import Line

BEGIN = "---- dsdiag report begins (dsdiag skips this block when it reads the log) ----"
END = "---- dsdiag report ends ----"
_BEGIN_KEY = BEGIN[:len("---- dsdiag report begins")]


def fence(report: str) -> str:
    """Return the rendered report between the two marker lines."""
    if report and not report.endswith("\n"):
        report += "\n"
    return f"{BEGIN}\n{report}{END}\n"


def skip_own_reports(lines: Iterable["Line"]) -> Iterator["Line"]:
    """Yield the lines of one input that are not inside a fenced dsdiag report."""
    inside = False
    for line in lines:
        msg = line.msg.strip()
        if inside:
            inside = msg != END
        elif msg.startswith(_BEGIN_KEY):
            inside = True
        else:
            yield line
