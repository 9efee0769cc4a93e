"""A non-editable install ships the rules inside the package and works away from the checkout."""

import subprocess
import sys
import zipfile

from conftest import DEMO, ROOT


def test_wheel_ships_rules_and_diagnoses_outside_the_checkout(tmp_path):
    wheels = tmp_path / "wheels"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                    "-w", str(wheels), str(ROOT)], check=True, capture_output=True, timeout=300)
    wheel = next(wheels.glob("dsdiag-*.whl"))
    names = zipfile.ZipFile(wheel).namelist()
    shipped = {n.rsplit("/", 1)[1] for n in names if n.startswith("classifier/_rules/")}
    expected = {p.name for p in (ROOT / "rules").glob("*.yaml")}
    assert expected and expected <= shipped
    assert "classifier/diagnosis/model.json" in names
    # every module of the checkout is in the wheel (a sub-package left out of pyproject is not)
    modules = {str(p.relative_to(ROOT)) for p in (ROOT / "classifier").rglob("*.py")}
    assert modules <= set(names), sorted(modules - set(names))
    site = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target", str(site),
                    str(wheel)], check=True, capture_output=True, timeout=300)
    proc = subprocess.run([sys.executable, "-m", "classifier", "--format", "json", str(DEMO)],
                          capture_output=True, text=True, cwd=tmp_path, timeout=60,
                          env={"PYTHONPATH": str(site), "PATH": "/usr/bin:/bin"})
    assert proc.returncode == 0, proc.stderr
    assert '"category": "gpu_oom"' in proc.stdout
    probe = subprocess.run([sys.executable, "-c", "import sys, classifier.rules.load as r; "
                            "print(r.builtin_rules_dir()); print('importlib.resources' in sys.modules)"],
                           capture_output=True, text=True, cwd=tmp_path, env={"PYTHONPATH": str(site)})
    where, resources = probe.stdout.split()
    assert where.startswith(str(site)) and (site / "classifier" / "_rules").is_dir()
    assert resources == "False"  # found beside the module: importlib.resources costs ~5 ms a run


def test_the_build_prints_no_deprecation_warning(tmp_path):
    # `make demo` builds the package; setuptools warns on every build about a license table.
    script = ("import setuptools.build_meta as backend, sys; "
              "print(backend.prepare_metadata_for_build_wheel(sys.argv[1]))")
    proc = subprocess.run([sys.executable, "-W", "always", "-c", script, str(tmp_path)], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    noise = proc.stdout + proc.stderr
    assert "deprecat" not in noise.lower() and "Warning" not in noise, noise[-2000:]
    metadata = next(tmp_path.glob("*.dist-info")) / "METADATA"
    assert "License-Expression: Apache-2.0" in metadata.read_text()
