"""dsdiag: diagnose crashed DeepSpeed / PyTorch-distributed jobs from their logs."""

__version__ = "0.1.0"
