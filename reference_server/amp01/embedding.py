"""A deterministic local embedding and a packed vector index; no network, no model download.

Text becomes a bag of hashed features (character 3-grams of the lowercased text, padded with a space,
plus word unigrams) folded into ``DIMENSIONS`` buckets, L2-normalised and quantised to 15-bit integers.
Similarity is the cosine of two such vectors (never negative: every weight is >= 0).

Why integers: the index keeps, per owner, blocks of ``BLOCK`` cells and per block one array of
32-bit slots per dimension (cell ``i``'s weight in slot ``i``). At search time each array the query
touches is read as one big Python integer, so multiplying by the query weight and adding the columns
computes the dot products of a whole block in C, with no carry between slots (each dot product is
below 2**31). Search over 10k cells costs ~10 blocks x ~70 big-int multiply-adds instead of a Python
loop over every posting, and adding a cell is ~80 array stores.
"""

from __future__ import annotations

import math
import re
import sys
import zlib
from array import array
from collections import Counter

PROVIDER = "amp-reference-hashed-ngrams"
DIMENSIONS = 256
NGRAM = 3
SCALE = (1 << 15) - 1
"""Quantisation scale of a unit vector's components."""
BLOCK = 1024
SLOT_BITS = 32

_WORD = re.compile(r"\w+", re.UNICODE)
_SPACE = re.compile(r"\s+", re.UNICODE)

if array("I").itemsize != SLOT_BITS // 8:  # pragma: no cover - every mainstream platform
    raise ImportError("reference_server.amp01.embedding needs 4-byte unsigned ints in array('I')")

_BIG_ENDIAN = sys.byteorder == "big"

Vector = dict[int, int]
"""Sparse quantised vector: dimension -> weight in 0..SCALE."""


_BUCKETS: dict[str, int] = {}
_BUCKET_CACHE_LIMIT = 1 << 20


def _bucket(feature: str) -> int:
    bucket = _BUCKETS.get(feature)
    if bucket is None:
        bucket = zlib.crc32(feature.encode("utf-8", "surrogatepass")) % DIMENSIONS
        if len(_BUCKETS) >= _BUCKET_CACHE_LIMIT:
            _BUCKETS.clear()
        _BUCKETS[feature] = bucket
    return bucket


def features(text: str) -> Counter[str]:
    """The hashed-feature bag of ``text`` (before folding): 3-grams and ``w:`` word unigrams."""
    normal = _SPACE.sub(" ", text.lower()).strip()
    padded = f" {normal} "
    grams: Counter[str] = Counter(padded[i : i + NGRAM] for i in range(len(padded) - NGRAM + 1))
    for word in _WORD.findall(normal):
        grams["w:" + word] += 1
    return grams


def embed(text: str) -> Vector:
    """Quantised unit vector of ``text``; empty when the text has no features."""
    dense: dict[int, float] = {}
    for feature, count in features(text).items():
        bucket = _bucket(feature)
        dense[bucket] = dense.get(bucket, 0.0) + count
    norm = math.sqrt(sum(value * value for value in dense.values()))
    if norm == 0.0:
        return {}
    vector: Vector = {}
    for bucket, value in dense.items():
        weight = round(value / norm * SCALE)
        if weight:
            vector[bucket] = weight
    return vector


def to_similarity(dot: int) -> float:
    """Cosine from a quantised dot product, clipped to [0, 1]."""
    return min(1.0, dot / (SCALE * SCALE))


def similarity(left: Vector, right: Vector) -> float:
    """Cosine similarity of two quantised vectors (the same number the index computes)."""
    if len(right) < len(left):
        left, right = right, left
    return to_similarity(sum(weight * right.get(bucket, 0) for bucket, weight in left.items()))


class VectorIndex:
    """Packed per-slot vectors; see the module docstring. Not thread-safe: the store's lock guards it.

    Each column is kept as an ``array('I')`` (cheap to write) and, once a search has needed it, as the
    equivalent integer (cheap to multiply); a write drops the cached integer of the columns it touches.
    """

    __slots__ = ("_blocks", "_ints", "_size")

    def __init__(self) -> None:
        self._blocks: list[list[array[int] | None]] = []
        self._ints: list[list[int | None]] = []
        self._size = 0

    def __len__(self) -> int:
        return self._size

    def _block(self, slot: int) -> tuple[list[array[int] | None], list[int | None], int]:
        block, offset = divmod(slot, BLOCK)
        while len(self._blocks) <= block:
            self._blocks.append([None] * DIMENSIONS)
            self._ints.append([None] * DIMENSIONS)
        self._size = max(self._size, slot + 1)
        return self._blocks[block], self._ints[block], offset

    def add(self, slot: int, vector: Vector) -> None:
        columns, ints, offset = self._block(slot)
        for bucket, weight in vector.items():
            column = columns[bucket]
            if column is None:
                column = columns[bucket] = array("I", bytes(BLOCK * SLOT_BITS // 8))
            column[offset] = weight
            ints[bucket] = None

    def remove(self, slot: int, vector: Vector) -> None:
        """Clear ``slot`` (``vector`` names the dimensions it used)."""
        columns, ints, offset = self._block(slot)
        for bucket in vector:
            column = columns[bucket]
            if column is not None:
                column[offset] = 0
                ints[bucket] = None

    def dot_products(self, query: Vector) -> list[int]:
        """Quantised dot product of ``query`` with every slot, in slot order (length ``len(self)``)."""
        result: list[int] = []
        width = BLOCK * SLOT_BITS // 8
        items = list(query.items())
        for columns, ints in zip(self._blocks, self._ints, strict=True):
            total = 0
            for bucket, weight in items:
                packed = ints[bucket]
                if packed is None:
                    column = columns[bucket]
                    if column is None:
                        continue
                    packed = ints[bucket] = _as_int(column)
                total += weight * packed
            if total:
                slots = array("I")
                slots.frombytes(total.to_bytes(width, "little"))
                if _BIG_ENDIAN:  # pragma: no cover - slots were packed little-endian
                    slots.byteswap()
                result.extend(slots.tolist())
            else:
                result.extend([0] * BLOCK)
        del result[self._size :]
        return result


def _as_int(column: array[int]) -> int:
    """The column as one integer, slot 0 in the lowest 32 bits."""
    if _BIG_ENDIAN:  # pragma: no cover
        swapped = array("I", column)
        swapped.byteswap()
        return int.from_bytes(swapped, "little")
    return int.from_bytes(column, "little")
