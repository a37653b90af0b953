"""`polar.skills.minigrid.memory` is `polar.domains.minigrid.memory` (the path committed manifests name)."""

import sys

from polar.domains.minigrid import memory as _module

sys.modules[__name__] = _module
