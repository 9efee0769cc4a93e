"""The pipeline end to end: read -> normalise -> match -> root cause -> the JSON contract.

`diagnose_job` is a pure function of its inputs and the rule set: it reads the files of one
job and returns the diagnosis as plain data, so the CLI, triage and tests all share it.
"""

from __future__ import annotations

from collections.abc import Sequence

from classifier import confidence as confidence_levels
from classifier import taxonomy
from classifier.ranks import rank_from_path
from classifier.diagnosis.budget import RegexBudget
from classifier.diagnosis.culprit import CulpritWitness
from classifier.diagnosis.flightrec import dump_files, last_entered
from classifier.diagnosis.match import scan
from classifier.diagnosis.normalize import normalize
from classifier.diagnosis.literals import masker
from classifier.diagnosis.ownreport import skip_own_reports
from classifier.diagnosis.read import (CHUNK, InputError, InputLimits, Warnings, byte_chunks,
                                      check_readable, display_name,
                                      read_lines)
from classifier.diagnosis.remediate import derive_facts, remediation_for
from classifier.diagnosis.rootcause import (MAX_EVIDENCE, HitCollector, evidence_of, group_by_category, line_order,
                        merged_facts, pick_root_cause)
from classifier.rules.load import default_rules
from classifier.sanitize import finish
from classifier.diagnosis.region import FailureRegion, model_text
from classifier.diagnosis.signals import FailureSignals
from classifier.diagnosis.structure import DeferredHits, reader_steps
from classifier.diagnosis.overrule import (crash_echoed, exit_echoed, first_unexplained_exception, run_resumed,
                                            symptom_overruled)
from classifier.taxonomy import retry_verdict
from classifier.vocabulary import EXCEPTION_LINE

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing: ~2 ms of every start
if TYPE_CHECKING:
    from typing import Any
    from classifier.rules.model import RuleSet

SCHEMA_VERSION = 2  # 2: facts are typed (classifier/facts.py)
def tool_info(rules: "RuleSet") -> dict[str, str]:
    """What produced a diagnosis: dsdiag's version and the rule set's hash."""
    from classifier import __version__
    return {"name": "dsdiag", "version": __version__, "rules": rules.version}


def _evidence_json(lines):
    out = []
    for line in lines:
        item = {"file": line.source, "line": line.lineno, "rank": line.rank, "text": line.text}
        if line.task is not None:  # only where an outer label (srun -l) wrapped the rank's
            item["task"] = line.task
        out.append(item)
    return out


def _raw_lines(path, warnings, rules, chunk_size, select, limits, repeats=None, scanning=None):
    """The input's lines worth diagnosing: for every input, those the prefilter selects.

    Files, pipes and compressed streams of every size take the same path, so a log costs the
    same per byte at 1 MB as at 1 GB (prefilter.py); `select=False` reads every line, which
    gives the same diagnosis (tests/diagnosis/test_prefilter.py) at normalising speed.
    """
    if select is False:
        return read_lines(path, warnings, chunk_size or CHUNK, limits)
    from classifier.diagnosis.prefilter import BIG_CHUNK, select_lines
    engine = select if isinstance(select, str) else "auto"

    def finder():  # built only for an input longer than the prefilter's head and tail
        found = rules.finder(engine)
        if scanning is not None:
            scanning(found)
        return found

    return select_lines(byte_chunks(path, warnings, chunk_size or BIG_CHUNK, limits),
                        display_name(path), warnings, finder,
                        repeats=None if repeats is None else repeats.setdefault(display_name(path), {}),
                        path=path if limits is None or limits.follow is None else None)


def _finding(category, hits, ranks_seen, bf16_run=False):
    rule = hits[0].rule
    facts = derive_facts(category, merged_facts(hits), ranks_seen, bf16_run)
    ranks = sorted({line.rank for h in hits for line in h.lines if line.rank is not None})
    if ranks:
        facts["ranks"] = ranks
        facts["ranks_summary"] = f"{len(ranks)} of {max(len(ranks_seen), len(ranks))} ranks"
    return {
        "category": category,
        "layer": taxonomy.layer_of(category),
        "title": rule.title,
        "rule": rule.id,
        "role": rule.role,
        "evidence": _evidence_json(evidence_of(hits)),
        "facts": facts,
    }, rule


def diagnose_job(paths: Sequence[str], rules: "RuleSet | None" = None,
                 chunk_size: int | None = None, select: bool | str | None = None,
                 use_model: bool = True, redact: bool = True,
                 limits: InputLimits | None = None, declined: set | None = None) -> dict[str, Any]:
    """Diagnose one job from its log files ('-' for stdin); return the JSON-contract dict.

    The result is finished (classifier/sanitize.py) before it is returned: terminal controls
    removed and, unless `redact` is False, secrets masked, so no renderer can show them.
    `select` names the prefilter's engine ('hyperscan' / 're'; default: the fastest there) or
    turns it off (False: every line is normalised, the reference the prefilter must equal). `limits` bounds how far a
    compressed input may inflate (default: InputLimits.from_env()). `declined` (when given) gets
    the categories a rule's `exclude` / `not_near` ruled out, which the fallback model may not answer.
    """
    rules = rules or default_rules()
    limits = limits or InputLimits.from_env()
    index = rules.keyword_index()
    warnings = Warnings()
    paths = _readable_paths(paths, warnings)
    signals = FailureSignals()
    region = FailureRegion()
    collector = HitCollector()
    deferred = DeferredHits(rules.rules)
    witness = CulpritWitness()
    ranks_seen = set()
    budget = RegexBudget(warnings)  # the job's regex time, over all its files
    declined = set() if declined is None else declined

    # Bound once: every line of the job goes through these four.
    feed_signals, feed_witness, feed_region, feed_deferred = \
        signals.feed, witness.feed, region.feed, deferred.feed

    # Once the keyword finder has loaded Hyperscan, one pass per message gives each line the
    # mask of the readers' literals (literals.py); before, every literal test runs.
    mask_of = None

    def scanning(finder):
        # The prefilter scans this input with Hyperscan, so it is imported: the keyword finder
        # and the masks take it now, not after HYPERSCAN_AFTER lines answered in Python (the
        # same answers; a 30 MB log's ~2,300 selected lines cost ~10 ms less).
        nonlocal mask_of
        if finder.name == "hyperscan" and not index.hyperscan_loaded:
            index.prepare()
            if mask_of is None and index.hyperscan_loaded:
                mask_of = masker()

    def on_line(line):
        if mask_of is not None:
            line.lits = mask_of(line.msg)
        feed_signals(line)
        feed_witness(line)
        feed_region(line)
        feed_deferred(line)
        if line.rank is not None:
            ranks_seen.add(line.rank)

    cut_lines = set()  # (source, lineno) of lines a viewer cut at a column (paste.cut_width)
    for i, path in enumerate(paths):
        if mask_of is None and index.hyperscan_loaded:
            mask_of = masker()
        file_rank = rank_from_path(path)
        try:
            lines = skip_own_reports(normalize(_raw_lines(path, warnings, rules, chunk_size, select,
                                                          limits, deferred.trends.repeats, scanning),
                                               index=i, file_rank=file_rank, cut=cut_lines))
            for hit in scan(lines, index, on_line, warnings, budget, cut_lines, declined):
                if not deferred.offer(hit):
                    collector.add(hit)
        except (OSError, InputError) as exc:  # refused once opened (a socket, a lost mount)
            reason = str(exc) if isinstance(exc, InputError) else \
                f"{display_name(path)}: {exc.strerror or exc}"
            if len(paths) == 1:
                raise InputError(reason) from None
            warnings.add("unreadable_file", f"{reason}; the job was diagnosed without it")
    for hit in deferred.resolve(rules.rules, signals.last_lineno, collector.hits, index, budget):
        collector.add(hit)
    dumps = dump_files(paths)
    if dumps:
        witness.flight = last_entered(dumps)

    winner = pick_root_cause(collector.hits, signals.root_rank)
    unexplained = None
    if winner is not None and run_resumed(winner, collector.hits, signals):
        winner = None  # the requeued job ran again and finished: nothing ended it
        signals.failed = False
    if winner is not None and all(signals.restarted_and_finished(line.source, line.lineno)
                                  for hit in collector.hits for line in hit.lines[-1:]):
        winner = None  # torchelastic restarted the workers after every hit and the run finished
        signals.failed = False
    if winner is not None and winner.rule.role == "symptom":
        # The first rank to fail crashed (its launcher says so, after the fact): the lost
        # connections and timeouts of its peers are echoes of a crash no category explains.
        crash = crash_echoed(collector.hits, signals)
        if crash is None and exit_echoed(winner, collector.hits, signals) is not None:
            # the rank that left first: its own error where it printed one, else the launcher's line
            crash = first_unexplained_exception(collector.hits, signals, deferred.tracebacks.records) or \
                exit_echoed(winner, collector.hits, signals)
        if crash is not None:
            unexplained, winner = crash, None
    if winner is not None and winner.rule.category == "connection_failure" and winner.rule.role == "cause":
        # A connect failure after torchelastic reported a worker's failure is a round it
        # restarted (`--max_restarts`) that could not connect its gloo mesh, however many lines
        # (LOGLEVEL=INFO) lie between: the first attempt's failure decides.
        late = [hit for hit in collector.hits if hit.rule.category == "connection_failure"
                and hit.rule.role == "cause" and hit.lines
                and signals.first_worker_failed.get(hit.lines[0].source, hit.lines[0].lineno) < hit.lines[0].lineno]
        if late and winner in late:
            collector.hits = [hit for hit in collector.hits if all(hit is not h for h in late)]
            winner = pick_root_cause(collector.hits, signals.root_rank)
    if winner is not None and winner.rule.role == "symptom":
        unexplained = first_unexplained_exception(collector.hits, signals, deferred.tracebacks.records)
        if symptom_overruled(winner, collector.hits, signals, unexplained):
            if unexplained is None and winner.rule.category in taxonomy.TERMINAL:
                unexplained = signals.first_marker  # the failure the step was torn down after
            winner = None
    echo = winner if winner is not None and winner.rule.echo else None
    if echo is not None:
        unexplained, winner = unexplained or echo.first, None  # what ended the peer is not shown
        signals.failed = True  # the echo is a failure's mark even where no failure word is (a NaN loss)
    result = {"schema_version": SCHEMA_VERSION, "tool": tool_info(rules)}
    if winner is None and signals.survived():
        signals.failed = False
    if winner is None:
        records = deferred.tracebacks.records
        # A parse error the frames place under a data reader is proven outside the taxonomy:
        # the text model, which sees only words, does not get to call it a config error.
        outside = bool(reader_steps(unexplained or signals.final_error(), records))
        guess = (_model_guess(region, rules, declined) if signals.failed and use_model and not outside
                 else None)
        result.update(guess or _no_rule_result(signals, unexplained, records))
        if echo is not None and result["category"] == taxonomy.UNKNOWN:  # where to look for the cause
            facts = dict(echo.facts, precision="bf16") if signals.bf16_run else echo.facts
            result["remediation"] = remediation_for(None, echo.rule, facts) + result["remediation"]
        _judge_what_was_read(result, signals, warnings)
        if budget.exhausted and result["category"] == taxonomy.NONE:  # some lines never matched
            result["confidence"] = min(result["confidence"], confidence_levels.DOUBTFUL_NONE)
    else:
        groups = group_by_category(collector.hits, winner)
        main, rule = _finding(groups[0][0], groups[0][1], ranks_seen, signals.bf16_run)
        confidence = confidence_levels.CAUSE if rule.role == "cause" else confidence_levels.SYMPTOM
        if rule.role == "cause" and len(groups[0][1]) > 1:
            confidence = confidence_levels.CAUSE_REPEATED
        if "message_cut" in main["facts"]:
            confidence = min(confidence, confidence_levels.CUT)
        result.update({
            "category": main["category"],
            "layer": main["layer"],
            "title": main["title"],
            "confidence": confidence,
            "source": "rule",
            "rule": main["rule"],
            "evidence": main["evidence"],
            "facts": main["facts"],
            "remediation": remediation_for(rule.info, rule,
                                           main["facts"]),
            "secondary": [_finding(cat, hits, ranks_seen, signals.bf16_run)[0]
                          for cat, hits in groups[1:]],
        })
        if warnings.looks_binary():
            warnings.add("not_text", "most of the input is not text; the diagnosis rests on the text "
                                     "lines found in it")
    result["culprit"] = _culprit(witness, result, signals)
    sure = result["source"] == "rule" and result["confidence"] >= confidence_levels.FIX_FIRST
    result.update(retry_verdict(result["category"], sure=sure))
    result["warnings"] = warnings.as_list()
    return finish(result, redact=redact)


def _readable_paths(paths, warnings):
    """The paths that can be read. One rank's unreadable file must not withhold the others'
    diagnosis: it is named in an `unreadable_file` warning. When none can be read, or the
    job is one file, the first reason is the error."""
    readable, reasons = [], []
    for path in paths:
        try:
            check_readable(path)
            readable.append(path)
        except InputError as exc:
            if len(paths) == 1:
                raise
            reasons.append(str(exc))
    if not readable:
        raise InputError(reasons[0])
    if reasons:
        warnings.add("unreadable_file", f"skipped {len(reasons)} unreadable file"
                     f"{'s' if len(reasons) > 1 else ''}: {'; '.join(reasons)}; "
                     f"the job was diagnosed without {'them' if len(reasons) > 1 else 'it'}")
    return readable


def _culprit(witness, result, signals):
    """Where the failure started (culprit.py): only for a failure the log shows."""
    if result["category"] == taxonomy.NONE or result["source"] == "model":
        return None
    evidence = result["evidence"]
    first = next((e["rank"] for e in evidence if e["rank"] is not None), None)
    raised = set(result["facts"].get("ranks") or ())
    if result["category"] == taxonomy.UNKNOWN and evidence:
        # every rank that printed the same error, not only the few kept as evidence
        text = {e["text"] for e in evidence}
        raised |= {line.rank for line in signals.exceptions
                   if line.text in text and line.rank is not None}
    world = result["facts"].get("world_size")
    return witness.culprit(result["category"], first, frozenset(raised), signals.root_rank,
                           world if isinstance(world, int) else 0)


def _judge_what_was_read(result, signals, warnings):
    """No rule spoke: an empty or binary input is no evidence of health (confidence 0), and a
    log that stops while training, with nothing saying the run finished, is a doubtful `none`."""
    if not signals.last_lineno or warnings.looks_binary():
        code, why = ("empty_input", "the input is empty") if not signals.last_lineno else \
            ("not_text", "the input is not text (binary data, or an unknown compression)")
        warnings.add(code, f"nothing to diagnose: {why}")
        result.update({
            "category": taxonomy.NONE, "layer": None, "title": f"Nothing to diagnose: {why}",
            "source": "none", "rule": None, "confidence": confidence_levels.NOTHING_READ,
            "evidence": [], "facts": {}, "remediation": [], "secondary": [],
        })
    elif result["category"] == taxonomy.NONE and signals.ends_mid_run():
        warnings.add("ends_mid_run", "no failure found, but the log ends without the run "
                     "finishing: its last lines report training steps and nothing after them "
                     "says it finished (killed without a word, preempted, or copied mid-run)")
        result["title"] = "No failure found, but the log ends without the run finishing"
        result["confidence"] = min(result["confidence"], confidence_levels.DOUBTFUL_NONE)


def _model_guess(region, rules, declined=frozenset()):
    """Ask the fallback text model about a failure no rule explains; None below its threshold,
    or when a rule read the words of its answer and ruled that category out (`declined`)."""
    from classifier.diagnosis.fallback import load_model  # plain JSON + math: cheap, but only needed here
    model = load_model()
    if model is None:
        return None
    lines = region.lines()
    texts = [model_text([line]) for line in lines]
    answer = model.answer(model_text(lines))
    if answer is None or answer[0] in (taxonomy.UNKNOWN, taxonomy.NONE) or answer[0] in declined:
        return None
    category, p = answer
    scores = model.line_scores(texts, category)
    drivers = sorted(range(len(lines)), key=lambda i: -scores[i])[:3]
    # Frames often outscore the message they led to; the best-scoring exception line is shown
    # all the same: it is the line a reader checks the answer against.
    messages = [i for i in range(len(lines)) if scores[i] > 0 and EXCEPTION_LINE.match(lines[i].msg)]
    if messages and not set(messages) & set(drivers):
        drivers = drivers[:2] + [max(messages, key=lambda i: scores[i])]
    shown = [i for i in drivers if scores[i] > 0]
    # A frame that drove the answer is shown with the code line under it (the next line of its
    # file): the frame says where, the code what ran there (`os.environ["LOCAL_RANK"]`).
    at = {(line.source, line.lineno): i for i, line in enumerate(lines)}
    for i in list(shown):
        code = at.get((lines[i].source, lines[i].lineno + 1))
        if (texts[i].startswith("frame_") and code is not None and code not in shown
                and not texts[code] and not EXCEPTION_LINE.match(lines[code].msg)):
            shown.append(code)
    evidence = [lines[i] for i in sorted(shown, key=lambda i: line_order(lines[i]))]
    facts = {"model_probability": round(p, 4)}
    return {
        "category": category, "layer": taxonomy.layer_of(category),
        "title": f"Predicted by the fallback text model ({taxonomy.CATEGORIES[category].title})",
        "confidence": round(p, 4), "source": "model", "rule": None,
        "evidence": _evidence_json(evidence), "facts": facts,
        "remediation": remediation_for(rules.categories.get(category), None, facts),
        "secondary": [],
    }


def _no_rule_result(signals, unexplained=None, records=()):
    final = unexplained or signals.final_error()
    if signals.failed and final is not None:
        # The same error printed by other ranks (or earlier on this one) is evidence too.
        echoes = [line for line in signals.exceptions
                  if line.msg == final.msg and line is not final][:MAX_EVIDENCE - 1]
        ranks = sorted({line.rank for line in [final] + echoes if line.rank is not None})
        facts = {"ranks": ranks, "ranks_summary": f"{len(ranks)} ranks"} if ranks else {}
        return {
            "category": taxonomy.UNKNOWN, "layer": None,
            "title": "A failure that no rule explains", "source": "none",
            "confidence": confidence_levels.UNEXPLAINED,
            "rule": None, "evidence": _evidence_json([final] + echoes), "facts": facts,
            "remediation": reader_steps(final, records) + [
                "Read the evidence line: it is the error no rule explains — the first one when other "
                "ranks only echoed it, else the last one the job printed.",
                "Read the traceback just above it on the same rank to find the code that raised it.",
                "If it is a distributed failure this tool should know, add a rule "
                "(docs/writing-rules.md) with this line as an example.",
            ],
            "secondary": [],
        }
    return {
        "category": taxonomy.NONE, "layer": None, "title": "No failure found in the log",
        "source": "none", "rule": None,
        "confidence": confidence_levels.DOUBTFUL_NONE if signals.failed else confidence_levels.HEALTHY,
        # an exception Python reported as ignored (a `__del__` at shutdown) is shown, not counted
        "evidence": _evidence_json([signals.ignored_header]) if signals.ignored_header and not signals.failed else [],
        "facts": {}, "remediation": [], "secondary": [],
    }
