"""Sharing partitions: which heads use one matrix (docs/model.md §1.3).

A partition of the heads 0..H-1 is a sorted tuple of sorted groups, read from a keyword
(``"independent"``, ``"all"``), ``{"groups": G}`` (G equal consecutive groups), an explicit
list of lists of head indices, or the JSON text of one of these (for ``--set``). With infinitely
many heads (``heads = "oo"``, docs/extensions.md §8.5) a partition is its keyword,
``"independent"`` or ``"all"``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from gemhsa_sym.parse import integer_value

__all__ = ["INFINITE_HEADS", "Partition", "partition", "partition_spec", "sharing_keyword"]

#: A partition of the heads 0..H-1: sorted groups, sorted by their first head (or, for infinitely
#: many heads, the keyword "independent" or "all").
Partition = tuple[tuple[int, ...], ...] | str
#: The number of heads of the limit H -> infinity (docs/extensions.md §8.5).
INFINITE_HEADS = "oo"


def partition(field: str, spec: Any, heads: int | str) -> Partition:
    """Canonical partition of 0..heads-1 from a keyword, {"groups": G} or a list of lists.

    Strings other than the keywords are read as JSON (``'[[0, 1], [2, 3]]'``,
    ``'{"groups": 2}'``), so that ``--set share_k=...`` works from a shell.
    """
    if heads == INFINITE_HEADS:
        if spec not in ("independent", "all"):
            raise ValueError(f"{field}: with infinitely many heads a matrix is per head ('independent') or shared by "
                             f"all ('all'), got {spec!r}")
        return spec
    if isinstance(spec, str):
        keyword = spec.strip()
        if keyword == "independent":
            return tuple((h,) for h in range(heads))
        if keyword == "all":
            return (tuple(range(heads)),)
        try:
            spec = json.loads(keyword)
        except json.JSONDecodeError:
            raise ValueError(
                f"{field}: expected 'independent', 'all', {{\"groups\": G}} or a list of "
                f"head groups, got {keyword!r}"
            ) from None
    if isinstance(spec, Mapping):
        if set(spec) != {"groups"}:
            raise ValueError(f"{field}: a mapping must be {{\"groups\": G}}, got {dict(spec)!r}")
        count = integer_value(field, spec["groups"])
        if count < 1 or heads % count:
            raise ValueError(f"{field}: {count} groups do not divide {heads} heads equally")
        size = heads // count
        return tuple(tuple(range(g * size, (g + 1) * size)) for g in range(count))
    if not isinstance(spec, (list, tuple)):
        raise ValueError(f"{field}: expected a list of head groups, got {spec!r}")
    for group in spec:
        if not isinstance(group, (list, tuple)):
            raise ValueError(f"{field}: each head group must be a list of head indices, got {group!r}")
    groups = [[integer_value(field, h) for h in group] for group in spec]
    seen = [h for group in groups for h in group]
    if any(not group for group in groups):
        raise ValueError(f"{field}: empty head group in {spec!r}")
    bad = sorted({h for h in seen if not 0 <= h < heads})
    if bad:
        raise ValueError(f"{field}: heads {bad} out of range 0..{heads - 1}")
    duplicates = sorted({h for h in seen if seen.count(h) > 1})
    if duplicates:
        raise ValueError(f"{field}: heads {duplicates} appear in more than one group")
    missing = sorted(set(range(heads)) - set(seen))
    if missing:
        raise ValueError(f"{field}: heads {missing} are in no group")
    return tuple(sorted(tuple(sorted(group)) for group in groups))


def partition_spec(groups: Partition, heads: int | str) -> str | dict[str, int] | list[list[int]]:
    """The shortest spec that :func:`partition` reads back as ``groups``."""
    if isinstance(groups, str):
        return groups
    if groups == partition("", "independent", heads):
        return "independent"
    if groups == partition("", "all", heads):
        return "all"
    count = len(groups)
    if heads % count == 0 and groups == partition("", {"groups": count}, heads):
        return {"groups": count}
    return [list(group) for group in groups]


def sharing_keyword(field: str, groups: Partition, heads: int | str) -> str:
    """The keyword ("independent" or "all") of a partition of ``heads`` heads, for a change to infinitely many
    heads; ValueError naming ``field`` for a partition that is neither."""
    spec = partition_spec(groups, heads)
    if spec in ("independent", "all"):
        return spec
    raise ValueError(f"{field}: infinitely many heads share a matrix per head or by all, not {spec!r}")
