"""``blkid -p -o export DEV`` output: KEY=value lines with shell-escaped values."""

from __future__ import annotations


def parse_export(text: str) -> dict[str, str]:
    result: dict[str, str] = {}
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if sep:
            result[key.strip()] = value.replace("\\ ", " ").strip()
    return result
