"""Several plans in one gateway, routed by model, and reloaded without dropping a call.

`Routes` holds one capped client per plan, keyed by the model the plan names (the body's
`model` picks it; the ``X-Cotplan-Route`` header names a route outright). `reload()` reads
every plan file again and swaps the whole table at once: a call already answering keeps the
client it started with, a new one gets the new plans, and a plan file that no longer loads
leaves the old table serving (the error is returned, and logged by the gateway). `cotplan
serve` reloads on SIGHUP and when a plan file changes (`changed`, asked every second;
`cotplan.production.gateway`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from pathlib import Path

from cotplan.errors import CotplanError, InputError
from cotplan.planner import SavedPlan
from cotplan.production.wrapper import AsyncCappedClient, CappedClient

__all__ = ["ROUTE_HEADER", "Routes"]

#: The header that names a route (a plan's model) whatever the body's `model` says.
ROUTE_HEADER = "x-cotplan-route"

#: What a route is built from: a plan, or the path of its plan.json (read again on reload).
PlanSource = SavedPlan | str | Path

#: A route's client: the gateway's own async one, or a team's sync one.
Capped = CappedClient | AsyncCappedClient


class Routes:
    """The capped client for each plan's model (see the module). `build` makes the capped
    client of one plan; `plans` are the plans or their paths."""

    def __init__(self, build: Callable[[PlanSource], Capped], plans: Sequence[PlanSource]) -> None:
        if not plans:
            raise InputError("give at least one plan", field="plan")
        self._build = build
        self._sources = list(plans)
        self._lock = threading.Lock()
        self._seen = self._stamps()
        self._table = self._load()

    def _load(self) -> dict[str, Capped]:
        table: dict[str, Capped] = {}
        for source in self._sources:
            client = self._build(source)
            name = client.plan.model or "default"
            if name in table:
                raise InputError(f"two plans are for model {name!r}: give one", field="plan")
            table[name] = client
        return table

    @classmethod
    def of(cls, client: Capped) -> Routes:
        """One route: `client` itself (its plan is not read again on reload)."""
        return cls(lambda _: client, [client.plan])

    def _stamps(self) -> list[tuple[int, int]]:
        """Each plan file's modification time and size ((0, 0): missing; plans given as
        objects have none)."""
        stamps = []
        for source in self._sources:
            if isinstance(source, str | Path):
                try:
                    stat = Path(source).stat()
                except OSError:
                    stamps.append((0, 0))
                    continue
                stamps.append((stat.st_mtime_ns, stat.st_size))
        return stamps

    def changed(self) -> bool:
        """Whether a plan file changed since it was last read (a stat per file: cheap enough
        to ask every second). A file caught half-written fails to load and keeps the old
        plans; the writer finishing changes it again, and it is read again then."""
        return self._stamps() != self._seen

    def reload(self) -> CotplanError | None:
        """Read every plan again and serve the new table; on failure keep serving the old one
        and return the error (None: reloaded)."""
        self._seen = self._stamps()
        try:
            table = self._load()
        except CotplanError as exc:
            return exc
        with self._lock:
            self._table = table  # one assignment: a call sees the old table or the new one
        return None

    @property
    def names(self) -> list[str]:
        """The models served, in the order the plans were given."""
        return list(self._table)

    @property
    def first(self) -> Capped:
        return next(iter(self._table.values()))

    def pick(self, model: object, route: str | None = None) -> Capped:
        """The client for a call: the route named by the header, else the plan for `model`,
        else the only plan (whose own check then names a model it was not made for)."""
        table = self._table
        if route is not None:
            if route not in table:
                raise InputError(
                    f"no route {route!r}; served: {', '.join(table)}", field=ROUTE_HEADER
                )
            return table[route]
        if isinstance(model, str) and model in table:
            return table[model]
        if len(table) == 1:
            return next(iter(table.values()))
        raise InputError(f"no plan for model {model!r}; served: {', '.join(table)}", field="model")
