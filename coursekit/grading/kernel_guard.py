"""Runs inside a sandboxed grading kernel: caps what its output streams may send.

Installed by the sandbox launcher through ``IPKernelApp.exec_lines``. After
``limit`` bytes on stdout or stderr, one notice is sent and the rest is dropped, so
a submission printing 100 MB cannot flood the grader, the notebook or the logs.

IPython re-binds ``stream.write`` on the instance around every cell (to tee output
into its history), so the guard is a data descriptor on ipykernel's ``OutStream``
class: whatever is assigned to ``write`` becomes the inner writer, and reading
``write`` always returns the budgeted wrapper around it.
"""

import threading


class _BudgetedWrite:
    def __init__(self, original, limit):
        self.original = original
        self.limit = int(limit)
        self.used = {}
        self.local = threading.local()

    def __set__(self, obj, value):
        obj.__dict__["_coursekit_inner_write"] = value

    def __get__(self, obj, objtype=None):
        if obj is None:
            return self
        inner = obj.__dict__.get("_coursekit_inner_write")
        if inner is None:
            def inner(string, *args, **kwargs):
                return self.original(obj, string, *args, **kwargs)
        guard = self

        def write(string, *args, **kwargs):
            if getattr(guard.local, "depth", 0):  # nested (IPython's tee): already counted
                return inner(string, *args, **kwargs)
            used = guard.used.get(id(obj), 0)
            if used >= guard.limit:
                return len(string)
            guard.local.depth = 1
            try:
                if used + len(string) > guard.limit:
                    guard.used[id(obj)] = guard.limit
                    inner(string[: max(0, guard.limit - used)]
                          + f"\n[output truncated by the grader after {guard.limit:,} bytes]\n")
                    return len(string)
                guard.used[id(obj)] = used + len(string)
                return inner(string, *args, **kwargs)
            finally:
                guard.local.depth = 0

        return write


def install(limit: int) -> None:
    """Give every ipykernel output stream a budget of ``limit`` bytes."""
    from ipykernel.iostream import OutStream

    if isinstance(OutStream.__dict__.get("write"), _BudgetedWrite):
        return
    OutStream.write = _BudgetedWrite(OutStream.write, limit)
