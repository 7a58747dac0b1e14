"""The shape of a decoder-only transformer, read from a Hugging Face ``config.json``.

Standard library only: the measurement side (:mod:`profiler.hardware`) imports it on
GPU machines that have torch but not pydantic or NumPy.  :class:`Shape` holds what
the cost of a forward depends on (layers, widths, heads, vocabulary) and derives the
byte and flop counts that the analytical cost model
(:mod:`specmodel.hardware.costmodel`) prices.

Embedded shapes (``specmodel/presets/architectures/*.json``) are the architecture
fields of public models' ``config.json``; any other ``config.json`` path works too.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from importlib import resources
from pathlib import Path
from typing import Any

__all__ = ["DTYPE_BYTES", "REQUIRED_FIELDS", "Shape", "list_architectures", "load_shape"]

REQUIRED_FIELDS = ("hidden_size", "intermediate_size", "num_hidden_layers",
                   "num_attention_heads", "vocab_size")
"""``config.json`` fields without which a shape cannot be priced."""
DTYPE_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2}
"""Bytes per element of each supported dtype."""


def _positive_int(data: dict[str, Any], key: str, origin: str) -> int:
    value = data[key]
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{origin}: {key} must be a positive integer, got {value!r}")
    return value


@dataclass(frozen=True)
class Shape:
    """A decoder-only transformer's shape (Llama / Qwen2 / Qwen3 family: RMSNorm,
    grouped-query attention, gated MLP)."""

    name: str
    """Architecture name (a preset name or the config file's stem)."""
    hidden_size: int
    """Model width d."""
    intermediate_size: int
    """Gated MLP width."""
    num_hidden_layers: int
    """Decoder layers."""
    num_attention_heads: int
    """Query heads."""
    num_key_value_heads: int
    """Key/value heads (grouped-query attention; equal to the query heads without GQA)."""
    head_dim: int
    """Width of one head."""
    vocab_size: int
    """Vocabulary (rows of the embedding and of the LM head)."""
    tie_word_embeddings: bool = False
    """Whether the LM head shares the embedding's weights."""
    attention_bias: bool = True
    """Whether the Q/K/V projections have biases (Qwen2: yes; Llama, Qwen3: no)."""

    def __post_init__(self) -> None:
        for key in ("hidden_size", "intermediate_size", "num_hidden_layers",
                    "num_attention_heads", "num_key_value_heads", "head_dim", "vocab_size"):
            v = getattr(self, key)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"architecture {self.name}: {key} must be a positive "
                                 f"integer, got {v!r}")
        if self.num_attention_heads % self.num_key_value_heads:
            raise ValueError(
                f"architecture {self.name}: num_attention_heads ({self.num_attention_heads}) "
                f"must be a multiple of num_key_value_heads ({self.num_key_value_heads})")

    @classmethod
    def from_config(cls, data: dict[str, Any], name: str, origin: str | None = None) -> Shape:
        """The shape in a parsed ``config.json``; a missing or bad field is a
        ``ValueError`` naming it."""
        origin = origin or f"architecture {name}"
        if not isinstance(data, dict):
            raise ValueError(f"{origin}: must be a JSON object")
        missing = [k for k in REQUIRED_FIELDS if k not in data]
        if missing:
            raise ValueError(f"{origin}: config field {missing[0]} is missing (a decoder "
                             f"shape needs {', '.join(REQUIRED_FIELDS)})")
        hidden = _positive_int(data, "hidden_size", origin)
        heads = _positive_int(data, "num_attention_heads", origin)
        kv = _positive_int(data, "num_key_value_heads", origin) \
            if data.get("num_key_value_heads") is not None else heads
        head_dim = _positive_int(data, "head_dim", origin) \
            if data.get("head_dim") is not None else hidden // heads
        bias = data.get("attention_bias")
        if bias is None:  # Qwen2 has Q/K/V biases and no attention_bias key
            bias = data.get("model_type") == "qwen2"
        return cls(name=name, hidden_size=hidden,
                   intermediate_size=_positive_int(data, "intermediate_size", origin),
                   num_hidden_layers=_positive_int(data, "num_hidden_layers", origin),
                   num_attention_heads=heads, num_key_value_heads=kv, head_dim=head_dim,
                   vocab_size=_positive_int(data, "vocab_size", origin),
                   tie_word_embeddings=bool(data.get("tie_word_embeddings", False)),
                   attention_bias=bool(bias))

    def to_dict(self) -> dict[str, Any]:
        """The fields, JSON-ready."""
        return asdict(self)

    # --- counts -------------------------------------------------------------------------
    @property
    def q_width(self) -> int:
        """Query projection width (heads × head_dim)."""
        return self.num_attention_heads * self.head_dim

    @property
    def kv_width(self) -> int:
        """Key (or value) projection width (KV heads × head_dim)."""
        return self.num_key_value_heads * self.head_dim

    @property
    def layer_params(self) -> int:
        """Weights of one decoder layer (projections, MLP, two norms, Q/K/V biases)."""
        d = self.hidden_size
        qkv = d * (self.q_width + 2 * self.kv_width)
        bias = (self.q_width + 2 * self.kv_width) if self.attention_bias else 0
        return qkv + bias + self.q_width * d + 3 * d * self.intermediate_size + 2 * d

    @property
    def embedding_params(self) -> int:
        """The embedding table (vocabulary × width)."""
        return self.vocab_size * self.hidden_size

    @property
    def params(self) -> int:
        """All weights (the LM head counted once when tied to the embedding)."""
        head = 0 if self.tie_word_embeddings else self.embedding_params
        return (self.num_hidden_layers * self.layer_params + self.embedding_params + head
                + self.hidden_size)

    @property
    def streamed_params(self) -> int:
        """Weights a forward reads in full: every layer, the final norm and the LM head
        (the embedding is only gathered, a few rows per token)."""
        return (self.num_hidden_layers * self.layer_params + self.embedding_params
                + self.hidden_size)

    @property
    def matmul_flops_per_token(self) -> int:
        """Flops of the weight matmuls per token (2 per multiply-add), LM head included."""
        d = self.hidden_size
        per_layer = d * (self.q_width + 2 * self.kv_width) + self.q_width * d \
            + 3 * d * self.intermediate_size
        return 2 * (self.num_hidden_layers * per_layer + self.embedding_params)

    @property
    def attention_flops_per_token_per_position(self) -> int:
        """Attention flops per new token per context position (QKᵀ and PV, all layers)."""
        return 4 * self.num_hidden_layers * self.q_width

    def weight_bytes(self, dtype: str = "bfloat16") -> int:
        """Bytes a forward streams from memory for the weights (:attr:`streamed_params`)."""
        return self.streamed_params * dtype_bytes(dtype)

    def kv_bytes_per_token(self, dtype: str = "bfloat16") -> int:
        """KV-cache bytes of one token (keys and values, all layers)."""
        return 2 * self.num_hidden_layers * self.kv_width * dtype_bytes(dtype)


def dtype_bytes(dtype: str) -> int:
    """Bytes per element of ``dtype`` (one of :data:`DTYPE_BYTES`)."""
    if dtype not in DTYPE_BYTES:
        raise ValueError(f"dtype must be one of {', '.join(DTYPE_BYTES)}, got {dtype!r}")
    return DTYPE_BYTES[dtype]


def _preset_dir() -> Any:
    return resources.files("specmodel") / "presets" / "architectures"


def list_architectures() -> list[str]:
    """Names of the embedded architectures."""
    return sorted(f.name[: -len(".json")] for f in _preset_dir().iterdir()
                  if f.name.endswith(".json"))


def load_shape(name_or_path: str | Path) -> Shape:
    """An embedded architecture by name, or the shape in a ``config.json`` (or a model
    folder holding one).  Errors are one-line ``ValueError``s naming the file or field."""
    text = str(name_or_path)
    if text in list_architectures():
        data = json.loads((_preset_dir() / f"{text}.json").read_text(encoding="utf-8"))
        return Shape.from_config(data, text)
    path = Path(text)
    if path.is_dir():
        path = path / "config.json"
    if not path.exists():
        raise ValueError(f"architecture must be one of {', '.join(list_architectures())} or "
                         f"a config.json (or a folder with one); {text!r} is neither")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ValueError(f"architecture file {path} is not readable JSON: {e}") from e
    name = path.parent.name if path.name == "config.json" else path.stem
    return Shape.from_config(data, name or path.stem, f"architecture file {path}")
