"""Failure words of native runtimes and devices: what a job says as it dies outside Python.

Part of the failure vocabulary (classifier.vocabulary, whose docstring says how a Term's
pattern, gates and raw regex relate); kept apart so each module stays readable. These are
read as OTHER_FAILURE_TERMS: a failure's mark that no rule owns.
"""

from classifier.diagnosis.term import Term

NATIVE_FAILURE_TERMS = (
    # glibc's and tcmalloc's heap aborts (`Attempt to free invalid pointer 0x..`), absl's failure-signal handler, Ray's worker died under a task, a FATAL line, git's fatal (not its no-repository note)
    Term(r"double free or corruption|\b(?:free|munmap_chunk)\(\): invalid|\bmalloc\(\): (?:corrupted|memory corruption|unaligned)"
         r"|stack smashing detected|corrupted size vs\. prev_size|corrupted double-linked list|(?i:attempt to (?:free|realloc) invalid pointer)"
         r"|\*\*\* SIG[A-Z]+ received at time=|A worker died or was killed while executing a task|^FATAL: \S|^fatal: (?!not a git repository|No names found)\S",
         ("double free", "(): invalid", "malloc(): ", "stack smashing", "corrupted size", "received at time=",
          "worker died or was killed", "fatal: ", "double-linked list", "invalid pointer"),
         raw=r"double free|\(\): invalid|malloc\(\): |stack smashing|corrupted size|received at time="
             r"|worker died or was killed|(?:FATAL|fatal): |double-linked list|(?i:invalid pointer)"),
    # other runtimes' last words: Rust / Go panics (k8s' `Observed a panic:`, a goroutine dump's head), gfortran's and ifort's runtime errors, protobuf's
    # and XLA's checks, libc++abi's abort, the kernel's machine-check and GPU-hang reports (amdgpu, i915); uvicorn's bind, the Hub's gate
    Term(r"\bthread '[^']{0,64}' panicked at\b|^panic: \S|\bObserved a panic: |^goroutine \d{1,9} \[running\]:|^ERROR:\s{1,8}\[Errno \d{1,5}\] |\bCannot access gated repo for url\b"
         r"|^Fortran runtime error: |\bforrtl: (?:severe|error) \(\d{1,4}\)|\[libprotobuf FATAL |\bRET_CHECK failure\b|\blibc\+\+abi: terminating\b"
         r"|\[Hardware Error\]: (?!Machine check events logged)|\[drm\] GPU HANG: |\bring \w{1,20}(?:\.\d{1,3}){0,4} timeout, signaled seq=",
         ("panicked at", "panic: ", "error:", "cannot access gated repo", "goroutine ", "fortran runtime error", "forrtl: ", "libprotobuf fatal",
          "ret_check failure", "libc++abi: terminating", "[hardware error]", "gpu hang", "timeout, signaled seq"),
         raw=r"panicked at|panic: |goroutine [0-9]|\[Errno|Cannot access gated repo|Fortran runtime error|forrtl: |libprotobuf FATAL|RET_CHECK failure"
             r"|libc\+\+abi: terminating|\[Hardware Error\]|GPU HANG|timeout, signaled seq"),
    # scientific codes' own aborts: Quantum ESPRESSO's `Error in routine cdiaghg (668):` box, gfortran's
    # `Program received signal SIGABRT:` backtrace head, GROMACS's bare `Fatal error:` line, MPICH's Hydra exit string
    Term(r"^\s{0,12}Error in routine\s{1,3}\S{1,40}\s{0,3}\(\s{0,6}-?\d{1,6}\):|^Program received signal SIG[A-Z]{2,8}:"
         r"|^Fatal error:\s*$|YOUR APPLICATION TERMINATED WITH THE EXIT STRING:",
         ("error in routine", "program received signal sig", "fatal error:", "terminated with the exit string"),
         raw=r"Error in routine|Program received signal SIG|Fatal error:|TERMINATED WITH THE EXIT STRING"),
    # device runtimes that abort in their own words: ROCm's HSA page fault; pointnet2-style CUDA checks; the driver's Xid of
    # a faulting application (13, 31, 43: an engine exception, an MMU fault, a context stopped; not the device's fault) unless a desktop's
    Term(r"\bMemory access fault by GPU node-\d+|\bCUDA kernel failed : \S|NVRM: Xid \([^)\n]{0,80}\): (?:13|31|43),(?!.{0,40}name=(?:chrom|firefox|Xorg|Xwayland|gnome|kwin|plasma|steam))|^\s*(?:intr [0-9a-f]+\.\s+)?MMU Fault: ENGINE\b",
         ("memory access fault by gpu", "cuda kernel failed", "nvrm: xid", "mmu fault"), raw="Memory access fault by GPU|CUDA kernel failed|NVRM: Xid|MMU Fault"),
    # Lua torch's uncaught error `luajit: file.lua:12: message` (lua, qlua, th; itorch without the interpreter), not its `stack traceback:` frames (`file.lua:12: in function 'f'`)
    Term(r"^(?:(?:\S{0,255}/)?(?:luajit|lua|qlua|th): )?\S{1,255}\.lua:\d+: (?!in (?:function|main chunk|upvalue|local|field|method)\b)\S",
         (".lua:",), raw=r"\.lua:[0-9]+: "),
    # Open MPI's abort banner for an MPI call made outside MPI_Init..MPI_Finalize
    Term(r"^\*\*\* The MPI_\w{1,40}\(\) function was called (?:before MPI_INIT|after MPI_FINALIZE) was invoked",
         ("function was called before mpi_init", "function was called after mpi_finalize"),
         raw=r"function was called (?:before MPI_INIT|after MPI_FINALIZE)"),
    # NVIDIA PhysX's error callback: `<source>.cpp (9908) : internal error : GPU ... fail to launch kernel`
    Term(r"\.cpp \(\d{1,7}\) : (?:internal error|abort) : \S", ("internal error : ", "abort : "),
         raw=r"\.cpp \([0-9]+\) : (?:internal error|abort) : "),
)
