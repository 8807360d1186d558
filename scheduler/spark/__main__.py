"""``python -m scheduler.spark start|stop|status``: a Spark standalone cluster on loopback.

``start`` leaves a master and worker(s) running and writes their pids, ports and directories
to a state file (default ``$TMPDIR/henge-local-spark.json``); ``stop`` stops exactly those
processes and removes their temporary directory; ``status`` prints the master's view.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

from scheduler.spark.local_cluster import LocalCluster, LocalClusterError

DEFAULT_STATE = Path(tempfile.gettempdir()) / "henge-local-spark.json"


def _load(state: Path) -> LocalCluster | None:
    try:
        return LocalCluster.from_json(state.read_text())
    except FileNotFoundError:
        return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m scheduler.spark", description=__doc__)
    parser.add_argument("--state-file", type=Path, default=DEFAULT_STATE)
    sub = parser.add_subparsers(dest="command", required=True)
    start = sub.add_parser("start", help="start a master and worker(s) on 127.0.0.1")
    start.add_argument("--workers", type=int, default=1)
    start.add_argument("--cores", type=int, default=4, help="cores each worker offers")
    start.add_argument("--memory", default="4g", help="memory each worker offers")
    sub.add_parser("stop", help="stop the cluster recorded in the state file")
    sub.add_parser("status", help="print the master's JSON status")
    args = parser.parse_args(argv)

    existing = _load(args.state_file)
    if args.command == "start":
        if existing is not None and existing.alive_workers():
            print(f"already running: {existing.master_url} (state {args.state_file})")
            return 0
        cluster = LocalCluster(workers=args.workers, worker_cores=args.cores,
                               worker_memory=args.memory)  # fmt: skip
        try:
            cluster.start()
        except LocalClusterError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 1
        args.state_file.write_text(cluster.to_json())
        print(f"master  {cluster.master_url}")
        print(f"web UI  {cluster.master_ui_url}")
        print(f"logs    {cluster.log_dir}")
        print(f"state   {args.state_file}")
        print(f"export SPARK_MASTER_URL={cluster.master_url}")
        print(f"export HENGE_SPARK_MASTER_UI_URL={cluster.master_ui_url}")
        return 0
    if existing is None:
        print(f"no cluster recorded in {args.state_file}", file=sys.stderr)
        return 1 if args.command == "status" else 0
    if args.command == "status":
        try:
            print(json.dumps(existing.status(), indent=2))
        except OSError as exc:
            print(f"error: the master at {existing.master_ui_url} does not answer: {exc}",
                  file=sys.stderr)  # fmt: skip
            return 1
        return 0
    existing.stop(remove_dir=True)
    args.state_file.unlink(missing_ok=True)
    print(f"stopped {existing.master_url}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
