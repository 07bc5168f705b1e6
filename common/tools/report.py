"""Terminal summaries (rich tables) shared by the CLI commands."""
from __future__ import annotations

from rich.console import Console
from rich.table import Table

from ..model.resources import format_amount


def print_fleet_summary(summary: dict, profile: str, created: int, write_s: float, list_s: float) -> None:
    console = Console()
    console.print(f"fleet: {created} {profile} nodes written in {write_s:.2f} s "
                  f"({created / write_s if write_s else 0:,.0f} nodes/s); "
                  f"listed {summary['nodes']} nodes in {list_s:.2f} s")
    for title, counts in (("zone", summary["zones"]), ("shape", summary["shapes"])):
        t = Table(title=f"nodes per {title}")
        t.add_column(title)
        t.add_column("nodes", justify="right")
        for k, v in counts.items():
            t.add_row(k, str(v))
        console.print(t)
    t = Table(title="total allocatable")
    t.add_column("resource")
    t.add_column("amount", justify="right")
    for name, amount in summary["allocatable"].items():
        t.add_row(name, format_amount(name, amount))
    console.print(t)
