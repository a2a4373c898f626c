"""The client's messages, read whatever one malformed frame did to the stream.

pygls reads a frame only after a header spelled exactly `Content-Length: N`, and trusts N:
a lowercase header, or a length short of the body, leaves the rest of that frame in front of
the next header, which no longer matches either, and the server hears nothing again. Here
the header's name is matched in any case (header names are case-insensitive), and a header
is also found at the end of a line that begins with what a broken frame left: the next valid
frame is read whatever came before it (a truncated body is one message pygls cannot decode,
logged). pygls reads what this gives, frame by frame, each with a header it matches.
"""

from __future__ import annotations

import io
import re
from typing import BinaryIO

# The largest frame read: a whole buffer of the largest Python file the checks read
# (infra/files.py MAX_PYTHON_BYTES), escaped in JSON, with room to spare. A frame announcing
# more (999999999999 bytes) was read at once, and the server died of a MemoryError; its
# header is now passed over like any line a broken frame left, and the next frame read.
MAX_FRAME_BYTES = 64 * 1024 * 1024
# The longest line kept whole between frames: a header is a few dozen bytes. A longer line (what
# a broken frame left, or 300 MB sent with no newline) is read in pieces of this size and
# dropped, its last bytes kept to find a header at its end: read whole, it took memory to 663 MB.
MAX_LINE_BYTES = 64 * 1024
# A Content-Length header, at the end of a line, after anything a broken frame left before it.
_CONTENT_LENGTH = re.compile(rb"content-length[ \t]*:[ \t]*(\d{1,12})[ \t]*\r?\n\Z", re.IGNORECASE)


class FrameReader:
    """The `readline` and `read` pygls's stdin reader calls, over the raw `stream`."""

    def __init__(self, stream: BinaryIO) -> None:
        self._stream = stream
        self._frame = io.BytesIO()

    def readline(self) -> bytes:
        return self._current().readline()

    def read(self, size: int = -1) -> bytes:
        return self._current().read(size)

    def _current(self) -> io.BytesIO:
        """The frame being read, the next one once it is read whole (empty at the end of input)."""
        if self._frame.tell() == len(self._frame.getbuffer()):
            body = self._next_body()
            self._frame = io.BytesIO(b"" if body is None else b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
        return self._frame

    def _next_body(self) -> bytes | None:
        """The body of the next frame whose headers end with a blank line after a
        Content-Length; other lines (Content-Type, what a broken frame left) are passed over."""
        length = None
        while True:
            line = self._bounded_line()
            if not line:
                return None
            if (header := _CONTENT_LENGTH.search(line)) is not None:
                length = int(header.group(1))
            elif length is not None and not line.strip():
                if length > MAX_FRAME_BYTES:  # no frame: what follows is passed over up to the next header
                    length = None
                    continue
                body = self._stream.read(length)
                return body if len(body) == length else None

    def _bounded_line(self) -> bytes:
        """The next line, or of a line over MAX_LINE_BYTES its last bytes (where a header of
        the next frame would be); b"" at the end of input."""
        line = self._stream.readline(MAX_LINE_BYTES)
        while line and not line.endswith(b"\n"):
            more = self._stream.readline(MAX_LINE_BYTES)
            if not more:
                return line[-256:]
            line = line[-256:] + more
        return line
