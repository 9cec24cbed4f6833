"""Stand-ins for the DirectML chain's pieces, shared by the tests that check how the harness tells a real piece from
a wrong one without Wine."""

from __future__ import annotations


def pe_file(machine: int = 0x8664, text: bytes = b"") -> bytes:
    """The smallest file the PE format recognises: an MZ header whose e_lfanew (at 0x3C) points at "PE\\0\\0" and a
    COFF header's machine field (Microsoft's PE format specification), then ``text``."""
    mz = b"MZ" + bytes(0x3A) + (0x40).to_bytes(4, "little")
    return mz + b"PE\0\0" + machine.to_bytes(2, "little") + bytes(18) + text
