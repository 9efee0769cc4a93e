"""JIT-build a small CUDA extension whose kernel has a syntax error (nvcc fails)."""
from torch.utils.cpp_extension import load_inline

CUDA = r"""
#include <torch/extension.h>
__global__ void scale_kernel(float* x, float s, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] *= s   // the missing semicolon is the failure
}
torch::Tensor scale(torch::Tensor x, double s) {
  int n = x.numel();
  scale_kernel<<<(n + 255) / 256, 256>>>(x.data_ptr<float>(), (float)s, n);
  return x;
}
"""

ext = load_inline("scale_ext", cpp_sources="torch::Tensor scale(torch::Tensor x, double s);",
                  cuda_sources=CUDA, functions=["scale"], verbose=True)
print(ext.scale)
