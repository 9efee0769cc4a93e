#!/usr/bin/env python3
"""Real CUDA failure logs: run the GPU scenarios on a GPU machine, then add them to the corpus.

On the GPU machine (python3 with torch, deepspeed, transformers and accelerate; one GPU):
    python3 corpus/generate/gpu/run_gpu.py run OUTDIR        # OUTDIR/<name>.log + manifest.json
Back here, after reading every log:
    python3 corpus/generate/gpu/run_gpu.py ingest OUTDIR [CORPUS]  # CORPUS/<category>/gpu_<name>.{log,yaml}

A scenario whose log lacks its signature, or whose exit status is not the expected one, is
reported and not ingested.  Stdlib only; every job runs in its own session with a timeout.
"""
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import gpu_more

HERE = Path(__file__).resolve().parent
CORPUS = HERE.parent.parent
TR = "python3 -m torch.distributed.run --master_addr 127.0.0.1 --master_port {port} --nproc_per_node"
DS = "deepspeed --master_addr 127.0.0.1 --master_port {port} --num_gpus 1"

# (name, category, family, lane, command, extra env, signature regexes, expect)
# lane "mem" runs one at a time (the jobs that fill the card); "light" beside it.  gpu_more.py's
# "fill" lane (jobs that take the whole card) runs first, alone but for its "nogpu" lane.
DEADLINE = time.time() + float(os.environ.get("GPU_SCEN_BUDGET", "420"))
PHASE_END = [DEADLINE - 150]  # the first phase starts no job after this, so the rest get their time
SCENARIOS = [
    ("oom_alloc_torchrun", "gpu_oom", "plain_alloc_oom", "mem",
     f"{TR} 1 gpu_job.py --fail oom_alloc", {"NCCL_DEBUG": "INFO"}, [r"CUDA out of memory"], "fail"),
    ("oom_optimizer_ds", "gpu_oom", "optimizer_state_oom", "mem",
     f"{DS} gpu_job.py --fail oom_optimizer --config configs/zero0_fp32.json", {}, [r"CUDA out of memory"], "fail"),
    ("oom_forward_ds_bf16", "gpu_oom", "activation_oom", "mem",
     f"{DS} gpu_job.py --fail oom_forward --config configs/zero2_bf16.json", {}, [r"CUDA out of memory"], "fail"),
    ("oom_accelerate_ds", "gpu_oom", "accelerate_activation_oom", "mem",
     "accelerate launch --num_processes 1 --main_process_port {port} --use_deepspeed --zero_stage 2 "
     "--mixed_precision bf16 --gradient_accumulation_steps 1 hf_job.py accelerate_oom", {},
     [r"CUDA out of memory"], "fail"),
    ("fp16_collapse_ds", "fp16_overflow", "loss_scale_collapse", "mem",
     f"{DS} gpu_job.py --fail fp16_collapse --steps 40 --config configs/zero1_fp16_collapse.json", {},
     [r"cannot decrease scale|loss scale already at minimum"], "fail"),
    ("fp16_recover_ds", "none", "loss_scale_recovers", "mem",
     f"{DS} gpu_job.py --fail fp16_recover --steps 30 --config configs/zero1_fp16_recover.json", {},
     [r"step 0 loss \d{5,}", r"^done"], "ok"),
    ("healthy_bf16_nccl_info", "none", "healthy_nccl_info", "mem",
     f"{TR} 1 gpu_job.py --fail none --steps 5 --config configs/zero2_bf16.json",
     {"NCCL_DEBUG": "INFO"}, [r"NCCL INFO", r"done"], "ok"),
    ("invalid_ordinal_torchrun", "device_visibility", "more_ranks_than_gpus", "light",
     f"{TR} 2 gpu_job.py --fail none", {}, [r"invalid device ordinal"], "fail"),
    ("dup_gpu_nccl", "device_visibility", "two_ranks_one_gpu", "light",
     f"{TR} 2 gpu_job.py --fail dup_gpu", {"NCCL_DEBUG": "WARN"}, [r"Duplicate GPU"], "fail"),
    # the launcher sets CUDA_VISIBLE_DEVICES itself, so the job runs: a healthy log with a warning
    ("no_visible_gpu_ds", "none", "launcher_resets_visible_devices", "light",
     f"{DS} gpu_job.py --fail none --config configs/zero2_bf16.json", {"CUDA_VISIBLE_DEVICES": ""},
     [r"unable to detect it", r"exits successfully"], "ok"),
    ("no_visible_gpu_torchrun", "device_visibility", "no_visible_gpu", "light",
     f"{TR} 1 gpu_job.py --fail none", {"CUDA_VISIBLE_DEVICES": ""},
     [r"(?i)GPUs? (are )?available|CUDA-capable|NVIDIA driver|no GPU|invalid device"], "fail"),
    ("ds_include_missing_slot", "device_visibility", "include_absent_gpu", "light",
     "deepspeed --include localhost:1 --master_port {port} gpu_job.py --fail none --config configs/zero2_bf16.json",
     {}, [r"(?i)no slot|not found|invalid device|GPU"], "fail"),
    ("device_assert_torchrun", "unknown", "embedding_index_assert", "light",
     f"{TR} 1 gpu_job.py --fail device_assert", {}, [r"device-side assert"], "fail"),
    ("nccl_bad_ifname", "nccl_network", "socket_ifname_missing", "light",
     f"{TR} 1 gpu_job.py --fail none", {"NCCL_SOCKET_IFNAME": "ib9", "NCCL_DEBUG": "WARN"},
     [r"(?i)interface|ncclInternalError|ncclSystemError|ncclInvalidUsage|Bootstrap"], "fail"),
    ("fused_adam_cuda_home_missing", "op_build_error", "cuda_home_missing", "light",
     f"{DS} gpu_job.py --fail build --config configs/fused_adam.json",
     {"CUDA_HOME": "/usr/local/cuda-11.8", "TORCH_CUDA_ARCH_LIST": "9.0", "TORCH_EXTENSIONS_DIR": "{work}/ext"},
     [r"nvcc: not found|Error building extension|ninja: build stopped"], "fail"),
    # DeepSpeed's JIT path does not compare the versions: the old toolkit's build fails instead
    ("fused_adam_nvcc_version_mismatch", "op_build_error", "old_toolkit_in_cuda_home", "light",
     f"{DS} gpu_job.py --fail build --config configs/fused_adam.json",
     {"CUDA_HOME": "{work}/cuda-11.8", "TORCH_CUDA_ARCH_LIST": "9.0", "TORCH_EXTENSIONS_DIR": "{work}/ext",
      "SETUP": "fake_nvcc"},
     [r"cannot find -lcudart|ninja: build stopped"], "fail"),
    ("fused_adam_bad_arch_list", "op_build_error", "bad_cuda_arch_list", "light",
     f"{DS} gpu_job.py --fail build --config configs/fused_adam.json",
     {"TORCH_CUDA_ARCH_LIST": "9.0;sm_90a", "TORCH_EXTENSIONS_DIR": "{work}/ext"},
     [r"invalid literal for int"], "fail"),
    # Hopper's arch-specific target as users write it for other tools
    ("fused_adam_arch_list_90a", "op_build_error", "arch_list_suffix", "light",
     f"{DS} gpu_job.py --fail build --config configs/fused_adam.json",
     {"TORCH_CUDA_ARCH_LIST": "9.0a", "TORCH_EXTENSIONS_DIR": "{work}/ext"},
     [r"invalid literal for int"], "fail"),
    ("fused_adam_unsupported_arch", "op_build_error", "arch_unknown_to_nvcc", "light",
     f"{DS} gpu_job.py --fail build --config configs/fused_adam.json",
     {"TORCH_CUDA_ARCH_LIST": "13.5", "TORCH_EXTENSIONS_DIR": "{work}/ext"},
     [r"(?i)unsupported gpu architecture|Unknown CUDA arch|Error building extension"], "fail"),
    ("nvcc_syntax_error", "op_build_error", "extension_compile_error", "light",
     "python3 build_ext.py", {"TORCH_EXTENSIONS_DIR": "{work}/ext"}, [r"Error building extension"], "fail"),
    ("hf_trainer_batch_mismatch", "batch_size_mismatch", "hf_trainer_ds_batch", "light",
     f"{DS} hf_job.py trainer --config configs/hf_mismatch.json --out {{work}}/out", {},
     [r"mismatch TrainingArguments"], "fail"),
]
gpu_more.register(SCENARIOS, TR, DS)


def fill(s, port, work):
    return s.replace("{port}", str(port)).replace("{work}", str(work))


def fake_nvcc(root):
    """A CUDA_HOME whose nvcc reports 11.8, as an old toolkit left first on a node would."""
    (root / "bin").mkdir(parents=True, exist_ok=True)
    nvcc = root / "bin" / "nvcc"
    nvcc.write_text("#!/bin/sh\necho 'nvcc: NVIDIA (R) Cuda compiler driver'\n"
                    "echo 'Cuda compilation tools, release 11.8, V11.8.89'\n")
    nvcc.chmod(0o755)


def run_one(sc, port, out, results):
    """Run one scenario in its own session; keep its merged output byte for byte."""
    name, category, family, lane, cmd, env_extra, sig, expect = sc
    if time.time() > min(DEADLINE - 20, PHASE_END[0]):
        print(f"{name}: not run (out of time)", flush=True)
        return
    work = Path("/tmp/gpu-scen") / name
    work.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, PYTHONUNBUFFERED="1", OMP_NUM_THREADS="4")
    for k, v in env_extra.items():
        env[k] = fill(v, port, work)
    if env.pop("SETUP", "") == "fake_nvcc":
        fake_nvcc(Path(env["CUDA_HOME"]))
    command = fill(cmd, port, work)
    t0 = time.time()
    with open(out / f"{name}.log", "wb") as log:
        p = subprocess.Popen(["bash", "-c", command], cwd=HERE, env=env, stdout=log,
                             stderr=subprocess.STDOUT, start_new_session=True)
        try:
            rc = p.wait(timeout=max(10, min(100, DEADLINE - time.time())))
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            rc = "timeout"
    shown = " ".join(f"{k}={fill(v, port, work)}" for k, v in env_extra.items() if k != "SETUP")
    results[name] = {"category": category, "family": family, "command": f"{shown} {command}".strip(),
                     "exit_code": rc, "seconds": round(time.time() - t0, 1), "signature": sig, "expect": expect}
    print(f"{name}: rc={rc} {time.time() - t0:.0f}s", flush=True)


def versions():
    code = ("import sys, torch, json\nv={'python': sys.version.split()[0], 'torch': torch.__version__,"
            "'cuda': torch.version.cuda, 'nccl': '.'.join(map(str, torch.cuda.nccl.version())),"
            "'gpu': torch.cuda.get_device_name(0)}\n"
            "for m in ('deepspeed', 'transformers', 'accelerate'):\n"
            "    try: v[m] = __import__(m).__version__\n    except Exception as e: v[m] = repr(e)\n"
            "print(json.dumps(v))")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    return json.loads(p.stdout) if p.returncode == 0 else {"error": p.stderr[-300:]}


def run_lanes(lanes, out, results):
    threads = [threading.Thread(target=lambda jobs=jobs: [run_one(sc, p, out, results) for sc, p in jobs])
               for jobs in lanes.values() if jobs]
    for t in threads:
        t.start()
    return threads


def run(out, only=()):
    """First the "fill" lane (beside "nogpu"), then "mem", "build" and the "light" jobs over three lanes."""
    out.mkdir(parents=True, exist_ok=True)
    results = {}
    first = {"fill": [], "nogpu": []}
    then = {"mem": [], "build": [], "light0": [], "light1": [], "light2": []}
    light = 0
    for i, sc in enumerate(SCENARIOS):
        if only and sc[0] not in only:
            continue
        job = (sc, 29500 + 17 * i)
        if sc[3] == "light":
            then[f"light{light % 3}"].append(job)
            light += 1
        else:
            (first if sc[3] in first else then)[sc[3]].append(job)
    for t in run_lanes(first, out, results):
        t.join()
    PHASE_END[0] = DEADLINE
    threads = run_lanes(then, out, results)
    vers = versions()  # not beside the "fill" lane: it touches the card
    for t in threads:
        t.join()
    (out / "manifest.json").write_text(json.dumps({"versions": vers, "results": results}, indent=1))


SOURCE_ECHO = re.compile(r"^\s*(raise |assert |.*\bf?[\"'].*\{)")


def ingest(src, corpus=CORPUS):
    """Write each checked scenario into corpus/<category>/ as gpu_<name>.log and .yaml."""
    man = json.loads((src / "manifest.json").read_text())
    vers = man["versions"]
    bad = 0
    table = {sc[0]: sc for sc in SCENARIOS}
    for name, r in man["results"].items():
        if name in gpu_more.RERUNS:
            print(f"not ingested {name}: a rerun in another form (diagnose it from {src})")
            continue
        # the scenario table decides the label and the checks; the manifest says what ran
        _, r["category"], r["family"], _, _, _, r["signature"], r["expect"] = table[name]
        raw = (src / f"{name}.log").read_bytes()
        lines = raw.decode("utf-8", "replace").splitlines()
        hits = [[i + 1 for i, ln in enumerate(lines) if re.search(s, ln) and not SOURCE_ECHO.match(ln)]
                for s in r["signature"]]
        ok = (r["exit_code"] == 0) == (r["expect"] == "ok") and r["exit_code"] != "timeout"
        if not ok or not all(hits):
            print(f"skip {name}: rc={r['exit_code']} signature hits={[len(h) for h in hits]}")
            bad += 1
            continue
        evidence = sorted(set(hits[0])) if r["category"] != "none" else []
        dest = corpus / r["category"] / f"gpu_{name}"
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.with_suffix(".log").write_bytes(raw)
        meta = [f"label: {r['category']}", f"evidence_lines: [{', '.join(map(str, evidence))}]",
                f"produced_by: {json.dumps('cd corpus/generate/gpu && ' + r['command'])}",
                "origin: real-run", "versions:"]
        meta += [f"  {k}: {json.dumps(str(v))}" for k, v in vers.items()]
        meta += [f"family: {r['family']}", f"scenario: gpu_{name}", f"exit_code: {r['exit_code']}",
                 f"signature: {json.dumps(r['signature'])}",
                 f"note: \"one {vers.get('gpu', 'GPU')} (GPU machine lent to a session); run by corpus/generate/gpu/run_gpu.py\""]
        dest.with_suffix(".yaml").write_text("\n".join(meta) + "\n")
        print(f"wrote {dest}.log ({len(lines)} lines, evidence {evidence[:6]})")
    return 1 if bad else 0


if __name__ == "__main__":
    if len(sys.argv) < 3 or sys.argv[1] not in ("run", "ingest"):
        sys.exit(__doc__)
    sys.exit(run(Path(sys.argv[2]).resolve(), sys.argv[3:]) if sys.argv[1] == "run" else ingest(Path(sys.argv[2]).resolve(), *(Path(p) for p in sys.argv[3:4])))
