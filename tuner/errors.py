"""User-facing errors.

A :class:`UserError` is a mistake the person can fix (a bad file, a bad option). The CLI prints
its one-line message to stderr and exits with :attr:`UserError.exit_code`, never a traceback.
"""

from __future__ import annotations


class UserError(Exception):
    """A mistake in the user's input; printed as one line, exit code 2."""

    exit_code = 2


class SpaceError(UserError):
    """A located error in a search-space file.

    Rendered as ``FILE[:LINE]: KEY.PATH: what was expected``.
    """

    def __init__(
        self, message: str, *, file: str | None = None, path: str = "", line: int | None = None
    ) -> None:
        self.file = file
        self.path = path
        self.line = line
        self.detail = message
        super().__init__(self._render())

    def _render(self) -> str:
        where = self.file or "<space>"
        if self.line is not None:
            where += f":{self.line}"
        if self.path:
            where += f": {self.path}"
        return printable(f"{where}: {self.detail}")

    def located(self, *, file: str | None = None, line: int | None = None) -> SpaceError:
        """A copy of this error with the file and/or line filled in."""
        return SpaceError(
            self.detail,
            file=file if file is not None else self.file,
            path=self.path,
            line=line if line is not None else self.line,
        )


class ConfigError(UserError):
    """A configuration that cannot be launched (unknown knob, value outside its domain, ...)."""


def clip(text: str | None, width: int) -> str:
    """``text`` on one line, at most ``width`` characters, cut at a word boundary with an
    ellipsis (never mid-word)."""
    import textwrap

    return textwrap.shorten(" ".join((text or "").split()), width, placeholder=" ...")


def printable(text: str) -> str:
    """``text`` with every character that is not printable escaped (``\\n``, ``\\x1b``,
    ``\\u202e``): control characters (a terminal's escape sequences, a line break that
    would make one error two lines) and the invisible format characters, bidirectional
    overrides among them, that make a key read as another. Printable text, accents and
    other scripts included, is kept."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii")
                   for c in text)


def counted(n: int, noun: str, plural: str | None = None) -> str:
    """``1 configuration``, ``3 configurations`` (``plural``: when not ``noun + "s"``)."""
    return f"{n} {noun if n == 1 else plural or noun + 's'}"
