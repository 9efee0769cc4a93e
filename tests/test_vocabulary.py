"""The failure vocabulary is written once, and the prefilter keeps every line it could use."""

import re

import pytest

from classifier import vocabulary
from classifier.corpus.evaluate import find_cases
from classifier.diagnosis.diagnose import diagnose_job
from classifier.diagnosis.match import bounded
from classifier.diagnosis.normalize import normalize
from classifier.diagnosis.paste import split_escaped
from classifier.diagnosis.read import RawLine, Warnings, read_lines
from classifier.rules.examples import example_cases
from classifier.rules.load import default_rules
from conftest import LOGS, ROOT

RULES = default_rules()
_TERMS = [(t, re.compile(t.pattern)) for t in vocabulary.ALL_TERMS]


def _used(msg):
    """Would a signal or a rule look at this normalised line on its own (not as a neighbour)?"""
    if any(rx.search(msg) for _, rx in _TERMS):
        return True
    # A rule whose `select` names some keywords reads the others' lines only as neighbours.
    return any(not rule.select.get("keywords") or any(
        re.search(bounded(k if rule.exact_case else k.lower(), rule.exact_case), msg)
        for k in rule.select["keywords"]) for rule in RULES.keyword_index().rules_for(msg))


def _selected_linenos(data, finder):
    starts = finder.line_starts(data)
    return {data.count(b"\n", 0, s) + 1 for s in starts}


def _texts():
    """(name, raw lines) of every corpus case, realistic test log and rule example."""
    for log, meta in find_cases(ROOT / "corpus"):
        yield log.name, list(read_lines(str(log), Warnings()))
    for log in sorted(LOGS.glob("*.log")):
        yield log.name, list(read_lines(str(log), Warnings()))
    for test_id, _, _, text, _ in example_cases(RULES):
        yield test_id, [RawLine("<example>", i, t) for i, t in enumerate(text.splitlines(), 1)]


@pytest.mark.parametrize("engine", ["re", "hyperscan"])
def test_the_prefilter_selects_every_line_a_signal_or_rule_could_use(engine):
    finder = RULES.finder(engine)
    missed = []
    for name, raw in _texts():
        data = "".join(line.text + "\n" for line in raw).encode("utf-8", "surrogateescape")
        selected = _selected_linenos(data, finder)
        written = {line.lineno for line in raw if line.text.strip()}
        # a log printed on one line (a JSON string with `\n`s) is read as its lines, numbered on
        # from it (paste._expanded): each of them is selected with the raw line it came from
        origin, extra = {}, 0
        for line in raw:
            parts = split_escaped(line.text) if "\\n" in line.text else None
            for k in range(len(parts) if parts else 1):
                origin[line.lineno + extra + k] = line.lineno
            extra += len(parts) - 1 if parts else 0
        lines = list(normalize(iter(raw)))
        for i, line in enumerate(lines):
            # a terminal-wrapped line comes whole on its first piece, the others blank after it
            numbers = {line.lineno}
            for after in lines[i + 1:]:
                if after.text or after.lineno not in written:
                    break
                numbers.add(after.lineno)
            numbers = {origin.get(n, n) for n in numbers}
            if line.msg and _used(line.msg) and not numbers & selected:
                missed.append(f"{name}:{line.lineno}: {line.msg[:120]}")
    assert not missed, missed[:20]


def test_every_term_match_holds_its_gate():
    for name, raw in _texts():
        for line in normalize(iter(raw)):
            for term, rx in _TERMS:
                if line.msg and rx.search(line.msg):
                    low = line.msg.lower()
                    assert any(g in low for g in term.gates) or (
                        term.gate_pattern and re.search(term.gate_pattern, low)), (term, line.msg)
            if line.msg and (vocabulary.SUCCESS.search(line.msg) or vocabulary.OTHER_FAILURE.search(line.msg)
                             or vocabulary.EVIDENCE.search(line.msg) or vocabulary.AFTERMATH.search(line.msg)):
                # signals.py asks MARKER_HINT first and skips both alternations without it
                assert vocabulary.MARKER_HINT.search(line.msg.lower()), line.msg


def test_consumers_read_the_one_vocabulary():
    from classifier.diagnosis import region, signals
    from classifier.jobs import group
    assert region.EXCEPTION_LINE is signals.EXCEPTION_LINE is vocabulary.EXCEPTION_LINE
    assert group.EXCEPTION_TYPE is vocabulary.EXCEPTION_TYPE
    assert set(vocabulary.SELECT_LITERALS) >= {s.lower() for s in vocabulary.EXCEPTION_SUFFIXES}


@pytest.mark.parametrize("select", ["re", "hyperscan"])
def test_a_glog_fatal_line_is_a_failure_with_the_prefilter_too(tmp_path, select):
    log = tmp_path / "job.log"
    healthy = "".join(f"[rank0]: step {i} loss 1.{i % 10}\n" for i in range(6000))
    # no failure word on the line: only its glog shape says FATAL (head and tail lie far away)
    log.write_text(healthy + "[rank0]: F1203 12:00:01.123456 4242 custom_op.cc:88] Check "
                   "n > 0 (0 vs. 0)\n" + healthy)
    full = diagnose_job([str(log)], select=False)
    assert full["category"] == "unknown"
    assert diagnose_job([str(log)], select=select) == full


def _among_steps(tmp_path, line, before, after=0):
    """A big log: `line` after `before` healthy step lines, and `after` more of them."""
    steps = [f"[rank0]: step {i} loss 1.{i % 10}\n" for i in range(max(before, after))]
    log = tmp_path / "job.log"
    log.write_text("".join(steps[:before]) + line + "\n" + "".join(steps[:after]))
    return log


# A logger's error record in its forms the signals read (signals._error_record), and pytest's
# failed assert: the prefilter must keep each line in a big log too.
_RECORDS = [
    "2024-04-16 14:59:40,459 ERROR Can't load tokenizer for 'bert-base-chinese'.",
    "2024-04-16 14:59:40 [error    ] training failed                 step=300",
    'time="2024-04-16T14:59:40Z" level=fatal msg="could not mount the dataset volume"',
    "[14:59:40] ERROR    Training failed at step 300                 trainer.py:88",
    "[2024-04-16 14:59:40] ERROR: Failed to start the trainer",
    # Ray's autoscaler gives up with its own PANIC level
    "2022-06-07 15:30:26,453 PANIC commands.py:643 -- Head node fetch timed out. Failed to create head node.",
    "E       assert 130 in {15, 143, 193}",
]


@pytest.mark.parametrize("select", ["re", "hyperscan"])
@pytest.mark.parametrize("line", _RECORDS)
def test_an_error_record_is_a_failure_with_the_prefilter_too(tmp_path, select, line):
    log = _among_steps(tmp_path, line, 6000, after=6000)
    full = diagnose_job([str(log)], select=False)
    assert full["category"] == "unknown"
    assert diagnose_job([str(log)], select=select) == full


# How shells, DataLoader's worker handler and native runtimes report a death no rule owns.
_SIGNAL_DEATHS = [
    "zsh: segmentation fault  python train.py --deepspeed ds.json",
    "ERROR: Unexpected segmentation fault encountered in worker.",
    "ERROR: Unexpected floating-point exception encountered in worker.",
    "run_sft.sh: line 9: 40213 Illegal instruction     (core dumped) deepspeed train.py",
    "Floating point exception",
    "zsh: abort      python train.py",
    "fish: Job 1, 'python train.py' terminated by signal SIGSEGV (Address boundary error)",
    "thread '<unnamed>' panicked at 'called `Option::unwrap()` on a `None` value', src/models/bpe.rs:12:5",
    "panic: runtime error: invalid memory address or nil pointer dereference",
    "./launch.sh: line 4: deepspeed: command not found",
    "zsh: command not found: torchrun",
    "train.sh: 1: srun: not found",
    "/bin/sh: 12: deepspeed: not found",
    "python3: can't open file '/home/u/proj/full_finetune.py': [Errno 2] No such file or directory",
    "C:\\envs\\py310\\python.exe: can't open file 'C:\\proj\\train.py': [Errno 2] No such file or directory",
    "(TaskRunner pid=5757) Unhandled error (suppress with 'RAY_IGNORE_UNHANDLED_ERRORS=1'): "
    "ray::WorkerDict.generate() (pid=6249, ip=10.1.5.2, actor_id=09cf)",
    "2021-03-01 10:00:00,000\tERROR worker.py:79 -- Unhandled error (suppress with RAY_IGNORE_UNHANDLED_ERRORS=1): ray::f()",
    "The kernel appears to have died. It will restart automatically.",
    "ERROR: No matching distribution found for deepspeed==0.99.1",
    "Primary job  terminated normally, but 1 process returned\n"
    "a non-zero exit code. Per user-direction, the job has been aborted.",
    "Error executing job with overrides: ['trainer.devices=8', 'model=llama']",
    'Exception in thread "main" java.lang.OutOfMemoryError: Java heap space',
    "gpu7:4012:4100 [3] enqueue.cc:1043 NCCL WARN Cuda failure 'an illegal memory access was encountered'",
    "double free or corruption (!prev)",
    "*** SIGSEGV received at time=1700000000 on cpu 3 ***",
    # newer absl's and folly's fatal-signal banners, glog's with its `date` hint, gdb's stop, the kernel's
    # segfault record, C++'s uncaught exception, an ignite engine stopping, gunicorn reaping a worker
    "*** SIGSEGV (@(nil)), see go/stacktraces#s15 received by PID 11743 (TID 12350) on cpu 17; stack trace: ***",
    "*** Signal 15 (SIGTERM) (0x8bb63000c9049) received by PID 823809 (pthread TID 0x7f69aaf7e340) (linux TID 823809)",
    "*** Aborted at 1752197205 (Unix time, try 'date -d @1752197205') ***",
    # the same handler logging through glog (Paddle 1.8/2.0): its head stays on each line
    'W0304 11:02:17.513908 31337 init.cc:226] *** Aborted at 1614855737 (unix time) try "date -d @1614855737" if you are using GNU date ***',
    "W0304 11:02:17.515120 31337 init.cc:226] *** SIGFPE (@0x7f3a2c1d4e60) received by PID 31337 (TID 0x7f3a5d2f8740) from PID 18446744073 ***",
    'Thread 1 "python" received signal SIGILL, Illegal instruction.',
    "[ 8123.120331] python[4021]: segfault at 0 ip 00007fce957b5216 sp 00007fccd9ff1480 error 4 in libx.so[7fce90acb000+2aa45000]",
    "libc++abi: terminating due to uncaught exception of type gloo::EnforceNotMet: [enforce fail at pair.cc:446]",
    "Engine run is terminating due to exception: Expected object of scalar type Long but got scalar type Int",
    "[2024-10-01 05:37:33 +0100] [96] [ERROR] Worker (pid:111) was sent SIGKILL! Perhaps out of memory?",
    "megahit_core assemble --k 21 --mem 0.9; Exit code -11",
    "nov 07 01:36:56 bernard systemd-coredump[91686]: Process 87058 (pt_main_thread) of user 0 terminated abnormally with signal 6/ABRT, processing...",
    "(raylet) A worker died or was killed while executing a task by an unexpected system error.",
    # MPICH's error stack and Hydra's launch failures, Open MPI's binding refusal and its line for
    # the rank that ended, wrapped before the signal; TF1's exception line; HIP's device-side assert
    "Fatal error in MPI_Init: Other MPI error, error stack:",
    "[proxy:0:0@node-17] HYDU_create_process (utils/launch/launch.c:74): execvp error on file ./train (No such file or directory)",
    "[mpiexec@node-1] main (ui/mpich/mpiexec.c:340): process manager error waiting for completion",
    "[mpiexec@node-1] main (mpiexec/mpiexec.c:1881): error setting up the boostrap proxies",
    "rank 0 in job 12 node-1_49669 caused collective abort of all ranks",
    "*** An error occurred in MPI_Init_thread",
    "Fatal error in PMPI_Init_thread:",
    "It looks like MPI runtime init failed for some reason; your parallel process is",
    "Open MPI tried to bind a new process, but something went wrong.  The",
    "Assertion failed: engine != nullptr, file d:\\workplace\\src\\trtnet.cpp, line 150",
    "OPAL ERROR: Not initialized in file pmix3x_client.c at line 113",
    ":0:rocdevice.cpp            :2660: 556940992572 us: 32834: [tid:0x7f9e41945700] Device::callbackQueue aborting with error : HSA_STATUS_ERROR_MEMORY_APERTURE_VIOLATION: The agent attempted to access memory beyond the largest legal address. code: 0x29",
    "A request was made to bind to that would result in binding more\nprocesses than cpus on a resource:",
    "mpiexec noticed that process rank 0 with PID 10313 on node n1 exited on \nsignal 6 (Aborted).",
    "NotFoundError (see above for traceback): Tensor name \"conv1/biases\" not found in checkpoint files model.ckpt",
    "/var/lib/jenkins/pytorch/aten/src/ATen/native/hip/Indexing.hip:1294: indexSelectLargeIndex: Device-side assertion `srcIndex < srcSelectDimSize' failed.",
    "socket.gaierror: [Errno -2] Name or service not known",
    "socket.timeout: timed out",
    "struct.error: unpack requires a buffer of 4 bytes",
    # a paste lower-cased whole; CPython's messages without their type
    "valueerror:multidatasettrainer:onecyclelr:expected positive integer total_steps, but got 0",
    "torch.cuda.outofmemoryerror",
    "traceback (most recent call last):",
    "__init__() got an unexpected keyword argument 'gpus'",
    "Trainer.fit() missing 1 required positional argument: 'model'",
    "forward() takes 2 positional arguments but 3 were given",
    "'NoneType' object has no attribute 'shape'",
    "module 'mylib' has no attribute 'helper'",
    "'int' object is not subscriptable",
    "name 'np' is not defined",
    # pickle refusing a spawn target, a worker's local function, a lock; the child's lookup
    "Can't pickle <function main_worker at 0x7f1c444e9d30>: attribute lookup main_worker on __main__ failed",
    "Can't pickle local object 'build_loader.<locals>.collate'",
    "cannot pickle '_thread.RLock' object",
    "Can't get attribute 'Worker' on <module '__main__' (built-in)>",
    # rich's frame arrow with its box characters decoded as U+FFFD; c10's C++ backtrace
    "\ufffd \ufffd 2806 \ufffd   \ufffd   strategy = self._get_padding_truncation_strategies(",
    "Exception raised from forward at /src/custom_op.cpp:88 (most recent call first):",
    "frame #3: c10d::ProcessGroupNCCL::workCleanupLoop() + 0x121 (0x7f3a2c in /x/torch/lib/libtorch_cuda.so)",
    # stack dumps of a crashed or stuck process
    "Current thread 0x00007f6b2c9f1740 (most recent call first):",
    'Thread 0x7F6B2C9F1740 (active+gil): "MainThread"',
    # launchers tearing a failed job down
    "[2023-06-25 10:47:37,222] [INFO] [launch.py:428:sigkill_handler] Killing subprocess 31472",
    "WARNING:torch.distributed.elastic.multiprocessing.api:Sending process 4121 closing signal SIGTERM",
    "mpirun noticed that process rank 1 with PID 0 on node gpu2 exited on signal 6 (Aborted).",
    "[1]<stderr>:Process 1 exit with status code 1.",
    "Detected mismatch between collectives on ranks. Rank 0 is running collective: "
    "CollectiveFingerPrint(SequenceNumber=12, OpType=ALLREDUCE), but Rank 1 is running collective: "
    "CollectiveFingerPrint(SequenceNumber=12, OpType=BROADCAST).",
    # batch systems' end-of-job records
    # device runtimes aborting in their own words
    "Memory access fault by GPU node-1 (Agent handle: 0x55d0c8a1e2f0) on address 0x7f1c2a400000. Reason: Page not present or supervisor privilege.",
    "`CUDA kernel failed : an illegal memory access was encountered",
    # the driver's Xid of a faulting application (13, 31, 43), and an MMU fault's wrapped line
    "[22859.08] NVRM: Xid (PCI:0000:3b:00): 13, pid=4242, name=pt_main_thread, Graphics SM Warp Exception on (GPC 0, TPC 1)",
    "NVRM: Xid (PCI:0000:01:00): 31, pid=14292, name=python3, Ch 00000030, intr 00000000. MMU Fault: ENGINE GRAPHICS",
    "kernel: NVRM: Xid (PCI:0000:9a:00): 43, pid=477445, name=python3, Ch 00000008",
    "  intr 00000000. MMU Fault: ENGINE GRAPHICS GPC0 GPCCLIENT_T1_0 faulted",
    "Exit_status=-11",
    "exit_status  137                  (Killed)",
    "   Requeue=1 Restarts=0 BatchFlag=1 Reboot=0 ExitCode=2:0",
    "        exitCode: 1",
    "  Warning  BackOff  3m (x20 over 8m)  kubelet  Back-off restarting failed container",
    "trainer-0   0/1   CrashLoopBackOff   5   10m",
    # Slurm clients giving up, Open MPI's fatal-error and lost-peer banners, a server's bind, the Hub's gate
    "sinfo: fatal: Could not establish a configuration source",
    "scancel: error: Kill job error on job id 812: Unable to contact slurm controller (connect failure)",
    "*** An error occurred in MPI_Comm_rank",
    "An MPI communication peer process has unexpectedly disconnected.  This",
    "ERROR:    [Errno 98] error while attempting to bind on address ('0.0.0.0', 7860): address already in use",
    "Cannot access gated repo for url https://huggingface.co/meta-llama/Llama-2-7b-hf/resolve/main/config.json.",
    "PRTE has lost communication with a remote daemon.",
    "Runtime Error: floatingPointError: loss became infinite or NaN at iteration=88!",
    "WARNING:root:NaN or Inf found in input tensor.",
    "Aug 1, 2023, 1:12:13 PM | WARNING | WARNING:root:kernel 64d26b43-fec6-4352-bdc2-0a820f7219c6 restarted",
    # unseen failures' last words: a failed open's OSError without its type,
    # glog's check, curl's exit, an HTTP client's error for a url, pytest's banner, a launch script
    # that found no interpreter, a JVM trace's frames
    "webui.common - Cannot open data/dataset_info.json due to [Errno 2] No such file or directory: 'data/dataset_info.json'.",
    "[rank1]: Unable to load weights from checkpoint file: [Errno 13] Permission denied: '/ckpt/model.bin'",
    "F0101 00:00:01.000000 12 tpu_client.cc:9] Check failed: status.ok()",
    "Check failed: status == CUDNN_STATUS_SUCCESS (3 vs. 0)  CUDNN_STATUS_BAD_PARAM",
    "curl: (22) The requested URL returned error: 404",
    "curl: (7) Failed to connect to localhost port 8000 after 0 ms: Connection refused",
    "404 Client Error: Not Found for url: https://huggingface.co/org/model/resolve/main/config.json",
    "[rank0]: 500 Server Error: Internal Server Error for url: https://api.wandb.ai/graphql",
    "401 Client Error. (Request ID: Root=1-6569-abc)",
    "=================================== FAILURES ===================================",
    "train.sh: line 3: /opt/venv/bin/python: No such file or directory",
    "/usr/bin/env: ‘python’: No such file or directory",
    "bash: ./run_train.sh: No such file or directory",
    "zsh: no such file or directory: ./train.sh",
    "\tat org.apache.spark.scheduler.DAGScheduler.failJobAndIndependentStages(DAGScheduler.scala:2454)",
    "        at java.base/java.lang.Thread.run(Thread.java:829)",
    # a message without its type (FileNotFoundError, PermissionError, mm*'s registry KeyError), a script the shell may not run,
    # tcmalloc's and glibc's heap aborts, espnet2's trainer stopping on NaN gradients, unittest's and a checker's verdicts
    "No such file or directory: '/data/ckpt/epoch_3.pth'",
    "[Errno 2] No such file or directory: 'configs/train.yaml'",
    "[Errno 13] Permission denied: '/mnt/shared/outputs'",
    "bash: ./scripts/train.sh: Permission denied",
    "run.sh: line 7: ./launch.py: Permission denied",
    "MyCocoDataset is not in the dataset registry",
    "'RetinaHeadX is not in the mmdet::model registry. Please check whether the value of `RetinaHeadX` is correct",
    "src/tcmalloc.cc:333] Attempt to free invalid pointer 0x55d5c0a1b2c0",
    "10:42:40 AM | WARNING | src/tcmalloc.cc:283] attempt to realloc invalid pointer 0x1",
    "corrupted double-linked list",
    "2023-01-02 10:00:00,000 (trainer:404) WARNING: The gradients at all steps are invalid in this epoch. Something seems wrong. "
    "This training was stopped at 7epoch",
    "FAIL: test_all_reduce (tests.unit.comm.TestAllReduce)",
    "test_broadcast (tests.unit.comm.TestBroadcast) ... FAIL",
    "Stage 2 (3600s): FAIL",
    # CPython's other messages without their type, the chaining line between two tracebacks, Hydra's ERROR record,
    # glog's check trace, glibc's fortify abort, macOS's SIGABRT, HTTP errors of urllib, wget and httpx, a launch on
    # Windows or of a binary for another machine, a launch script bash cannot parse
    "list index out of range",
    "division by zero",
    "maximum recursion depth exceeded in comparison",
    "unsupported operand type(s) for /: 'NoneType' and 'int'",
    "not enough values to unpack (expected 2, got 1)",
    "invalid literal for int() with base 10: 'auto'",
    "Expecting value: line 1 column 1 (char 0)",
    "'gbk' codec can't decode byte 0xa6 in position 12: illegal multibyte sequence",
    "No module named 'deepspeed.ops.adam'",
    "During handling of the above exception, another exception occurred:",
    "The above exception was the direct cause of the following exception:",
    "[2024-03-01 10:00:00,000][__main__][ERROR] - Run stopped: config mismatch",
    "*** Check failure stack trace: ***",
    "*** buffer overflow detected ***: terminated",
    "Abort trap: 6",
    "HTTP Error 404: Not Found",
    "ERROR 403: Forbidden.",
    "Client error '401 Unauthorized' for url 'https://example.org/v1/models'",
    "'torchrun' is not recognized as an internal or external command,",
    # ... in the language Windows speaks (French with a typographic apostrophe, Spanish, Chinese, Japanese, Russian)
    "'CUDA_VISIBLE_DEVICES' n’est pas reconnu en tant que commande interne",
    "'deepspeed' no se reconoce como un comando interno o externo,",
    "'torchrun' 不是内部或外部命令，也不是可运行的程序",
    "'python3' は、内部コマンドまたは外部コマンド、",
    "\"accelerate\" не является внутренней или внешней командой, исполняемой программой или пакетным файлом.",
    "deepspeed : The term 'deepspeed' is not recognized as the name of a cmdlet, function, script file, or operable program.",
    "exec /opt/conda/bin/python: exec format error",
    "./train.sh: line 12: syntax error near unexpected token `fi'",
    # the CUDA runtime's kernel-failure strings without `CUDA error:` (quoted from a report, a user macro's)
    '"an illegal memory access was encountered"',
    "GPUassert: an illegal memory access was encountered src/kernel.cu 1105",
    "unspecified launch failure in ./cuda/ops.cu at line 88",
    "Kernel launch failed: too many resources requested for launch",
    "device-side assert triggered",
    # wandb refusing to start without an API key, as logged, as raised, retyped
    "wandb: ERROR api_key not configured (no-tty). call wandb.login(key=[your_api_key])",
    "wandb.errors.UsageError: api_key not configured (no-tty).  Run wandb login",
    "wandb.errors.error.Usage Error:api_key not configured (no-tty). Run wandb login",
    # the kubelet's exec status, and a CI container hook quoting it
    "command terminated with non-zero exit code: Error executing in Docker Container: 137",
    "##[error]Error: failed to run script step: Error: command terminated with non-zero exit code: "
    "command terminated with exit code 1",
    # TensorFlow's placer refusing an op on a GPU it has no kernel for: bare (a title), behind its
    # InvalidArgumentError, TF 1.x's node wording, cut before the reason
    "Could not satisfy explicit device specification '/device:GPU:0' because no supported kernel for GPU devices is available",
    "tensorflow.python.framework.errors_impl.InvalidArgumentError: Cannot assign a device for operation "
    "ReadVariableOp: Could not satisfy explicit device specification '/device:GPU:0' because no supported kernel "
    "for GPU devices is available.",
    "Cannot assign a device to node 'save/RestoreV2': Could not satisfy explicit device specification '/device:GPU:0' "
    "because no supported kernel for GPU devices is available.",
    "Cannot assign a device for operation 'Adam/update_conv1/kernel/ResourceApplyAdam': Could not satisfy explicit dev",
    # a NaN gradient norm nothing can skip: Megatron at loss scale 1.0 (bf16 / fp32)
    " iteration     5427/  250000 | consumed samples:        43416 | learning rate: 2.999E-04 | global batch size:     8 "
    "| loss scale: 1.0 | grad norm: nan | number of skipped iterations:   0 |",
    # a logger's ERROR / CRITICAL / FATAL record after its timestamp (the level peeled with it)
    "2024-04-16 14:59:40,459 ERROR Can't load tokenizer for 'bert-base-chinese'. If you were trying to load it from "
    "'https://huggingface.co/models', make sure you don't have a local directory with the same name.",
    "2024-03-19 13:49:09,602 - ERROR - Training failed with an unexpected state",
    "2024-05-22 17:04:01.260 | ERROR    | scripts.utils:load_config:66 - could not open /data/shard-3.arrow",
    "2024-04-16T14:59:40.459Z FATAL unable to reach the parameter server at 10.0.0.2:6000",
    "[rank1]: 2024-04-16 14:59:40,459 CRITICAL Checkpoint directory does not exist: /ckpt/step_400",
    "[2024-04-16 14:59:40] ERROR: Failed to start the trainer",
    # the level left at the head: rich's column, journald, structlog; logfmt's level key
    "[14:59:40] ERROR    Training failed at step 300                 trainer.py:88",
    "Apr 16 14:59:40 node1 train.sh[4242]: ERROR Can't open the dataset /data/train.arrow",
    "2024-04-16 14:59:40 [error    ] training failed                 step=300",
    'time="2024-04-16T14:59:40Z" level=fatal msg="could not mount the dataset volume"',
    'level=error ts=2024-04-16T14:59:40Z caller=main.go:88 msg="unable to reach the server"',
    # a process's non-zero exit as GNU time and bash's job control print it; a thread's uncaught exception
    "Command exited with non-zero status 1",
    # Vertex AI / AI Platform's record of a replica that failed
    "The replica workerpool0-0 exited with a non-zero status of 1. Termination reason: Error.",
    "[1]+  Exit 1                  python train.py --deepspeed ds_config.json",
    "Exception in thread Thread-3 (_run):",
    # pytest's rewritten assert under its `E` column; a traceback head the paste cut
    "E       assert 130 in {15, 143, 193}",
    "Traceback (most recen",
    # Keras stopping fit() when the dataset runs dry, glued to its progress bar
    "97/10000 [....] - ETA: 1:08:14 - loss: 3.3150WARNING:tensorflow:Your input ran out of data; interrupting training.",
    # Hydra refusing a command-line override (no traceback unless HYDRA_FULL_ERROR=1)
    "Could not override 'reward_model.reward_kwargs.n_samples_per_prompt'.",
    # rich's traceback box cut in its header (HF datasets / typer apps print it)
    "\u256d\u2500\u2500\u2500\u2500\u2500\u2500\u2500\u2500\u2500\u2500 Traceback (most",
    # Ray's autoscaler: a resource request no node type can ever satisfy
    "(scheduler +27s) Error: No available node types can fulfill resource request {'bob': 1.0, 'CPU': 1.0}. "
    "Add suitable node types to this cluster to resolve this issue.",
    # Hydra's line behind a job runner's tag; torch's BatchNorm refusal without its ValueError
    "[ID: 1/1 GPU: 0] Error executing job with overrides:",
    "Expected more than 1 value per channel when training, got input size torch.Size([1, 256])",
    # other runtimes: a Kubernetes operator's recovered panic and its goroutine dump, gfortran and
    # ifort, protobuf's and XLA's checks, Android's libc++abi, the kernel's MCE and GPU hang reports
    'E0118 03:24:24.694308   10306 runtime.go:78] Observed a panic: "invalid memory address or nil pointer dereference"',
    "goroutine 1137 [running]:",
    "Fortran runtime error: Sequential READ or WRITE not allowed after EOF marker, possibly use REWIND or BACKSPACE",
    "forrtl: severe (174): SIGSEGV, segmentation fault occurred",
    "[libprotobuf FATAL google/protobuf/map.h:811] CHECK failed: find(key) == end(): ",
    "2024-07-17 11:40:54.103908: E external/xla/xla/status_macros.cc:56] INTERNAL: RET_CHECK failure (xla/service/cpu/ir_emitter.cc:1144)",
    "02-26 15:12:55.985 21890 21890 E libc++abi: terminating",
    "Feb 27 15:09:35 nixos kernel: mce: [Hardware Error]: CPU 9: Machine Check: 0 Bank 5: bea0000000000108",
    "[284091.730106] i915 0000:00:02.0: [drm] GPU HANG: ecode 12:1:85dffffb, in llama-server [1808332]",
    "[ 2679.300365] [drm:amdgpu_job_timedout [amdgpu]] *ERROR* ring gfx_0.0.0 timeout, signaled seq=502589, emitted seq=502591",
    # scientific codes: Quantum ESPRESSO, gfortran's backtrace head, GROMACS, MPICH's Hydra
    "     Error in routine  cdiaghg (668):",
    "Program received signal SIGABRT: Process abort signal.",
    "Fatal error:",
    "YOUR APPLICATION TERMINATED WITH THE EXIT STRING: Floating point exception (signal 8)",
    # the amdgpu driver's page-fault report (dmesg with a relative stamp, journald), cut mid-line
    "[  +0.851431] amdgpu 0000:0e:00.0: amdgpu: [gfxhub] page fault (src_id:0 ring:157 vmid:0 pasid:0, for process  pid 0 thread  pid 0)",
    "Aug 08 22:35:13 host kernel: amdgpu 0000:c3:00.0: amdgpu: [gfxhub0] retry page fault (src_id:0 ring:0 vmid:8 pas",
    "[Tue Sep  9 02:30:28 2025] amdgpu 0000:c6:00.0: amdgpu: VM_L2_PROTECTION_FAULT_STATUS:0x00341051",
    "[ 1200.356662] amdgpu 0000:c5:00.0: amdgpu: GCVM_L2_PROTECTION_FAULT_STATUS:0x00800932",
    # MPICH's abort line ahead of its error stack; HIP's and TensorRT's failed calls without an exception type
    "Abort(1091087) on node 0 (rank 0 in comm 0): Fatal error in PMPI_Init_thread: Other MPI error, error stack:",
    "MPICH ERROR [Rank 0] [job id unknown] [Fri Mar 14 11:56:06 2025] [n1] - Abort(1092879) (rank 0 in comm 0): Fatal erro",
    "HIP error: operation not permitted on an event last recorded in a capturing stream",
    "[06/20/2022-11:10:38] [TRT] [E] 4: [runtime.cpp::deserializeCudaEngine::50] Error Code 4: Internal Error (Engine deserialization failed.)",
    "3: [runtime.cpp::~Runtime::346] Error Code 3: API Usage Error (Parameter check failed at: runtime/rt/runtime.cpp::~Runt",
    # a launch whose remote shell found no working directory (pdsh's host label peeled); a Go panic's frames
    "172.16.220.18: bash: line 0: cd: /data/src_zero3: No such file or directory",
    "\t/go/src/k8s.io/kubernetes/vendor/k8s.io/apimachinery/pkg/util/wait/wait.go:88 +0x4d",
    "panic: runtime error: invalid memory address or nil pointer dereference",
]
# Healthy lines that share the words.
_HEALTHY = [
    "Could not override 'num_workers' from the environment; using the config's value of 4",
    "2022-06-07 15:30:26,453 PANIC commands.py:643 -- Head node not up yet, will retry in 5 s",
    "export PYTHONFAULTHANDLER=1  # prints a traceback on a segmentation-fault-free run too",
    "[INFO] checking the bus error counters: 0",
    "zsh: correct 'pyhton' to 'python' [nyae]? y",
    "Watchdog: panic_on_timeout disabled",
    "ERROR: pip's dependency resolver does not currently take into account all the packages that are installed.",
    "[2024-05-01 10:00:00] worker exited with non-zero status 0 times in the last hour",
    "The replica worker 0 exited with a non-zero status of 0.",
    "INFO: fatal: errors are reported as FATAL lines; none so far",
    "val.error: 0.031",
    "train.timeout: 3600",
    "Exit_status=0",
    "exit_status  0",
    "failed       0",
    "   Requeue=1 Restarts=0 BatchFlag=1 Reboot=0 ExitCode=0:0",
    "        exitCode: 0",
    "frame #12: decoded in 0.03 s",
    "mean_value_error: 0.3",
    "valueerror_rate: 0.0",
    "CUDA_HOME is not defined, using /usr/local/cuda",
    "see main.go:88 for the retry loop",
    "bash: line 3: cd: skipping missing overlay dir (ok)",
    "HIP_VISIBLE_DEVICES=0,1 (set HIP error checking with AMD_LOG_LEVEL=1)",
    "[TRT] [I] Error Code 0 means success; see the builder log for details",
    # the amdgpu driver's healthy lines, and a page-fault counter
    "[    4.123456] amdgpu 0000:0e:00.0: amdgpu: SMU is initialized successfully!",
    "amdgpu: retry page faults enabled (noretry=0)",
    "the trainer takes 2 positional arguments",
    "INFO: the cache can't pickle lambdas, so the dataset is rebuilt in every worker",
    "dill: cannot pickle generators by default; set recurse=True",
    "[WARNING] async_io: libaio not found, skipping the op",
    "NCCL_SOCKET_IFNAME: not found in the environment, using defaults",
    "If the file can't open file handles fast enough, raise ulimit -n",
    "ray: set RAY_IGNORE_UNHANDLED_ERRORS=1 to keep the driver quiet",
    # a restart the user asked for (Jupyter's handler logs it at INFO, the id after the words)
    "[I 2023-08-01 13:12:13.000 ServerApp] Kernel restarted: 64d26b43-fec6-4352-bdc2-0a820f7219c6",
    "HSA_XNACK=1 lets the GPU retry instead of a memory access fault",
    "check: CUDA kernel failed 0 times",
    "INFO: retrying after [Errno 111] Connection refused",
    "squeue: no jobs pending; fatal errors: 0",
    "INFO: access to the gated repo granted, downloading config.json",
    # slurmstepd's cgroup set-up notice, which steps that go on to finish print too
    "slurmstepd: error: xcgroup_instantiate: unable to create cgroup '/sys/fs/cgroup/memory/slurm/uid_1000' : Cannot allocate memory",
    # an OSError a job survives (a warning, a cache it skips), a desktop app's Xid, words of a test run that passed
    "WARNING - could not open /etc/x.conf: [Errno 2] No such file or directory: '/etc/x.conf'",
    '{"level":"info","msg":"Could not read cache: [Errno 2] No such file or directory: c.json, skipping"}',
    "Failed to load the tokenizer cache: [Errno 2] No such file or directory: 'c.json'; falling back to the slow one",
    "NVRM: Xid (PCI:0000:08:00): 31, pid=169800, name=chrome, Ch 00000023, intr 00000000. MMU Fault: ENGINE CE0",
    # a hardware-class Xid once is noise (a stream of them is gpu_hardware.xid_repeated's)
    "[22859.08] NVRM: Xid (PCI:0000:3b:00): 109, pid=4242, name=pt_main_thread, CTX SWITCH TIMEOUT",
    "Health check failed: 0 times",
    "pytest -x tests/ ; errors = failures = 0",
    "INFO: server answered 404 Client Error: Not Found for url: /x, retrying",
    "cleanup: /tmp/x: No such file or directory (already removed)",
    "see the data layout at Thread.java and Main.scala",
    # the same words where nothing failed: a cache the job then creates, a tool's probe, a passing test, a nan grad step skipped
    "INFO: cache miss ([Errno 2] No such file or directory: 'c.json'), building it",
    "ls: cannot access 'ckpt': No such file or directory",
    "sudo: unable to write to /var/log/x: Permission denied",
    "MyCocoDataset is registered in the dataset registry",
    "the key 'foo' is not in the registry yet, registering it",
    "tcmalloc: large alloc 1073741824 bytes == 0x55d5c0000000 @  0x7f1",
    "(trainer:582) WARNING: The grad norm is nan. Skipping updating the model.",
    "Early stopping: training stopped at epoch 12 (no improvement)",
    "test_broadcast (tests.unit.comm.TestBroadcast) ... ok",
    "FAIL_ON_WARNINGS: 0",
    "grad check: PASS",
    "INFO: accuracy 0.9, list index out of range checks: 0",
    "[2024-03-01 10:00:00,000][__main__][INFO] - Training started",
    "The above exception handling is disabled in this build",
    "Abort trap count: 0",
    "HTTP Error rate: 0.0",
    "ERROR 404 pages served: 0",
    "Expecting value of lr to be set by the scheduler",
    "[WARNING] No module named 'triton', the sparse ops are off",
    # the same words where nothing failed: docs and flags about device asserts, an allocator's warning, a wandb
    # run logged in, an exec that succeeded, fp16's skipped step (a finite loss beside a NaN norm), finite norms
    "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.",
    # the placer's message as quoted source, and soft placement that settles it quietly
    "\"Could not satisfy explicit device specification '\", node->requested_device(),",
    "config = tf.ConfigProto(allow_soft_placement=True)  # ops that cannot be placed on the GPU fall back",
    "[warn] memory_pool.hpp:371  [MEM] cudaMalloc failed: an illegal memory access was encountered, trimming...",
    "UBSan found no misaligned address loads in this build",
    "wandb: Currently logged in as: someone. Use `wandb login --relogin` to force relogin",
    "command terminated with exit code 0",
    "{'loss': 2.3104, 'grad_norm': nan, 'learning_rate': 2e-05, 'epoch': 0.01}",
    "{'loss': 0.0123, 'grad_norm': 0.41, 'learning_rate': 2e-05, 'epoch': 3.0}",
    " iteration      300/   10000 | lm loss: 6.112233E+00 | loss scale: 1.0 | grad norm: 1.234 |",
    " iteration      300/   10000 | lm loss: 6.112233E+00 | loss scale: 65536.0 | grad norm: nan |",
    # a stamped ERROR record the program handled (a retry, a fallback), a count of none, a warning
    "2024-04-16 14:59:40,459 ERROR Failed to upload metrics, retrying in 5s",
    "2024-04-16 14:59:40,459 ERROR Could not read the cache, falling back to a rebuild",
    "2024-04-16 14:59:40 | ERROR    | Task summary: 0 errors in 120 steps",
    "2024-04-16 14:59:40,459 ERROR errors: 0",
    "2024-04-16 14:59:40,459 WARNING Can't load tokenizer from the cache, downloading it",
    "2024-04-16 14:59:40,459 INFO Error handling is set to strict",
    "[2024-04-16 14:59:40] ERROR: upload failed, retrying in 5s",
    'time="2024-04-16T14:59:40Z" level=error msg="failed to pull image, retrying" attempt=2',
    'time="2024-04-16T14:59:40Z" level=info msg="error count: 0"',
    "2024-04-16 14:59:40 [error    ] upload failed, will retry       attempt=2",
    "[14:59:40] ERROR    0 errors in the last epoch",
    "2024-05-02T08:11:40.5Z ERROR: pip's dependency resolver does not currently take into account all the packages "
    "that are installed. This behaviour is the source of the following dependency conflicts.",
    "[1]+  Done                    python train.py",
    "[1]+  Exit 0                  python train.py",
    "Command exited with non-zero status 0 times",
    "Exception in thread pool: 4 workers busy",
    # pytest's source line and a passing test; the autoscaler's wait for busy nodes
    "tests/test_launch.py::test_exit_codes PASSED",
    "(autoscaler +1m2s) Warning: The following resource request cannot be scheduled right now: {'GPU': 1.0}. "
    "This is likely due to all cluster resources being claimed by actors.",
    "Traceback (most recent frames are shown first in the viewer)",
    "Exit code 0",
    "[gunicorn] Worker (pid:112) exiting",
    "handler: on SIGTERM the run saves a checkpoint before terminating due to preemption",
    "mpirun: bind-to core, map-by slot; a request was made to bind each rank to one core",
    "see above for traceback of the data loader's warm-up",
    # a corrected-error notice, and a goroutine that is only waiting
    "kernel: mce: [Hardware Error]: Machine check events logged",
    "goroutine 12 [chan receive, 3 minutes]:",
    "Fatal error: none so far; the checker reports them here",
]


@pytest.mark.parametrize("select", ["re", "hyperscan"])
@pytest.mark.parametrize("line", _SIGNAL_DEATHS)
def test_a_death_reported_by_the_shell_or_a_runtime_is_a_failure(tmp_path, select, line):
    log = _among_steps(tmp_path, line, 3000)
    # a failure is read (unknown, or the category a rule names: a lower-cased OOM is gpu_oom)
    assert diagnose_job([str(log)], select=select)["category"] != "none"


@pytest.mark.parametrize("line", _HEALTHY)
def test_healthy_lines_with_those_words_stay_healthy(tmp_path, line):
    log = tmp_path / "job.log"
    log.write_text("[rank0]: step 1 loss 1.2\n" + line + "\n[rank0]: step 2 loss 1.1\n")
    assert diagnose_job([str(log)])["category"] == "none"
