"""Deprecated name of `cotplan.lab.pe_trainer`, the positional-encoding lab's trainer.

Importing it gives that very module (private names included), so code, notebooks and pickles
that name ``cotplan.lab.bernoulli`` keep working; new code imports `cotplan.lab.pe_trainer`.
"""

from __future__ import annotations

import sys

from cotplan.lab import pe_trainer as _pe_trainer
from cotplan.lab.pe_trainer import *  # noqa: F403

__all__ = list(_pe_trainer.__all__)

sys.modules[__name__] = _pe_trainer
