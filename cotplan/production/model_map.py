"""The team's own model names: `register_model` and the model map file.

cotplan knows a model by the prefix of its name (`cotplan.backends.known_models`). A model
served under an in-house name (``acme-reasoner-v2``) says nothing of how it thinks, which chat
template writes its prompt, or which server caps it. A team declares it once:

    cotplan.register_model("acme-reasoner-v2", protocol="think", template="chatml",
                           server="llama.cpp-thinking")

or in a model map file (TOML or JSON, read with `cotplan.io.read_document`), which
`cotplan serve --model-map FILE` and `load_model_map` read:

    [models.acme-reasoner-v2]
    protocol = "think"            # how it writes and closes its thinking
    template = "chatml"           # its chat template, for two-phase forcing
    server = "llama.cpp-thinking" # what serves it (a provider rule), where it differs

A name cotplan already knows keeps its own family: declaring it with another protocol or
template is refused, with the fix (serve it under a name of its own, or declare what cotplan
knows of it), since a cap certified for one way of thinking does not carry to another.
"""

from __future__ import annotations

import os
from collections.abc import Collection, Mapping
from dataclasses import replace
from typing import Any

from cotplan.backends.budgets import rule_for_model
from cotplan.backends.known_models import (
    PROTOCOL_NAMES,
    REGISTERED,
    ModelFamily,
    bare_name,
    builtin_family,
)
from cotplan.errors import InputError
from cotplan.generate.prompts import CHAT_TEMPLATES

__all__ = [
    "declared_family",
    "load_model_map",
    "read_model_map",
    "register_model",
    "reload_model_map",
    "unregister_model",
]


def register_model(
    name: str,
    *,
    protocol: str = "plain",
    template: str | None = None,
    server: str | None = None,
) -> ModelFamily:
    """Declare how the model served as `name` thinks (`protocol`, a
    `cotplan.generate.protocols` name), which chat template writes its prompt (`template`, a
    `cotplan.generate.prompts.CHAT_TEMPLATES` name; None: none, so only a server that caps it
    can) and what serves it (`server`, a provider rule such as ``llama.cpp-thinking``; None:
    the client's). Applies to that exact name (any ``provider:`` or ``org/`` before it and
    letter case aside) in this process. Returns the family recorded."""
    family = declared_family(name, protocol=protocol, template=template, server=server)
    REGISTERED[family.prefix] = family
    return family


def declared_family(
    name: str,
    *,
    protocol: str = "plain",
    template: str | None = None,
    server: str | None = None,
) -> ModelFamily:
    """The family `register_model` records for `name`, checked as it checks it (an
    `InputError` naming the field), and not recorded."""
    if not isinstance(name, str) or not bare_name(name).strip():
        raise InputError(f"must be a model name, got {name!r}", field="name")
    if protocol not in PROTOCOL_NAMES:
        raise InputError(
            f"must be one of {', '.join(PROTOCOL_NAMES)}, got {protocol!r}", field="protocol"
        )
    if template is not None and template not in CHAT_TEMPLATES:
        raise InputError(
            f"must be one of {', '.join(CHAT_TEMPLATES)}, got {template!r}", field="template"
        )
    if server is not None:
        rule_for_model(server, "")  # an unknown provider is refused, naming the known ones
    known = builtin_family(name)
    if known is not None and (known.protocol, known.chat_template) != (protocol, template):
        raise InputError(
            f"{name!r} is a {known.prefix} model to cotplan (protocol {known.protocol!r}, "
            f"template {known.chat_template!r}); declaring it with protocol {protocol!r} and "
            f"template {template!r} would apply another family's format to it. Serve your "
            "model under a name of its own (for example with a team prefix) and declare that, "
            f"or declare protocol={known.protocol!r}, template={known.chat_template!r}",
            field="name",
        )
    base = known or ModelFamily(bare_name(name), "team")
    return replace(
        base, prefix=bare_name(name), protocol=protocol, chat_template=template, server=server
    )


def unregister_model(name: str) -> None:
    """Forget a declaration (`register_model`); a name never declared is left as it is."""
    REGISTERED.pop(bare_name(name), None)


def load_model_map(path: str | os.PathLike[str]) -> list[ModelFamily]:
    """Declare every model of a model map file (see the module); errors name the file and
    the model's field, and leave every declaration as it was."""
    declared = read_model_map(path)
    for family in declared:
        REGISTERED[family.prefix] = family
    return declared


def reload_model_map(path: str | os.PathLike[str], before: Collection[str]) -> list[ModelFamily]:
    """Declare the model map file's models anew (`cotplan serve` on SIGHUP or when the file
    changes): the names it declared `before` and no longer holds are forgotten. The file is
    read and checked whole first, so one that fails leaves every declaration as it was; each
    name is then replaced in one step, so a call under way never finds its model undeclared."""
    declared = read_model_map(path)
    for family in declared:
        REGISTERED[family.prefix] = family
    kept = {family.prefix for family in declared}
    for name in before:
        if bare_name(name) not in kept:
            REGISTERED.pop(bare_name(name), None)
    return declared


def read_model_map(path: str | os.PathLike[str]) -> list[ModelFamily]:
    """The families a model map file declares, each checked (`declared_family`), none
    recorded; errors name the file and the model's field."""
    from cotplan.io import read_document

    document = read_document(path)
    models = document.get("models") if isinstance(document, Mapping) else None
    if not isinstance(models, Mapping) or not models:
        raise InputError(
            "must hold a `models` table: one entry per model name", field="models", source=str(path)
        )
    declared = []
    for name, entry in models.items():
        if not isinstance(entry, Mapping):
            raise InputError(
                f"must be a table of protocol, template, server; got {entry!r}",
                field=f"models.{name}",
                source=str(path),
            )
        unknown = sorted(set(entry) - {"protocol", "template", "server"})
        if unknown:
            raise InputError(
                "is not a model map field (protocol, template, server)",
                field=f"models.{name}.{unknown[0]}",
                source=str(path),
            )
        options: dict[str, Any] = dict(entry)
        try:
            declared.append(declared_family(str(name), **options))
        except InputError as exc:
            field = f"models.{name}" + (f".{exc.field}" if exc.field != "name" else "")
            message = str(exc).removeprefix(f"`{exc.field}`: ")
            raise InputError(message, field=field, source=str(path)) from exc
    return declared
