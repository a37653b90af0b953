"""`polar.skills.maze.reach` is `polar.domains.maze.reach` (the path committed manifests name)."""

import sys

from polar.domains.maze import reach as _module

sys.modules[__name__] = _module
