"""Stage 3c: rules on structure — where an exception was raised and who called it.

A rule's optional `structure:` block holds conditions on one exception (classifier.diagnosis
.traceback.Raised), all of which must hold:

  exception        regex searched in the exception's type (`JSONDecodeError`)
  raised_in        regexes; one must match `file:function` of the innermost frame outside the
                   standard library
  raised_source    regex searched in the code line of the `raised_in` frame (with raised_in)
  innermost        regex on `file:function` of the innermost frame, standard library included
                   (`os.py:__getitem__`: the paste stopped inside the lookup itself)
  called_from      regexes; each must match one of the innermost CALLERS frames outside the
                   standard library (`file:function code line`)
  not_called_from  regexes; none may match those frames (a dataset reader, not the config loader)
  source           regex searched in the frames' source lines (`os\\.environ\\[`)
  config_loader    regexes; one of the frames outside the standard library (`file:function
                   code line`) or the exception line itself must match; with no such frames
                   (a lone line), a distributed training run starting before it will do (its
                   own rank label, or a launcher line with no training step between): a decode
                   error in a game's or a server's settings file is not ds_config, and a
                   config is read before the first step, never after
  message          regex searched in the message; its named groups become facts
  cut              true: only a traceback that stops before its message (what the frames
                   prove only when no message says otherwise)
  training_run     true: only inside a distributed run (the exception's own rank label, or a
                   launcher, DeepSpeed or rank line before it, with no training step between),
                   whatever the frames say: a script's own `config = json.load(f)` is the
                   DeepSpeed config under a launcher, a stand-alone tool's settings elsewhere

A rule with patterns and a structure block fires where a pattern matches the exception line
of an exception that meets the conditions. A rule with a structure block and no patterns
fires on the exception itself, message or not: a traceback cut before its last line, or a
bare `AssertionError`, is still diagnosed by its frames (and says so in its facts).
"""


from classifier.precompiled import re_compile
from classifier.diagnosis.runstate import PROGRESS
from classifier.diagnosis.match import Hit
from classifier.diagnosis.nearby import RecentLines, vetoed
from classifier.diagnosis.raisesite import source_hits
from classifier.diagnosis.traceback import TracebackCollector
from classifier.diagnosis.trends import TrendHits

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing: ~2 ms of every start
if TYPE_CHECKING:
    from classifier.diagnosis.normalize import Line
    from classifier.diagnosis.traceback import Frame, Raised
    from classifier.rules.model import Rule

# A line that only a distributed training run prints: DeepSpeed's name, a launcher's (torchrun's
# glog-style warnings name `torch/distributed/run.py`), a rank's.
_TRAINING_RUN = re_compile(r"(?i)deepspeed|torchrun|torch[./]distributed|accelerate|local_rank|"
                           r"\bnccl\b|world_size|\[rank\d")
# NCCL INFO lines printed once a communicator is built (2.x wordings).
_COMM_BUILT = re_compile(r"Init COMPLETE|Connected all (?:rings|trees)|NCCL INFO Channel \d+/\d+ ?:|"
                         r"NCCL INFO Channel \d+ ?: \d")
CALLERS = 3         # innermost frames (outside the standard library) that count as the caller
MAX_PENDING = 4096  # pattern hits awaiting their structure check, per job


# /usr/lib/python3.10/os.py, conda's D:/envs/x/lib/json/decoder.py, C:/Python311/Lib/os.py
_STDLIB = re_compile(r"(?i)(?:^|/)lib/(?!python\d(?:\.\d+)?/(?:site|dist)-packages/)"
                     r"(?:python\d(?:\.\d+)?/)?(?!(?:site|dist)-packages/)\w+(?:\.py$|/)|^<frozen ")


def _frames(raised: "Raised") -> list:
    return list(raised.frames)


# Frames Python adds for a lambda or a comprehension: the function around it raised.
_INNER_SCOPE = frozenset({"<lambda>", "<genexpr>", "<listcomp>", "<dictcomp>", "<setcomp>"})


def raised_in(frames: list["Frame"]) -> "Frame | None":
    """Where an exception was raised: its innermost frame outside Python's standard library
    (os.py's __getitem__ or json/decoder.py only carry it out of the code that asked), and
    of a lambda or comprehension the named function of the same file that holds it."""
    for i in range(len(frames) - 1, -1, -1):
        if not _STDLIB.search(frames[i].file):
            j = i
            while frames[j].func in _INNER_SCOPE and j > 0 and frames[j - 1].file == frames[i].file:
                j -= 1
            return frames[j] if frames[j].func not in _INNER_SCOPE else frames[i]
    return frames[-1] if frames else None


def meets(structure: dict, raised: "Raised", training_job: bool = True) -> dict | None:
    """The facts the conditions yield if `raised` meets all of them, else None.

    `training_job`: a training run stands around the exception (see `config_loader`)."""
    frames = _frames(raised)
    facts = {}
    if "cut" in structure and raised.cut != structure["cut"]:
        return None
    if structure.get("training_run") and not training_job:
        return None
    if "exception" in structure:
        if not raised.type or not structure["exception"].search(raised.type):
            return None
    if "raised_in" in structure:
        found = raised_in(frames)
        if found is None or not any(p.search(found.where) for p in structure["raised_in"]):
            return None
        if "raised_source" in structure and not structure["raised_source"].search(found.source):
            return None
        facts["raised_in"] = f"{found.file.rsplit('/', 1)[-1]}:{found.func}"
    if "innermost" in structure:
        if not frames or not structure["innermost"].search(frames[-1].where):
            return None
    # Who asked: the innermost CALLERS frames outside the standard library, each by its
    # location and its code line (`SupervisedDataset(...)`). Outer frames (`main`, `pretrain(
    # train_valid_test_datasets_provider, ...)`) say what the program does, not who read.
    own = [f for f in frames if not _STDLIB.search(f.file)] or frames
    callers = [f"{f.where} {f.source}" for f in own[-CALLERS:]]
    for pattern in structure.get("called_from", ()):
        if not any(pattern.search(c) for c in callers):
            return None
    for pattern in structure.get("not_called_from", ()):
        if any(pattern.search(c) for c in callers):
            return None
    # Frames of the program's own code decide whether a config loader read the file; only
    # without them (a lone line, or the standard library's frames alone) does a training run
    # in the log stand in, since every line of a big job's log says it trains.
    if "config_loader" in structure and (own is not frames or not training_job):
        mine = [f"{f.where} {f.source}" for f in own] + [raised.line.msg if raised.line else ""]
        if not any(p.search(c) for p in structure["config_loader"] for c in mine):
            return None
    if "source" in structure:
        if not any(structure["source"].search(f.source) for f in frames):
            return None
    if "message" in structure:
        m = structure["message"].search(raised.message or "")
        if m is None:
            return None
        facts.update({k: v.strip() for k, v in m.groupdict().items() if v and v.strip()})
    if raised.cut:
        facts["message_cut"] = "the paste ends before the exception's message"
    return facts


def _at(training_at, line) -> bool:
    """`training_at(line)`, or True (a training run assumed) when no job was read."""
    return True if training_at is None else training_at(line)


def _explained(raised: "Raised", covered: dict[str, list[int]]) -> bool:
    """Does a pattern hit already point into this traceback (its frames or its message)?"""
    lo, hi = raised.first.lineno, raised.anchor.lineno
    return any(lo <= n <= hi for n in covered.get(raised.first.source, ()))


# A stub of a message on the input's very last line: the paste stopped a few letters into it
# (`RuntimeError: So`, `RuntimeError: Connec`), which says no more than a cut before it.
_STUB = re_compile(r"^\S[^\n]{0,11}$")
_STUB_END = re_compile(r"[A-Za-z0-9]$")


class _CutAtEnd:
    """A Raised whose message is only a stub cut by the end of the input, seen as cut."""

    cut = True

    def __init__(self, raised: "Raised") -> None:
        self._raised = raised

    def __getattr__(self, name: str):
        return getattr(self._raised, name)


def _as_cut(raised: "Raised", last_lineno: dict[str, int] | None) -> "Raised | _CutAtEnd":
    """`raised`, or a cut view of it when its message is a stub on the input's last line."""
    line, message = raised.line, (raised.message or "").strip()
    if (line is None or not last_lineno or last_lineno.get(line.source) != line.lineno
            or not _STUB.match(message) or not _STUB_END.search(message)):
        return raised
    return _CutAtEnd(raised)


def structure_hits(records: list["Raised"], rules: list["Rule"],
                   covered: dict[str, list[int]] | None = None,
                   training_at=None, last_lineno: dict[str, int] | None = None,
                   recent: RecentLines | None = None, budget=None) -> list[Hit]:
    """Hits of the structure-only rules (no patterns) on a job's exceptions.

    They are the fallback for what the message lines do not say: an exception that a pattern
    hit already points into (`covered`: source -> line numbers) is left to that hit. A rule's
    vetoes read `recent`, the job's last lines (classifier.diagnosis.nearby).
    """
    hits = []
    if not records:  # most small logs: no need to walk every rule
        return hits
    covered = covered or {}
    free = [_as_cut(raised, last_lineno) for raised in records if not _explained(raised, covered)]
    if not free:
        return hits
    for rule in _structure_only(rules):
        for raised in free:
            facts = meets(rule.structure, raised, _at(training_at, raised.line))
            if facts is not None and not (rule.has_vetoes and vetoed(rule, raised, recent, budget)):
                hits.append(Hit(rule, _evidence(raised), facts))
    return hits


def _evidence(raised: "Raised") -> list:
    """Where a frames-only diagnosis points: where the traceback stops (first), the frame it was
    raised in and its caller's, and where the traceback starts."""
    lines = [raised.anchor]
    frames = _frames(raised)
    found = raised_in(frames)
    at = frames.index(found) if found is not None else -1
    shown = [frames[i] for i in (at, at - 1) if 0 <= i]  # no caller when nothing was found
    for extra in [x for f in shown for x in (f.at, f.source_at)] + [raised.first]:
        if extra is not None and all(extra is not kept for kept in lines):
            lines.append(extra)
    return lines


_STRUCTURE_ONLY: dict[int, tuple[list, list]] = {}  # id(rules) -> (rules, its structure-only rules)


def _structure_only(rules: list["Rule"]) -> list["Rule"]:
    """The rules with a structure block and no patterns, in order: picked once per rule list
    (a triage worker diagnoses thousands of jobs with one), not per job."""
    kept = _STRUCTURE_ONLY.get(id(rules))
    if kept is None or kept[0] is not rules:
        if len(_STRUCTURE_ONLY) > 8:
            _STRUCTURE_ONLY.clear()
        kept = _STRUCTURE_ONLY[id(rules)] = (rules, [
            rule for rule in rules if rule.structure is not None and not rule.has_patterns])
    return kept[1]


def keep_hit(hit: Hit, by_line: dict, training_at=None, twins: dict | None = None) -> bool:
    """Does a pattern hit of a rule with a structure block meet it on its exception?"""
    structure = hit.rule.structure
    if structure is None:
        return True
    for line in hit.lines:
        raised = by_line.get((line.source, line.lineno))
        if raised is not None:
            raised = _twin(raised, twins)
            return meets(structure, raised, _at(training_at, raised.line)) is not None
    # No traceback around the matched line: only exclusions could be checked, and none failed;
    # a lone decode error says ds_config only inside a training job or in the loader's own
    # words (hjson, which only DeepSpeed's config reader uses).
    if set(structure) <= {"not_called_from"}:
        return True
    if not set(structure) <= {"not_called_from", "config_loader", "training_run"}:
        return False
    training = _at(training_at, hit.lines[0] if hit.lines else None)
    return training or not structure.get("training_run") and \
        any(p.search(line.msg) for p in structure.get("config_loader", ()) for line in hit.lines)


def index_by_line(records: list["Raised"]) -> dict:
    """{(source, line number of the exception line): exception}."""
    return {(r.line.source, r.line.lineno): r for r in records if r.line is not None}


def _own_frames(raised: "Raised") -> bool:
    return any(not _STDLIB.search(f.file) for f in raised.frames)


def index_twins(records: list["Raised"]) -> dict:
    """{(type, message): the first exception with frames of the program's own code}: the same
    error that every rank raised, once with the frames that say who read the file."""
    twins = {}
    for r in records:
        if r.type and r.message and (r.type, r.message) not in twins and _own_frames(r):
            twins[(r.type, r.message)] = r
    return twins


def _twin(raised: "Raised", twins: dict | None) -> "Raised":
    """A traceback cut above the program's own frames (the last lines of a paste keep a rank's
    json/decoder.py frames and its message) is judged by its twin on another rank, the same
    type and message with the frames that say who read the file: rank 1's dataset reader, not
    a config loader. A lone exception line with no frames at all is left as it is."""
    if not twins or not raised.frames or _own_frames(raised):
        return raised
    return twins.get((raised.type, raised.message), raised)


class DeferredHits:
    """Line hits whose rule needs the whole job first — structure conditions and trends — and
    the tracebacks they are judged against."""

    def __init__(self, rules: list["Rule"] = ()) -> None:
        self.tracebacks = TracebackCollector()
        # the lines a structure-only rule's vetoes read, kept only while such a rule is loaded
        self.recent = RecentLines() if any(r.has_vetoes for r in _structure_only(rules)) else None
        self.trends = TrendHits()
        self._pending: list[Hit] = []
        # Where, per input, a training run first shows (a rank label, a launcher or DeepSpeed
        # line) and where it is first past start-up: a training step reported, or NCCL's
        # communicators built (DeepSpeed, HF and accelerate read the config before either).
        self._started: dict[str, int] = {}
        self._stepping: dict[str, int] = {}

    def feed(self, line: "Line") -> None:
        """See one normalised line (builds the job's tracebacks)."""
        self.tracebacks.feed(line)
        if self.recent is not None:
            self.recent.feed(line)
        src, gist = line.source, line.gist
        if src not in self._started and (line.rank is not None or _TRAINING_RUN.search(gist)):
            self._started[src] = line.lineno
        # Cheap substring tests first: PROGRESS needs `step=`, `iteration` or `loss`.
        if src not in self._stepping and (
                ("step=" in gist or "iteration" in gist or "oss" in gist or "OSS" in gist)
                and PROGRESS.search(gist) or "NCCL INFO" in gist and _COMM_BUILT.search(gist)):
            self._stepping[src] = line.lineno

    def training_at(self, line: "Line | None") -> bool:
        """Does a lone line at `line` sit in a training run that has not yet reached its first
        step (its own rank label, or a run's line before it)? What lets a bare decode error
        stand for the DeepSpeed config, read before any step: a long healthy log in front of
        it says the run trains, and its steps say the config was read long before."""
        if line is None:
            return bool(self._started)
        step = self._stepping.get(line.source)
        if step is not None and step < line.lineno:
            return False
        return line.rank is not None or \
            any(src != line.source or n < line.lineno for src, n in self._started.items())

    def offer(self, hit: Hit) -> bool:
        """Keep a hit that can only be judged at the end; False when it stands on its own."""
        if hit.rule.trend:
            self.trends.add(hit)
            return True
        if hit.rule.structure is not None:
            if len(self._pending) < MAX_PENDING:
                self._pending.append(hit)
            return True
        return False

    def resolve(self, rules: list["Rule"], last_lineno: dict[str, int],
                hits: list[Hit] = (), index=None, budget=None) -> list[Hit]:
        """The deferred hits that hold, plus the structure-only rules' hits on exceptions that
        none of `hits` (the job's other hits) or the kept deferred ones points into, and (given
        the job's keyword `index` and regex `budget`) the line rules' hits on messages read
        back from raising statements (classifier.diagnosis.raisesite)."""
        records = self.tracebacks.finish()
        by_line = index_by_line(records)
        twins = index_twins(records) if self._pending else None
        out = [h for h in self._pending if keep_hit(h, by_line, self.training_at, twins)]
        covered: dict[str, list[int]] = {}
        for hit in list(hits) + out:
            for line in hit.lines:
                covered.setdefault(line.source, []).append(line.lineno)
        out += structure_hits(records, rules, covered, self.training_at, last_lineno, self.recent, budget)
        if index is not None:
            out += source_hits(records + self.tracebacks.lone, index, budget,
                               lambda raised: _explained(raised, covered),
                               lambda structure, raised: meets(structure, raised,
                                                               self.training_at(raised.line)))
        out += self.trends.hits(last_lineno)
        return out


_DECODE_ERROR = re_compile(r"(?:JSONDecodeError|HjsonDecodeError|YAMLError|ScannerError|ParserError)$")


def reader_steps(final: "Line", records: list["Raised"]) -> list[str]:
    """For a parse error no rule explains, name the code that read the file that broke.

    The DeepSpeed config rules refuse decode errors raised under a dataset or tokenizer
    reader; what the user needs then is which file kind it was, not advice about ds_config.
    """
    for raised in records:
        if raised.line is final and raised.type and _DECODE_ERROR.search(raised.type):
            own = [f for f in raised.frames if not _STDLIB.search(f.file)]
            if not own:
                return []
            reader = own[-1]
            code = f" (`{reader.source}`)" if reader.source else ""
            return [f"The text that failed to parse was read by {reader.where}{code}, not by the "
                    f"DeepSpeed config loader: check that input file (a dataset, tokenizer or "
                    f"annotation file; JSON Lines needs one object per line)."]
    return []


def respawned(records: list["Raised"]) -> set:
    """Where torch.multiprocessing.spawn re-raised a child's failure in the parent as a bare
    `Exception` (torch < 1.8: spawn.py's join, the child's traceback under `-- Process N
    terminated with the following error:`; later releases name it ProcessRaisedException, an
    echo by name): (source, line) of each such exception line, an echo, not a failure."""
    return {(r.line.source, r.line.lineno) for r in records
            if r.line is not None and r.type == "Exception" and r.frames
            and r.frames[-1].func == "join" and r.frames[-1].file.endswith("multiprocessing/spawn.py")}
