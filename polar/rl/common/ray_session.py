"""Starting or joining Ray, once per process, lean and quiet (training and `polar compare`).

A local Ray started here runs without the dashboard and without metrics collection, logs at
WARNING, does not forward worker logs to the driver and sends no usage statistics. Ray's
token authentication stays as Ray sets it (on for a new local cluster); only the banner Ray
prints about it is not shown. `dashboard=True` brings the dashboard and metrics back.
Joining a cluster (`address`, or `RAY_ADDRESS`) takes that cluster's settings; without
either, a new local Ray starts even where another one already runs on the machine (Ray's own
default would join that one). `benchmarks/rl_ray.py` measures what this saves.
"""

from __future__ import annotations

import logging
import os

# The logger of Ray's "Token authentication is enabled ..." banner.
_AUTH_LOGGER = "ray._private.authentication.authentication_token_setup"


def init_ray(address: str | None = None, num_cpus: int | None = None, object_store_mb: int = 200,
             dashboard: bool = False, resources: dict[str, float] | None = None) -> bool:
    """Start or join Ray unless it already runs in this process. True when this call did."""
    import ray

    if ray.is_initialized():
        return False
    quiet = {"log_to_driver": False, "logging_level": logging.WARNING}
    address = address or os.environ.get("RAY_ADDRESS") or None
    banner = logging.getLogger(_AUTH_LOGGER)
    level = banner.level
    banner.setLevel(logging.ERROR)
    try:
        if address:
            ray.init(address=address, **quiet)
            return True
        os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
        ray.init(address="local", num_cpus=num_cpus, resources=resources or None,
                 object_store_memory=object_store_mb * 1024 * 1024,
                 include_dashboard=dashboard, _system_config={"enable_metrics_collection": dashboard}, **quiet)
        return True
    finally:
        banner.setLevel(level)
