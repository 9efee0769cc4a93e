"""How a run says where it stands at its end: finished, or still reporting training steps.

Read only on a log's last lines (the failure signals' tail), where "did it stop mid-training?"
is decided; the big-log prefilter always keeps a log's tail, so these need no gates.
"""

from classifier.precompiled import re_compile

# How a run that finished says so, beyond SUCCESS_TERMS (which also rescue a failure marker before them, so they must stay strict). Read only on a log's
# last lines, where the question "did it stop mid-training?" is decided: the prefilter always keeps a big log's tail.
RUN_END = re_compile("|".join((
    r"exits successfully", r"'train_runtime':", r"\btrain_runtime\s+=",      # DeepSpeed launcher, HF
    r"Training completed\. Do not forget",                                   # HF Trainer
    r"worker group successfully finished|Local worker group finished",      # torchelastic agent
    r"Done waiting for other agents", r"`Trainer\.fit` stopped",             # torchelastic, Lightning
    r"process group has NOT been destroyed",  # torch >= 2.4 ProcessGroupNCCL, at interpreter exit
    r"^wandb: (?:Synced \d|🚀 View run)",                                    # wandb.finish()
    r"at the end of training",                                               # Megatron's last eval
    r"NCCL INFO comm 0x[0-9a-f]+ .* - (?:Destroy|Abort) COMPLETE",  # communicators torn down
    r"(?i:\b(?:training|train|run|job|fine-?tuning)\s+(?:is\s+|has\s+)?"
    r"(?:done|complete|completed|finished|ended)\b)",
    r"(?i:^(?:rank\s*\d+\s*:?\s*)?(?:all\s+)?(?:done|finished|complete|completed)\b)",
)))
# A training step being reported: the DeepSpeed engine's `[Rank 0] step=N` and its timer's `global_step=N`, Megatron's `iteration N/ M |`, HF Trainer's
# `{'loss': ...}` dict, and the generic `step N ... loss` / `epoch N ... loss` of hand-written loops.
PROGRESS = re_compile("|".join((
    r"\[Rank \d+\] step=\d+", r"\bglobal_step=\d+", r"^iteration\s+\d+\s*/\s*\d+\s*\|",
    r"['\"]loss['\"]:\s*-?\d",
    r"(?i:\b(?:step|iter|iteration|epoch)\s*[=:]?\s*\d+\b.*\bloss\b)",
)))
