"""The lab transformer: shapes, config errors, exchangeability by construction, and the store."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from cotplan.errors import InputError  # noqa: E402
from cotplan.research.lab import store  # noqa: E402
from cotplan.research.lab.transformer import (  # noqa: E402
    POSITIONAL_ENCODINGS,
    TinyTransformer,
    TransformerConfig,
)


def _sharpened(config: TransformerConfig) -> TinyTransformer:
    # Larger weights than the init so that order effects are far above float rounding.
    torch.manual_seed(0)
    model = TinyTransformer(config).double().eval()
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            if "norm" not in name:
                parameter.mul_(10)
    return model


def _order_spread(model: TinyTransformer, orderings: int = 12) -> float:
    bits = torch.tensor([1] * 10 + [0] * 10)
    generator = torch.Generator().manual_seed(1)
    margins = []
    for _ in range(orderings):
        prefix = bits[torch.randperm(bits.numel(), generator=generator)]
        tokens = torch.cat([torch.tensor([2]), prefix])[None]
        with torch.no_grad():
            logits = model(tokens)[0, -1]
        margins.append(float(logits[1] - logits[0]))
    return float(torch.tensor(margins, dtype=torch.float64).var())


@pytest.mark.parametrize("pe", POSITIONAL_ENCODINGS)
@pytest.mark.parametrize("attend_to", ["states", "tokens"])
def test_every_encoding_gives_next_token_logits(pe: str, attend_to: str) -> None:
    config = TransformerConfig(vocab_size=5, max_len=16, pe=pe, attend_to=attend_to)  # type: ignore[arg-type]
    logits = TinyTransformer(config)(torch.randint(0, 5, (3, 16)))
    assert logits.shape == (3, 16, 5)
    assert torch.isfinite(logits).all()


def test_attending_to_tokens_without_position_is_exchangeable_exactly() -> None:
    model = _sharpened(TransformerConfig(vocab_size=3, max_len=32, pe="none", attend_to="tokens"))
    assert _order_spread(model) < 1e-20


@pytest.mark.parametrize("pe", ["learned", "sinusoidal", "rope", "alibi"])
def test_every_encoding_can_see_order(pe: str) -> None:
    config = TransformerConfig(vocab_size=3, max_len=32, pe=pe, attend_to="tokens")  # type: ignore[arg-type]
    assert _order_spread(_sharpened(config)) > 1e-8


def test_the_causal_mask_alone_leaks_order_in_an_ordinary_decoder() -> None:
    # Why `attend_to="tokens"` exists: without any encoding, a GPT block still sees order.
    model = _sharpened(TransformerConfig(vocab_size=3, max_len=32, pe="none", attend_to="states"))
    assert _order_spread(model) > 1e-8


def test_later_positions_do_not_change_earlier_logits() -> None:
    model = _sharpened(TransformerConfig(vocab_size=3, max_len=16, pe="rope"))
    tokens = torch.randint(0, 3, (1, 12))
    changed = tokens.clone()
    changed[0, 8:] = (changed[0, 8:] + 1) % 3
    with torch.no_grad():
        assert torch.allclose(model(tokens)[0, :8], model(changed)[0, :8])


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"pe": "xpos"}, "pe"),
        ({"d_model": 0}, "d_model"),
        ({"n_heads": 5}, "n_heads"),
        ({"attend_to": "both"}, "attend_to"),
        ({"vocab_size": True}, "vocab_size"),
    ],
)
def test_bad_configs_name_the_field(changes: dict[str, object], field: str) -> None:
    settings: dict[str, object] = {"vocab_size": 3, "max_len": 8, **changes}
    with pytest.raises(InputError) as caught:
        TransformerConfig.from_dict(settings)
    assert caught.value.field == field


def test_too_long_input_is_an_input_error() -> None:
    model = TinyTransformer(TransformerConfig(vocab_size=3, max_len=4))
    with pytest.raises(InputError, match="max_len"):
        model(torch.zeros(1, 5, dtype=torch.long))


def test_store_round_trip_and_keys_by_settings() -> None:
    config = TransformerConfig(vocab_size=3, max_len=8, pe="alibi")
    model = TinyTransformer(config)
    settings = {"config": config.to_dict(), "steps": 3}
    assert store.load("test", settings) is None
    folder = store.save("test", settings, model.state_dict(), {"loss": 0.5})
    assert (folder / "weights.pt").stat().st_mode & 0o777 == 0o600
    loaded = store.load("test", settings)
    assert loaded is not None
    assert loaded.meta == {"loss": 0.5}
    assert loaded.settings == settings
    fresh = TinyTransformer(TransformerConfig.from_dict(loaded.settings["config"]))
    fresh.load_state_dict(loaded.state)
    assert store.load("test", {**settings, "steps": 4}) is None
