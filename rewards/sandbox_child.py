"""The candidate's side of a sandbox job: the forked child that runs the candidate's code.

Standalone, standard library only, like the worker (``sandbox_worker``): its source is
sent into the sandbox between the codec's and the worker's (the import line marked below
is dropped then). The child sets its limits, loses the worker's control channel, runs
the candidate's module code, then serves calls (or runs the program once, for stdin/stdout
tasks) over its own pipe pair.
"""

import os
import resource
import sys

# Dropped when the source is sent to the sandbox, where the codec's source comes first.
from pairrl.rewards.sandbox_codec import (  # sandbox: inlined
    decode,
    encode,
    read_frame,
    write_frame,
)


# ---------------------------------------------------------------- the child
def child_main(job, to_worker, from_worker):
    """Run the candidate: set limits, drop the control channel, serve calls until EOF."""
    limits = job["limits"]
    resource.setrlimit(resource.RLIMIT_CPU, (limits["cpu_s"], limits["cpu_s"] + 1))
    resource.setrlimit(resource.RLIMIT_AS, (limits["as_bytes"], limits["as_bytes"]))
    resource.setrlimit(resource.RLIMIT_FSIZE, (limits["fsize_bytes"], limits["fsize_bytes"]))
    resource.setrlimit(resource.RLIMIT_NPROC, (limits["nproc"], limits["nproc"]))
    resource.setrlimit(resource.RLIMIT_NOFILE, (limits["nofile"], limits["nofile"]))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    os.setsid()
    devnull = os.open("/dev/null", os.O_RDWR)
    # Keep the worker pipes on high fds, then give the candidate /dev/null (or the stdio
    # pipes) on 0/1/2 so that printing never touches a protocol channel.
    reply_fd = os.dup2(to_worker, 200)
    request_fd = os.dup2(from_worker, 201)
    stdin_fd = job.get("stdin_fd", devnull)
    stdout_fd = job.get("stdout_fd", devnull)
    os.dup2(stdin_fd, 0)
    os.dup2(stdout_fd, 1)
    os.dup2(devnull if "stdout_fd" not in job else stdout_fd, 2)
    os.closerange(3, 200)
    os.chdir("/tmp")
    if job["op"] == "stdio":
        run_program(job, reply_fd)
    namespace = {"__name__": "__candidate__", "__builtins__": __builtins__}
    try:
        exec(compile(job["code"], "<candidate>", "exec"), namespace)
    except BaseException as exc:  # the candidate may raise anything, SystemExit included
        write_frame(
            reply_fd, {"k": "load_error", "etype": type(exc).__name__, "msg": str(exc)[:500]}
        )
        os._exit(0)
    write_frame(reply_fd, {"k": "loaded"})
    while True:
        request = read_frame(request_fd)
        if request is None:
            os._exit(0)
        reply = {"k": "ret", "seq": request["seq"]}
        try:
            fn = namespace[request["name"]]
            value = fn(*decode(request["args"]), **decode(request["kwargs"]))
        except BaseException as exc:
            reply = {
                "k": "exc",
                "seq": request["seq"],
                "etype": type(exc).__name__,
                "msg": str(exc)[:500],
            }
        else:
            try:
                reply["v"] = encode(value)
            except BaseException as exc:
                reply = {"k": "bad_value", "seq": request["seq"], "msg": str(exc)[:300]}
        write_frame(reply_fd, reply)


def run_program(job, reply_fd):
    """stdin/stdout task: run the program as __main__; the worker reads stdout."""
    namespace = {"__name__": "__main__", "__builtins__": __builtins__}
    try:
        exec(compile(job["code"], "<candidate>", "exec"), namespace)
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        sys.stdout.flush()
        write_frame(reply_fd, {"k": "exited", "code": code})
        os._exit(0)
    except BaseException as exc:
        write_frame(
            reply_fd, {"k": "load_error", "etype": type(exc).__name__, "msg": str(exc)[:500]}
        )
        os._exit(0)
    sys.stdout.flush()
    write_frame(reply_fd, {"k": "exited", "code": 0})
    os._exit(0)
