// fp16, head dim 128: one translation unit so the build parallelises.
#include "kernels/sm90/launch.cuh"

DHP_SM90_DEFINE_LAUNCH(fp16_d128, __half, 128)
