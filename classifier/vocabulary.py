"""The failure vocabulary: the words a log uses for "this job failed" that no rule owns.

Written once here, it feeds four readers: the failure signals (did the job fail, what did it
say last), the fallback model's failure region, triage's grouping of unexplained failures by
exception type, and the prefilter, which may skip a line only if nothing here could match it.

Each term is a regex on a normalised line together with two gates. `raw` is a regex on the
raw line as read (case-sensitive; Hyperscan's and `re`'s common syntax) that every line the
term could match also matches, whatever normalising later removes around the message (rank
labels, escape sequences, JSON or HTML escaping); the prefilter selects with it. `gates` are
literals of which such a line holds one (case-insensitive), or for the two terms no literal
gates, `gate_pattern`, a regex on lower-cased text: a cheaper first pass for the pure-Python
finder, which then checks `raw`. Tests run every corpus line and rule example through both.
"""

import re

from classifier.diagnosis.hint import Hint
from classifier.precompiled import re_compile
from classifier.diagnosis.term import Term
from classifier.diagnosis.native_terms import NATIVE_FAILURE_TERMS

# Python exception class names end in one of these (`RuntimeError`, `DistBackendError`, `KeyboardInterrupt`, `SystemExit`, `ChildFailedError`, `BackendCompilerFailure`).
EXCEPTION_SUFFIXES = ("Error", "Exception", "Interrupt", "Exit", "Failure", "Fault")
_SUFFIX = "(?:" + "|".join(EXCEPTION_SUFFIXES) + ")"
# In the raw line an exception's name may be followed by what normalising strips (an escape, a JSON quote, a box border), but never by a letter, `(`, `)`,
# `,`, `.` or `=`: so `NewConnectionError(` in a urllib3 retry and `ASYNC_ERROR_HANDLING` are not exceptions.
_NAME_END = r"(?:[^A-Za-z0-9_(),.=]|$)"

_CAPITALS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"


def _each(form, chars):
    """`form` with each of `chars` in turn: one regex per literal start, for Hyperscan."""
    return tuple(form.replace("{}", c) for c in chars)


def _any(terms):
    return re_compile("|".join(f"(?:{t.pattern})" for t in terms))


# `RuntimeError: ...`, `torch.distributed.DistBackendError: ...`, `KeyError: 'x'`, a bare `AssertionError`; the dotted module path is optional. Every such name ends in a suffix.
EXCEPTION_TERMS = (
    Term(rf"^(?:[A-Za-z_]\w{{0,127}}\.){{0,32}}(?:[A-Z]\w{{0,127}}{_SUFFIX}|Exception)(?: \(see above for traceback\))?(?::\s|:$|$)",
         tuple(s.lower() for s in EXCEPTION_SUFFIXES), raw=rf"(?:[A-Z]\w*{_SUFFIX}|Exception){_NAME_END}", scan=(_SUFFIX + _NAME_END,)),
    # a class from a package module, whatever its name: `torch._dynamo.exc.Unsupported: `
    # (for Hyperscan one regex per capital: `.A` ... `.Z` are literals it can look for)
    Term(r"^(?:[a-z_]\w{0,127}\.){2,32}[A-Z]\w{0,127}: ", gate_pattern=r"\w\.[a-z_]\w*: ",
         raw=r"\w\.[A-Z]\w*(?::|\x1b|\\)", scan=_each(r"\w\.{}\w*(?::|\x1b|\\)", _CAPITALS)),
    # the standard library's lower-case classes, by module (a metric `val.error: 0.3` is not one): `socket.gaierror: [Errno -2] Name or service not known`,
    # `socket.timeout: timed out`, `struct.error: unpack requires a buffer of 4 bytes`, `re.error: ...`
    Term(r"^(?:_?socket\.(?:gaierror|herror|timeout|error)|(?:_?struct|re|sre_constants|zlib|binascii"
         r"|select|mmap|_?curses|resource|termios)\.error)(?::\s|:$|$)", (".gaierror", ".herror", ".timeout", ".error"),
         raw=r"(?:socket\.(?:gaierror|herror|timeout|error)|(?:struct|re|constants|zlib|binascii|select"
             r"|mmap|curses|resource|termios)\.error)(?::|\x1b|\\|$)"),
)
_GLUED_NAME = r"[A-Z][A-Za-z0-9]*?(?:Error|Exception)"
_CMD_UNKNOWN = ("pas reconnu en tant que commande", "no se reconoce como un comando", "reconhecido como um comando", "riconosciuto come comando", "внутренней или внешней командой", "不是内部或外部命令", "不是內部或外部命令", "内部コマンドまたは外部コマンド", "내부 또는 외부 명령")  # cmd.exe's "not recognized as an internal or external command" in fr, es, pt, it, ru, zh, ja, ko
# Launchers re-raise a child's failure under their own name; these are echoes, not causes.
ECHO_TERMS = (
    Term(r"ChildFailedError", ("childfailederror",), raw="ChildFailedError"),
    Term(r"CalledProcessError", ("calledprocesserror",), raw="CalledProcessError"),
    Term(r"SystemExit", ("systemexit",), raw="SystemExit"),
    Term(r"SignalException", ("signalexception",), raw="SignalException"),
    # Ray's driver reports that an actor's process died (RayActorError; from Ray 2.10 ActorDiedError); torch's spawn
    # re-raises a child's exception in the parent (ProcessRaisedException): the detail under it says why.
    Term(r"ActorDiedError|RayActorError|ProcessRaisedException", ("actordiederror", "rayactorerror", "processraisedexception"),
         raw="ActorDiedError|RayActorError|ProcessRaisedException"),
    Term(r"BrokenPipeError", ("brokenpipeerror",), raw="BrokenPipeError"),  # the survivor's echo of a reader that died (a killed DataLoader worker)
)
# Failure lines that are not exceptions.
OTHER_FAILURE_TERMS = (
    Term(r"Traceback \(most recent call last\)|^(?:╭─{1,200} )?Traceback \(most[ a-z]{0,17}$|^During handling of the above exception, another|^The above exception was the direct cause of",
         ("traceback", "above exception"), raw="Traceback|above exception"),  # also cut in its head; the chaining lines
    # a traceback's frame: pastes often keep the frames and lose the header and the message (smart quotes too, once normalised)
    Term(r'\bFile "[^"]+", line \d+, in ', ("file ",), raw=r'File (?:\\?"|&quot;|&#34;|“|”)'),
    # IPython/Jupyter marks each frame's current line with an arrow (`--> 123     raise X(`, `----> 1673 trainer.train()`): a notebook traceback cut before its message
    Term(r"^-{2,}>\s?\d+\s", ("->",), raw=r"-->"),
    # rich's traceback box marks each frame's own line with `❱` (a box cut before its header)
    Term(r"^❱\s*\d+\s", ("❱",), raw="❱"),
    # C/CUDA assert(): a device-side assert prints `...: Assertion `idx < size` failed.` per thread (HIP: `Device-side assertion `x' failed`)
    Term(r"[Aa]ssertion [`'][^`']+[`'] failed|^Assertion failed: [^\n]{1,300}, file [^\n]{1,300}, line \d{1,7}", ("assertion",), raw="[Aa]ssertion"),  # (MSVC's assert)
    Term(r"terminate called after throwing", ("terminate called",), raw="terminate called"),
    # C++/CUDA applications log a failed CUDA call in their own words, with no Python exception: `CUDA error at tensor.cpp:1458 - cudaErrorIllegalAddress:
    # ...`, `CUDA error: out of memory`, darknet's and other C macros' `CUDA Error: unknown error`.
    # ROCm's HIP says the same in its own words (`HIP error: invalid device function`, `hipErrorNoBinaryForGpu`)
    Term(r"\bCUDA [Ee]rror\b|\bHIP [Ee]rror ?: |\b(?:cuda|hip)Error[A-Z]\w", ("cuda error", "cudaerror", "hip error", "hiperror"),
         raw=r"(?:CUDA|HIP) [Ee]rror|(?:cuda|hip)Error[A-Z]"),
    # TensorRT's logger names each failed call by its error code (`[TRT] [E] 1: [runtime.cpp::...] Error Code 1:
    # Serialization (...)`, `... Error Code 4: Internal Error (Engine deserialization failed.)`)
    Term(r"\bError Code \d{1,3}: [A-Z][A-Za-z ]{1,40}\(", ("error code ",), raw=r"Error Code [0-9]"),
    # NCCL's CUDACHECK and its copies elsewhere: `NCCL WARN Cuda failure 'an illegal memory access ...'`
    Term(r"(?i:\bcuda failure\b)", ("cuda failure",), raw="(?i:cuda failure)"),
    # any case: zsh and DataLoader's worker handler write it in lower case (`zsh: segmentation fault  python x.py`, `ERROR: Unexpected segmentation fault encountered`)
    Term(r"(?i:segmentation fault)", ("segmentation fault",), raw="(?i:segmentation fault)"),
    Term(r"core dumped", ("core dumped",), raw="core dumped"),
    # the shell's words for a fatal signal (strsignal), alone or in bash's `line N: PID <what>`
    Term(r"(?:^|\bline \d+:\s+\d+\s+)(?:Illegal instruction|Floating point exception|Bus error"
         r"|Trace/breakpoint trap)(?:\s|$)",
         ("illegal instruction", "floating point exception", "bus error", "trace/breakpoint trap"),
         raw="Illegal instruction|Floating point exception|Bus error|Trace/breakpoint trap"),
    # zsh's report of a job a signal ended (`zsh: abort      python x.py`), fish's (`fish: Job 1, 'python x.py' terminated by signal SIGSEGV (Address boundary error)`)
    Term(r"^zsh: (?:segmentation fault|bus error|abort|illegal hardware instruction"
         r"|floating point exception|killed|trace trap)\s+\S", ("zsh: ",), raw="zsh: "),
    Term(r"terminated by signal SIG[A-Z]+", ("terminated by signal",), raw="terminated by signal"),
    # DataLoader's worker signal handler: `ERROR: Unexpected floating-point exception encountered in worker.`
    Term(r"Unexpected [\w -]{3,40} encountered in worker", ("encountered in worker",), raw="encountered in worker"),
    # a launch that never started: `bash: deepspeed: command not found`, cmd's `'x' is not recognized as an internal or external command` (also in its own language), `exec format error`
    Term(r": command not found\b|\bcommand not found: \S|\bis not recognized as (?:an internal or external command|the name of a cmdlet)|\bexec format error"
         r"|\bsyntax error near unexpected token\b|" + "|".join(_CMD_UNKNOWN), ("command not found", "is not recognized as", "exec format error", "syntax error near unexpected") + _CMD_UNKNOWN,
         raw="command not found|is not recognized as|exec format error|syntax error near unexpected|" + "|".join(_CMD_UNKNOWN)),
    # dash (Debian's /bin/sh) names a missing command with the script's line number: `train.sh: 1: srun: not found`, `/bin/sh: 3: deepspeed: not found`
    Term(r"^[\w./-]{1,255}: \d{1,9}: [\w./+-]{1,255}: not found\b", (": not found",), raw=": not found"),
    Term(r"can't open file ['\"].{1,1024}?['\"]: \[Errno \d+\]", ("can't open file",), raw="t open file"),  # python3 without its script
    # Ray's driver found a task's or actor's error nobody retrieved: the task failed
    # (`Unhandled error (suppress with 'RAY_IGNORE_UNHANDLED_ERRORS=1'): ray::Worker.f() ...`)
    Term(r"Unhandled error \(suppress with\b", ("unhandled error (suppress",), raw=r"Unhandled error \(suppress"),
    # a notebook's kernel died under the cell (Jupyter; VS Code's wording; the server's warning when it restarted a dead one)
    Term(r"kernel appears to have died|Kernel crashed while executing code|\bkernel [0-9a-f]{8}(?:-[0-9a-f]{4}){3}-[0-9a-f]{12} restarted\b",
         ("kernel appears to have died", "kernel crashed while executing", " restarted"),
         raw="(?i:kernel appears to have died|kernel crashed while executing)|kernel [0-9a-f]{8}-[0-9a-f-]{27} restarted"),
    # pip could not resolve what the job's set-up asked for: nothing ran after it
    Term(r"Could not find a version that satisfies the requirement|No matching distribution found for",
         ("could not find a version that satisfies", "no matching distribution found"),
         raw="Could not find a version that satisfies|No matching distribution found"),
    # Open MPI's non-zero summary and its help blocks that end a launch (no executable, too few slots, no nodes allocated or
    # usable, an init that failed, daemons lost or unreachable, MPI_ERRORS_ARE_FATAL, a peer gone); Hydra's line before the app's traceback; a JVM's main thread
    Term(r"one or more processes exited with non-zero status|^a non-zero exit code\. Per user-direction"
         r"|(?:^|\] )Error executing job with overrides:|^Exception in thread (?:\"main\"|[\w.-]{1,100}(?: \([\w.<>]{1,100}\))?:$)|^There are not enough slots available"
         r"|^(?:mpirun|mpiexec|orterun|prterun|prte) was unable to (?:find|launch|start)\b|^ORTE was unable to reliably"
         r"|^It looks like (?:the function `?)?\w{1,20}(?: \w{1,20}){0,3}`? failed for some reason; your|^An? [OP]RTE daemon has unexpectedly"
         r"|^Open MPI tried to bind a new process, but something went wrong"
         r"|^\*\*\* An error occurred in MPI_\w|^An MPI communication peer process has unexpectedly disconnected|^[OP]RTE has lost communication with"
         r"|^No nodes are available for this job\b|^Could not override '[^'\s]{1,200}'\.?$|Your input ran out of data; interrupting training",  # Hydra; Keras
         ("exited with non-zero status", "non-zero exit code. per", "error executing job", "exception in thread", "not enough slots",
          "was unable to ", "failed for some reason", "daemon has unexpectedly", "an error occurred in mpi_", "unexpectedly disconnected",
          "has lost communication", "no nodes are available", "could not override '", "your input ran out of data", "tried to bind a new process"),
         raw="exited with non-zero status|non-zero exit code\\. Per|Error executing job|Exception in thread|tried to bind a new process"
         "|not enough slots|An error occurred in MPI_|was unable to (?:find|launch|start|reliably)|failed for some reason"
         "|daemon has unexpectedly|unexpectedly disconnected|has lost communication|No nodes are available|Could not override '|Your input ran out of data"),
    # an MPI launcher that refused its own command line before starting anything: Open MPI's refusal to run as root
    # (its help block `mpirun has detected an attempt to run as root.`), and its `mpirun: Error: unknown option "-ppn"`
    # when DeepSpeed's mpich / impi launcher builds an MPICH command line and Open MPI's mpirun is first on PATH
    Term(r"^(?:mpirun|mpiexec|orterun|prterun|prte) has detected an attempt to run as root\b|^(?:mpirun|mpiexec|orterun|prterun|prte): Error: \S",
         ("attempt to run as root", ": error: "), raw="attempt to run as root|(?:mpirun|mpiexec|orterun|prterun|prte): Error: "),
    # detectron2's NaN-loss check, espnet2's stop on NaN grads, TensorBoard's refusal of a NaN/Inf value (a loss gone NaN)
    Term(r"Fatal Python error|(?i:\bloss became infinite or nan at iter)|gradients at all steps are invalid in this epoch|\bThis training was stopped at \d"
         r"|\bNaN or Inf found in input tensor", ("fatal python error", "infinite or nan at iter", "invalid in this epoch", "training was stopped at",
         "nan or inf found"), raw="Fatal Python error|(?i:infinite or nan at iter)|invalid in this epoch|training was stopped at|NaN or Inf found"),
    # TensorFlow's line naming the op a runtime error came from: `[[Node: split = Split[...]]]`, `[[{{node split}}]]`
    Term(r"^\[\[(?:Node: [\w/.-]{1,400} = \w|\{\{node [\w/.-]{1,400}\}\})", ("[[node: ", "[[{{node "),
         raw=r"\[\[(?:Node: |\{\{node )"),
    Term(r"exits with return code = -?[1-9]", ("exits with return code",), raw="exits with return code"),  # deepspeed
    # PaddlePaddle's launchers: the legacy summary (`ABORT!!! Out of all 4 trainers, the trainer process with rank=[3] was aborted`) and paddle.distributed.launch's `Container failed !!!`
    Term(r"ABORT!!! Out of all \d+ trainers|Container failed !!!", ("abort!!!", "container failed"), raw=r"ABORT!!!|Container failed !!!"),
    Term(r"failed \(exitcode: -?[1-9]", ("failed (exitcode",), raw=r"failed \(exitcode"),  # torchelastic
    Term(r"[Ee]xit(?:ed with)? (?:a )?(?:non-zero )?(?:code|status)(?: of)?:? -?[1-9]|^\[\d{1,4}\][+-]?\s+Exit [1-9]\d{0,2}\s{2,}\S", ("exit",),  # GNU time's; bash's job report; Vertex AI's replica
         raw=r"[Ee]xit(?:ed with)? (?:a )?(?:non-zero )?(?:code|status)(?: of)?:? -?[1-9]|\][+-]?\s+Exit [1-9]"),
    Term(r"^Killed$|^Aborted", ("killed", "aborted"), raw="Killed|Aborted"),
    Term(r"srun: error:", ("srun: error:",), raw="srun: error:"),
    # Slurm's clients and daemons: MUNGE refusals, bad job credentials, no config source, slurmctld unreachable
    Term(r"\b(?:sbatch|salloc|sbcast|scontrol|scancel|squeue|sinfo|sacct|slurmd|slurmctld|srun): (?:error|fatal):",
         (": error:", ": fatal:"), raw=": (?:error|fatal):"),
    # a daemon's own log line (slurmd's `[2022-09-10T17:40:58.753] error: Invalid job credential`, its timestamp peeled off), a compiler driver's or git's `error: ...`
    Term(r"^error: (?!None\b)[A-Za-z][a-z]", ("error: ",), raw="(?i:error: [a-z][a-z])"),
    Term(r"_job_complete: JobId=\d+ WTERMSIG \d+", ("wtermsig",), raw="WTERMSIG"),
    # slurmstepd's errors, but not its swap warning nor its cgroup set-up notice that jobs which finish print too
    Term(r"slurmstepd(?:-[\w.-]+)?: error: (?!Exceeded (?:job|step) memory limit at some point|xcgroup_instantiate: unable to create)",
         ("slurmstepd",), raw="slurmstepd(?:-[A-Za-z0-9_.-]+)?: error:"),
    # C++ extensions' NCCL check macros: `NCCL Error at global_exchange.cpp:16 value 4`
    Term(r"\bNCCL [Ee]rror (?:at|in)\b", ("nccl error",), raw="NCCL [Ee]rror (?:at|in)"),
    Term(r"(?<!\b0 )FAILED\b(?!\s?[:=]\s?0\b)", ("failed",), raw=r"FAILED(?:[^A-Za-z0-9_]|$)"),  # not `0 FAILED`, `FAILED: 0`
    # glog FATAL lines from C++ (`F1203 12:00:01.123 ...`): no word to gate on, only the shape.
    Term(r"\bF\d{4} \d\d:\d\d:\d\d", gate_pattern=r"[ef]\d{4} \d\d:\d\d:\d\d",
         raw=r"F\d{4} \d\d:\d\d:\d\d", scan=_each(r"F{}\d{3} \d\d:\d\d:\d\d", "0123456789")),
    # argparse: `train.py: error: argument --x: invalid choice`, `error: unrecognized arguments`
    Term(r"^[\w.-]+: error: (?:argument|unrecognized arguments|the following arguments)", (": error: ",), raw=": error: "),
    # An exception's name glued to other text by ranks writing at once (`AttributeError` three
    # times over, `...ds_summary()AssertionError`): not an exception line, but a failure.
    Term(rf"(?:^|[\s\])'\"])(?:{_GLUED_NAME}){{2,}}(?::|\s|$)|[)\]'\"]{_GLUED_NAME}(?::\s|\s*$)"
         rf"|^{_GLUED_NAME}(?:[a-rt-z]|\s{{2,}}\S)",
         gate_pattern=r"(?:error|exception)(?:[a-z]|\s\s)|[)\]'\"][a-z0-9]*(?:error|exception)",
         # Never followed by `(` in any form the pattern matches: `NewConnectionError(` in a urllib3 retry is a call, not a name glued to another rank's text.
         raw=r"[A-Z][A-Za-z0-9]*(?:Error|Exception)(?:[^(\n]|$)", gate_needs=("error", "exception"),
         scan=(r"(?:Error|Exception)(?:[^(\n]|$)",)),
) + NATIVE_FAILURE_TERMS
# Read by the failure signals alone (with AFTERMATH_TERMS): the model's region (region.py) starts at OTHER_FAILURE.
_LOWER_ERRORS = ("value", "type", "key", "index", "attribute", "assertion", "runtime", "import", "syntax", "os",
                 "modulenotfound", "filenotfound", "name", "notimplemented", "zerodivision", "eof", "permission",
                 "recursion", "memory", "overflow", "unicodedecode", "jsondecode", "lookup", "connection",
                 "timeout", "unboundlocal", "distbackend", "outofmemory")
# glog's / absl's line head (`W1120 09:43:20.044389 207564800 init.cc:234] `; the normaliser peels its
# level and stamp, leaving `207564800 init.cc:234] `), optional before a term a C++ handler may log through it.
_GLOG_HEAD = r"^(?:(?:[IWEF]\d{4} \d\d:\d\d:\d\d[.\d]{0,10}\s{1,8})?\d{1,10} [^\s\]]{1,300}:\d{1,6}\] )?"

EVIDENCE_TERMS = (
    # a paste lower-cased whole: its traceback header, frames, Python's exception names (`valueerror:x`)
    Term(rf"^traceback \(most recent call last\)|\bfile \"[^\"]+\", line \d+, in "
         rf"|^(?:[a-z_]\w{{0,63}}\.){{0,16}}(?:{'|'.join(_LOWER_ERRORS)})error(?::|$)",
         ("traceback (most recent", 'file "') + tuple(n + "error" for n in _LOWER_ERRORS),
         raw=rf"traceback \(most|file (?:\\?\"|&quot;|&#34;|“|”)|(?:{'|'.join(_LOWER_ERRORS)})error"),
    # rich's `│ ❱ 2806 │` frame arrow with its box characters lost to U+FFFD: `� � 2806 �`
    Term("^\ufffd \ufffd {0,6}\\d{1,6} \ufffd", ("\ufffd \ufffd",), raw="\ufffd \ufffd"),
    # CPython's commonest messages without their type (a title, a `print(e)`): `__init__() got an unexpected keyword argument 'gpus'`, `f() missing 1
    # required positional argument: 'x'`, `'NoneType' object has no attribute 'shape'`, `list index out of range`, `No module named 'x'`
    Term(r"^[\w.<>]{1,200}\(\) (?:got an unexpected keyword argument '|missing \d+ required (?:positional|keyword-only)"
         r" arguments?: '|takes (?:from \d+ to )?\d+ positional arguments? but \d+ (?:were|was) given"
         r"|got multiple values for argument ')|^(?:'[\w.]{1,200}' object|module '[\w.]{1,200}'"
         r"|type object '[\w.]{1,200}') has no attribute '|^'[\w.]{1,200}' object is not (?:subscriptable"
         r"|callable|iterable)\b|^name '\w{1,200}' is not defined\b|^(?:list|tuple|string) index out of range$|^maximum recursion depth exceeded\b"
         r"|^(?:integer |float )?division(?: or modulo)? by zero$|^string indices must be integers\b|^unsupported operand type\(s\) for "
         r"|^(?:too many|not enough) values to unpack \(expected \d|^invalid literal for int\(\) with base \d|^Expecting value: line \d{1,9} column \d"
         r"|^'[\w-]{1,20}' codec can't (?:de|en)code (?:byte|character)|^No module named '[\w.]{1,200}'$", ("argument", "has no attribute", "object is not",
         "is not defined", "index out of range", "by zero", "recursion depth", "string indices", "unsupported operand", "values to unpack",
         "invalid literal", "expecting value", "codec can't", "no module named"),
         raw=r"\(\) (?:got|missing|takes) |has no attribute '|object is not |is not defined|index out of range|by zero|recursion depth|string indices"
         r"|unsupported operand|values to unpack|invalid literal|Expecting value|codec can't|No module named"),
    # pickle's refusals pasted without their type: a spawn target, lambda or local function that
    # cannot cross to a child process (`Can't pickle <function f at 0x..>`, the child's `Can't get attribute`)
    Term(r"^(?:Can't|Cannot|cannot) pickle (?:local object |<[\w.]{1,200} |'[\w.]{1,200}' object\b)"
         r"|^Can't get attribute '[\w.<>]{1,200}' on <module '",
         ("t pickle ", "t get attribute "), raw=r"(?i:t pickle )|t get attribute "),
    # ProcessGroupWrapper's check (TORCH_DISTRIBUTED_DEBUG=DETAIL) of the collectives ranks run
    Term(r"Detected mismatch between collectives on ranks", ("mismatch between collectives",), raw="mismatch between collectives"),
    # the CUDA runtime's words for a kernel that failed (cudaGetErrorString), pasted alone, quoted, or after
    # an application's own macro (`GPUassert: an illegal memory access was encountered kernel.cu 88`); not
    # in a warning (an allocator's retry after the error says nothing new)
    Term(r"^(?!.{0,400}?(?:[Ww]arn|WARN))(?:.{0,400}?: )?[\"'“‘]?(?:an illegal (?:memory access|instruction) was encountered|misaligned address\b"
         r"|unspecified launch failure|device-side assert triggered|the launch timed out and was terminated"
         r"|too many resources requested for launch)",
         ("illegal memory access", "illegal instruction was", "misaligned address", "unspecified launch failure",
          "device-side assert triggered", "launch timed out and was", "too many resources requested"),
         raw="illegal memory access|illegal instruction was|misaligned address|unspecified launch failure"
             "|device-side assert triggered|launch timed out and was|too many resources requested"),
    # wandb.init / wandb.login refusing a run with no API key and no terminal to ask on: the script stops
    Term(r"\bapi_key not configured \(no-tty\)", ("api_key not configured",), raw="api_key not configured"),
    # the kubelet's status for an exec'd command that failed; CI container hooks and hyperfine say it too
    Term(r"(?i:\bcommand terminated with non-zero exit code\b)", ("command terminated with non-zero",),
         raw="(?i:command terminated with non-zero)"),
    # a NaN gradient norm where no loss scaler can skip the step (bf16 / fp32): Megatron's iteration line at loss scale 1.0
    Term(r"\bloss scale: 1\.0 \| grad norm: nan\b", ("grad norm: nan",), raw="grad norm: nan"),
    # A logger's ERROR / CRITICAL record with no exception line (`ERROR:root:`, `[ERROR] [launch.py:..]`,
    # `[ERROR|trainer.py:12]`, `name - ERROR - `, vLLM's); pip's bare `ERROR: ` note is harmless
    Term(r"^(?:ERROR|CRITICAL):[\w.]{0,200}:|^\[(?:ERROR|CRITICAL)(?:\]\s|\|[\w.-]{1,200}:\d{1,6}\])"
         r"|^(?:[\w.]{1,200} - )?(?:ERROR|CRITICAL) - |^(?:ERROR|CRITICAL) \d\d-\d\d \d\d:\d\d:\d\d "
         r"|\bAn error has been caught in function '|\]\[(?:ERROR|CRITICAL)\] - "  # loguru's catch, Hydra's record
         # a JSON logger's record and a CLI's own `Error: <why>` (click, docker, a script's exit, Ray's autoscaler event)
         r"|\"(?:level|levelname|severity)\"\s{0,4}:\s{0,4}\"(?i:error|critical|fatal)\"|^(?:\((?:scheduler|autoscaler) \+[\dhms]{1,12}\) )?Error: (?!None\b)[A-Za-z]",
         ("error", "critical", "fatal"), raw=r"(?:ERROR|CRITICAL|FATAL)[:\s]|\[(?:ERROR|CRITICAL)[\]|]|\[(?:error|critical|fatal) *\]|level=\"?(?i:error|fatal|critical)|error has been caught"
         r'|(?i:level|levelname|severity)\\?"\s{0,4}:\s{0,4}\\?"(?i:error|critical|fatal)|Error: '),
    # glog / c10 ERROR lines (`E0301 10:05:11.223 42 api.py:869]`, `[E ProcessGroupNCCL.cpp:12]`), not absl's pre-init `E0000 00:00:` (TF's noise)
    Term(r"^\[?E(?!0000)\d{4} \d\d:\d\d:\d\d[.\d]{0,10}\s{1,8}\d{1,10} [^\s\]]{1,300}:\d{1,6}\]"
         r"|^\[E [\w.-]{1,200}:\d{1,6}\]", ("[e ",), gate_pattern=r"[ef]\d{4} \d\d:\d\d:\d\d",
         raw=r"E\d{4} \d\d:\d\d:\d\d|\[E [A-Za-z0-9_.-]+:[0-9]",
         scan=_each(r"E{}\d{3} \d\d:\d\d:\d\d", "0123456789") + (r"\[E [A-Za-z0-9_.-]+:[0-9]",)),
    # fatal-signal reports of C++ runtimes: glog's and folly's handlers (`*** Signal 15 (SIGTERM) (0x..) received by PID`),
    # absl's, TensorFlow's, UCX's, std::terminate and libc++abi's, gdb's, the kernel's `segfault at 0 ip .. sp`, gunicorn's
    # (behind glog's own head where the handler logs through it: Paddle's `W1120 09:43:20.044389 207564800 init.cc:234] *** Aborted at`)
    Term(_GLOG_HEAD + r"\*\*\* (?:Aborted at \d{1,12} \((?i:unix time)|(?:SIG[A-Z]{2,8} \(@[^)\n]{1,20}\)|Signal \d{1,2} \(SIG[A-Z]{2,8}\))[^\n]{0,200}? received by PID"
         r"|Received signal \d{1,2} \*\*\*)|\bCaught (?:signal \d{1,2} \([A-Z]|a fatal signal\b)|^==== backtrace \(tid:|\bAbort trap: 6\b|\breceived signal SIG[A-Z]{2,8}, [A-Z]"
         r"|terminate called (?:recursively|without an active exception)|" + _GLOG_HEAD + r"\*\*\* (?:Check failure stack trace:|buffer overflow detected) \*\*\*"
         r"|\bsegfault at [0-9a-f]{1,16} ip [0-9a-f]{1,16} sp |\bterminating due to (?:uncaught )?exception\b|\bWorker \(pid:\d{1,10}\) was sent SIG[A-Z]{2,8}\b"
         r"|\bterminated abnormally with signal \d{1,2}/[A-Z]{3,6}\b|\bDevice::callbackQueue aborting with error\b|\bE[A-Z]\d{4}: Inner Error!",  # systemd-coredump, ROCclr, CANN
         ("*** aborted at", "received by pid", "*** received signal", "caught signal", "==== backtrace", "terminate called", "received signal sig",
          "check failure stack trace", "buffer overflow detected", "abort trap", "segfault at ", "terminating due to", "was sent sig", "terminated abnormally",
          "callbackqueue aborting", "caught a fatal signal", "inner error!"),
         raw=r"\*\*\* Aborted at|received by PID|\*\*\* Received signal|Caught signal|Caught a fatal signal|Inner Error!|==== backtrace|terminate called|Check failure stack trace"
             r"|buffer overflow detected|Abort trap|received signal SIG|segfault at |terminating due to|was sent SIG|terminated abnormally|callbackQueue aborting"),
    # the amdgpu driver's report of a GPU page fault (dmesg, journald): the queue that faulted is
    # killed, so the job died even where the paste holds only the kernel's lines
    Term(r"\bamdgpu: (?:\[\w{2,12}\] (?:(?:no-)?retry )?page fault \(src_id|(?:GC|MM)?VM_L2_PROTECTION_FAULT_STATUS:0x)",
         ("page fault (src_id", "vm_l2_protection_fault_status:0x"), raw=r"page fault \(src_id|VM_L2_PROTECTION_FAULT_STATUS:0x"),
    # Reports of a rank that failed: MPI launchers (`=   EXIT CODE: 139`), `Exit code:    1` in Open MPI's summary and `kubectl describe`, srun tearing a step
    # down, Ray's `RayTaskError(ValueError): ` (MPICH's error stack, Hydra's `execvp error`, Open MPI's binding refusal and missing program), nccl-tests' failures
    Term(r"MPI_ABORT was invoked on rank|\bcalled MPI_Abort\(|BAD TERMINATION OF ONE OF YOUR APPLICATION"
         r"|\bexiting improperly\b|^=?\s{0,8}(?:KILLED BY SIGNAL: \d|EXIT CODE: [1-9])|^Exit [Cc]ode:\s{1,40}[1-9]"
         r"|^srun: (?:forcing job termination|Force Terminated)|\bRayTaskError\(\w{1,100}\): |^Fatal error in (?:P?MPI|MPID|internal)_?\w{0,60}:(?: |$)"
         r"|\bAbort\(\d{1,12}\)(?: on node \d{1,7})? \(rank \d{1,7} in comm \d{1,7}\): "
         r"|\bprocess manager error waiting for completion\b|\bexecvp error\b|\berror setting up the boo?strap proxies\b"
         r"|\bcaused collective abort of all ranks\b|^A request was made to bind to that would result in binding more\b|\bAn error occurred in MPI_\w{1,40}\b|^OPAL ERROR\W|\bwas unable to find the specified executable file\b|\bTest (?:NCCL|CUDA|HIP) failure\b",
         ("mpi_abort", "bad termination", "exiting improperly", "killed by signal", "exit code: ", "srun: f", "raytaskerror(", "fatal error in ",
          "process manager error", "execvp error", "strap proxies", "collective abort", "request was made to bind", "an error occurred in mpi_", "opal error",
          "specified executable file", "test nccl failure", "test cuda failure", "test hip failure", " in comm "),
         raw=r"MPI_ABORT|MPI_Abort|BAD TERMINATION|exiting improperly|KILLED BY SIGNAL|EXIT CODE|Exit [Cc]ode:|An error occurred in MPI_|OPAL ERROR"
             r"|srun: [Ff]|RayTaskError\(|Fatal error in |process manager error|execvp error|strap proxies|collective abort|request was made to bind"
             r"|specified executable file|Test (?:NCCL|CUDA|HIP) failure| in comm [0-9]"),
    # torch's commonest error messages without their exception type (a title, a `print(e)`), and the advice every CUDA error ends with, pasted alone
    Term(r"^Expected all tensors to be on the same device\b|^expected scalar type \w{1,40} but found \w"
         r"|^mat1 and mat2 shapes cannot be multiplied|^Expected to have finished reduction in the prior iteration"
         r"|^element \d{1,6} of tensors does not require grad|^one of the variables needed for gradient computation has"
         r"|^Trying to backward through the graph a second time|^Error\(s\) in loading state_dict for "
         r"|^(?:Missing|Unexpected) key\(s\) in state_dict: |^size mismatch for [\w.]{1,300}: copying a param with shape"
         r"|^The size of tensor a \(\d{1,12}\) must match the size of tensor b|^index out of range in self\b"
         r"|^Input type \([\w.]{1,60}\) and weight type \([\w.]{1,60}\) should be the same"
         r"|^CUDA kernel errors might be asynchronously reported|^For debugging consider passing CUDA_LAUNCH_BLOCKING=1|^Expected more than 1 value per channel when training\b",
         ("same device", "expected scalar type", "mat1 and mat2", "finished reduction", "does not require grad",
          "one of the variables needed", "backward through the graph", "state_dict", "size mismatch for",
          "must match the size of tensor", "index out of range in self", "and weight type", "asynchronously reported", "cuda_launch_blocking", "value per channel"),
         raw=r"same device|expected scalar type|mat1 and mat2|finished reduction|does not require grad|one of the "
             r"variables needed|backward through the graph|state_dict|size mismatch for|must match the size of tensor"
             r"|index out of range in self|and weight type|asynchronously reported|CUDA_LAUNCH_BLOCKING|value per channel"),
    # the shell's fatal-signal words in other locales (glibc's strsignal, bash's `core dumped`): zh_CN, ja, de, fr, es, ru, ko
    Term(r"段错误|核心已转储|总线错误|非法指令|セグメンテーション違反|コアダンプ|(?i:speicherzugriffsfehler|speicherabzug"
         r"|erreur de segmentation|violación de segmento|ошибка сегментирования)|세그멘테이션 오류|코어 덤프",
         ("段错误", "核心已转储", "总线错误", "非法指令", "セグメンテーション違反", "コアダンプ", "speicherzugriffsfehler",
          "speicherabzug", "erreur de segmentation", "violación de segmento", "сегментирования",
          "세그멘테이션 오류", "코어 덤프"),
         # (the finders fold only ASCII letters: no gate starts with a Cyrillic capital)
         raw=r"段错误|核心已转储|总线错误|非法指令|セグメンテーション違反|コアダンプ|(?i:speicherzugriffsfehler|speicherabzug"
             r"|erreur de segmentation|violaci)|сегментирования|세그멘테이션 오류|코어 덤프"),
    # build tools that stopped: make's `make[2]: *** [x.o] Error 1`, CMake, pip's build errors
    Term(r"^make(?:\[\d{1,3}\])?: \*\*\* \[[^\]]{1,300}\] Error [1-9]|^CMake Error\b"
         r"|^error: (?:legacy-install-failure|metadata-generation-failed|subprocess-exited-with-error)\b",
         ("*** [", "cmake error", "error: "), raw=r"\*\*\* \[|CMake Error|error: (?:legacy|metadata|subprocess)"),
    # last words outside a warning: an open's OSError (`Cannot open x due to [Errno 2]`), `Check failed:`, curl, HTTP 4xx/5xx, pytest
    Term(r"^(?!.{0,400}?(?:[Ww]arning|WARN|INFO|[Rr]etry|[Ff]alling back|[Ss]kipping))(?i:.{0,400}?\b(?:cannot|can't|could not"
         r"|couldn't|unable to|failed to) (?:open|read|load|write|create|save|find|access)\b).{0,400}?\[Errno \d{1,5}\] [A-Z]"
         r"|(?:^|\] |\.\w{1,4}:\d{1,6}: )Check failed: \S|^curl: \(\d{1,2}\) [A-Z]|^=+ (?:FAILURES|ERRORS) =+$"
         r"|^(?!.{0,400}?(?:[Ww]arning|WARN|INFO))(?:.{0,400}?\b)?[45]\d\d (?:Client|Server) Error[:.] "
         r"|^HTTP Error [45]\d\d: |^ERROR [45]\d\d: [A-Z]|^(?:Client|Server) error '[45]\d\d ",
         ("[errno", "check failed: ", "curl: (", "= failures =", "= errors =", "client error", "server error", "http error ", "error 4", "error 5", "assert "),
         raw=r"\[Errno|Check failed: |curl: \(|= (?:FAILURES|ERRORS) =|E {3,}assert |(?:Client|Server) [Ee]rror[:.' ]|HTTP Error [45]|ERROR [45][0-9][0-9]: "),
    # a job's start that found no program or file, or may not run it (bash, sh, zsh, env): `run.sh: line 3: /v/bin/python: No such file or directory`,
    # `bash: ./train.sh: Permission denied`; Python's FileNotFoundError / PermissionError message alone (`[Errno 2] No such file or directory: 'x'`)
    Term(r"^(?:[\w./~-]{1,255}: line \d{1,9}|-?bash|sh|zsh|/usr/bin/env)(?:: line \d{1,9})?: (?:(?:cd|source|exec|\.): )?[^:]{1,255}: (?:No such file or directory|Permission denied)"
         r"|^zsh: (?:no such file or directory|permission denied): \S|^(?:\[Errno \d{1,3}\] )?(?:No such file or directory|Permission denied): ['\"‘“]",
         ("no such file or directory", "permission denied"), raw="(?i:no such file or directory|permission denied)"),
    # mm*'s registry refusal without its KeyError (`X is not in the dataset registry`, `... mmdet::model registry.`), unittest's verdicts, `Pass 1: FAIL`
    Term(r"^['\"]?[\w.-]{1,200} is not in the (?:[\w.]{1,60}::)?[\w ]{1,60} registry\b|^(?:FAIL|ERROR): \w{1,200} \([\w.]{1,300}\)"
         r"|(?:\.\.\.|:) FAIL\s{0,8}$", ("is not in the ", "fail: ", "error: ", "... fail", ": fail"),
         raw=r"is not in the |FAIL: |ERROR: \w+ \(|(?:\.\.\.|:) FAIL(?:[^A-Za-z0-9_]|$)"),
    Term(  # a Go panic's frames cut from their message (a Kubernetes operator or controller crashing)
         r"^\s*(?:/|[A-Za-z]:[/\\])\S{1,400}\.go:\d{1,7} \+0x[0-9a-f]{1,8}\s*$|^panic: \S", (".go:", "panic: "),
         raw=r"\.go:[0-9]|panic: "),
    Term(  # a JVM stack trace's frames cut from their exception (Spark, Hadoop, a Java tokenizer)
         r"^\s*at [\w$]+(?:[./][\w$<>-]+)+\([\w$]+\.(?:java|scala|kt):\d{1,7}\)", (".java:", ".scala:", ".kt:"),
         raw=r"\.(?:java|scala|kt):[0-9]"),
    Term(  # TF's placer refusing a pinned op, without its InvalidArgumentError; not the C++ source's string
         r"(?<![\"'])(?:Could not satisfy explicit device specification '|Cannot assign a device (?:for operation|to node) )",
         ("could not satisfy explicit device", "cannot assign a device"), raw="Could not satisfy explicit device|Cannot assign a device"),
    # an exception a logger or a message names after its own words (`Training failed: KeyError:
    # 'x'`), not in a warning and not a code line's `except ValueError: pass`
    Term(r"^(?!.{0,400}?(?:[Ww]arning|WARN))(?:.{0,400}?[^\w.])(?<!except )(?:[a-z_]\w{0,60}\.){0,8}"
         r"[A-Z]\w{0,60}(?:Error|Exception): \S", ("error: ", "exception: "), raw="(?:Error|Exception): "),
)
# What a failure leaves behind: the job failed, not why (the evidence line only when nothing says more).
AFTERMATH_TERMS = (
    # c10's C++ backtrace (`frame #3: f + 0x2c (0x7f3a in /x/libc10.so)`, not a video's `frame #12:`)
    Term(r"Exception raised from \S+ at \S+:\d+|^frame #\d{1,4}: [^\n]{0,2000}?\(0x[0-9a-f]{1,16} in ",
         ("exception raised from", "frame #"), raw="Exception raised from|frame #"),
    # Python's faulthandler (a fatal signal, a hang dump) and py-spy's dump of a stuck process
    Term(r"^(?:Current thread|Thread) 0x[0-9a-f]{1,16} \(most recent call first\)"
         r"|^Thread (?:0x[0-9a-fA-F]{1,16}|\d{1,10}) \((?:active|idle)(?:\+gil)?\): \"",
         ("most recent call first", "(active", "(idle"), raw=r"most recent call first|Thread (?:0x[0-9a-fA-F]+|[0-9]+) \((?:active|idle)"),
    # launchers tearing a job down after a failure or a signal: DeepSpeed, torchelastic, Open MPI, Horovod
    Term(r"\bKilling subprocess \d+|Sending process \d+ closing signal SIG[A-Z]+|\bexited on signal [1-9]"
         r"|\bexit with status code -?[1-9]|\bnoticed that process rank \d{1,7} with PID \d{1,10} on node \S{1,255} exited on\b",
         ("killing subprocess", "closing signal", "exited on signal", "exit with status code", "noticed that process rank"),
         raw="Killing subprocess|closing signal SIG|exited on signal|exit with status code|noticed that process rank"),
    # end-of-job records: a PBS/Torque mail, SGE's accounting, `scontrol show job`, a pod's status
    Term(r"\bExit_status=-?[1-9]|^exit_status\s{1,40}-?[1-9]|^failed\s{1,40}[1-9]\d{0,3}\s{1,10}:\s"
         r"|\bExitCode=(?:[1-9]\d{0,2}:\d|0:[1-9])|\bexitCode\"?:\s{0,4}-?[1-9]|CrashLoopBackOff"
         r"|Back-off restarting failed container|BackoffLimitExceeded",
         ("exit_status", "failed", "exitcode", "crashloopbackoff", "back-off restarting", "backofflimitexceeded"),
         raw=r"[Ee]xit_status|failed[\t ]+[1-9]|ExitCode=|exitCode|CrashLoopBackOff|Back-off restarting"
             r"|BackoffLimitExceeded"),
)
# Lines only a job that finished prints: a failure marker before one in the same file was survived (a caught exception, a retried upload).
SUCCESS_TERMS = (
    Term(r"Process \d+ exits successfully", ("exits successfully",), raw="exits successfully"),   # deepspeed launcher
    Term(r"'train_runtime':", ("train_runtime",), raw="train_runtime"),                   # HF Trainer metrics
    Term(r"\btrain_runtime\s+=", ("train_runtime",), raw="train_runtime"),
    Term(r"Training completed\. Do not forget", ("training completed",), raw="Training completed"),
)
# torchelastic's summary names the rank that failed first. Its fields follow within ROOT_FIELD_LINES lines, which the prefilter keeps as the title's
# context, so the fields themselves (`rank`, `host`: words every prefixed line holds) need no gate.
ROOT_CAUSE = "Root Cause (first observed failure)"
ROOT_CAUSE_TERMS = (Term(re.escape(ROOT_CAUSE), ("root cause",), raw="Root Cause"),)
ROOT_FIELD = re_compile(r"^(rank|exitcode|host)\s*:\s*(-?\d+|\S+)")
ROOT_FIELD_LINES = 8

EXCEPTION_LINE, ECHO, OTHER_FAILURE, EVIDENCE, AFTERMATH, SUCCESS = map(_any, (
    EXCEPTION_TERMS, ECHO_TERMS, OTHER_FAILURE_TERMS, EVIDENCE_TERMS, AFTERMATH_TERMS, SUCCESS_TERMS))
# Every line OTHER_FAILURE or SUCCESS matches holds one of their gates (test_vocabulary.py): one search of the lower-cased line spares most lines.
MARKER_HINT = Hint(SUCCESS_TERMS, OTHER_FAILURE_TERMS + EVIDENCE_TERMS, AFTERMATH_TERMS)
# The exception type named anywhere in a line (triage groups unexplained failures by it).
EXCEPTION_TYPE = re_compile(rf"\b([A-Za-z_][\w.]*{_SUFFIX})\b")

ALL_TERMS = (EXCEPTION_TERMS + ECHO_TERMS + OTHER_FAILURE_TERMS + EVIDENCE_TERMS + AFTERMATH_TERMS
             + SUCCESS_TERMS + ROOT_CAUSE_TERMS)
# What the prefilter must find to keep a line (the rules' own keywords join these).
SELECT_LITERALS = tuple(sorted({g for t in ALL_TERMS for g in t.gates}))
SELECT_PATTERNS = tuple(sorted({t.gate_pattern for t in ALL_TERMS if t.gate_pattern}))
SELECT_GATES = tuple(dict.fromkeys(t.raw_gate for t in ALL_TERMS))
