// fp16, head dim 128: one translation unit so the build parallelises.
#include "kernels/sm80/launch.cuh"

DHP_SM80_DEFINE_LAUNCH(fp16_d128, __half, 128)
