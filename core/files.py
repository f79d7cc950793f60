"""Reading a file a user named or uploaded: a regular file, at most a size cap, text that decodes, JSON that parses.

Every failure is the caller's ``CalcError`` subclass naming the file and what is wrong with it, never an
``OSError``, ``UnicodeDecodeError``, ``RecursionError`` (JSON nested 100,000 deep), ``ValueError`` (an integer
literal longer than Python converts) or ``MemoryError`` (``/dev/zero``, a 10 GB file).
"""

from __future__ import annotations

import json
import os
import stat
from typing import Any

from .errors import CalcError

MiB = 2 ** 20
NETWORK_FILE_LIMIT = 64 * MiB     # the largest built-in network's IR JSON is ~1 MiB
DEVICE_FILE_LIMIT = 16 * MiB      # the whole built-in database is ~40 KiB


def read_text(path: Any, *, limit: int, error: type[CalcError] = CalcError, field: str | None = None) -> str:
    """The UTF-8 text of the regular file at ``path``, refusing anything larger than ``limit`` bytes; errors name
    ``field`` (if given) and the path."""
    shown = os.fspath(path) if isinstance(path, (str, os.PathLike)) else path

    def fail(reason: str) -> CalcError:
        return error(reason, field=field, value=shown) if field else error(reason, node=str(shown))

    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))   # a FIFO must not block the open
    except OSError as e:
        raise fail(f"cannot read the file: {e.strerror or e}") from None
    except (TypeError, ValueError) as e:       # not a path, or one with a NUL byte
        raise fail(f"not a file path ({e})") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise fail("not a regular file (a device, a pipe or a folder cannot be read as a document)")
        if st.st_size > limit:
            raise fail(f"the file is {st.st_size:,} bytes; the limit is {limit:,}")
        with os.fdopen(fd, "rb", closefd=True) as f:
            fd = -1
            data = f.read(limit + 1)
    except OSError as e:
        raise fail(f"cannot read the file: {e.strerror or e}") from None
    finally:
        if fd >= 0:
            os.close(fd)
    if len(data) > limit:                      # it grew while being read
        raise fail(f"the file is over the limit of {limit:,} bytes")
    return decode(data, fail)


def decode(data: bytes | bytearray | str, fail) -> str:
    """``data`` as text; ``fail(reason)`` makes the error raised when it is not UTF-8."""
    if isinstance(data, str):
        return data
    try:
        return bytes(data).decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise fail(f"the file is not UTF-8 text (byte {e.start})") from None


def parse_json(text: str | bytes | bytearray, fail) -> Any:
    """``json.loads`` whose every failure is ``fail(reason)``: syntax, nesting too deep, an integer too long."""
    text = decode(text, fail)
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise fail(f"not valid JSON (line {e.lineno}, column {e.colno}: {e.msg})") from None
    except RecursionError:
        raise fail("not valid JSON: nested too deeply") from None
    except ValueError as e:                   # an integer literal longer than Python's int-string limit
        raise fail(f"not valid JSON ({str(e).split(';')[0]})") from None
    except MemoryError:
        raise fail("not valid JSON: too large to parse") from None
