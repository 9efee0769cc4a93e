"""`dsdiag check-config ds_config.json...`: find the config faults before the job costs anything.

Each finding prints as `path:line:col: severity: category: message` with the fix below it
(report.py; also JSON and GitHub Actions annotations); categories are the taxonomy ids of the
log diagnosis. Exit 0 clean (notes allowed), 1 problems (errors, or warnings unless
`--fail-on error`), 2 a file that cannot be read or a usage error. The checks use the installed
DeepSpeed's own config models when deepspeed is importable (and say which version), dsdiag's
own schema otherwise (and say so).
"""

import argparse
import os
import re
import sys
from typing import TYPE_CHECKING

from classifier.preflight.config import report
from classifier.preflight.finding import EXIT_CLEAN, EXIT_ERROR, EXIT_PROBLEMS, Finding

MAX_CONFIG_BYTES = 8 << 20  # a config is a few KB; a 20 MB "config" would take a minute and GBs

if TYPE_CHECKING:
    from classifier.preflight.config.checks import World
    from classifier.preflight.config.parse import Parsed
    from classifier.preflight.deepspeed.introspect import Schema

_SIZE = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:e[0-9]+)?)\s*([kmbt]?)\s*$", re.IGNORECASE)


def parse_count(text: str) -> int:
    """'7e9', '7B', '1.3b', '350M', '7000000000' -> an int count of parameters."""
    match = _SIZE.match(str(text))
    if not match:
        raise argparse.ArgumentTypeError(f"not a parameter count: {text!r} (e.g. 7e9, 7B, 350M)")
    scale = {"": 1, "k": 1e3, "m": 1e6, "b": 1e9, "t": 1e12}[match.group(2).lower()]
    return int(float(match.group(1)) * scale)


def _positive(text):
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be positive: {text!r}")
    return value


def _parser():
    p = argparse.ArgumentParser(
        prog="dsdiag check-config",
        description="Check a DeepSpeed config before launching: syntax and which consumer "
                    "breaks on it, unknown keys, types, batch arithmetic, precision, optimizer "
                    "and scheduler parameters, ZeRO-3 memory.",
        epilog="Exit codes: 0 no problems (notes allowed), 1 problems found (errors, and "
               "warnings unless --fail-on error), 2 a file that cannot be read or a usage error.")
    p.add_argument("configs", nargs="+", metavar="CONFIG",
                   help="ds_config.json files; '-' reads one from stdin")
    world = p.add_mutually_exclusive_group()
    world.add_argument("--world-size", type=_positive, metavar="N",
                       help="data-parallel world size (total GPUs without TP/PP)")
    world.add_argument("--nodes", type=_positive, metavar="N", help="number of nodes")
    p.add_argument("--gpus-per-node", type=_positive, metavar="M", help="GPUs per node")
    p.add_argument("--params", type=parse_count, metavar="N",
                   help="model parameter count (7e9, 7B, 350M) for the ZeRO-3 memory estimate")
    p.add_argument("--largest-layer-params", type=parse_count, default=0, metavar="N",
                   help="parameters of the largest layer (often the embedding), default 0")
    p.add_argument("--gpu-memory", type=float, metavar="GIB",
                   help="memory of one GPU in GiB, to judge the estimate (e.g. 80)")
    p.add_argument("--hf", action="store_true",
                   help="the config goes through HF Trainer/accelerate (json.load; fills 'auto')")
    p.add_argument("--schema", choices=("auto", "deepspeed", "builtin"), default="auto",
                   help="check against the installed DeepSpeed's models (auto when importable) "
                        "or dsdiag's built-in schema")
    env_format = os.environ.get("DSDIAG_FORMAT")
    p.add_argument("-f", "--format", choices=FORMATS,
                   default=env_format if env_format in FORMATS else "text",
                   help="text, json, or github (Actions annotations); default text, env "
                        "DSDIAG_FORMAT")
    p.add_argument("--fail-on", choices=("warning", "error"), default="warning",
                   help="the lowest severity that makes the exit code 1 (default warning)")
    return p


FORMATS = ("text", "json", "github")


class Unreadable(Exception):
    pass


def read_text(path: str) -> str:
    """The file's text ('-': stdin's), decoded as UTF-8; raises Unreadable when it cannot be."""
    try:
        if path == "-":
            raw = sys.stdin.buffer.read(MAX_CONFIG_BYTES + 1)
            path = report.STDIN_NAME
        else:
            with open(path, "rb") as handle:
                raw = handle.read(MAX_CONFIG_BYTES + 1)
    except OSError as exc:
        raise Unreadable(f"cannot read {path}: {exc.strerror or exc}") from None
    if len(raw) > MAX_CONFIG_BYTES:
        raise Unreadable(f"cannot read {path}: larger than {MAX_CONFIG_BYTES >> 20} MiB, which no "
                         f"DeepSpeed config is (they are a few KB)")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[:exc.start].count(b"\n") + 1
        raise Unreadable(f"cannot read {path}: not UTF-8 text (byte {exc.start}, line {line})") \
            from None


def choose_schema(requested: str) -> tuple["Schema", str]:
    """(Schema, why): the installed DeepSpeed's when possible and wanted, else the built-in."""
    from classifier.preflight.deepspeed import introspect as ds_introspect
    if requested == "builtin":
        return ds_introspect.builtin_schema(), "requested with --schema builtin"
    schema = ds_introspect.deepspeed_schema()
    if schema is not None:
        return schema, "deepspeed is importable"
    _, reason = ds_introspect.import_deepspeed()
    if requested == "deepspeed":
        raise Unreadable(f"--schema deepspeed: {reason}")
    return ds_introspect.builtin_schema(), reason


# --- syntax -----------------------------------------------------------------------------------
def syntax_findings(text: str, parsed: "Parsed", hf: bool) -> tuple[list[Finding], bool]:
    """Findings about the file's grammar, and whether the content could be read at all."""
    from classifier.preflight.config.parse import HJSON_ONLY, deepspeed_verdict, json_verdict
    findings = []
    strict = json_verdict(text)
    ds = deepspeed_verdict(text, parsed)
    if parsed.error is not None or (not ds.ok and ds.checked_by == "hjson" and
                                    "Duplicate keys" not in ds.message):
        where = strict if not strict.ok else ds
        if where.line:
            line, col = where.line, where.col
        else:  # a reader gave up without a position (a number past its digit limit)
            line, col = (parsed.error.line, parsed.error.col) if parsed.error else (1, 1)
        detail = strict.message if not strict.ok else ds.message
        if parsed.error is not None and not where.line:
            detail = parsed.error.message
        readers = "neither DeepSpeed (hjson) nor json.load (HF Trainer, accelerate, scripts) " \
            "can read this file" if not ds.ok else \
            "json.load (HF Trainer, accelerate, scripts) cannot read this file (DeepSpeed's hjson can)"
        findings.append(Finding("config_json_syntax", "error", f"{readers}: {detail}",
                                "fix the structure at this position (a missing comma, quote or "
                                "closing brace is the usual cause)", line, col))
        return findings, False
    by_kind = {}
    for feature in parsed.features:
        by_kind.setdefault(feature.kind, []).append(feature)
    if text.startswith("\ufeff"):
        by_kind["bom"] = []
    breaks = "json.load, which HF Trainer, accelerate and most scripts use, fails"
    first = True
    for kind, hits in by_kind.items():
        if kind == "duplicate_key":
            continue
        what = HJSON_ONLY.get(kind, "a UTF-8 byte-order mark")
        lines = sorted({h.line for h in hits})
        where = f" (lines {', '.join(map(str, lines[:8]))}{' ...' if len(lines) > 8 else ''})" \
            if len(lines) > 1 else ""
        line, col = (hits[0].line, hits[0].col) if hits else (1, 1)
        tail = f" ({strict.message} at {strict.line}:{strict.col})" if first and not strict.ok else ""
        first = False
        extra = ""
        if kind == "quoteless_value":
            extra = f'; hjson reads the rest of the line as the string "{hits[0].detail}"'
        findings.append(Finding(
            "config_json_syntax", "error" if hf else "warning",
            f"{what}{where}: DeepSpeed reads a config path with hjson and accepts it, but "
            f"{breaks}{tail}{extra}", _syntax_fix(kind), line, col, facts={"count": len(hits) or 1}))
    for dup in by_kind.get("duplicate_key", []):
        key, first_at = dup.detail.split("\t")
        findings.append(Finding(
            "config_json_syntax", "error", f'duplicate key "{key}" (first at {first_at}): '
            "DeepSpeed refuses the file (ValueError: Duplicate keys in DeepSpeed config), while "
            "json.load silently keeps the last value - so under HF Trainer the first one is "
            "ignored", f'keep one "{key}" and merge the two', dup.line, dup.col, key=key))
    return findings, True


def _syntax_fix(kind):
    return {
        "comment": "delete the comments: JSON has none (keep notes in a README, or in a "
                   '"_comment" key DeepSpeed ignores)',
        "trailing_comma": "delete the comma before the closing bracket",
        "missing_comma": "put a comma between the members",
        "quoteless_key": "put the key in double quotes",
        "quoteless_value": "put the value in double quotes",
        "single_quoted": "use double quotes",
        "multiline_string": "write the string on one line in double quotes",
        "bom": "save the file as UTF-8 without a byte-order mark",
    }.get(kind, "make it plain JSON")


# --- the whole check --------------------------------------------------------------------------
def check_config(text: str, world: "World | None" = None, hf: bool = False,
                 params: float | None = None, largest_layer: int = 0,
                 gpu_memory_gib: float | None = None, schema: "Schema | None" = None
                 ) -> tuple[list[Finding], "Schema"]:
    """Check config text; return (findings sorted by position, schema used)."""
    from classifier.preflight.config import checks, optim, precision, zero
    from classifier.preflight.config import hf as hf_config
    from classifier.preflight.deepspeed import introspect as ds_introspect
    from classifier.preflight.config.parse import parse_config
    schema = schema or ds_introspect.builtin_schema()
    if not text.lstrip("\ufeff").strip():
        return [Finding("config_json_syntax", "error", "the file is empty, so it cannot be read "
                        "as a config: json.load (HF Trainer, accelerate) fails with 'Expecting "
                        "value', and DeepSpeed reads it as {} and stops for want of a batch size",
                        "write the config into it (or point --deepspeed at the right file)",
                        1, 1)], schema
    parsed = parse_config(text)
    hf_autos = [] if hf or parsed.error is not None or parsed.root.kind != "object" else \
        hf_config.auto_paths(parsed.root.to_python())
    findings, readable = syntax_findings(text, parsed, hf or bool(hf_autos))
    if not readable:
        return findings, schema
    if parsed.root.kind != "object":
        findings.append(Finding("config_field_error", "error",
                                f"the config must be a JSON object ({{...}}), not {parsed.root.kind}",
                                "wrap the settings in { }", parsed.root.line, parsed.root.col))
        return findings, schema
    ctx = checks.Context(parsed.root, schema, world or checks.World(), hf=hf or bool(hf_autos),
                         params=params, largest_layer=largest_layer,
                         gpu_memory_gib=gpu_memory_gib, findings=findings)
    if hf_autos:
        # One finding, then the checks as under --hf, rather than an error per "auto".
        hf_autos.sort(key=lambda path: checks.locate(parsed.root, path))
        shown = ", ".join(hf_autos[:4]) + (", ..." if len(hf_autos) > 4 else "")
        ctx.add("config_field_error", "warning", hf_autos[0],
                f'{len(hf_autos)} values are "auto" ({shown}): this config is written for the '
                "Hugging Face integration (Trainer / accelerate), which fills them in, while "
                'DeepSpeed alone fails on the first "auto" it reads; checked as with --hf',
                "use --hf when the config goes through HF Trainer or accelerate; otherwise set "
                "real values", auto_keys=hf_autos)
    checks.check_keys(ctx)
    checks.check_auto(ctx)
    checks.check_batch(ctx)
    precision.check_precision(ctx)
    optim.check_optimizer(ctx)
    optim.check_scheduler(ctx)
    zero.check_zero(ctx)
    if schema.source == "deepspeed" and not any(f.severity == "error" for f in findings):
        _second_opinion(ctx)
    findings.sort(key=lambda f: (f.line, f.col, ("error", "warning", "note").index(f.severity),
                                 f.category, f.message))
    return findings, schema


def _second_opinion(ctx):
    """Let DeepSpeed build its DeepSpeedConfig from the config; report what our checks missed."""
    from classifier.preflight.deepspeed import introspect as ds_introspect
    from classifier.preflight.config.checks import BATCH_KEYS, strip_auto
    data = strip_auto(ctx.data)
    batch = ctx.batch
    for key in BATCH_KEYS:
        data.pop(key, None)
    mb, gas = (batch[1], batch[2]) if batch else (1, 1)
    data.update(train_micro_batch_size_per_gpu=mb, gradient_accumulation_steps=gas)
    error = ds_introspect.deepspeed_rejects(data)
    if error is None:
        return
    key = next((k for k in _keys(ctx.data) if re.search(rf"\b{re.escape(k.split('.')[-1])}\b",
                                                        error)), "")
    ctx.add("config_field_error", "error", key,
            f"{ctx.dsname} refuses the config while building its DeepSpeedConfig: {error}",
            "fix the value the message names")


def _keys(data, prefix=""):
    for key, value in data.items():
        path = f"{prefix}.{key}" if prefix else key
        if isinstance(value, dict):
            yield from _keys(value, path)
        yield path


def main(argv: list[str]) -> int:
    """`dsdiag check-config`: check each config file, print the findings; return the exit code."""
    from classifier.preflight.config.checks import World
    parser = _parser()
    args = parser.parse_args(argv)
    if args.nodes and not args.gpus_per_node:
        parser.error("--nodes needs --gpus-per-node")
    if args.gpus_per_node and not args.nodes:
        args.nodes = 1
    world = World()
    if args.world_size:
        world = World(args.world_size, 1, None)
    elif args.nodes:
        world = World(args.nodes * args.gpus_per_node, args.nodes, args.gpus_per_node)
    try:
        schema, why = choose_schema(args.schema)
    except Unreadable as exc:
        sys.stderr.write(f"dsdiag check-config: error: {exc}\n")
        return EXIT_ERROR
    everything, docs, read = [], [], 0
    for path in args.configs:
        shown = report.STDIN_NAME if path == "-" else path
        try:
            text = read_text(path)
        except Unreadable as exc:  # say so and go on with the other files, as linters do
            sys.stdout.flush()
            sys.stderr.write(f"dsdiag check-config: error: {exc}\n")
            continue
        read += 1
        findings, schema = check_config(text, world, hf=args.hf, params=args.params,
                                        largest_layer=args.largest_layer_params,
                                        gpu_memory_gib=args.gpu_memory, schema=schema)
        everything += findings
        if args.format == "json":
            docs.append(report.json_document(shown, findings, schema, why, world))
        elif args.format == "github":
            report.render_github(shown, findings, sys.stdout)
        else:
            report.render_text(shown, findings, sys.stdout)
    if args.format == "json":
        report.render_json(docs, sys.stdout)
    elif read:
        sys.stdout.write(report.summary_line(everything, read, schema, why) + "\n")
    sys.stdout.flush()
    if read < len(args.configs):
        return EXIT_ERROR
    failing = ("error",) if args.fail_on == "error" else ("error", "warning")
    return EXIT_PROBLEMS if any(f.severity in failing for f in everything) else EXIT_CLEAN
