"""The jobs behind gpu_more.py's scenarios (probe 51): one mode per way of failing.

Sizes follow the card (a fraction of its total memory) so an H100 and an H200 both fail the
same way.  Nothing is downloaded: the Hugging Face models are built from their configs.
"""
import argparse
import math
import os
import sys

import torch


def card_bytes():
    return torch.cuda.get_device_properties(0).total_memory


def local_rank():
    """A script that trusts LOCAL_RANK, started by hand with the value of a second GPU."""
    rank = int(os.environ["LOCAL_RANK"])
    print(f"rank {os.environ.get('RANK')} local_rank {rank}: {torch.cuda.device_count()} GPU(s) visible", flush=True)
    torch.cuda.set_device(rank)
    torch.distributed.init_process_group("nccl")


def oom_backward():
    """Forward fits, backward does not: each saved tensor is ~22% of the card."""
    n = int(card_bytes() * 0.22) // 4
    x = torch.full((n,), 0.5, device="cuda", requires_grad=True)
    y = x.exp()
    z = y.sin()
    loss = z.mean()
    print(f"forward done: loss {loss.item():.4f}, {torch.cuda.memory_allocated() / 2**30:.1f} GiB allocated", flush=True)
    loss.backward()


def fill_card():
    """Take every byte the allocator can get, as a second job on the same GPU would."""
    hold = []
    for size in (2**30, 2**26, 2**21):
        while True:
            try:
                hold.append(torch.empty(size, dtype=torch.uint8, device="cuda"))
            except torch.OutOfMemoryError:
                break
    print(f"holding {sum(t.numel() for t in hold) / 2**30:.2f} GiB of {card_bytes() / 2**30:.2f} GiB", flush=True)
    return hold


def fill_cublas():
    a = torch.randn(256, 256, device="cuda")
    hold = fill_card()
    print((a @ a).sum().item(), len(hold))


def fill_cudnn():
    x = torch.randn(8, 3, 64, 64, device="cuda")
    w = torch.randn(16, 3, 3, 3, device="cuda")
    hold = fill_card()
    print(torch.nn.functional.conv2d(x, w).sum().item(), len(hold))


def fp16_nan_amp():
    """torch.amp fp16 with a GradScaler; activations grow until fp16 overflows; a NaN guard stops it."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(512, 512), torch.nn.GELU(), torch.nn.Linear(512, 512)).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    scaler = torch.amp.GradScaler("cuda")
    for step in range(40):
        x = torch.randn(32, 512, device="cuda") * (4.0 ** step)
        with torch.autocast("cuda", dtype=torch.float16):
            out = model(x)
            loss = (out * out).mean()
        value = loss.item()
        print(f"step {step} loss {value:.4g} scale {scaler.get_scale():.0f}", flush=True)
        if not math.isfinite(value):
            print(f"Loss is {value}, stopping training", flush=True)
            sys.exit(1)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        opt.zero_grad()


def illegal_address():
    """A raw CuPy kernel whose index arithmetic overflows: it writes far outside its buffer."""
    import cupy
    kernel = cupy.RawKernel(r"""
    extern "C" __global__ void scatter(float* out, const long long* idx, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n) out[idx[i] * 4096LL * 4096LL] = 1.0f;
    }""", "scatter")
    out = torch.zeros(1024, device="cuda")
    idx = torch.arange(1024, device="cuda", dtype=torch.int64) * 977
    kernel((4,), (256,), (cupy.asarray(out), cupy.asarray(idx), cupy.int32(1024)))
    cupy.cuda.Device().synchronize()
    print(out.sum().item())


def ext_wrong_arch():
    """An extension compiled for sm_80 only (TORCH_CUDA_ARCH_LIST=8.0, no +PTX), run on a newer GPU."""
    from torch.utils.cpp_extension import load_inline
    cuda = r"""
    #include <torch/extension.h>
    #include <c10/cuda/CUDAException.h>
    __global__ void scale_kernel(float* x, float s, int n) {
      int i = blockIdx.x * blockDim.x + threadIdx.x;
      if (i < n) x[i] *= s;
    }
    torch::Tensor scale(torch::Tensor x, double s) {
      int n = x.numel();
      scale_kernel<<<(n + 255) / 256, 256>>>(x.data_ptr<float>(), (float)s, n);
      C10_CUDA_KERNEL_LAUNCH_CHECK();
      return x;
    }
    """
    ext = load_inline("scale_sm80", cpp_sources="torch::Tensor scale(torch::Tensor x, double s);",
                      cuda_sources=cuda, functions=["scale"], verbose=True)
    print(ext.scale(torch.ones(1024, device="cuda"), 2.0).sum().item())


def zero3_init_oom(config):
    """ZeRO-3 zero.Init of a model bigger than the card (one rank holds every partition)."""
    import deepspeed
    deepspeed.init_distributed(dist_backend="nccl")
    h = 32768
    layers = int(card_bytes() * 1.3) // (h * h * 2) + 1
    print(f"building {layers} x Linear({h}, {h}) in bf16 under zero.Init", flush=True)
    with deepspeed.zero.Init(config_dict_or_path=config, dtype=torch.bfloat16):
        model = torch.nn.Sequential(*[torch.nn.Linear(h, h, bias=False) for _ in range(layers)])
    print(sum(p.ds_numel for p in model.parameters()))


def ds_save(config, save_dir):
    """A few DeepSpeed steps, then a checkpoint to a filesystem that is full."""
    import deepspeed
    deepspeed.init_distributed(dist_backend="nccl")
    model = torch.nn.Sequential(*[torch.nn.Linear(1024, 1024, device="cuda") for _ in range(4)])
    engine, _, _, _ = deepspeed.initialize(model=model, model_parameters=model.parameters(), config=config)
    for step in range(3):
        loss = engine(torch.randn(4, 1024, device=engine.device, dtype=torch.bfloat16)).float().pow(2).mean()
        engine.backward(loss)
        engine.step()
        print(f"step {step} loss {loss.item():.4f}", flush=True)
    engine.save_checkpoint(save_dir, tag="step3")
    print("saved", flush=True)


def gpt2(n_embd=128, n_layer=2, vocab=1000, positions=256):
    from transformers import GPT2Config, GPT2LMHeadModel
    return GPT2LMHeadModel(GPT2Config(n_layer=n_layer, n_head=8, n_embd=n_embd, vocab_size=vocab, n_positions=positions))


class Tokens(torch.utils.data.Dataset):
    def __init__(self, length=128, vocab=1000):
        self.length, self.vocab = length, vocab

    def __len__(self):
        return 4096

    def __getitem__(self, i):
        ids = torch.randint(0, self.vocab, (self.length,))
        return {"input_ids": ids, "labels": ids}


def hf_trainer(a):
    """Trainer + DeepSpeed; --variant picks what is wrong (nothing, precision, lr, memory)."""
    from transformers import Trainer, TrainingArguments
    kw = dict(output_dir=a.out, per_device_train_batch_size=4, max_steps=3, report_to=[], logging_steps=1,
              deepspeed=a.config or None, bf16=True)
    model, data = gpt2(), Tokens()
    if a.variant == "lr_scheduler_type":
        kw["lr_scheduler_type"] = "cosine_warmup"
    if a.variant == "oom":
        kw["per_device_train_batch_size"] = 512
        model, data = gpt2(n_embd=1024, n_layer=4, vocab=50257, positions=1024), Tokens(1024, 50257)
    Trainer(model=model, args=TrainingArguments(**kw), train_dataset=data).train()


def hf_generate():
    """Evaluation by generation with a batch sized for the training card's throughput, not its memory."""
    model = gpt2(n_embd=1024, n_layer=4, vocab=50257, positions=1024).cuda().eval()
    prompts = torch.randint(0, 50257, (int(card_bytes() // 2**30) * 512, 256), device="cuda")
    print(f"generating for {prompts.shape[0]} prompts", flush=True)
    with torch.no_grad():
        out = model.generate(prompts, max_new_tokens=32, do_sample=False, pad_token_id=0)
    print(out.shape)


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("mode")
    p.add_argument("--config", default="")
    p.add_argument("--out", default="/tmp/more-out")
    p.add_argument("--variant", default="none")
    p.add_argument("--local_rank", type=int, default=0)
    a = p.parse_args()
    plain = {"local_rank": local_rank, "oom_backward": oom_backward, "fill_cublas": fill_cublas,
             "fill_cudnn": fill_cudnn, "fp16_nan_amp": fp16_nan_amp, "illegal_address": illegal_address,
             "ext_wrong_arch": ext_wrong_arch, "hf_generate": hf_generate}
    if a.mode in plain:
        plain[a.mode]()
    elif a.mode == "zero3_init_oom":
        zero3_init_oom(a.config)
    elif a.mode == "ds_save":
        ds_save(a.config, a.out)
    elif a.mode == "hf_trainer":
        hf_trainer(a)
    else:
        sys.exit(f"unknown mode {a.mode}")
