"""One screen for a large world: the report's rank table and DDP503's message show a world of
more than LARGE_WORLD ranks as groups of ranks in the same state and its outliers, not a row
per rank. One home for the limits and the grouping, so the table and the finding agree."""

from __future__ import annotations


LARGE_WORLD = 32  # more ranks than this: one screen shows groups and outliers, not every rank
SHOWN_PER_GROUP = 4
MAX_GROUPS = 12


def summarised(rows: list[list], columns: list[str]) -> list[list]:
    """A large world's rows as groups of ranks in the same state (what they last did, their
    exit), each shown by its first few ranks and one line for the rest ("… 1,000 more ranks
    like rank 3", their step range); small worlds unchanged. The odd ranks out (small groups)
    are always shown, the largest groups are the ones summarised."""
    if len(rows) <= LARGE_WORLD:
        return rows
    last, exit_, steps = columns.index("last"), columns.index("exit"), columns.index("steps")
    groups: dict[tuple, list[list]] = {}
    for row in rows:
        groups.setdefault((row[last], row[exit_]), []).append(row)
    ordered = sorted(groups.values(), key=lambda g: (len(g), g[0][0]))
    out: list[list] = []
    for members in ordered[:MAX_GROUPS]:
        out.extend(members[:SHOWN_PER_GROUP])
        rest = members[SHOWN_PER_GROUP:]
        if rest:
            done = sorted({r[steps] for r in rest if isinstance(r[steps], int)})
            line = [""] * len(columns)
            line[0] = "…"
            line[steps] = (f"{done[0]}-{done[-1]}" if len(done) > 1 else done[0]) if done else ""
            line[last] = f"{len(rest):,} more rank{'s' if len(rest) != 1 else ''} like rank {members[0][0]}"
            out.append(line)
    others = [r for g in ordered[MAX_GROUPS:] for r in g]
    if others:
        line = [""] * len(columns)
        line[0] = "…"
        line[last] = f"{len(others):,} more ranks in {len(ordered) - MAX_GROUPS} other states"
        out.append(line)
    return out
