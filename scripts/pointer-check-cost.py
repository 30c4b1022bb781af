#!/usr/bin/env python3
# Host cost of the pointer checks (forward.cpp, check_memory): cudaPointerGetAttributes x8 via ctypes.
import ctypes, time, statistics, torch, glob
lib = None
for c in ["libcudart.so", "libcudart.so.13"] + glob.glob("/usr/local/cuda/lib64/libcudart.so*"):
    try: lib = ctypes.CDLL(c); break
    except OSError: pass
ts = [torch.empty(1 << 20, device="cuda") for _ in range(8)]
buf = ctypes.create_string_buffer(64)
ptrs = [ctypes.c_void_p(t.data_ptr()) for t in ts]
f = lib.cudaPointerGetAttributes
res = []
for r in range(7):
    t0 = time.perf_counter()
    for _ in range(20000):
        for p in ptrs: f(buf, p)
    res.append((time.perf_counter() - t0) / 20000 * 1e6)
print(f"cudaPointerGetAttributes x8 via ctypes: {statistics.median(res):.2f} us per call (ctypes overhead included)")
# ctypes' own cost per call, from a runtime call that does almost nothing (thread-local state).
dev = ctypes.c_int()
g = lib.cudaGetDevice
base = []
for r in range(7):
    t0 = time.perf_counter()
    for _ in range(20000):
        for p in ptrs: g(ctypes.byref(dev))
    base.append((time.perf_counter() - t0) / 20000 * 1e6)
print(f"cudaGetDevice x8 via ctypes (ctypes' cost): {statistics.median(base):.2f} us per call; "
      f"so 8 pointer checks ~ {statistics.median(res) - statistics.median(base):.2f} us")
