"""Where the rule files are: the shipped rules directory and the YAML files of a directory.

Plain strings on the run path (pathlib, with urllib.parse and ipaddress, cost each run about
2 ms); the Path forms are for callers that want them.
"""

import os


def builtin_rules_path() -> str:
    """The shipped rules: the repo's `rules/` in a checkout, package data when installed."""
    package = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
    # A checkout's, else the package data beside this module (importlib.resources, only for
    # a zipped install: its import costs ~5 ms a run).
    for found in (os.path.join(os.path.dirname(package), "rules"), os.path.join(package, "_rules")):
        if os.path.isdir(found):
            return found
    from importlib.resources import files
    return str(files("classifier") / "_rules")


def rule_file_paths(directory: "str | os.PathLike") -> list[str]:
    """The `*.yaml` files of a directory (hidden ones left out, as a glob does), sorted."""
    directory = os.fspath(directory)
    return sorted(os.path.join(directory, name) for name in os.listdir(directory)
                  if name.endswith(".yaml") and not name.startswith("."))


def builtin_rules_dir():
    """builtin_rules_path() as a pathlib.Path."""
    from pathlib import Path
    return Path(builtin_rules_path())


def rule_files(directory: "str | os.PathLike") -> list:
    """rule_file_paths() as pathlib.Paths."""
    from pathlib import Path
    return [Path(p) for p in rule_file_paths(directory)]
