# Prelude of every PyTorch baseline script (helpers/torch). It times a callable by the suite's
# method: CUDA events around the work alone, warm-up runs, the L2 flushed before every timed run by
# writing a buffer twice the L2 size, and the median, min and max of the runs in milliseconds.
import json
import sys

import torch

# A script run on its own reads its arguments from stdin; one run by a Worker (worker.py) finds them
# already set, since stdin carries the worker's requests.
if "ARGS" not in globals():
    ARGS = json.loads(sys.stdin.read() or "{}")
torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False
_flush = None


def flush_l2():
    global _flush
    if _flush is None:
        l2 = getattr(torch.cuda.get_device_properties(0), "L2_cache_size", 64 << 20)
        _flush = torch.empty(max(2 * l2, 64 << 20) // 4, dtype=torch.int32, device="cuda")
    _flush.zero_()


def bench(fn, warmup=None, reps=None, flush=True):
    warmup = ARGS.get("warmup", 3) if warmup is None else warmup
    reps = ARGS.get("reps", 25) if reps is None else reps
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    samples = []
    for _ in range(reps):
        if flush:
            flush_l2()
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        samples.append(start.elapsed_time(stop))
    s = sorted(samples)
    n = len(s)
    med = s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2
    return {"median_ms": med, "min_ms": s[0], "max_ms": s[-1], "samples_ms": samples}


def emit(result):
    """Writes the script's result as the last line of stdout."""
    result.setdefault("torch", torch.__version__)
    result.setdefault("device", torch.cuda.get_device_name(0))
    sys.stdout.write("\n" + json.dumps(result) + "\n")


def try_compile(fn, *args):
    """torch.compile(fn), called once on args so that compilation is not timed. Returns
    (compiled, None), or (None, reason) when torch.compile cannot compile here (no Triton, no
    compiler): the lesson then reports the torch.compile column as unavailable, with the reason."""
    try:
        compiled = torch.compile(fn)
        compiled(*args)
        torch.cuda.synchronize()
        return compiled, None
    except Exception as e:  # noqa: BLE001 - any failure makes the column unavailable, with its reason
        first = (str(e).strip().splitlines() or [""])[0][:300]
        return None, "torch.compile failed here: %s: %s" % (type(e).__name__, first)
