"""The byte formats the runtime shares with the supervisor, in one place:
a little-endian u32, and a field (that u32 as its length, then its bytes).
The C++ side's one implementation is src/ipc/frame.h; each format is
documented in its header there:

* results records (src/ipc/result_records.h): u32 head length, u32 body
  length, the JSON head, the body (``record_prefix``);
* tool-channel frames (src/ipc/tool_frames.h): one field of JSON each way
  (``field``, ``read_field``).
"""

import errno
import os
import struct

_U32 = struct.Struct("<I")
_RECORD_PREFIX = struct.Struct("<II")


def field(data):
    """A field: its length, then its bytes."""
    return _U32.pack(len(data)) + data


def record_prefix(head_bytes, body_bytes):
    """A results record's prefix: the head's and the body's lengths."""
    return _RECORD_PREFIX.pack(head_bytes, body_bytes)


def read_exactly(fd, n):
    """n bytes from fd; OSError EPIPE when it ends first."""
    out = b""
    while len(out) < n:
        got = os.read(fd, n - len(out))
        if not got:
            raise OSError(errno.EPIPE, "the server closed it")
        out += got
    return out


def read_field(fd):
    """The next field's bytes from fd."""
    return read_exactly(fd, _U32.unpack(read_exactly(fd, _U32.size))[0])
