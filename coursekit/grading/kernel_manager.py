"""The Jupyter kernel manager nbgrader uses for grading (named in nbgrader_config.py).

It starts every kernel through the sandbox launcher (:mod:`coursekit.grading.sandbox`,
which runs it under bubblewrap), over jupyter_client's ``ipc`` transport: the kernel's
sockets live in a private directory made for this kernel alone (bound into its sandbox),
so no TCP port is opened, none can clash under many workers, and no other kernel can
connect. Interrupts travel as messages on the control channel (the kernel is in its own
session inside the sandbox, where a signal from outside cannot reach it).
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile

from jupyter_client.manager import AsyncKernelManager
from traitlets import Integer, Unicode

from .sandbox import DEFAULTS


class SandboxKernelManager(AsyncKernelManager):
    """Starts every kernel through the sandbox launcher (set in nbgrader_config.py)."""

    course_root = Unicode("", help="course directory to hide").tag(config=True)
    mode = Unicode("auto", help="'auto' (bubblewrap when root, else limits only), "
                                "'limits' (rlimits and time limit only)").tag(config=True)
    status_file = Unicode("", help="where the launcher writes why the kernel "
                                   "ended (JSON)").tag(config=True)
    time_limit = Integer(DEFAULTS["time_limit"],
                         help="whole-notebook wall-clock limit (s)").tag(config=True)
    memory_limit = Integer(DEFAULTS["memory_limit"],
                           help="address-space limit (bytes)").tag(config=True)
    nproc_limit = Integer(DEFAULTS["nproc_limit"],
                          help="processes and threads of the kernel").tag(config=True)
    file_size_limit = Integer(DEFAULTS["file_size_limit"],
                              help="largest file the kernel may write (bytes)").tag(config=True)
    output_limit = Integer(DEFAULTS["output_limit"],
                           help="bytes per output stream before truncation").tag(config=True)

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self._ipc_dir = tempfile.mkdtemp(prefix="coursekit-ipc-")
        self.transport = "ipc"
        self.ip = os.path.join(self._ipc_dir, "kernel")

    def wrap(self, kernel_cmd, cwd):
        """The launcher command around ``kernel_cmd``."""
        if not self.course_root:
            raise ValueError("SandboxKernelManager.course_root is not set in "
                             "nbgrader_config.py")
        cmd = [sys.executable, "-m", "coursekit.grading.sandbox",
               "--course-root", self.course_root, "--workdir", cwd or os.getcwd(),
               "--ipc-dir", self._ipc_dir,
               "--time-limit", str(self.time_limit),
               "--memory-limit", str(self.memory_limit),
               "--nproc-limit", str(self.nproc_limit),
               "--file-size-limit", str(self.file_size_limit),
               "--output-limit", str(self.output_limit)]
        if self.status_file:
            cmd += ["--status-file", self.status_file]
        if self.mode == "limits":
            cmd.append("--no-namespaces")
        if os.environ.get("COURSEKIT_SANDBOX_DEBUG") == "1":
            cmd.append("--debug")
        return cmd + ["--"] + list(kernel_cmd)

    async def _async_launch_kernel(self, kernel_cmd, **kw):
        if self.kernel_spec is not None:
            self.kernel_spec.interrupt_mode = "message"
        return await super()._async_launch_kernel(self.wrap(kernel_cmd, kw.get("cwd")),
                                                  **kw)

    async def _async_cleanup_resources(self, restart=False):
        await super()._async_cleanup_resources(restart=restart)
        if not restart:
            shutil.rmtree(self._ipc_dir, ignore_errors=True)
