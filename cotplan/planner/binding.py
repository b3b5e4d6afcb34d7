"""Plans bound to their model and reasoning protocol: refuse to apply a plan elsewhere.

A cap is certified for the model and the protocol (how the thinking is opened and closed) the
calibration ran on; on another model, or the same model driven another way, it certifies
nothing. `check_plan_model` and `check_plan_protocol` refuse such a plan unless told to
(`allow_other_model`), and return the line to print when they let one through.
"""

from __future__ import annotations

from cotplan.errors import InputError
from cotplan.generate.protocols import protocol_for
from cotplan.planner.saved_plan import SavedPlan

__all__ = ["backend_model", "check_plan_model", "check_plan_protocol", "planned_protocol"]


def backend_model(spec: str, base_url: str | None = None) -> str | None:
    """The model name `connect(spec, base_url=...)` will report, found without starting it;
    None where only the started backend can tell (a provider added by a plugin, a lab model
    whose weights key is known once trained).

    The embedded model's name carries its weights' checksum (``name@sha256-prefix``), so a
    plan made on other weights under the same file name is told apart."""
    provider, _, rest = spec.partition(":")
    if provider == "local":
        from cotplan.backends.models import DEFAULT_MODEL, KNOWN_MODELS, locate

        name = rest or DEFAULT_MODEL
        # A known name's id is in the table; reading the file to check it is the server's job.
        return KNOWN_MODELS[name].model_id if name in KNOWN_MODELS else locate(name)[1]
    if provider == "openai":
        return rest or None
    if base_url is not None and not rest:
        return spec
    return None


def check_plan_model(
    plan: SavedPlan,
    model: str | None = None,
    *,
    backend: str | None = None,
    base_url: str | None = None,
    allow_other_model: bool = False,
) -> str:
    """Refuse to apply `plan` to a model it was not made for (`InputError` naming `backend`).

    Give the started backend's `model`, or, before starting anything, the `backend` spec (and
    `base_url`) it will be started from: a ``lab:FAMILY`` spec is checked by family, since its
    weights are known only once loaded. With `allow_other_model` nothing is refused and the
    returned line says what is being done; "" when there is nothing to say. A plan that
    records no model (a version-1 file, or one planned from a calibration without a `model`
    column) fits any model as badly as another's: refused the same way."""
    if not plan.model:
        what = "the plan does not record the model it was made for"
        if allow_other_model:
            return f"{what}; applying it anyway (--allow-other-model): its caps are not certified"
        raise InputError(
            f"{what} (written by an older cotplan, or planned from a calibration without a "
            "`model` column): plan again from a calibration of this model, or "
            "--allow-other-model",
            field="backend",
        )
    if model is None and backend is not None:
        provider, _, rest = backend.partition(":")
        if provider == "lab" and rest:
            # A lab model's id is "lab-FAMILY@weights" for the spec "lab:FAMILY".
            family = plan.model.partition("@")[0]
            if family in (rest, f"lab-{rest}"):
                return ""
            model = backend
        else:
            model = backend_model(backend, base_url)
    if model is None or model == plan.model:
        return ""
    if allow_other_model:
        return (
            f"applying a plan made for model {plan.model!r} to {model!r} "
            "(--allow-other-model): its caps are not certified for this model"
        )
    raise InputError(
        f"the plan was made for model {plan.model!r}, not {model!r} (calibrate this one, or "
        "--allow-other-model)",
        field="backend",
    )


def planned_protocol(protocol: str, model: str | None) -> str | None:
    """The protocol a run will drive `model` with, known before it starts: `protocol` when
    named (not "auto"), else the model registry's for the name; None when the name is not
    known before the backend starts."""
    if protocol != "auto":
        return protocol
    if model is None:
        return None
    return protocol_for(model)


def check_plan_protocol(
    plan: SavedPlan, protocol: str | None, *, allow_other_model: bool = False
) -> str:
    """Refuse to apply `plan` under a reasoning protocol other than its calibration's
    (`InputError` naming `protocol`): the cap was certified for thinking opened and closed one
    way. With `allow_other_model` nothing is refused and the returned line says what is being
    done; "" when there is nothing to say (the protocols agree, or one is not known)."""
    if plan.protocol is None or protocol is None or protocol == plan.protocol:
        return ""
    if allow_other_model:
        return (
            f"applying a plan made under protocol {plan.protocol!r} with protocol {protocol!r} "
            "(--allow-other-model): its caps are not certified for this way of thinking"
        )
    raise InputError(
        f"the plan was made under reasoning protocol {plan.protocol!r}, not {protocol!r}: its "
        f"caps count thinking written the {plan.protocol!r} way (run with --protocol "
        f"{plan.protocol}, calibrate this protocol, or --allow-other-model)",
        field="protocol",
    )
