"""Runs inside a sandboxed grading kernel: caps what its output streams may send.

Installed by the sandbox launcher through ``IPKernelApp.exec_lines``. After
``limit`` bytes on stdout or stderr, one notice is sent and the rest is dropped, so
a submission printing 100 MB cannot flood the grader, the notebook or the logs.
"""


def install(limit: int) -> None:
    """Wrap ``ipykernel``'s OutStream.write with a per-stream byte budget."""
    from ipykernel.iostream import OutStream

    if getattr(OutStream.write, "_coursekit_guard", False):
        return
    original = OutStream.write
    budget = {}

    def write(self, string):
        used = budget.get(id(self), 0)
        if used >= limit:
            return len(string)
        if used + len(string) > limit:
            string = string[: max(0, limit - used)] + (
                f"\n[output truncated by the grader after {limit:,} bytes]\n")
            budget[id(self)] = limit
            return original(self, string)
        budget[id(self)] = used + len(string)
        return original(self, string)

    write._coursekit_guard = True
    OutStream.write = write
