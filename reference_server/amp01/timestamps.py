"""Timestamp format and parsing.

Every timestamp is written ``YYYY-MM-DDTHH:MM:SS.ffffffZ`` (fixed width), so the serialized size of a
cell does not depend on the clock. Input date-times follow RFC 3339 and are normalised to UTC.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta, timezone

_RFC3339 = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(\.\d+)?([Zz]|[+-]\d{2}:\d{2})",
    re.ASCII,
)
_LOCAL = timezone(timedelta(hours=2))
_MIN = datetime.min.replace(tzinfo=UTC)
_MAX = datetime.max.replace(tzinfo=UTC)


def format_timestamp(value: datetime, *, local_offset: bool = False) -> str:
    """UTC with microseconds and ``Z``; ``local_offset`` (a fault) writes +02:00 local time instead."""
    if local_offset:
        try:
            local = value.astimezone(_LOCAL)
        except OverflowError:
            local = value
        return (
            f"{local.year:04d}-{local.month:02d}-{local.day:02d}T{local.hour:02d}:{local.minute:02d}:"
            f"{local.second:02d}.{local.microsecond:06d}+02:00"
        )
    utc = value.astimezone(UTC)
    return (
        f"{utc.year:04d}-{utc.month:02d}-{utc.day:02d}T{utc.hour:02d}:{utc.minute:02d}:"
        f"{utc.second:02d}.{utc.microsecond:06d}Z"
    )


def parse_rfc3339(text: str) -> datetime:
    """Parse an RFC 3339 date-time into an aware UTC datetime; raises ``ValueError`` if it is not one.

    Values that are valid RFC 3339 but fall outside what a datetime can hold once moved to UTC (year 1
    with a positive offset, year 9999 with a negative one, year 0) are clamped to the nearest end, so
    no well-formed input is refused.
    """
    match = _RFC3339.fullmatch(text)
    if match is None:
        raise ValueError("not an RFC 3339 date-time (YYYY-MM-DDTHH:MM:SS[.frac](Z|+HH:MM))")
    year, month, day, hour, minute, second = (int(match.group(i)) for i in range(1, 7))
    fraction = match.group(7)
    offset_text = match.group(8)
    if hour > 23 or minute > 59 or second > 60:
        raise ValueError("time out of range")
    micro = int((fraction[1:] + "000000")[:6]) if fraction else 0
    if second == 60:  # a leap second: RFC 3339 allows it, datetime does not
        second, micro = 59, 999999
    if offset_text in ("Z", "z"):
        offset = timedelta(0)
    else:
        off_hours, off_minutes = int(offset_text[1:3]), int(offset_text[4:6])
        if off_hours > 23 or off_minutes > 59:
            raise ValueError("offset out of range")
        offset = timedelta(hours=off_hours, minutes=off_minutes)
        if offset_text[0] == "-":
            offset = -offset
    if not 1 <= month <= 12:
        raise ValueError("month out of range")
    if year == 0:
        _check_day(2000, month, day)  # year 0 is a leap year in the proleptic calendar
        return _MIN
    _check_day(year, month, day)
    naive = datetime(year, month, day, hour, minute, second, micro)
    try:
        return (naive - offset).replace(tzinfo=UTC)
    except OverflowError:
        return _MIN if offset > timedelta(0) else _MAX


def _check_day(year: int, month: int, day: int) -> None:
    try:
        datetime(year, month, day)
    except ValueError:
        raise ValueError("day out of range") from None
