"""Shards of one world on several processes and machines (``--shards N``, ``--cluster ADDRESS``).

:mod:`twin.cluster.plan` splits the fleet, :mod:`twin.cluster.shard` is one shard (no Ray),
:mod:`twin.cluster.coordinator` runs them as Ray actors with one clock. Only these modules import
Ray, and only a sharded run imports them: ``twin run`` and ``twin scenario run`` stay one process.
"""
