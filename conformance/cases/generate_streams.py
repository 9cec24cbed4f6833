"""Raw random streams and their transforms for ``generate``: the same seed and name give the same bits anywhere.

NumPy's ``Generator`` methods may change between NumPy versions, so nothing here uses them. Every random number
comes from the raw 64-bit output of ``np.random.PCG64(entropy).random_raw(n)`` (PCG64 "makes a guarantee that a
fixed seed will always produce the same random integer stream"), with
``entropy = [Seed, zlib.crc32(utf-8 tensor name), part]``: each tensor of a case gets its own stream even when
tensors share a Seed, and ``part`` (0, 1, ...) numbers the independent sub-streams one kind needs.

Transforms of the raw words ``r`` (all exact or made of IEEE-correctly-rounded steps, so machine-independent):

* ``unit``: ``(r >> 11) * 2**-53``, in [0, 1), exact in float64;
* ``below``: ``r mod span`` for integers in [0, span), rejecting ``r >= 2**64 - 2**64 mod span`` and redrawing
  from the same sub-stream, in order, until none is left (no bias);
* ``permutation``: the stable argsort of raw words;
* ``standard_normal``: Box-Muller ``sqrt(-2 ln(1 - u1)) * cos(2 pi u2)`` with u1, u2 from sub-streams 0 and 1.
  ``ln`` and ``cos`` are fixed polynomials evaluated with +, -, *, / and frexp/floor only (accurate to a few
  float64 ULP), because libm's and NumPy's SIMD transcendentals differ in the last bit between machines.
"""

from __future__ import annotations

import math
import zlib

import numpy as np
import numpy.typing as npt

Float64Array = npt.NDArray[np.float64]
UInt64Array = npt.NDArray[np.uint64]

TWO64 = 1 << 64
_LN2 = math.log(2.0)
_HALF_PI = math.pi / 2.0
_SQRT_HALF = math.sqrt(0.5)
# ln(m) = 2 s (1 + z/3 + z^2/5 + ...), s = (m-1)/(m+1), z = s*s, |s| < 0.172 for m in [sqrt(1/2), sqrt(2)).
_LOG_COEFFS = tuple(1.0 / (2 * k + 1) for k in range(12))
# Taylor series of cos and sin on [0, pi/2): the first omitted term is below 2e-17.
_COS_COEFFS = tuple((-1) ** k / math.factorial(2 * k) for k in range(12))
_SIN_COEFFS = tuple((-1) ** k / math.factorial(2 * k + 1) for k in range(12))


class Streams:
    """The raw sub-streams of one tensor; ``part`` numbers them."""

    def __init__(self, seed: int, name: str) -> None:
        if seed < 0:
            raise ValueError(f"Seed must be non-negative, got {seed}")
        self._entropy = [int(seed), zlib.crc32(name.encode("utf-8"))]

    def bitgen(self, part: int) -> np.random.PCG64:
        return np.random.PCG64([*self._entropy, part])

    def raw(self, part: int, count: int) -> UInt64Array:
        return self.bitgen(part).random_raw(count)


def unit(raw: UInt64Array) -> Float64Array:
    return (raw >> np.uint64(11)).astype(np.float64) * 2.0**-53


def below(bitgen: np.random.PCG64, count: int, span: int) -> UInt64Array:
    """``count`` integers in [0, span), 1 <= span <= 2**64, by modulo with rejection of the biased top."""
    out = bitgen.random_raw(count)
    if TWO64 % span == 0:
        return out if span == TWO64 else out % np.uint64(span)
    limit = np.uint64(TWO64 - TWO64 % span)
    bad = np.flatnonzero(out >= limit)
    while bad.size:
        out[bad] = bitgen.random_raw(bad.size)
        bad = bad[out[bad] >= limit]
    return out % np.uint64(span)


def permutation(raw: UInt64Array) -> npt.NDArray[np.intp]:
    return np.argsort(raw, kind="stable")


def standard_normal(streams: Streams, count: int) -> Float64Array:
    radius = np.sqrt(-2.0 * _log(1.0 - unit(streams.raw(0, count))))
    return radius * _cos_turns(unit(streams.raw(1, count)))


def _horner(z: Float64Array, coeffs: tuple[float, ...]) -> Float64Array:
    acc = np.full_like(z, coeffs[-1])
    for c in reversed(coeffs[:-1]):
        acc *= z
        acc += c
    return acc


def _log(x: Float64Array) -> Float64Array:
    """Natural log of positive finite x."""
    mant, expo = np.frexp(x)
    low = mant < _SQRT_HALF
    mant = np.where(low, mant * 2.0, mant)
    exponent = np.where(low, expo - 1, expo).astype(np.float64)
    s = (mant - 1.0) / (mant + 1.0)
    return exponent * _LN2 + 2.0 * s * _horner(s * s, _LOG_COEFFS)


def _cos_turns(u: Float64Array) -> Float64Array:
    """cos(2 pi u) for u in [0, 1): the quadrant by exact scaling, then Taylor polynomials on [0, pi/2)."""
    w = u * 4.0
    quadrant = np.floor(w)
    phi = (w - quadrant) * _HALF_PI
    z = phi * phi
    cos, sin = _horner(z, _COS_COEFFS), phi * _horner(z, _SIN_COEFFS)
    return np.select([quadrant == 0, quadrant == 1, quadrant == 2], [cos, -sin, -cos], sin)
