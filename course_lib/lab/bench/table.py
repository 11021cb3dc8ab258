"""The bench's table: nccl-tests' columns (time, algbw, busbw, #wrong) for the rows a sweep measured."""
from __future__ import annotations

from dataclasses import dataclass, field


HEADER = (f"#{'size':>12} {'count':>12} {'type':>8} {'ranks':>5} {'algorithm':>17} "
          f"{'time(us)':>10} {'mean(us)':>10} {'algbw(GB/s)':>11} {'busbw(GB/s)':>11} {'#wrong':>6}")


def format_row(row) -> str:
    """One row of the table (see ``format_rows``)."""
    mean = row.get("mean_s", row["time_s"])
    return (f" {row['size']:>12d} {row['count']:>12d} {row['type']:>8} {row['ranks']:>5d} "
            f"{row['algorithm']:>17} {row['time_s'] * 1e6:>10.1f} {mean * 1e6:>10.1f} "
            f"{row['algbw'] / 1e9:>11.3f} {row['busbw'] / 1e9:>11.3f} {row['wrong']:>6d}"
            + (f"  ({row['oversubscribed']}: not this machine's speed)" if row.get("oversubscribed") else ""))


def format_rows(rows) -> str:
    """nccl-tests-style table of benchmark rows: median and mean time per operation (us),
    algbw and busbw from the median (GB/s, SI, per direction)."""
    return "\n".join([HEADER] + [format_row(row) for row in rows])


@dataclass
class SweepResult:
    """Rows of a sweep (one dict per ranks x size x algorithm) and the table that prints them."""

    rows: list = field(default_factory=list)

    def table(self) -> str:
        return format_rows(self.rows)

    def __str__(self) -> str:
        return self.table()

    def select(self, algorithm=None, ranks=None) -> list[dict]:
        """Rows of one ``algorithm`` and/or one ``ranks`` count."""
        return [r for r in self.rows if (algorithm is None or r["algorithm"] == algorithm)
                and (ranks is None or r["ranks"] == ranks)]

    def ratio(self, algorithm, reference="builtin", ranks=None) -> dict:
        """{size: busbw(algorithm) / busbw(reference)} for the rows of ``ranks``."""
        mine = {(r["ranks"], r["size"]): r for r in self.select(algorithm, ranks)}
        ref = {(r["ranks"], r["size"]): r for r in self.select(reference, ranks)}
        return {key[1]: mine[key]["busbw"] / ref[key]["busbw"] for key in mine if key in ref}
