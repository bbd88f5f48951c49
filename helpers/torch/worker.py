# The loop of a PyTorch worker (helpers/torch.Worker): one Python process that runs baseline
# scripts one after another, so that importing torch and warming up torch.compile's machinery
# (several seconds each) are paid once per run instead of once per script.
#
# Each request is one line of JSON on stdin, {"source": prelude and script, "args": ...}. The source
# runs in a fresh namespace with ARGS set, its stdout is the reply (the result is its last line, as
# for a script run on its own), and a line starting with the record separator (0x1e) and a JSON
# status ends the reply. Between requests the namespace is dropped and PyTorch's caches are
# emptied, so the next script, and the Go process that shares the GPU, find its memory free.
import gc
import json
import sys
import traceback

END = "\x1e"


def release():
    gc.collect()
    torch = sys.modules.get("torch")
    if torch is None:
        return
    dynamo = getattr(torch, "_dynamo", None)
    if dynamo is not None and hasattr(dynamo, "reset"):
        dynamo.reset()
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        torch.cuda.synchronize()
        torch.cuda.empty_cache()


def serve():
    while True:
        line = sys.stdin.readline()
        if not line:
            return
        if not line.strip():
            continue
        status = {"ok": True}
        try:
            req = json.loads(line)
            ns = {"__name__": "__main__", "ARGS": req.get("args") or {}}
            exec(compile(req["source"], "<baseline>", "exec"), ns)
        except BaseException as e:  # noqa: BLE001 - every failure is the request's, reported to Go
            if isinstance(e, KeyboardInterrupt):
                raise
            status = {"ok": False, "error": "%s: %s" % (type(e).__name__, str(e).strip()[:500]),
                      "trace": traceback.format_exc()[-4000:]}
        ns = None
        try:
            release()
        except Exception as e:  # noqa: BLE001 - a failed clean-up is reported, the worker goes on
            status.setdefault("cleanup", "%s: %s" % (type(e).__name__, e))
        sys.stdout.write("\n" + END + json.dumps(status) + "\n")
        sys.stdout.flush()


serve()
