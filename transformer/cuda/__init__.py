"""`jit(..., backend="cuda")`: lowering a Function to Numba CUDA kernel source.

`jitted` is the API object (`cuda_jit`, `CudaJitted`), `kernel` builds a kernel module's
text and namespace from a per-element Function, `emit` rewrites that function into the
CUDA dialect (with `types`, `arrays` and `runtime` for inference, array lowering and
runtime helpers). Loading the text and launching the kernel is `codegen.cuda`'s part.
"""
