"""nbgrader configuration of the course (read by plain `nbgrader` and by `coursekit.grading`).

Every protection lives here so that an instructor who runs plain `nbgrader autograde`
gets it too: absolute gradebook path, per-cell timeout, restoration of deleted test
cells, and feedback that never shows hidden-test code.
"""

import os

c = get_config()  # noqa: F821 - provided by traitlets when nbgrader loads this file

COURSE_ROOT = os.path.dirname(os.path.abspath(__file__))

# traitlets only logs an exception raised in a config file and nbgrader goes on without the
# rest of it (no sandbox, no trusted template): a course library that cannot be imported
# stops nbgrader here instead.
try:
    from coursekit.grading import (gradebook as _gradebook, inert as _inert,  # noqa: F401
                                   outputs as _outputs, template as _template,
                                   verdicts as _verdicts)
except Exception as _exc:  # noqa: BLE001
    raise SystemExit(f"nbgrader_config.py: the course library coursekit cannot be imported "
                     f"({_exc!r}); install it into this environment: pip install -e '.[course]'")

c.CourseDirectory.root = COURSE_ROOT
c.CourseDirectory.course_id = "mlsys-training-serving"
# The gradebook: COURSEKIT_GRADEBOOK, else `gradebook` under [tool.coursekit] in
# pyproject.toml, else <course root>/gradebook.db. A full SQLAlchemy URL
# (postgresql+psycopg://user@host/db) or a plain file path (SQLite), made absolute, so every
# process sees the same database. Set it there, not here: the course's own code (`grade`,
# `report`, the grading journal) reads the same function (coursekit/grading/gradebook.py).
# A bad URL or a missing driver stops nbgrader with one line naming the extra to install;
# it also puts this environment's bin/ on PATH when nbgrader's `alembic` is not found there
# (a venv that is not activated).
c.CourseDirectory.db_url = _gradebook.config_db_url(COURSE_ROOT)

# Generate: always overwrite, never leave a stale release behind.
c.CourseDirectory.assignment_id = ""
c.GenerateAssignment.force = True

# Autograde: a per-cell timeout (a looping cell fails after this many seconds, not 30 s by
# default or forever).
c.Execute.timeout = int(os.environ.get("COURSEKIT_CELL_TIMEOUT", "60"))
c.Execute.interrupt_on_timeout = True
c.Execute.startup_timeout = 120

# Trusted grading (DESIGN.md §4, items 1 and 2). What the kernel runs is rebuilt from
# source/: every cell's metadata and every locked and test cell come from there, and only
# the text of answer cells (and cells the student added) from the submission; student
# metadata changes nothing. Hidden tests in the kernel only record each case's result as
# plain data; SaveVerdicts compares the records with the key in notebooks/<id>.py outside
# the kernel and writes per-case points into the gradebook.
from nbgrader.preprocessors import (  # noqa: E402
    AssignLatePenalties, CheckCellMetadata, ClearOutput, Execute, IgnorePattern, LimitOutput)

from coursekit.grading.inert import InertNotebook  # noqa: E402
from coursekit.grading.outputs import LimitAllOutputs  # noqa: E402
from coursekit.grading.template import TrustedTemplate  # noqa: E402
from coursekit.grading.verdicts import SaveVerdicts  # noqa: E402

# LimitAllOutputs: an output budget on every output type (stream, display_data,
# execute_result, error), enforced by the grader before the graded notebook is written.
c.Autograde.sanitize_preprocessors = [ClearOutput, TrustedTemplate, CheckCellMetadata]
# InertNotebook after the budget: the sanitizer never reads more than the budget allows.
c.Autograde.autograde_preprocessors = [Execute, IgnorePattern, LimitOutput, SaveVerdicts,
                                       LimitAllOutputs, InertNotebook, AssignLatePenalties,
                                       CheckCellMetadata]
c.TrustedTemplate.course_root = COURSE_ROOT
# Before nbgrader copies a submission's files (it opens what it finds: a FIFO hangs it, a
# link to /dev/zero fills the disk), symlinks, FIFOs and devices are moved out unopened to
# .coursekit-quarantine/ and the submission is rejected at intake. The course's `grade`
# rejects them before nbgrader runs at all.
c.Autograde.pre_convert_hook = "coursekit.grading.precheck.before_nbgrader_copy"
c.SaveVerdicts.course_root = COURSE_ROOT

# Inert student content (coursekit/grading/inert.py). InertNotebook, above, leaves in the
# autograded notebook only plain text, PNG/JPEG and sanitized HTML from the student's
# kernel. Every HTML view of a notebook (formgrader's submission page, feedback) runs it
# again, drops scripts and widget views, and renders markdown and HTML through the nh3
# sanitizer, because formgrader's template calls `markdown2html` unsanitized. The feedback
# page also carries a Content-Security-Policy; formgrader's pages get theirs as an HTTP
# header from the coursekit.grading.webguard server extension.
c.HTMLExporter.sanitize_html = True
c.HTMLExporter.preprocessors = ["coursekit.grading.inert.InertNotebook"]
c.HTMLExporter.filters = {"markdown2html": "coursekit.grading.inert.markdown2html",
                          "clean_html": "coursekit.grading.inert.clean_html"}

# Feedback: hidden-test code and tracebacks are removed; pass/fail, points and the
# error's one-line message stay. Set COURSEKIT_SHOW_HIDDEN_TESTS=1 after the deadline
# to show hidden tests in feedback instead.
c.GenerateFeedback.preprocessors = [
    "nbgrader.preprocessors.GetGrades",
    "coursekit.grading.feedback.StripHiddenTests",
    "nbconvert.preprocessors.CSSHTMLHeaderPreprocessor",
    "coursekit.grading.inert.FeedbackCSP",
]
c.StripHiddenTests.show_hidden_tests = os.environ.get("COURSEKIT_SHOW_HIDDEN_TESTS") == "1"
# Or reveal them automatically in feedback generated after a date (UTC unless given):
# c.StripHiddenTests.show_after = "2026-12-15T23:59:00+00:00"
# A submission that could not be graded (error, timeout, rejected) gets a status page as
# its feedback (what happened, the reason, what to do), and every feedback folder gets the
# timestamp.txt and submission_secret.txt `nbgrader release_feedback` reads
# (coursekit/grading/feedback.py).
c.GenerateFeedback.post_convert_hook = "coursekit.grading.feedback.after_generate_feedback"

# Statuses where instructors look (coursekit/grading/statuses.py): `grade` flags every
# submission it could not score (needs manual grade, the reason as a comment, a placeholder
# to grade by hand); formgrader's averages leave them out until resolved, and plain
# `nbgrader export` writes a status and a reason column (error, timeout, rejected, missing,
# not a 0; blank scores for them).
from coursekit.grading import statuses as _statuses  # noqa: E402

_statuses.install_averages()
c.ExportApp.plugin_class = "coursekit.grading.export.StatusCsvExportPlugin"

# The exchange (`nbgrader release_assignment`, `list`, `fetch_assignment`, `submit`,
# `collect`, `release_feedback`): COURSEKIT_EXCHANGE, e.g. a shared JupyterHub's
# /srv/nbgrader/exchange (created once by an administrator, world-writable), else
# <course root>/exchange, created here. Students' own nbgrader config names the same root
# and course id (README, "The nbgrader workflow").
_exchange = os.environ.get("COURSEKIT_EXCHANGE", "").strip()
if not _exchange:
    _exchange = os.path.join(COURSE_ROOT, "exchange")
    try:
        os.makedirs(_exchange, exist_ok=True)
    except OSError:  # a read-only checkout: nbgrader names the folder when it needs it
        pass
c.Exchange.root = _exchange
c.ExchangeFactory.release_feedback = "coursekit.grading.feedback.ReleaseFeedback"

# LMS downloads (`nbgrader zip_collect <assignment>` on downloaded/<assignment>/archive/):
# the file names of Canvas, Moodle and Blackboard are recognized, LMS user ids mapped to
# student ids through lms_students.csv when present (coursekit/grading/lms.py). Setting
# c.FileNameCollectorPlugin.named_regexp still works and is tried first.
c.ZipCollectApp.collector_plugin = "coursekit.grading.lms.LMSCollectorPlugin"

# Sandbox: every kernel nbgrader starts runs through coursekit's launcher under bubblewrap
# (see coursekit/grading/sandbox.py): a minimal read-only filesystem with a copy of the
# student's own regular files, a cleared environment, no network (IPC sockets in a private
# directory), own user/PID/IPC namespaces, a cgroup per kernel, rlimits and a
# whole-notebook time limit. COURSEKIT_SANDBOX=limits grades with rlimits only, and
# COURSEKIT_SANDBOX=off not at all (benchmarks only); both are reported loudly.
if os.environ.get("COURSEKIT_SANDBOX") != "off":
    c.Execute.kernel_manager_class = "coursekit.grading.kernel_manager.SandboxKernelManager"
c.SandboxKernelManager.course_root = COURSE_ROOT
c.SandboxKernelManager.mode = "limits" if os.environ.get("COURSEKIT_SANDBOX") == "limits" else "auto"
c.SandboxKernelManager.status_file = os.environ.get("COURSEKIT_SANDBOX_STATUS", "")
c.SandboxKernelManager.time_limit = int(os.environ.get("COURSEKIT_NOTEBOOK_TIMEOUT", "300"))
c.SandboxKernelManager.memory_limit = int(os.environ.get("COURSEKIT_MEMORY_LIMIT", str(4 * 2**30)))
