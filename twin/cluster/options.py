"""The command-line options of a sharded world, shared by ``twin run`` and ``twin scenario run``
(Ray-free: parsing them imports nothing of the cluster)."""

from __future__ import annotations

import argparse

SHARDS_HELP = "split the world over N shards, each a process of its own (an embedded Ray on this machine)"
CLUSTER_HELP = "run the shards on the Ray cluster whose head is at HOST:PORT (`ray start --head`)"


def shard_count(value: str) -> int:
    """``--shards``: a positive integer, or an error saying so."""
    try:
        n = int(value)
    except ValueError:
        n = 0
    if n < 1 or str(n) != value.strip().lstrip("+"):
        raise argparse.ArgumentTypeError(f"expected a positive integer number of shards, not {value!r}")
    return n


def add_arguments(parser: argparse.ArgumentParser) -> None:
    about = "one world on several cores and machines (the pip extra 'cluster')"
    group = parser.add_argument_group("shards", about)
    group.add_argument("--shards", metavar="N", type=shard_count, help=SHARDS_HELP)
    group.add_argument("--cluster", metavar="HOST:PORT", help=CLUSTER_HELP)


def problem(shards: int | None, cluster: str | None) -> str | None:
    """What is wrong with the two options together, if anything."""
    if cluster is not None and shards is None:
        return "--cluster needs --shards N: how many shards to spread over the cluster"
    return None
