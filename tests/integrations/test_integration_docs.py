"""The docs say what an operator needs beside every integration example."""

import re

from conftest import ROOT

DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def _blocks(path):
    return re.findall(r"```(?:sh|bash)\n(.*?)```", path.read_text(), flags=re.DOTALL)


def test_every_tee_example_shows_how_the_pipeline_reports_failure():
    # `cmd | dsdiag --tee` answers with dsdiag's code alone unless pipefail / PIPESTATUS is used.
    seen = 0
    for path in DOCS:
        for block in _blocks(path):
            if "dsdiag --tee" in block:
                seen += 1
                assert "pipefail" in block or "PIPESTATUS" in block, (path.name, block)
    assert seen >= 3


def test_slurm_docs_cover_permissions_accounting_and_a_tamper_proof_record():
    text = (ROOT / "docs" / "integrations.md").read_text()
    assert "AccountingStoreFlags=job_comment" in text and "sacct -o Comment" in text
    assert "AdminComment" in text and "root `Epilog`" in text
    assert "chmod -R a+rX" in text and "sudo -u nobody" in text
