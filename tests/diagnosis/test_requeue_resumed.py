"""A requeued Slurm job writes its next attempt into the same output file: a requeue line
followed by the run finishing is an interruption it recovered from (`none`), not its end. The
lines are those of a real single-node Slurm 22.05 run (`--requeue --open-mode=append`,
`scontrol requeue`, DeepSpeed 0.19 on two gloo ranks), in a short paste and behind 20,000
healthy lines."""

from noise import diagnose_behind_noise as _diagnose

RULE = "job_cancelled.slurm_preempted"
START = ["start restart=0",
         "[2026-12-05 17:39:05,615] [WARNING] [runner.py:214:fetch_hostfile] Unable to find hostfile, "
         "will proceed with training with local resources only.",
         "rank 0 step 0 loss 0.2413", "rank 1 step 0 loss 0.2545"]
REQUEUE = ["slurmstepd-vm: error: *** JOB 43 ON vm CANCELLED AT 2026-12-05T17:39:37 DUE TO JOB REQUEUE ***",
           "[2026-12-05 17:39:37,690] [INFO] [launch.py:253:sigkill_handler] Killing subprocess 7001",
           "[2026-12-05 17:39:37,751] [INFO] [launch.py:262:sigkill_handler] Main process received SIGTERM, exiting"]
PREEMPT = ["slurmstepd-vm: error: *** JOB 53 ON vm CANCELLED AT 2026-12-05T17:41:25 DUE TO PREEMPTION ***"]
RERUN = ["start restart=1", "rank 0 step 0 loss 0.3030", "rank 1 step 0 loss 0.3121",
         "rank 0 step 2 loss 0.3328", "rank 1 step 2 loss 0.3869"]
FINISHED = ["rank 1 done", "rank 0 done",
            "[2026-12-05 17:43:06,512] [INFO] [launch.py:285:main] Process 605 exits successfully.",
            "[2026-12-05 17:43:06,512] [INFO] [launch.py:285:main] Process 606 exits successfully."]


def test_requeued_job_that_then_finished_is_healthy(tmp_path):
    for noise in (0, 20000):
        for end in (REQUEUE, PREEMPT):
            d = _diagnose(tmp_path, START + end + RERUN + FINISHED, noise)
            assert d["category"] == "none", (noise, d["rule"])


def test_requeued_job_still_running_or_ended_again_stays_cancelled(tmp_path):
    for noise in (0, 20000):
        assert _diagnose(tmp_path, START + REQUEUE, noise)["rule"] == RULE
        assert _diagnose(tmp_path, START + REQUEUE + RERUN, noise)["rule"] == RULE
        # the next attempt was requeued again: its end is after every finish line before it
        lines = START + REQUEUE + RERUN + FINISHED[:1] + PREEMPT
        assert _diagnose(tmp_path, lines, noise)["rule"] == RULE


def test_a_finished_line_before_the_requeue_does_not_resolve_it(tmp_path):
    for noise in (0, 20000):
        assert _diagnose(tmp_path, START + FINISHED + REQUEUE, noise)["rule"] == RULE
