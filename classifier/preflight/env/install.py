"""`dsdiag env`, install section: torch and its CUDA, nvcc, the driver, NCCL, DeepSpeed and its
ops - the versions that must fit together (the chapter's first check, ds_report's territory).

torch and deepspeed are imported here, lazily; nvcc and nvidia-smi run with a time limit.
"""

import os
import platform
import re
import shutil
import sys
from typing import TYPE_CHECKING

from classifier.preflight.env.report import Check, major_minor, run_command

if TYPE_CHECKING:
    from classifier.preflight.env.report import Report


def check_install(report: "Report") -> None:
    """Run the install section's checks into the report."""
    section = "install"
    report.add(section, "python", "ok", f"{platform.python_version()} ({sys.executable})")
    torch_cuda = _check_torch(report)
    nvcc = _check_nvcc(report, torch_cuda)
    driver_cuda = _check_driver(report, torch_cuda)
    for check in compare_cuda(torch_cuda, nvcc, driver_cuda):
        report.checks.append(check)
    _check_nccl(report, torch_cuda)
    _check_deepspeed(report)


def _check_torch(report):
    try:
        import torch
    except ImportError as exc:
        report.add("install", "torch", "error", f"torch is not importable: {exc}",
                   "version_mismatch", "install the torch build that matches your CUDA "
                   "(pip install torch==<version> --index-url https://download.pytorch.org/whl/cuXXX)")
        return None
    except Exception as exc:  # an undefined symbol in libtorch lands here as OSError/ImportError
        report.add("install", "torch", "error", f"importing torch failed: {exc}",
                   "version_mismatch", "reinstall torch; an undefined symbol means a library from "
                   "a different CUDA/torch build is loaded first (check LD_LIBRARY_PATH)")
        return None
    cuda = torch.version.cuda
    hip = getattr(torch.version, "hip", None)
    try:
        count = torch.cuda.device_count() if (cuda or hip) else 0
    except Exception:
        count = 0
    report.torch_gpus = count
    build = f"CUDA {cuda}" if cuda else f"ROCm {hip}" if hip else "CPU-only build (no CUDA)"
    report.add("install", "torch", "ok", f"{torch.__version__}, {build}, GPUs visible to torch: "
               f"{count}", version=torch.__version__, cuda=cuda, hip=hip, gpus=count)
    return cuda


def _find_nvcc():
    home = os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH")
    for candidate in ([os.path.join(home, "bin", "nvcc")] if home else []) + \
            [shutil.which("nvcc") or "", "/usr/local/cuda/bin/nvcc"]:
        if candidate and os.path.isfile(candidate):
            return candidate
    return None


def _check_nvcc(report, torch_cuda):
    path = _find_nvcc()
    if path is None:
        if torch_cuda:
            report.add("install", "nvcc", "warning", "nvcc not found (no CUDA_HOME, not on PATH, "
                       "no /usr/local/cuda): DeepSpeed cannot JIT-compile its CUDA ops; only ops "
                       "prebuilt into the wheel will load", "op_build_error",
                       f"install the CUDA {torch_cuda} toolkit and export CUDA_HOME, or install "
                       "DeepSpeed with the ops you use prebuilt on a machine that has it "
                       "(DS_BUILD_CPU_ADAM=1, DS_BUILD_FUSED_ADAM=1, ...)")
        else:
            report.add("install", "nvcc", "skipped", "nvcc not found; not needed with a CPU-only "
                       "torch (CUDA toolkit not checked)")
        return None
    result = run_command([path, "--version"], report.timeout)
    match = re.search(r"release (\d+\.\d+)", result[1]) if result else None
    if not match:
        report.add("install", "nvcc", "warning", f"{path} --version gave no release number",
                   "op_build_error", "check the CUDA toolkit install")
        return None
    report.add("install", "nvcc", "ok", f"CUDA toolkit {match.group(1)} ({path})",
               version=match.group(1), path=path)
    return match.group(1)


def parse_nvidia_smi(query_output: str, header_output: str | None
                     ) -> tuple[list[dict[str, int | str]], str | None, str | None]:
    """GPUs from `nvidia-smi --query-gpu=index,uuid,name,memory.total,driver_version
    --format=csv,noheader` and the CUDA version from the plain `nvidia-smi` header."""
    gpus, driver = [], None
    for line in query_output.splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) >= 5 and parts[0].isdigit():
            gpus.append({"index": int(parts[0]), "uuid": parts[1], "name": parts[2],
                         "memory": parts[3]})
            driver = parts[4]
    match = re.search(r"CUDA Version:\s*(\d+\.\d+)", header_output or "")
    return gpus, driver, match.group(1) if match else None


def _check_driver(report, torch_cuda):
    query = run_command(["nvidia-smi", "--query-gpu=index,uuid,name,memory.total,driver_version",
                         "--format=csv,noheader"], report.timeout)
    if query is None:
        status = "warning" if torch_cuda and report.torch_gpus == 0 else "skipped"
        report.add("install", "driver", status, "nvidia-smi not found or not answering: no NVIDIA "
                   "driver here, so the driver version and the GPUs present were not checked",
                   "device_visibility" if status == "warning" else None,
                   "run dsdiag env on a GPU node" if status == "warning" else "")
        return None
    header = run_command(["nvidia-smi"], report.timeout)
    gpus, driver, cuda = parse_nvidia_smi(query[1], header[1] if header else "")
    if query[0] != 0 or not gpus:
        report.add("install", "driver", "error", "nvidia-smi fails: " +
                   (query[1].strip().splitlines() or ["no output"])[-1], "version_mismatch",
                   "the kernel driver and user-space libraries differ (reboot after a driver "
                   "update) or the driver is not loaded")
        report.gpus = []
        return None
    report.gpus = gpus
    report.add("install", "driver", "ok", f"driver {driver}, supports CUDA up to {cuda or '?'}; "
               f"{len(gpus)} GPU(s): {', '.join(sorted({g['name'] for g in gpus}))}",
               driver=driver, cuda=cuda, gpus=len(gpus))
    return cuda


def compare_cuda(torch_cuda: str | None, nvcc: str | None, driver_cuda: str | None) -> list[Check]:
    """Checks for the three CUDA versions that must fit: torch's build, the toolkit, the driver."""
    out = []
    t, n, d = major_minor(torch_cuda), major_minor(nvcc), major_minor(driver_cuda)
    if t and n and t[0] != n[0]:
        out.append(Check("install", "torch vs nvcc", "error",
                         f"torch was built with CUDA {torch_cuda} but nvcc is CUDA {nvcc}: DeepSpeed "
                         "refuses to JIT-build ops across CUDA major versions, and extensions built "
                         "anyway fail with undefined symbols", "version_mismatch",
                         f"install the CUDA {torch_cuda} toolkit (point CUDA_HOME at it) or a torch "
                         f"built for CUDA {nvcc}"))
    elif t and n and t != n:
        out.append(Check("install", "torch vs nvcc", "warning",
                         f"torch CUDA {torch_cuda} vs nvcc {nvcc}: same major version, so DeepSpeed "
                         "builds ops, but a minor mismatch is the first suspect when one misbehaves",
                         "version_mismatch", f"prefer the CUDA {torch_cuda} toolkit"))
    if t and d and t > d:
        out.append(Check("install", "torch vs driver", "error" if t[0] > d[0] else "warning",
                         f"torch needs CUDA {torch_cuda} but the driver supports only up to "
                         f"{driver_cuda}: CUDA fails to initialise ('driver is too old')"
                         if t[0] > d[0] else f"torch CUDA {torch_cuda} is newer than the driver's "
                         f"{driver_cuda}: it runs through minor-version compatibility, but kernels "
                         "that need PTX JIT can fail", "version_mismatch",
                         "update the NVIDIA driver, or install a torch built for an older CUDA"))
    if n and d and n > d:
        out.append(Check("install", "nvcc vs driver", "warning",
                         f"nvcc {nvcc} is newer than the driver's CUDA {driver_cuda}: ops "
                         "DeepSpeed JIT-builds with it may not load (unsupported PTX version)",
                         "version_mismatch", "update the driver or use an older toolkit"))
    return out


def _check_nccl(report, torch_cuda):
    if not torch_cuda:
        report.add("install", "nccl", "skipped", "torch has no CUDA, so no NCCL (NCCL not checked)")
        return
    try:
        import torch
        version = torch.cuda.nccl.version()
    except Exception as exc:
        report.add("install", "nccl", "error", f"torch cannot load NCCL: {exc}", "version_mismatch",
                   "reinstall torch (its wheel ships NCCL); check LD_LIBRARY_PATH for another "
                   "libnccl loaded first")
        return
    text = ".".join(map(str, version)) if isinstance(version, tuple) else str(version)
    report.add("install", "nccl", "ok", f"NCCL {text} (the one torch loads)", version=text)


def _check_deepspeed(report):
    from classifier.preflight.deepspeed.introspect import import_deepspeed, quiet
    module, reason = import_deepspeed()
    if module is None:
        report.add("install", "deepspeed", "error", reason, "version_mismatch",
                   "pip install deepspeed (after torch), then run ds_report")
        return
    from deepspeed import git_version_info as info
    accelerator = "?"
    try:
        from deepspeed.accelerator import get_accelerator
        with quiet():
            accelerator = get_accelerator()._name
    except Exception:
        pass
    report.add("install", "deepspeed", "ok", f"{module.__version__}, accelerator {accelerator}",
               version=module.__version__, accelerator=accelerator)
    if accelerator == "cpu" and report.torch_gpus:
        report.add("install", "deepspeed accelerator", "warning",
                   f"torch sees {report.torch_gpus} GPU(s) but DeepSpeed chose the cpu accelerator",
                   "device_visibility", "unset DS_ACCELERATOR or set it to cuda")
    _check_wheel_build(report, info)
    _check_ops(report, info)


def _check_wheel_build(report, info):
    """Prebuilt ops are tied to the torch and CUDA the wheel was compiled with (ds_report's
    'deepspeed wheel compiled w.' line)."""
    installed = [name for name, on in (getattr(info, "installed_ops", {}) or {}).items() if on]
    built = getattr(info, "torch_info", {}) or {}
    if not installed:
        report.add("install", "deepspeed ops build", "info", "no ops prebuilt into the wheel: "
                   "they are JIT-compiled on first use (needs nvcc and ninja on GPU machines)")
        return
    import torch
    problems = []
    if major_minor(built.get("version")) and major_minor(built.get("version")) != major_minor(
            torch.__version__):
        problems.append(f"torch {built.get('version')} (running {torch.__version__})")
    if major_minor(built.get("cuda_version")) and major_minor(torch.version.cuda) and \
            major_minor(built.get("cuda_version"))[0] != major_minor(torch.version.cuda)[0]:
        problems.append(f"CUDA {built.get('cuda_version')} (torch has {torch.version.cuda})")
    if problems:
        report.add("install", "deepspeed ops build", "error",
                   f"the prebuilt ops ({', '.join(installed)}) were compiled against "
                   f"{' and '.join(problems)}: loading them fails with undefined symbols",
                   "version_mismatch", "reinstall deepspeed against this torch "
                   "(pip install --force-reinstall --no-cache-dir deepspeed)")
    else:
        report.add("install", "deepspeed ops build", "ok",
                   f"prebuilt ops {', '.join(installed)} match torch {built.get('version')}")


def _check_ops(report, info):
    from classifier.preflight.deepspeed.introspect import quiet
    try:
        from deepspeed.ops.op_builder.all_ops import ALL_OPS
        from torch.utils.cpp_extension import is_ninja_available
    except Exception as exc:
        report.add("install", "deepspeed ops", "skipped", f"op list not available: {exc}")
        return
    compatible, incompatible = [], []
    for name, builder in ALL_OPS.items():
        try:
            with quiet():
                ok = builder.is_compatible(verbose=False)
        except Exception:
            ok = False
        (compatible if ok else incompatible).append(name)
    ninja = is_ninja_available()
    summary = f"{len(compatible)} of {len(ALL_OPS)} ops can be JIT-built here"
    if incompatible:
        summary += f"; not buildable: {', '.join(incompatible)}"
        if incompatible == ["async_io"]:
            summary += " (async_io is needed only for NVMe offload: install libaio-dev)"
    report.add("install", "deepspeed ops", "ok" if not incompatible or incompatible == ["async_io"]
               else "info", summary, compatible=compatible, incompatible=incompatible)
    if not ninja:
        report.add("install", "ninja", "warning", "ninja is missing: DeepSpeed cannot JIT-compile "
                   "any op", "op_build_error", "pip install ninja")


