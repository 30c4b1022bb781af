"""NVML's total-energy counter (millijoules since the driver loaded; read
through ctypes, no pynvml needed) and a window of back-to-back calls timed by
CUDA events and metered by it: the shared part of scripts/energy-per-call.py
and scripts/sustained-channel.py (import as a sibling module)."""
import ctypes
import time

import torch


class Energy:
    """NVML's total energy counter of GPU `index` (NVML numbering), in joules."""

    def __init__(self, index):
        """The GPU of torch's current CUDA device, matched by UUID (NVML's
        numbering ignores CUDA_VISIBLE_DEVICES), or NVML index `index`."""
        self.nvml = ctypes.CDLL("libnvidia-ml.so.1")
        if self.nvml.nvmlInit_v2() != 0:
            raise RuntimeError("nvmlInit_v2 failed")
        self.handle = ctypes.c_void_p()
        if index is None:
            uuid = str(torch.cuda.get_device_properties(torch.cuda.current_device()).uuid)
            uuid = uuid if uuid.startswith("GPU-") else "GPU-" + uuid
            if self.nvml.nvmlDeviceGetHandleByUUID(uuid.encode(), ctypes.byref(self.handle)) != 0:
                raise RuntimeError(f"no NVML device with UUID {uuid}: pass --nvml-index")
        elif self.nvml.nvmlDeviceGetHandleByIndex_v2(index, ctypes.byref(self.handle)) != 0:
            raise RuntimeError(f"no NVML device {index}")

    def joules(self) -> float:
        mj = ctypes.c_ulonglong()
        if self.nvml.nvmlDeviceGetTotalEnergyConsumption(self.handle, ctypes.byref(mj)) != 0:
            raise RuntimeError("nvmlDeviceGetTotalEnergyConsumption failed (not supported on this GPU?)")
        return mj.value / 1000.0


def window(fn, seconds, meter):
    """Back-to-back calls for about `seconds`: (calls, GPU seconds from the
    events, joules, host seconds between the counter reads)."""
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    e0, h0 = meter.joules(), time.time()
    # A hold of about 2 ms before the start event, so that the host queues the
    # first calls while the GPU spins: none starts on an idle stream (a deadline
    # call would count the host's planning in its span). Its energy is in the
    # window's joules, about 0.1 % of a 2 s window at under half the power.
    torch.cuda._sleep(4_000_000)
    start.record()
    calls, t_end, queued = 0, time.time() + seconds, []
    while time.time() < t_end:
        for _ in range(8):
            fn()
        calls += 8
        # At most 64 calls queued, so the host does not queue seconds of work past
        # the window; waiting on an event 8 groups back, not synchronising, keeps
        # the queue from running dry (a call on an idle stream would count the
        # host's planning, and the GPU would idle: less load than back to back).
        queued.append(torch.cuda.Event())
        queued[-1].record()
        if len(queued) > 8:
            queued.pop(0).synchronize()
    end.record()
    end.synchronize()
    e1, h1 = meter.joules(), time.time()
    return calls, start.elapsed_time(end) / 1e3, e1 - e0, h1 - h0
