"""`dsdiag rules lint|test DIR...`: tools for rule authors."""

import argparse
import sys


def _ere_escape(text):
    """Escape a literal for a POSIX extended regular expression."""
    return "".join("\\" + c if c in ".[]()*+?{}|^$\\" else c for c in text)


def main(argv):
    """Lint rule files (schema, regexes) or run their own examples."""
    p = argparse.ArgumentParser(prog="dsdiag rules", description="Check or export rule files.")
    p.add_argument("action", choices=("lint", "test", "export"))
    p.add_argument("dirs", nargs="*", metavar="DIR", help="extra rule directories")
    p.add_argument("--grep", action="store_true",
                   help="with export: the rules' keywords as POSIX EREs, one per line, "
                        "for `grep -iE -f` (what dsdiag's scan looks for)")
    args = p.parse_args(argv)
    from classifier.rules import RuleError, load_rules
    try:
        rules = load_rules(args.dirs, check_builtin=True)
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
        print(f"{len(rules.rules)} rules in {len(rules.categories)} categories: ok")
        return 0
    from classifier.ruletest import check_example, example_cases
    failed = total = 0
    for _, rule, kind, text, facts in example_cases(rules):
        total += 1
        problem = check_example(rule, kind, text, facts, rules)
        if problem:
            failed += 1
            print(f"{rule.path}: {problem}")
    print(f"{total - failed} passed, {failed} failed")
    return 1 if failed else 0
