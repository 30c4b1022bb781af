// bf16, head dim 128: one translation unit so the build parallelises.
#include "kernels/sm90/launch.cuh"

DHP_SM90_DEFINE_LAUNCH(bf16_d128, __nv_bfloat16, 128)
