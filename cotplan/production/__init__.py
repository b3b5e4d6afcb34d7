"""Shipping a plan's cap: a team's own client wrapped (`capped`), the gateway behind
`cotplan serve` (`cotplan.production.gateway`), both with the certified early exit on request
(`exit="certified"`, `cotplan.production.exiting`), and the call log both write
(`cotplan.production.log`), the monitor that reads it against the plan
(`cotplan.production.monitor`, with the sequential error test of
`cotplan.production.sequential`), and the LiteLLM callback (`cotplan.production.litellm_hook`,
the `litellm` extra; not imported here)."""

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

__all__ = [
    "AsyncCappedClient",
    "CallLog",
    "CapReport",
    "CappedClient",
    "ErrorTest",
    "LogRecord",
    "MonitorReport",
    "SizeLine",
    "capped",
    "default_log_path",
    "error_test",
    "monitor",
    "report_of",
]
