"""Shipping a plan's cap: a team's own client wrapped (`capped`), the gateway behind
`cotplan serve` (`cotplan.production.gateway`), and the call log both write
(`cotplan.production.log`)."""

from cotplan.production.log import CallLog, LogRecord, default_log_path
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
    "LogRecord",
    "capped",
    "default_log_path",
    "report_of",
]
