"""Import a compiled extension from a directory, as a training script would at start-up."""
import argparse
import sys

p = argparse.ArgumentParser()
p.add_argument("--ext-dir", required=True)
p.add_argument("--local_rank", type=int, default=-1)
a = p.parse_args()
import torch  # noqa: F401  (the extension is meant to sit next to torch)
sys.path.insert(0, a.ext_dir)
import fused_adam_ext  # noqa: E402
print(fused_adam_ext.step())
