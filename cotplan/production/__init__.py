"""Shipping a plan's cap: a team's own client wrapped (`capped`), the gateway behind
`cotplan serve` (`cotplan.production.gateway`), both with the certified early exit on request
(`exit="certified"`, `cotplan.production.exiting`), and the call log both write
(`cotplan.production.log`), the monitor that reads it against the plan
(`cotplan.production.monitor`, with the sequential error test of
`cotplan.production.sequential`), and the LiteLLM callback (`cotplan.production.litellm_hook`,
the `litellm` extra; not imported here).

The names are imported on first use, so that a command reading the call log (`cotplan cost
actuals`, say) does not import the OpenAI client and the planner with the wrapper."""

from __future__ import annotations

from typing import TYPE_CHECKING

from cotplan._lazy import lazy_face

# The public names, each written once: imported here for type checkers and editors, and read
# from these lines by `lazy_face` to import on first use at run time.
if TYPE_CHECKING:
    from cotplan.production.log import CallLog, LogRecord, default_log_path
    from cotplan.production.monitor import MonitorReport, SizeLine, monitor
    from cotplan.production.sequential import ErrorTest, error_test
    from cotplan.production.wrapper import (
        AsyncCappedClient,
        CappedClient,
        CapReport,
        capped,
        report_of,
    )

__getattr__, __dir__, __all__ = lazy_face(__name__, __file__)
