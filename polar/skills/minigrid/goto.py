"""`polar.skills.minigrid.goto` is `polar.domains.minigrid.goto` (the path committed manifests name)."""

import sys

from polar.domains.minigrid import goto as _module

sys.modules[__name__] = _module
