"""Refresh the README's category table and demo output from the real rules and CLI: run from the repo root."""
import subprocess, sys
sys.path.insert(0, ".")
from classifier.rules.load import load_rules
from classifier.taxonomy import CATEGORIES
rules = load_rules()
rows = []
for cid, row in CATEGORIES.items():
    n = sum(1 for r in rules.rules if r.category == cid)
    rows.append(f"| `{cid}` | {row.layer} | {row.title} ({n} rules) |")
text = open("README.md").read()
start = text.index("|---|---|---|\n") + len("|---|---|---|\n")
end = text.index("| `unknown` |")
text = text[:start] + "\n".join(rows) + "\n" + text[end:]
out = subprocess.run([sys.executable, "-m", "classifier", "--color", "never", "examples/zero3_oom_rank3_of_16.log"], capture_output=True, text=True).stdout.rstrip()
s = text.index("```text\n", text.index("`make demo` prints")) + len("```text\n")
e = text.index("\n```", s)
text = text[:s] + out + text[e:]
open("README.md", "w").write(text)
