"""Job trees on disk that several test modules build: a torchrun --log-dir with two attempts."""

OOM = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total "
       "capacity of 79.15 GiB of which 1.00 GiB is free.")
PORT = ("RuntimeError: The server socket has failed to listen on any local network address. The "
        "server socket has failed to bind to [::]:29500 (errno: 98 - Address already in use).")


def write_lines(path, lines):
    """Write `lines` to `path`, making its directories."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")


def torchrun_log_dir(root, ranks=4):
    """A torchrun --log-dir tree: attempt_0 died of a port clash, attempt_1 (the one that counts)
    of an OOM on ranks 3 and 0 — rank 3 first in time, though its file comes later."""
    run = root / "job42_k3j9x0ab"  # <run_id>_<mkdtemp suffix>
    write_lines(run / "attempt_0" / "0" / "stderr.log", [f"2024-05-01 10:00:00,000 {PORT}"])
    for r in range(ranks):
        lines = [f"2024-05-01 11:00:0{r},000 [INFO] step 1 loss 2.0{r}"]
        if r == 0:
            lines.append(f"2024-05-01 11:00:30,000 {OOM}")
        if r == 3:
            lines.append(f"2024-05-01 11:00:10,000 {OOM}")
        write_lines(run / "attempt_1" / str(r) / "stderr.log", lines)
        write_lines(run / "attempt_1" / str(r) / "stdout.log", [f"2024-05-01 11:00:0{r},500 rank {r} up"])
    (run / "attempt_1" / "0" / "error.json").write_text("{}")
    return root
