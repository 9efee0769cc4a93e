"""Where jobs run: Slurm epilogs and Kubernetes termination messages, apart from the core."""
