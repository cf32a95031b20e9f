"""The Jupyter kernel manager nbgrader uses for grading (named in nbgrader_config.py).

It starts every kernel through the sandbox launcher (:mod:`coursekit.grading.sandbox`),
which is kept free of jupyter_client imports so that each kernel starts quickly.
"""

from __future__ import annotations

import os
import sys

from jupyter_client.manager import AsyncKernelManager
from traitlets import Integer, List, Unicode

from .sandbox import DEFAULTS



class SandboxKernelManager(AsyncKernelManager):
    """Starts every kernel through the sandbox launcher (set in nbgrader_config.py)."""

    course_root = Unicode("", help="course directory to hide").tag(config=True)
    mode = Unicode("auto", help="'auto' (namespaces when root, else limits only), "
                                "'limits' (rlimits and time limit only)").tag(config=True)
    hide = List(Unicode(), help="extra files/folders to hide (gradebook, course "
                                "folders configured outside the root)").tag(config=True)
    status_file = Unicode("", help="where the launcher writes why the kernel "
                                   "ended (JSON)").tag(config=True)
    time_limit = Integer(DEFAULTS["time_limit"],
                         help="whole-notebook wall-clock limit (s)").tag(config=True)
    memory_limit = Integer(DEFAULTS["memory_limit"],
                           help="address-space limit (bytes)").tag(config=True)
    nproc_limit = Integer(DEFAULTS["nproc_limit"],
                          help="processes and threads of the kernel's uid").tag(config=True)
    file_size_limit = Integer(DEFAULTS["file_size_limit"],
                              help="largest file the kernel may write (bytes)").tag(config=True)
    output_limit = Integer(DEFAULTS["output_limit"],
                           help="bytes per output stream before truncation").tag(config=True)

    def wrap(self, kernel_cmd, cwd):
        """The launcher command around ``kernel_cmd``."""
        if not self.course_root:
            raise ValueError("SandboxKernelManager.course_root is not set in "
                             "nbgrader_config.py")
        cmd = [sys.executable, "-m", "coursekit.grading.sandbox",
               "--course-root", self.course_root, "--workdir", cwd or os.getcwd(),
               "--time-limit", str(self.time_limit),
               "--memory-limit", str(self.memory_limit),
               "--nproc-limit", str(self.nproc_limit),
               "--file-size-limit", str(self.file_size_limit),
               "--output-limit", str(self.output_limit)]
        for path in self.hide:
            cmd += ["--hide", path]
        if self.status_file:
            cmd += ["--status-file", self.status_file]
        if self.mode == "limits":
            cmd.append("--no-namespaces")
        if os.environ.get("COURSEKIT_SANDBOX_DEBUG") == "1":
            cmd.append("--debug")
        return cmd + ["--"] + list(kernel_cmd)

    async def _async_launch_kernel(self, kernel_cmd, **kw):
        return await super()._async_launch_kernel(self.wrap(kernel_cmd, kw.get("cwd")),
                                                  **kw)
