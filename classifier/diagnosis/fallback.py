"""The fallback text classifier, run in plain Python from its exported JSON.

Trained with scikit-learn (TF-IDF + logistic regression, see `classifier/corpus/train.py`) and
shipped as data: vocabulary, idf, coefficients, intercepts, and a threshold for each class it
may answer (calibrated out of fold; a class without one is never answered), with a second set
for texts that hold frames and nothing else (`frames_only`). No pickle, no scikit-learn at run
time; `tests/diagnosis/test_fallback.py` proves the numbers match.
"""

import json
import math
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

MODEL_PATH = Path(__file__).resolve().parent / "model.json"
QUIET = ("unknown", "none")   # classes the model learns but never answers: silence says them
# Same as the vectorizer's token_pattern and lowercase=True in train.py.
TOKEN = re.compile(r"(?u)\b[a-z_][a-z0-9_]+\b")
FRAME_TOKENS = ("frame_", "func_")   # region.py's traceback-frame tokens
# "Out of memory" alone does not say whose memory: the JVM's heap, the Rust allocator and the
# host all say it too. The model may name a device's memory only where the text names a device
# (frame tokens count: `frame_torch_cuda_memory`); train.py applies the same veto out of fold.
_DEVICE = re.compile(r"(?i)(?<![a-z])(?:cuda|cudnn|cublas|gpus?|devices?|hbm|tpus?|xla|vram|"
                     r"rocm|hip|npu|mps|nvidia|accelerator)(?![a-z])")
# A JSON error is the DeepSpeed config's only where the text names who reads that config
# (DeepSpeed, its ds_config, hjson, or a launcher that passes it on: accelerate, transformers'
# trainer and argument parser, Megatron/NeoX arguments). Among the failures no rule explains,
# a bare JSONDecodeError is mostly a data file or an application's own settings (unknown).
# A bare "ds" is no such word: out of fold it came from user paths (`ds_train.py`, `query_ds_rag`).
_DS_CONFIG_READER = re.compile(r"(?i)(?<![a-z])(?:deepspeed|ds[ _]?config|hjson|zero|accelerate|"
                               r"transformers|trainer|megatron|neox|args|arguments|argparser)(?![a-z])")
# A scheduler's fault names its schedule (the scheduler, learning rate, warm-up, decay, steps,
# epochs, milestones or the metric ReduceLROnPlateau steps on). Without that, "TypeError: f()
# missing 1 required positional argument" is a user function's bug (a reward function, a
# collator): scheduler_config had learnt the wording from `step() missing ... 'metrics'`.
_SCHEDULE = re.compile(r"(?i)(?<![a-z])(?:schedul\w{0,20}|lr|warm_?up|learning|decay|cosine|"
                       r"milestones?|steps?|epochs?|metrics?|iters?|iterations?|updates?)(?![a-z])")
# A port in use is told by its address, its port, its bind or errno: the frames around it (a
# store's constructor, mp.spawn joining its children) are also those of a peer out of reach
# and of a run interrupted with Ctrl-C, which the model had named port_conflict out of fold.
_ADDRESS = re.compile(r"(?i)(?<![a-z])(?:address\w{0,2}|addr|ports?|bind|listen\w{0,3}|eaddrinuse|"
                      r"in use|errno[: ]{0,2}(?:98|48|10048)|socket)(?![a-z])")
# A KeyError is a missing environment variable only where the text names the environment (os,
# environ, env, getenv), a variable (an upper-case name like LOCAL_RANK, or rank, world, master,
# local) or MPI (DeepSpeed asks MPI when the launcher's variables are absent). A bare KeyError
# in a user's own frames is a dict lookup: out of fold it was the only false alarm left.
_ENVIRON = re.compile(r"(?i)(?<![a-z])(?:env\w{0,12}|environ\w{0,12}|getenv|variables?|os|ranks?|world|"
                      r"master|local|mpi\w{0,6})(?![a-z])|"
                      r"(?<![A-Za-z0-9])(?-i:[A-Z][A-Z0-9]{1,30}_[A-Z0-9_]{1,40})(?![A-Za-z0-9])")
# An op that failed to build is told in a build's words: the compiler, linker or build tool,
# the extension or its sources. Out of fold the model named op_build_error of Lightning's
# optimizer-setup frames, which hold none of them.
_BUILD = re.compile(r"(?i)(?<![a-z])(?:build\w{0,8}|compil\w{1,8}|ninja|nvcc|hipcc|[gc]\+\+|gcc|clang|"
                    r"cc1plus|cl\.exe|msvc|link\w{0,4}|ld|lnk\d{4}|collect2|make|cmake|setup\.py|wheels?|"
                    r"extensions?|cpp_extension|jit|op_builder|builder|cpp|cu|cuh|so|pyd|dll|headers?|"
                    r"include|nvrtc|triton)(?![a-z])")
# Host memory, disk space and a collapsing loss scale are each told in their own words too.
# After the twenty-eighth harvest's pastes cut inside their frames, the model named host_oom of
# torchrun's launcher frames above a dataset KeyError, disk_full of a YAML loader's frames and
# fp16_overflow of ZeRO-3's unscale_and_clip_grads cut before a device-mismatch error, out of
# fold (nested check 10/5/5 on seeds 0-4; with these three vetoes 15/5/0).
_HOST_MEMORY = re.compile(r"(?i)memory|(?<![a-z])(?:oom\w{0,10}|killed|sigkill|ram|swap\w{0,4}|cgroups?|mem)(?![a-z])")
_STORAGE = re.compile(r"(?i)space|disk|quota|enospc|storage|(?<![a-z])(?:shm|full)(?![a-z])")
_LOSS_SCALE = re.compile(r"(?i)overflow|loss[ _]?scal|scaler|(?<![a-z])(?:nan|inf|fp16|half|amp)(?![a-z])")
NEEDS = {"gpu_oom": _DEVICE, "config_json_syntax": _DS_CONFIG_READER, "scheduler_config": _SCHEDULE,
         "port_conflict": _ADDRESS, "env_var_missing": _ENVIRON,
         # a device that is not visible is named as one (out of fold: a launcher not installed)
         "device_visibility": _DEVICE, "op_build_error": _BUILD,
         "host_oom": _HOST_MEMORY, "disk_full": _STORAGE, "fp16_overflow": _LOSS_SCALE}
# A package that is not installed at all is no mismatch of installed versions: `No module named
# 'peft'` (a top-level name; `transformers.deepspeed`, a module a release moved, still may be) or
# "requires the following packages that were not found". The missing-package cases are
# unknown, and their ImportError words made the model name version_mismatch out of fold.
_PACKAGE_ABSENT = re.compile(r"(?i)no module named '?[a-z_][\w-]{0,100}'?(?![\w.-])|"
                             r"packages? (?:that (?:were|was|are|is) )?not (?:found|installed)|"
                             r"(?<![a-z])is not installed")
# A GPU whose compute capability is talked about was seen: what it lacks is an architecture or a
# dtype (too old for the framework, bf16, a kernel), never visibility. After the twenty-ninth
# harvest the model named device_visibility of vLLM's "compute capability below 7.0 are not
# supported" out of fold (nested check 10/0/2 on seeds 20-24).
_CAPABILITY = re.compile(r"(?i)compute[ _]capabilit(?:y|ies)|\bsm_?\d{2,3}\b")
EXCLUDES = {"version_mismatch": _PACKAGE_ABSENT, "device_visibility": _CAPABILITY}
# A collective timeout that no rule names the cause is the echo of whatever stopped a peer (the
# rules call a timeout the cause when it is one): out of fold the model named nccl_timeout of a
# rank's AttributeError and of a storage overflow, by the watchdog lines the other ranks printed.
# A version mismatch that no rule reads is told apart from a code bug by no word the model
# sees: after the twenty-sixth and twenty-seventh harvests it named version_mismatch of a
# truncated library file, of Lightning's bare fit() frames and of trainers' AttributeErrors
# out of fold (nested check 16/2/5 on seeds 0-4, and with a veto for version words 22/0/7 on
# seeds 10-14), for one right answer a shuffling set; without it 15/0/0, 21/0/3, 22/0/1.
NEVER = frozenset({"nccl_timeout", "version_mismatch"})


def vetoed(category: str, text: str) -> bool:
    """True when a class may not be answered of a text: the model never answers it, or the
    text lacks the words the class needs, or holds words that rule the class out."""
    needs, excludes = NEEDS.get(category), EXCLUDES.get(category)
    return (category in NEVER or (needs is not None and needs.search(text) is None)
            or (excludes is not None and excludes.search(text) is not None))


def frames_only(text: str) -> str:
    """The frame tokens of a model text (`frame_*`, `func_*`), without its other words."""
    return " ".join(w for w in text.split() if w.startswith(FRAME_TOKENS))


def is_frames_only(text: str) -> bool:
    """True when a model text has frame tokens and no other word (a paste cut before its message)."""
    words = text.split()
    return bool(words) and all(w.startswith(FRAME_TOKENS) for w in words)


class TextModel:
    """A linear multinomial model over sublinear TF-IDF word n-grams (up to `ngram_max`).

    It scores the text `classifier.diagnosis.region.model_text` makes of the failure region.
    """

    def __init__(self, data: dict[str, Any]) -> None:
        self.classes = data["classes"]
        self.vocabulary = data["vocabulary"]
        self.idf = data["idf"]
        self.coef = data["coef"]
        self.intercept = data["intercept"]
        # Per class (format 2); a hand-made model may give one `threshold` for every class.
        self.thresholds = data.get("thresholds") or {
            c: data["threshold"] for c in self.classes if c not in QUIET and "threshold" in data}
        # Format 3: a frames-only text is answered only for the classes whose frames alone told
        # them apart out of fold (train.py); a model without the key uses `thresholds` for it.
        self.frame_thresholds = data.get("frame_thresholds", self.thresholds)
        self.ngram_max = data.get("ngram_max", 2)

    def features(self, text: str) -> dict[int, float]:
        """Return {column: tf-idf weight}, L2-normalised, for a text."""
        tokens = TOKEN.findall(text.lower())
        counts = {}
        for n in range(1, self.ngram_max + 1):
            for i in range(len(tokens) - n + 1):
                col = self.vocabulary.get(" ".join(tokens[i:i + n]))
                if col is not None:
                    counts[col] = counts.get(col, 0) + 1
        weights = {col: (1.0 + math.log(tf)) * self.idf[col] for col, tf in counts.items()}
        norm = math.sqrt(sum(w * w for w in weights.values()))
        return {col: w / norm for col, w in weights.items()} if norm else {}

    def probabilities(self, text: str) -> dict[str, float]:
        """Return the class probabilities (softmax of the linear scores) for a text."""
        x = self.features(text)
        scores = [b + sum(row[col] * w for col, w in x.items())
                  for row, b in zip(self.coef, self.intercept)]
        top = max(scores)
        exps = [math.exp(s - top) for s in scores]
        total = sum(exps)
        return {c: e / total for c, e in zip(self.classes, exps)}

    def answer(self, text: str) -> tuple[str, float] | None:
        """Return (category, probability) when the top class has a threshold the text reaches."""
        if not self.features(text):   # no word the model knows: nothing to judge by
            return None
        probs = self.probabilities(text)
        category, p = max(probs.items(), key=lambda kv: kv[1])
        if vetoed(category, text):
            return None
        thresholds = self.frame_thresholds if is_frames_only(text) else self.thresholds
        threshold = thresholds.get(category)
        return (category, p) if threshold is not None and p >= threshold else None

    def line_scores(self, texts: Iterable[str], cls: str) -> list[float]:
        """Score each text by how much its own terms push towards class `cls`."""
        row = self.coef[self.classes.index(cls)]
        return [sum(row[col] * w for col, w in self.features(t).items()) for t in texts]


_MODEL = None


def load_model(path: str | Path = MODEL_PATH) -> TextModel | None:
    """Load the shipped model once; None when the package has none."""
    global _MODEL
    if _MODEL is None and Path(path).is_file():
        with open(path, encoding="utf-8") as f:
            _MODEL = TextModel(json.load(f))
    return _MODEL
