// bf16, head dim 256: one translation unit so the build parallelises.
#include "kernels/sm90/launch.cuh"

DHP_SM90_DEFINE_LAUNCH(bf16_d256, __nv_bfloat16, 256)
