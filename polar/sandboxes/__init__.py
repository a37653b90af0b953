"""Sandboxes for generated policy code: restricted, process and docker backends.

Entry points: `base.make_sandbox`, `policy_runner.run_policy`, `docker.ContainerPool`.
See docs/sandboxes.md.
"""

# The help of every `--sandbox` option (kept here: importing it loads nothing).
SANDBOX_HELP = ("Sandbox profile for policy code: a name under sandboxes/profiles/ "
                "(default, strict, docker), a YAML path, or 'none' to refuse policy code.")
