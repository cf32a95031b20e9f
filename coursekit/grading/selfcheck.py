"""Instant-feedback self-checks that do not ship their answers in plain text.

Any notebook can ask a question and tell the student at once whether the answer is
right, with a hint after a wrong answer and the explanation after a right one (or
after ``reveal_after`` wrong attempts)::

    from coursekit.grading import selfcheck as sc
    r = sc.check("sc1_q1", "A")          # pure: returns a Result, prints nothing
    r.correct, r.hint, r.explanation
    sc.show(r)                            # the explicit display helper
    sc.widget("sc1_q1")                   # ipywidgets UI (None without ipywidgets)

How keys are stored (``coursekit/data/selfcheck_keys.json``, or an inline token made
by :func:`make_question` + :meth:`Question.to_token` for other notebooks):

* letters, labels, bools and orderings: ``sha256(salt|id|normalized answer)``;
* numbers: the float XOR-ed with a keystream derived from the salt (base64), compared
  with an explicit relative/absolute tolerance;
* explanations: XOR-obfuscated the same way, decoded only to be shown.

This keeps answers out of plain sight (a release notebook or ``grep`` does not show
them), not secret: a determined student can always probe a local checker (there are
four letters) or decode the numbers. So only practice items (warm-ups, predictions,
reflections) carry a key. A *graded* item (``graded=True``: assignment 07's quiz) is
packaged with its format only: kind, options, unit, ``integer`` and a plausible range
``[lo, hi]`` three decades wide; its checks say whether an answer is readable in the form
the hidden test expects (a whole number, a fraction not a percent, bytes not GB), never
whether it is right. Its answer lives only in the hidden tests, stripped from the release.

Packaged data: ``selfcheck_keys.json`` (assignment 07) and ``predictions.json`` (the
predict-before-run cells of 01-06, asked by id: ``sc.predict("nb01_p1_dominant", x)``).
"""

from __future__ import annotations

import base64
import functools
import hashlib
import json
import math
import re
import struct
from dataclasses import dataclass
from importlib import resources
from numbers import Integral, Real

KINDS = ("choice", "bool", "label", "order", "number", "reflection")
"""Question kinds: a letter, True/False, a label from a list, a list of item
numbers, a number with a tolerance, or an ungraded free-text reflection."""

KEYS_FILE = "selfcheck_keys.json"
PREDICTIONS_FILE = "predictions.json"
TOKEN_PREFIX = "ckq1:"
_PEPPER = "coursekit-selfcheck-v1"
_MIN_REFLECTION_WORDS = 5


# --------------------------------------------------------------------------- encoding
def default_salt(question_id: str) -> str:
    """Deterministic per-question salt (hex), so rebuilt key files are byte-stable."""
    return hashlib.sha256(f"{_PEPPER}|salt|{question_id}".encode()).hexdigest()[:16]


def _keystream(salt: str, question_id: str, purpose: str, n: int) -> bytes:
    return hashlib.shake_256(f"{_PEPPER}|{purpose}|{salt}|{question_id}".encode()).digest(n)


def _xor(data: bytes, stream: bytes) -> bytes:
    return bytes(a ^ b for a, b in zip(data, stream))


def digest(question_id: str, salt: str, normalized: str) -> str:
    """Salted SHA-256 of a normalized answer string (hex)."""
    return hashlib.sha256(f"{salt}|{question_id}|{normalized}".encode()).hexdigest()


def encode_number(question_id: str, salt: str, value: float) -> str:
    """Obfuscate a float: big-endian double XOR keystream, base64."""
    raw = struct.pack(">d", float(value))
    return base64.b64encode(_xor(raw, _keystream(salt, question_id, "num", 8))).decode()


def decode_number(question_id: str, salt: str, token: str) -> float:
    """Inverse of :func:`encode_number`."""
    raw = base64.b64decode(token.encode())
    return struct.unpack(">d", _xor(raw, _keystream(salt, question_id, "num", 8)))[0]


def encode_text(question_id: str, salt: str, text: str) -> str:
    """Obfuscate a text (UTF-8 XOR keystream, base64)."""
    raw = text.encode("utf-8")
    return base64.b64encode(_xor(raw, _keystream(salt, question_id, "txt", len(raw)))).decode()


def decode_text(question_id: str, salt: str, token: str) -> str:
    """Inverse of :func:`encode_text`."""
    raw = base64.b64decode(token.encode())
    return _xor(raw, _keystream(salt, question_id, "txt", len(raw))).decode("utf-8")


# ---------------------------------------------------------------------- normalization
_LETTER = re.compile(r"^\(?\s*([A-Za-z])\s*[).:]?$")
_TRUE = {"true", "t", "yes", "y"}
_FALSE = {"false", "f", "no", "n"}


def _label_key(text: str) -> str:
    return re.sub(r"[\s_\-]+", "-", text.strip().lower())


def normalize(kind: str, answer, options=()):
    """Canonical form of ``answer`` for a question of ``kind``, or raise ValueError.

    choice: one upper-case letter from ``options`` ("b)", "(b)", " b " -> "B");
    bool: a Python bool (also "true"/"false"/"yes"/"no"); label: the matching entry
    of ``options`` (case, spaces, '_' and '-' ignored); order: a list of ints (also
    "3, 1, 2" or "312"); number: a finite float; reflection: stripped text.
    """
    if kind not in KINDS:
        raise ValueError(f"kind={kind!r} is not known; allowed: {', '.join(KINDS)}")
    if kind == "choice":
        letters = tuple(options)
        if isinstance(answer, str):
            m = _LETTER.match(answer.strip())
            if m and m.group(1).upper() in letters:
                return m.group(1).upper()
        raise ValueError(f"answer={answer!r} is not a choice; write one letter of "
                         f"{', '.join(repr(x) for x in letters)}")
    if kind == "bool":
        if isinstance(answer, bool) or type(answer).__name__ == "bool_":
            return bool(answer)
        if isinstance(answer, str) and answer.strip().lower() in _TRUE | _FALSE:
            return answer.strip().lower() in _TRUE
        raise ValueError(f"answer={answer!r} is not True or False")
    if kind == "label":
        if isinstance(answer, str):
            lookup = {_label_key(o): o for o in options}
            if _label_key(answer) in lookup:
                return lookup[_label_key(answer)]
        raise ValueError(f"answer={answer!r} is not one of the labels "
                         f"{', '.join(repr(o) for o in options)}")
    if kind == "order":
        items = answer
        if isinstance(answer, str):
            text = answer.strip().strip("[]()")
            items = re.split(r"[\s,;>-]+", text) if re.search(r"[\s,;>-]", text) \
                else list(text)
        if isinstance(items, (list, tuple)) and items:
            out = []
            for x in items:
                if isinstance(x, bool):
                    break
                if isinstance(x, Integral):
                    out.append(int(x))
                elif isinstance(x, str) and x.strip().isdigit():
                    out.append(int(x.strip()))
                else:
                    break
            else:
                return out
        raise ValueError(f"answer={answer!r} is not an ordering; write a list of item "
                         "numbers such as [2, 1, 3]")
    if kind == "number":
        if isinstance(answer, str):
            try:
                answer = float(answer.replace("_", "").replace(",", ""))
            except ValueError:
                pass
        if isinstance(answer, Real) and not isinstance(answer, bool):
            value = float(answer)
            if math.isfinite(value):
                return value
        raise ValueError(f"answer={answer!r} is not a finite number")
    if isinstance(answer, str) and answer.strip():
        return answer.strip()
    raise ValueError("write your answer as a non-empty string")


def _canonical_string(kind: str, value) -> str:
    if kind == "bool":
        return "true" if value else "false"
    if kind == "order":
        return ",".join(str(v) for v in value)
    return str(value)


# ----------------------------------------------------------------------- data classes
@dataclass(frozen=True)
class Question:
    """One self-check question with its encoded key (never the plain answer)."""

    qid: str
    kind: str
    prompt: str
    options: tuple = ()          # letters for choice, labels for label, texts optional
    option_texts: tuple = ()     # short texts shown next to letters (choice only)
    salt: str = ""
    key: str = ""                # digest (hashed kinds) or encoded float (number)
    rel: float = 0.0
    abs_tol: float = 0.0
    unit: str = ""
    hints: tuple = ()
    explanation: str = ""        # encoded; see :meth:`explanation_text`
    reveal_after: int = 2
    section: str = ""
    source: str = ""
    variable: str = ""           # the notebook variable holding the answer, if any
    graded: bool = False         # graded items carry no key, hints or explanation
    integer: bool = False        # the answer must be a whole number (an int)
    lo: float | None = None      # plausible range of a graded number (format check)
    hi: float | None = None

    def explanation_text(self) -> str:
        """The decoded explanation (model answer for reflections)."""
        return decode_text(self.qid, self.salt, self.explanation) if self.explanation else ""

    def answer_format(self) -> str:
        """How an answer must be written, for messages and prompts."""
        if self.kind == "choice":
            return "one letter: " + ", ".join(repr(o) for o in self.options)
        if self.kind == "bool":
            return "True or False"
        if self.kind == "label":
            return "one of: " + ", ".join(repr(o) for o in self.options)
        if self.kind == "order":
            return "a list of item numbers, e.g. [2, 1, 3]"
        if self.kind == "number":
            return ("a whole number" if self.integer else "a number") + (
                f" in {self.unit}" if self.unit else "")
        return "a few sentences of text"

    def to_dict(self) -> dict:
        """JSON-ready dict (the key stays encoded)."""
        d = {k: getattr(self, k) for k in self.__dataclass_fields__}
        for k in ("options", "option_texts", "hints"):
            d[k] = list(d[k])
        return d

    @classmethod
    def from_dict(cls, d: dict) -> "Question":
        d = dict(d)
        for k in ("options", "option_texts", "hints"):
            d[k] = tuple(d.get(k, ()))
        unknown = set(d) - set(cls.__dataclass_fields__)
        if unknown:
            raise ValueError(f"question fields {sorted(unknown)} are not known")
        return cls(**d)

    def to_token(self) -> str:
        """A one-line string a notebook can embed to ask this question inline."""
        blob = json.dumps(self.to_dict(), sort_keys=True, separators=(",", ":"))
        return TOKEN_PREFIX + base64.urlsafe_b64encode(blob.encode()).decode()


@dataclass(frozen=True)
class Result:
    """Outcome of one check. ``correct`` is None for ungraded reflections and for
    answers that could not be read (``valid`` False)."""

    qid: str
    valid: bool
    correct: bool | None
    message: str
    attempt: int
    hint: str | None = None
    explanation: str | None = None

    @property
    def revealed(self) -> bool:
        return self.explanation is not None


def make_question(qid: str, kind: str, answer, *, prompt: str, options=(),
                  option_texts=(), rel: float = 1e-6, abs_tol: float = 0.0, unit: str = "",
                  hints=(), explanation: str = "", reveal_after: int = 2, section: str = "",
                  source: str = "", variable: str = "", salt: str | None = None,
                  graded: bool = False, integer: bool = False) -> Question:
    """Build a :class:`Question` whose key encodes ``answer`` (used by the key builder
    and by notebook authors for inline tokens). ``answer`` is ignored for reflections.

    ``graded=True``: a format-only question (no key, hints or explanation); a number gets
    the plausible range :func:`plausible_range` of ``answer``."""
    if not isinstance(qid, str) or not re.match(r"^[A-Za-z0-9_.-]{1,60}$", qid):
        raise ValueError(f"qid={qid!r} must be 1-60 letters, digits, '_', '.' or '-'")
    if kind not in KINDS:
        raise ValueError(f"kind={kind!r} is not known; allowed: {', '.join(KINDS)}")
    if kind == "choice" and not options:
        options = ("A", "B", "C", "D")
    if kind in ("choice", "label") and len(options) < 2:
        raise ValueError(f"options={options!r}: a {kind} question needs at least two")
    if kind == "number":
        for name, v in (("rel", rel), ("abs_tol", abs_tol)):
            if isinstance(v, bool) or not isinstance(v, Real) or v < 0 or not math.isfinite(v):
                raise ValueError(f"{name}={v!r} must be a finite number >= 0")
        if rel == 0 and abs_tol == 0:
            raise ValueError("rel=0 and abs_tol=0: a numeric question needs a tolerance")
    if isinstance(reveal_after, bool) or not isinstance(reveal_after, Integral) \
            or reveal_after < 1:
        raise ValueError(f"reveal_after={reveal_after!r} must be an integer >= 1")
    salt = salt or default_salt(qid)
    if graded:
        if kind == "reflection":
            raise ValueError("graded=True: a reflection is never graded")
        value = normalize(kind, answer, options)
        lo, hi = plausible_range(value, unit) if kind == "number" else (None, None)
        return Question(qid=qid, kind=kind, prompt=prompt, options=tuple(options),
                        option_texts=tuple(option_texts), unit=unit, section=section,
                        variable=variable, graded=True, integer=bool(integer), lo=lo, hi=hi)
    if kind == "reflection":
        key = ""
    else:
        value = normalize(kind, answer, options)
        key = encode_number(qid, salt, value) if kind == "number" \
            else digest(qid, salt, _canonical_string(kind, value))
    return Question(qid=qid, kind=kind, prompt=prompt, options=tuple(options),
                    option_texts=tuple(option_texts), salt=salt, key=key,
                    rel=float(rel), abs_tol=float(abs_tol), unit=unit, hints=tuple(hints),
                    explanation=encode_text(qid, salt, explanation) if explanation else "",
                    reveal_after=int(reveal_after), section=section, source=source,
                    variable=variable, integer=bool(integer))


def plausible_range(value: float, unit: str = "") -> tuple:
    """The range a graded number's format check accepts: ``[0, 1]`` for a fraction, else
    the three decades ``[10^(e-1), 10^(e+2)]`` around ``value`` (``e = floor(log10|value|)``;
    negated for a negative value). Wide enough to say nothing about the answer beyond
    its unit; narrow enough that a percent, GB-for-bytes or ms-for-s slip falls out."""
    if "fraction" in unit:
        return 0.0, 1.0
    if value == 0:
        return -1.0, 1.0
    e = math.floor(math.log10(abs(value)))
    lo, hi = 10.0 ** (e - 1), 10.0 ** (e + 2)
    return (lo, hi) if value > 0 else (-hi, -lo)


# --------------------------------------------------------------------------- key store
@functools.lru_cache(maxsize=4)
def _load(path: str | None) -> dict:
    if path is None:
        data = resources.files("coursekit.data")
        texts = [data.joinpath(name).read_text("utf-8")
                 for name in (KEYS_FILE, PREDICTIONS_FILE)]
    else:
        with open(path, encoding="utf-8") as fh:
            texts = [fh.read()]
    out = {}
    for text in texts:
        for qid, d in json.loads(text)["questions"].items():
            out[qid] = Question.from_dict(d)
    return out


def questions(path: str | None = None) -> dict:
    """All packaged questions, id -> :class:`Question` (read-only copy)."""
    return dict(_load(path))


def get_question(question) -> Question:
    """A :class:`Question` from an id in the packaged keys, an inline token, or itself."""
    if isinstance(question, Question):
        return question
    if not isinstance(question, str):
        raise TypeError(f"question must be an id, a token or a Question, got "
                        f"{type(question).__name__}")
    if question.startswith(TOKEN_PREFIX):
        try:
            blob = base64.urlsafe_b64decode(question[len(TOKEN_PREFIX):].encode())
            return Question.from_dict(json.loads(blob))
        except (ValueError, TypeError) as exc:
            raise ValueError(f"question token is damaged ({exc})") from None
    table = _load(None)
    if question not in table:
        close = [q for q in table if q.split("_")[0] == question.split("_")[0]][:8]
        raise ValueError(f"question={question!r} is not a known self-check id"
                         + (f"; ids in that group: {', '.join(close)}" if close else ""))
    return table[question]


# ------------------------------------------------------------------------------ check
def is_correct(question, answer) -> bool:
    """True if ``answer`` is right (False for unreadable answers and reflections)."""
    return bool(check(question, answer).correct)


def check(question, answer, *, attempt: int = 1) -> Result:
    """Check ``answer`` against the encoded key of ``question`` (id, token or Question).

    Pure. ``attempt`` is the 1-based count of readable attempts including this one: a
    wrong answer gets hint ``attempt-1`` (the last hint repeats) and, from attempt
    ``reveal_after`` on, the explanation; a right answer always gets the explanation.
    Numbers are right when ``|x - key| <= rel*|key| + abs_tol``. A reflection with at
    least a few words reveals the model answer (``correct`` is None: ungraded).
    """
    q = get_question(question)
    if isinstance(attempt, bool) or not isinstance(attempt, Integral) or attempt < 1:
        raise ValueError(f"attempt={attempt!r} must be an integer >= 1")
    try:
        value = normalize(q.kind, answer, q.options)
    except ValueError as exc:
        return Result(q.qid, False, None, f"Could not read that answer ({exc}). "
                      f"Expected {q.answer_format()}.", attempt)
    if q.graded:
        problem = format_problem(q, answer)
        if problem:
            return Result(q.qid, False, None, problem, attempt)
        return Result(q.qid, True, None, "Format OK: graded after you submit (graded "
                      "items get no instant right or wrong).", attempt)
    if q.kind == "reflection":
        if len(value.split()) < _MIN_REFLECTION_WORDS:
            return Result(q.qid, False, None, "Write a few sentences first; the model "
                          "answer appears after your attempt.", attempt)
        return Result(q.qid, True, None, "Compare your answer with the model answer.",
                      attempt, explanation=q.explanation_text())
    if q.kind == "number":
        expected = decode_number(q.qid, q.salt, q.key)
        ok = abs(value - expected) <= q.rel * abs(expected) + q.abs_tol
    else:
        ok = digest(q.qid, q.salt, _canonical_string(q.kind, value)) == q.key
    if ok:
        return Result(q.qid, True, True, "Correct.", attempt,
                      explanation=q.explanation_text() or None)
    hint = q.hints[min(attempt, len(q.hints)) - 1] if q.hints else None
    if q.kind == "number":
        hint = scale_hint(value, expected, q) or hint
    reveal = attempt >= q.reveal_after
    msg = "Not quite." + ("" if reveal else " Try again.")
    return Result(q.qid, True, False, msg, attempt, hint=hint,
                  explanation=(q.explanation_text() or None) if reveal else None)


# Factors that turn a right number into a classic wrong one, and what each one suggests.
_SCALES = (
    (100.0, "a percent where a fraction is asked? Write 0.46 for 46%."),
    (0.01, "a fraction where a percent is asked?"),
    (2.0 ** 30, "bytes where GiB are asked, or GiB where bytes are (2^30 apart)?"),
    (2.0 ** -30, "GiB where bytes are asked, or bytes where GiB are (2^30 apart)?"),
)
_POWERS = (3, 6, 9, 12, 15)  # k, M, G, T, P


def scale_hint(value: float, expected: float, q) -> str | None:
    """A unit hint when a wrong number is the right one times 100, 1/100, 2^±30 or 10^±3k
    (within 1%): "this looks like a percent", "check the unit (the question asks for GB)".
    Only for questions asked to better than 10% (an order-of-magnitude guess is not a
    unit slip)."""
    if q.rel >= 0.1 or not expected or not value:
        return None
    ratio = value / expected
    asks = f" The question asks for {q.unit}." if q.unit else ""
    for factor, text in _SCALES:
        if abs(ratio / factor - 1) <= 0.01:
            return f"This looks like {text}{asks}"
    for k in _POWERS:
        for sign in (1, -1):
            if abs(ratio / 10.0 ** (sign * k) - 1) <= 0.01:
                return (f"Your number is {'10^' + str(k) if sign > 0 else '1/10^' + str(k)}"
                        f" times the answer: check the unit (bytes, kB, MB, GB, TB?).{asks}")
    return None


_PREFIXES = {15: "P", 12: "T", 9: "G", 6: "M", 3: "k", -3: "m", -6: "µ", -9: "n"}


def unit_hint(value: float, q) -> str | None:
    """For a number outside a graded question's plausible range: the unit slip that
    would put it inside ("this looks like GB; the question asks for bytes"), or None."""
    def inside(x):
        return q.lo <= x <= q.hi
    unit = q.unit or "the unit asked"
    if "fraction" in q.unit and 1 < value <= 100 and inside(value / 100):
        return (f"This looks like a percent; the question asks for a fraction: write "
                f"{value / 100:g} for {value:g}%.")
    base = q.unit.split()[0] if q.unit else ""
    for k in sorted(_PREFIXES, key=abs):
        if inside(value * 10.0 ** k):
            if base in ("bytes", "s", "FLOPs", "FLOP/s", "B/s"):
                named = {"bytes": "B", "FLOPs": "FLOPs", "s": "s"}.get(base, base)
                return (f"This looks like {_PREFIXES[k]}{named}; the question asks for "
                        f"{unit}: multiply by 10^{k}." if k > 0 else
                        f"This looks like {_PREFIXES[k]}{named}; the question asks for "
                        f"{unit}: divide by 10^{-k}.")
            return f"Off by a factor of 10^{k}: check the unit ({unit})."
    for factor in (2.0 ** 30, 2.0 ** -30):
        if inside(value * factor):
            return f"Off by 2^30: GiB and bytes mixed up? The question asks for {unit}."
    return None


def format_problem(question, answer) -> str | None:
    """None if ``answer`` is written in the exact form the graded tests expect, else a
    friendly sentence saying what to write (an unanswered ``None`` included)."""
    q = get_question(question)
    name = q.variable or q.qid
    if answer is None:
        return f"{name} is still None: write {q.answer_format()}"
    try:
        value = normalize(q.kind, answer, q.options)
    except ValueError:
        return f"{name}={answer!r} cannot be read: write {q.answer_format()}"
    if q.kind == "number":
        if isinstance(answer, str):
            return f"{name} must be a number, not a string: write {value!r}"
        if q.integer and not isinstance(answer, Integral):
            whole = f"{int(value)}" if value.is_integer() else "a whole number"
            return f"{name}={answer!r}: the question asks for a whole number: write {whole}"
        if q.lo is not None and q.hi is not None and not q.lo <= value <= q.hi:
            return (f"{name}={answer!r} is outside the plausible range for this question "
                    f"({q.lo:g} to {q.hi:g}{' ' + q.unit if q.unit else ''}). "
                    + (unit_hint(value, q) or "Check your arithmetic and the unit."))
        return None
    exact = (type(answer) is bool or type(answer).__name__ == "bool_") if q.kind == "bool" \
        else (type(answer) is list and all(type(x) is int for x in answer)) \
        if q.kind == "order" else answer == value
    if not exact:
        return f"{name}={answer!r}: write it exactly as {value!r}"
    return None


def require_format(question, answer) -> None:
    """Raise AssertionError with :func:`format_problem`'s message if the format is off.

    For visible test cells: it checks the form of an answer, never its correctness."""
    problem = format_problem(question, answer)
    if problem:
        raise AssertionError(problem)


# ---------------------------------------------------------------------------- display
def render(result: Result) -> str:
    """Plain-text rendering of a :class:`Result` (no printing)."""
    lines = [f"[{result.qid}] {result.message}"]
    if result.hint:
        lines.append(f"Hint: {result.hint}")
    if result.explanation:
        label = "Model answer" if result.correct is None else "Explanation"
        lines.append(f"{label}: {result.explanation}")
    return "\n".join(lines)


def show(result_or_question, answer=None, *, attempt: int = 1) -> Result:
    """Display helper (the only function here that prints): checks if given a question
    and an answer, prints the rendering, and returns the :class:`Result`."""
    result = result_or_question if isinstance(result_or_question, Result) \
        else check(result_or_question, answer, attempt=attempt)
    print(render(result))
    return result


_PREDICTION_GUESSES: dict = {}
"""Distinct guesses per question in this kernel (UI state of :func:`predict` only)."""


def predict(question, guess) -> None:
    """Display helper for predict-before-run cells: nothing while ``guess`` is None;
    otherwise prints the feedback, counting each *different* guess as one attempt (so
    the explanation appears after a right guess or after enough wrong ones). Returns
    None, so the cell shows the feedback only, not a ``Result(...)`` repr (use
    :func:`check` for the :class:`Result`)."""
    if guess is None:
        return None
    q = get_question(question)
    seen = _PREDICTION_GUESSES.setdefault(q.qid, [])
    if guess not in seen:
        seen.append(guess)
    show(q, guess, attempt=len(seen))
    return None


def show_all(answers: dict, *, explain: bool = False) -> list:
    """Display helper: one line per ``{question_id: answer}`` (hints on wrong answers,
    explanations only with ``explain=True``); returns the Results."""
    results = feedback(answers)
    for r in results:
        line = f"{r.qid}: {r.message}"
        if r.hint:
            line += f"  Hint: {r.hint}"
        print(line)
        if explain and r.explanation:
            print(f"    {r.explanation}")
    return results


def feedback(answers: dict) -> list:
    """Check several notebook answers at once: ``{question_id: answer}`` -> Results.

    Unanswered (None) entries come back as invalid Results; nothing raises."""
    out = []
    for qid, answer in answers.items():
        q = get_question(qid)
        if answer is None:
            out.append(Result(q.qid, False, None, "not answered yet", 1))
        else:
            out.append(check(q, answer))
    return out


def widget(question, *, attempts_shown: bool = True):
    """An ipywidgets box that asks ``question`` and gives instant feedback.

    Returns None when ipywidgets is not installed; builds headless without error. The
    attempt counter lives in the widget, never in this module."""
    try:
        import ipywidgets as w
    except ImportError:  # pragma: no cover - ipywidgets is a dependency
        return None
    q = get_question(question)
    state = {"attempt": 0}
    layout = w.Layout(width="auto")
    if q.kind == "choice":
        labels = [f"{o}) {t}" if t else o for o, t in
                  zip(q.options, q.option_texts or ("",) * len(q.options))]
        entry = w.RadioButtons(options=list(zip(labels, q.options)), value=None,
                               layout=layout)
    elif q.kind == "bool":
        entry = w.ToggleButtons(options=[("True", True), ("False", False)], value=None)
    elif q.kind == "label":
        entry = w.Dropdown(options=[("choose...", None)] + [(o, o) for o in q.options],
                           value=None)
    elif q.kind == "reflection":
        entry = w.Textarea(placeholder="Your answer (a few sentences)",
                           layout=w.Layout(width="95%", height="6em"))
    else:
        entry = w.Text(placeholder=q.answer_format())
    button = w.Button(description="Check", button_style="primary")
    out = w.HTML()

    def on_click(_):
        probe = check(q, entry.value, attempt=max(1, state["attempt"] + 1))
        if probe.valid:
            state["attempt"] += 1
        text = render(probe)
        if attempts_shown and probe.valid and q.kind != "reflection":
            text += f"\n(attempt {state['attempt']})"
        color = {True: "#1b7f3b", False: "#a61b1b", None: "#444"}[probe.correct]
        out.value = (f"<pre style='white-space:pre-wrap;color:{color}'>"
                     + _escape(text) + "</pre>")

    button.on_click(on_click)
    return w.VBox([w.HTML(f"<b>{_escape(q.prompt)}</b>"), entry, button, out])


def _escape(text: str) -> str:
    return (text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;"))


__all__ = ["KINDS", "Question", "Result", "check", "is_correct", "normalize",
           "make_question", "plausible_range", "unit_hint", "get_question", "questions",
           "format_problem", "require_format", "render", "show", "show_all", "feedback", "widget", "digest",
           "encode_number", "decode_number", "encode_text", "decode_text", "default_salt"]

