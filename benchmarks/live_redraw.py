"""The live view's cost: CPU per redraw of the rank table, and its share of a core at the view's
refresh rate (`ddpdoctor/report/live.py` REFRESH_PER_S). The budget the view is held to is 1 % of
a core. Measured with `time.process_time` on a terminal console writing to memory, so only the
drawing counts, for 2 ranks and for 64 (the table keeps the MAX_ROWS furthest behind and sums up
the rest). A timing, so a benchmark: on a busy machine the figure moves.

    python -m benchmarks.live_redraw                 # 2 and 64 ranks, 200 redraws each
    python -m benchmarks.live_redraw --ranks 1024 --redraws 50
"""

from __future__ import annotations

import argparse
import io
import time

from rich.console import Console

from ddpdoctor.report import live


def per_redraw(ranks: int, redraws: int) -> float:
    rows = [live.RankRow(r, f"node{r // 8}", 10000 + r, "in collective all_reduce", 100 + r % 3, 400, 0.2)
            for r in range(ranks)]
    board = live.Board(42.0, rows, 200, 3.3, 0.4, 8.0, "train.py")
    view = live.LiveView(Console(file=io.StringIO(), force_terminal=True, width=120, height=40))
    view.start()
    try:
        began = time.process_time()
        for _ in range(redraws):
            view.update(board)
        return (time.process_time() - began) / redraws
    finally:
        view.stop(None)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ranks", type=int, nargs="+", default=[2, 64], help="rank counts to draw")
    parser.add_argument("--redraws", type=int, default=200, help="redraws measured per count")
    args = parser.parse_args()
    for ranks in args.ranks:
        cost = per_redraw(ranks, args.redraws)
        share = cost * live.REFRESH_PER_S * 100
        print(f"{ranks:5d} ranks: {cost * 1000:.2f} ms CPU per redraw, {share:.2f} % of a core at "
              f"{live.REFRESH_PER_S:g}/s (budget 1 %)")


if __name__ == "__main__":
    main()
