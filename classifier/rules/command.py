"""`dsdiag rules lint|test DIR...`: tools for rule authors."""

import argparse
import sys


def _ere_escape(text):
    """Escape a literal for a POSIX extended regular expression."""
    return "".join("\\" + c if c in ".[]()*+?{}|^$\\" else c for c in text)


def main(argv: list[str]) -> int:
    """Lint rule files (schema, regexes) or run their own examples."""
    p = argparse.ArgumentParser(prog="dsdiag rules", description="Check or export rule files.")
    p.add_argument("action", choices=("lint", "test", "export"))
    p.add_argument("dirs", nargs="*", metavar="DIR",
                   help="extra rule directories; `lint` checks only these (without one it "
                        "lints the built-in set, which the test suite also does)")
    p.add_argument("--grep", action="store_true",
                   help="with export: the rules' keywords as POSIX EREs, one per line, "
                        "for `grep -iE -f` (what dsdiag's scan looks for)")
    args = p.parse_args(argv)
    from classifier.rules.load import RuleError, builtin_rules_dir, load_rules
    try:
        # The built-in set is linted by the test suite; the backtracking lint of its ~400
        # regexes takes seconds, so a user's `lint DIR` checks only DIR.
        rules = load_rules(args.dirs, check_builtin=args.action == "lint" and not args.dirs)
    except RuleError as exc:
        for problem in exc.problems:
            sys.stderr.write(problem + "\n")
        return 2
    if args.action == "export":
        if not args.grep:
            p.error("export needs --grep")
        for keyword in sorted({k for rule in rules.rules for k in rule.keywords}):
            print(_ere_escape(keyword))
        return 0
    if args.action == "lint":
        if args.dirs:
            builtin = str(builtin_rules_dir())
            mine = [r for r in rules.rules if not r.path.startswith(builtin)]
            print(f"{len(mine)} rules in {len({r.path for r in mine})} files: ok "
                  f"(they join {len(rules.rules) - len(mine)} built-in rules)")
        else:
            print(f"{len(rules.rules)} rules in {len(rules.categories)} categories: ok")
        return 0
    from classifier.rules.examples import check_example, example_cases
    failed = total = 0
    for _, rule, kind, text, facts in example_cases(rules):
        total += 1
        problem = check_example(rule, kind, text, facts, rules)
        if problem:
            failed += 1
            print(f"{rule.path}: {problem}")
    print(f"{total - failed} passed, {failed} failed")
    return 1 if failed else 0
