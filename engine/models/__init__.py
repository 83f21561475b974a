"""Local models: pinned manifests, verified install (hub download, offline import, PyPI pack),
the ONNX embedder and relevance gate, and the per-model vector index (`engine.models`)."""

from .manifest import ModelError
from .service import LoadResult, ModelRuntime, RepairResult, attach, passage_text

__all__ = ["LoadResult", "ModelError", "ModelRuntime", "RepairResult", "attach", "passage_text"]
