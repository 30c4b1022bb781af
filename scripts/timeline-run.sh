set -e
cmake -S . -B build/tl -G Ninja -DCMAKE_BUILD_TYPE=Release -DDHP_CUDA_ARCHS=90a -DDHP_BUILD_PYTHON=OFF -DCMAKE_CUDA_FLAGS=-DDHP_SM90_TIMELINE=20 > $OUT/cfg.log 2>&1
cmake --build build/tl -j 16 --target dhp_bench > $OUT/build.log 2>&1
grep -c "C7510" $OUT/build.log || true
for c in 32,32,512,64 32,16,512,128 16,32,1024,64; do echo "== $c"; build/tl/tools/dhp_bench --case $c 2>&1 | grep -E "^tiles|row [0-9] slot  0|TFLOP|$c" | head -60; done
