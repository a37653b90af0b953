"""Sandboxes for generated policy code: restricted, process and docker backends.

Entry points: `base.make_sandbox`, `policy_runner.run_policy`, `docker.ContainerPool`.
See docs/sandboxes.md.
"""
